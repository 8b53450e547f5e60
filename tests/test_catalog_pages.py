"""The /gpus/ catalogue page: deep-learning GPUs by default, their tensor figures, prices, sorting."""

from __future__ import annotations

from decimal import Decimal

import pytest

from catalog.selectors.gpus import gpu_catalogue
from tests.factories import GpuFactory, OfferFactory, TensorPeakFactory

pytestmark = pytest.mark.django_db


def _catalogue():
    h100 = GpuFactory(name="H100 SXM5 80 GB", slug="h100", memory_gib=80.0, memory_bandwidth_gbs=3350.0, tdp_w=700)
    TensorPeakFactory(gpu=h100, precision="bf16", dense_tflops=989.4)
    TensorPeakFactory(gpu=h100, precision="fp8", dense_tflops=1979.0)
    for price in ("2.00", "3.00", "9.00"):
        OfferFactory(gpu=h100, current_price_per_hour=Decimal(price))
    a100 = GpuFactory(name="A100 SXM4 80 GB", slug="a100", memory_gib=80.0, tdp_w=400)
    TensorPeakFactory(gpu=a100, precision="bf16", dense_tflops=312.0)
    TensorPeakFactory(gpu=a100, precision="fp8", supported=False, dense_tflops=None)
    OfferFactory(gpu=a100, current_price_per_hour=Decimal("1.50"))
    unknown = GpuFactory(name="Curated without figures", slug="bare", memory_gib=24.0)
    for i in range(3):
        GpuFactory(name=f"GeForce 9800 GT {i}", slug=f"old-{i}", is_curated=False, memory_gib=0.5)
    return h100, a100, unknown


def test_deep_learning_gpus_by_default_with_everything_one_click_away(client):
    """The catalogue opened on 2,832 GPUs over 57 pages, its only compute column non-tensor FP32."""
    _catalogue()
    html = client.get("/gpus/").content.decode()
    assert "H100 SXM5 80 GB" in html and "GeForce 9800 GT" not in html
    assert 'id="show-all-gpus"' in html and "Show all 6 GPUs" in html
    assert "BF16 dense" in html and "FP8 dense" in html and "Typical price" in html
    everything = client.get("/gpus/", {"scope": "all"}).content.decode()
    assert "GeForce 9800 GT 0" in everything and "Deep-learning GPUs only" in everything


def test_rows_carry_tensor_figures_and_the_typical_price():
    h100, a100, unknown = _catalogue()
    rows = {r.gpu.slug: r for r in gpu_catalogue()}
    assert set(rows) == {"h100", "a100", "bare"}
    assert rows["h100"].bf16 == 989.4 and rows["h100"].fp8 == 1979.0
    assert rows["a100"].fp8 is None and "fp8" in rows["a100"].known  # not supported, not unknown
    assert rows["bare"].bf16 is None and not rows["bare"].known
    assert rows["h100"].price.typical_usd == pytest.approx(3.0) and rows["h100"].price.offers == 3


def test_sorting_puts_missing_values_last(client):
    _catalogue()
    by_bf16 = [r.gpu.slug for r in gpu_catalogue(sort="-bf16")]
    assert by_bf16 == ["h100", "a100", "bare"]
    assert [r.gpu.slug for r in gpu_catalogue(sort="bf16")] == ["a100", "h100", "bare"]
    assert [r.gpu.slug for r in gpu_catalogue(sort="price")] == ["a100", "h100", "bare"]
    html = client.get("/gpus/", {"sort": "-bf16"}).content.decode()
    assert html.index("H100 SXM5 80 GB") < html.index("A100 SXM4 80 GB")
    assert client.get("/gpus/", {"sort": "nonsense"}).status_code == 200  # ignored, named in the form errors
