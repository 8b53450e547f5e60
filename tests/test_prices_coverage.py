"""Coverage of the bundled price catalogues on the rows that give measured GPUs a price, and the
placeholder rule on the catalogue that showed it (Mithril's 1.00 for H100 and H200).

Each test imports real files from catalog/data/prices (SOURCES.md says where each comes from).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from catalog.models import Gpu, GpuPrice, Offer
from catalog.selectors.prices import gpu_rent_prices
from catalog.services.prices import BUNDLED_PRICES_DIR, price_import_file
from catalog.services.prices.derive import SAME_ROUND_PRICE_PLACEHOLDER
from tests.factories import GpuFactory, OfferFactory, ProviderFactory

pytestmark = pytest.mark.django_db

V8 = BUNDLED_PRICES_DIR / "skypilot-catalog" / "v8"
WHEN = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def _import(*clouds: str) -> None:
    for cloud in clouds:
        assert price_import_file(path=V8 / cloud / "vms.csv", observed_at=WHEN).ok


def _price(slug: str, rule: str = "typical"):  # type: ignore[no-untyped-def]
    gpu = Gpu.objects.get(slug=slug)
    return gpu_rent_prices(gpu_ids=[gpu.pk], rule=rule, with_providers=True).get(gpu.pk)


def test_mithrils_one_dollar_for_h100_and_h200_is_a_placeholder_kept_out_of_typical_and_cheapest(real_catalogue):
    # Mithril lists h100-80gb.sxm.1x and ccs-h200.sxm.1x at 1.0 an hour (8.0 for eight GPUs),
    # under half of what Lambda, Nebius and Oracle ask for either GPU.
    _import("lambda", "nebius", "oci", "mithril")
    mithril = Offer.objects.filter(provider__slug="mithril", is_spot=False)
    assert mithril.count() == 4
    assert {o.placeholder for o in mithril} == {SAME_ROUND_PRICE_PLACEHOLDER}
    for slug in ("h100-sxm5-80-gb", "h200-sxm-141-gb"):
        typical, cheapest = _price(slug), _price(slug, "cheapest")
        assert "mithril" not in {c.provider_slug for c in typical.contributors}
        assert cheapest.price_usd > Decimal("1.00")


def test_a_spot_list_at_one_round_figure_below_the_spot_market_is_a_placeholder(admin_client):
    h100 = GpuFactory(name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", family="H100", variant="SXM", memory_gib=80)
    h200 = GpuFactory(name="H200 SXM 141 GB", slug="h200-sxm-141-gb", family="H200", variant="SXM", memory_gib=141)
    for slug, h100_price, h200_price in (("a", "2.29", "3.39"), ("b", "2.49", "3.59")):
        provider = ProviderFactory(slug=slug, name=slug.upper())
        OfferFactory(gpu=h100, provider=provider, is_spot=True, current_price_per_hour=Decimal(h100_price))
        OfferFactory(gpu=h200, provider=provider, is_spot=True, current_price_per_hour=Decimal(h200_price))
    cheap = ProviderFactory(slug="cheap", name="Cheap")
    OfferFactory(gpu=h100, provider=cheap, is_spot=True, current_price_per_hour=Decimal("1.00"))
    OfferFactory(gpu=h200, provider=cheap, is_spot=True, current_price_per_hour=Decimal("1.00"))
    # A real spot discount on one GPU is judged against spot prices only: kept.
    OfferFactory(gpu=h100, provider=cheap, is_spot=False, current_price_per_hour=Decimal("2.00"))
    assert set(Offer.objects.placeholders().values_list("provider__slug", "is_spot")) == {("cheap", True)}
    spot = gpu_rent_prices(rule="spot")
    assert spot[h100.id].price_usd == Decimal("2.29") and spot[h200.id].price_usd == Decimal("3.39")
    listed = admin_client.get("/providers/health/").content.decode().split("Placeholder prices (2)", 1)[1]
    assert listed.count("Cheap") == 2 and listed.count(" · spot") == 2


def test_runpods_mi300x_row_gives_the_mi300x_a_second_provider(real_catalogue):
    # 1x_MI300X_SECURE at 2.39 in every RunPod zone; Oracle's BM.GPU.MI300X.8 at 48 for 8 GPUs.
    _import("oci", "runpod")
    price = _price("radeon-instinct-mi300x")
    assert {c.provider_slug: c.price_usd for c in price.contributors} == {
        "runpod": Decimal("2.39"),
        "oci": Decimal("6.00"),
    }
    assert price.providers == 2 and price.price_usd == Decimal("4.195000")
    assert price.typical_between == ("RunPod", "Oracle Cloud")


def test_lium_and_yotta_list_rtx_5090s_and_a_lium_workstation_card_is_one_marketplace_listing(real_catalogue):
    _import("lium", "yotta")
    rtx5090 = _price("geforce-rtx-5090")
    assert {c.provider_slug for c in rtx5090.contributors} == {"lium", "yotta"}
    # Lium's cheapest: an eight-GPU machine in Japan at 3.20 an hour; Yotta's: 0.65 for one GPU.
    assert (rtx5090.minimum_usd, rtx5090.price_usd) == (Decimal("0.40"), Decimal("0.525000"))
    # RTXPRO6000-WK: the workstation edition, one host's listing on a marketplace.
    workstation = _price("rtx-pro-6000-blackwell")
    assert workstation.single_listing and workstation.providers == 1
    # "RTXPRO6000" does not say the edition: kept out until a curator maps it.
    assert Offer.objects.filter(provider__slug="lium", gpu_name_raw="RTXPRO6000", variant_ambiguous=True).count() == 2


def test_rebuild_prices_derives_the_stored_prices_of_offers_written_before_them(real_catalogue):
    _import("oci", "runpod")
    stored = set(GpuPrice.objects.values_list("gpu_id", "gpu_count", "rule", "price_usd"))
    GpuPrice.objects.all().delete()  # a database whose offers predate the stored prices
    assert not gpu_rent_prices()
    out = StringIO()
    call_command("rebuild_prices", stdout=out)
    assert set(GpuPrice.objects.values_list("gpu_id", "gpu_count", "rule", "price_usd")) == stored
    assert out.getvalue().startswith(f"{len({row[0] for row in stored})} GPU(s) repriced")
    call_command("rebuild_prices", stdout=(again := StringIO()))
    assert again.getvalue().startswith("0 GPU(s) repriced")
