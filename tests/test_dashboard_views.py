"""Dashboard pages over HTTP: content, errors, CSV, escaping and bounded query counts."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.urls import reverse

from tests.dashboard_world import HOSTILE_GPU, HOSTILE_PROVIDER, build_world
from tests.factories import GpuFactory, OfferFactory, PriceObservationFactory, ProviderFactory, TensorPeakFactory
from tests.factories_dashboard import ResultAggregateFactory, WorkloadFactory

pytestmark = pytest.mark.django_db


def _csv(response) -> list[dict[str, str]]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


def _figure(html: str, figure_id: str) -> dict:
    match = re.search(rf'<script id="{figure_id}" type="application/json">(.*?)</script>', html, re.S)
    assert match, figure_id
    return json.loads(match.group(1))


def test_rankings_page_shows_ranked_rows_and_figures(client):
    build_world()
    response = client.get(reverse("dashboard:rankings"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "RTX 4090" in html and "estimated from specs" in html
    bar = _figure(html, "fig-bar")
    names = [n for trace in bar["data"] for n in trace["y"]]
    assert "RTX 4090" in names
    assert {t["name"] for t in bar["data"]} == {"measured", "estimated from specs"}
    scatter = _figure(html, "fig-scatter")
    frontier = next(t for t in scatter["data"] if t["name"] == "Pareto frontier")
    assert frontier["text"][0] == "RTX 3060"  # cheapest GPU starts the frontier


def test_rankings_filters_change_the_figure(client):
    build_world()
    html = client.get(reverse("dashboard:rankings"), {"segment": "datacenter"}).content.decode()
    names = {n for trace in _figure(html, "fig-bar")["data"] for n in trace["y"]}
    assert names == {"A100 SXM4 80 GB", "H100 SXM5 80 GB"}


def test_rankings_bad_filter_is_a_400_naming_the_field(client):
    build_world()
    response = client.get(reverse("dashboard:rankings"), {"min_vram": "-4"})
    assert response.status_code == 400
    assert "min_vram" in response.content.decode()
    assert client.get(reverse("dashboard:rankings"), {"baseline": "nope"}).status_code == 400


def test_rankings_precision_left_over_from_another_use_case_is_dropped(client):
    build_world()
    response = client.get(reverse("dashboard:rankings"), {"use_case": "inference-8bit", "precision": "32bit"})
    assert response.status_code == 200


def test_rankings_csv_follows_filters(client):
    build_world()
    rows = _csv(client.get(reverse("dashboard:rankings"), {"format": "csv", "min_vram": "30"}))
    assert {r["gpu_slug"] for r in rows} == {"a100-sxm4-80-gb", "h100-sxm5-80-gb"}
    assert {r["perf_basis"] for r in rows} == {"measured"}


def test_csv_neutralises_formulas(client):
    build_world()
    GpuFactory(name="=HYPERLINK(1)", slug="formula-gpu")
    TensorPeakFactory(gpu=GpuFactory(slug="formula-gpu"), precision="bf16", dense_tflops=10.0)
    rows = _csv(client.get(reverse("dashboard:rankings"), {"format": "csv"}))
    assert any(r["gpu_name"] == "'=HYPERLINK(1)" for r in rows)


def test_tiers_page(client):
    build_world()
    response = client.get(reverse("dashboard:tiers"))
    html = response.content.decode()
    assert response.status_code == 200
    tier_s = html[html.index('id="tier-S"') : html.index('id="tier-A"')]
    assert "RTX 4090" in tier_s
    assert "Below the 24 GB memory floor" in html
    rows = _csv(client.get(reverse("dashboard:tiers"), {"format": "csv"}))
    assert {r["gpu_slug"]: r["tier"] for r in rows}["rtx-4090"] == "S"


def test_gpu_page_has_offers_history_results_and_tiers(client):
    world = build_world()
    response = client.get(reverse("catalog:gpu-detail", args=[world.baseline.slug]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "gpu_8x_a100" in html and "Other Cloud" in html
    assert "fig-history" in html and "fig-box" in html
    history = _figure(html, "fig-history")
    names = [t["name"] for t in history["data"]]
    assert names == [
        "all providers: cheapest on-demand",
        "all providers: cheapest spot",
        "Lambda",
        "Other Cloud",
        "Other Cloud · spot",
    ]
    assert [t["visible"] for t in history["data"]] == [True, True, "legendonly", "legendonly", "legendonly"]
    # the overall on-demand line is the daily minimum over providers: 2.20 (Lambda, 1.1 x 2.00) then 2.00
    assert history["data"][0]["y"] == pytest.approx([2.2, 2.2, 2.0])
    assert "Specifications" in html  # the catalogue's part is kept
    rows = _csv(client.get(reverse("catalog:gpu-detail", args=[world.baseline.slug]), {"format": "csv"}))
    assert sorted(float(r["price_per_gpu_hour"]) for r in rows) == [1.0, 2.0, 3.0]


def test_gpu_page_efficiency_against_peak(client):
    world = build_world()
    matmul = WorkloadFactory(slug="matmul", category="micro", unit="TFLOPS")
    ResultAggregateFactory(gpu=world.h100, workload=matmul, precision="bf16", median=750.0)
    html = client.get(reverse("catalog:gpu-detail", args=[world.h100.slug])).content.decode()
    assert "75 %" in html


def test_compare_page(client):
    build_world()
    url = reverse("dashboard:compare")
    assert client.get(url).status_code == 200
    response = client.get(url, {"gpus": "h100-sxm5-80-gb,a100-sxm4-80-gb"})
    assert response.status_code == 200
    fig = _figure(response.content.decode(), "fig-compare")
    h100, a100 = fig["data"]
    assert h100["y"][0] == pytest.approx(1.0)
    assert a100["y"][0] == pytest.approx(1 / (2.5 * 3.0) ** 0.5)
    single = client.get(url, {"gpus": "h100-sxm5-80-gb"})
    assert single.status_code == 400 and "between 2 and 4" in single.content.decode()
    assert client.get(url, {"gpus": "a,b,c,d,e"}).status_code == 400
    unknown = client.get(url, {"gpus": "h100-sxm5-80-gb,no-such-card"})
    assert unknown.status_code == 404 and "no-such-card" in unknown.content.decode()
    rows = _csv(client.get(url, {"gpus": "h100-sxm5-80-gb,a100-sxm4-80-gb", "format": "csv"}))
    assert [r["gpu_slug"] for r in rows] == ["h100-sxm5-80-gb", "a100-sxm4-80-gb"]


def test_architectures_page(client):
    build_world()
    response = client.get(reverse("dashboard:architectures"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Ada Lovelace" in html and "Tensor Cores gen 4" in html
    timeline = _figure(html, "fig-timeline")
    assert "Hopper" in timeline["data"][0]["text"]
    assert len(_csv(client.get(reverse("dashboard:architectures"), {"format": "csv"}))) == 3


def test_open_data_page_and_table_download(client):
    build_world()
    assert client.get(reverse("dashboard:open-data")).status_code == 200
    gpus = _csv(client.get(reverse("dashboard:open-data"), {"table": "gpus"}))
    assert {"a100-sxm4-80-gb", "hostile-card"} <= {r["slug"] for r in gpus}
    assert client.get(reverse("dashboard:open-data"), {"table": "secrets"}).status_code == 404


def test_hostile_names_are_escaped_in_html_and_figures(client):
    world = build_world()
    for url in (
        reverse("dashboard:rankings") + "?segment=consumer",
        reverse("dashboard:tiers") + "?use_case=inference-16bit",
        reverse("catalog:gpu-detail", args=[world.hostile.slug]),
        reverse("dashboard:compare") + f"?gpus={world.hostile.slug},rtx-4090",
    ):
        html = client.get(url).content.decode()
        assert "<script>window.__pwned" not in html, url
        assert "<img src=x" not in html, url
        assert "&lt;script&gt;window.__pwned" in html or "\\u003cscript\\u003e" in html, url
    html = client.get(reverse("dashboard:rankings"), {"segment": "consumer"}).content.decode()
    bar = _figure(html, "fig-bar")
    labels = [n for t in bar["data"] for n in t["y"]]
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt; Card" in labels
    hover = [c[0] for t in bar["data"] for c in t["customdata"]]
    assert HOSTILE_GPU not in hover
    page = client.get(reverse("catalog:gpu-detail", args=[world.hostile.slug])).content.decode()
    assert "&lt;img src=x onerror=window.__pwned=2&gt; Cloud" in page
    history = _figure(page, "fig-history")
    assert any(t["name"].startswith("&lt;img") for t in history["data"])
    assert HOSTILE_PROVIDER not in json.dumps(history)


def _bulk(extra: int) -> None:
    workload = WorkloadFactory(slug="resnet50", category="training")
    provider = ProviderFactory(slug="bulk")
    for i in range(extra):
        gpu = GpuFactory(name=f"Bulk {i}", slug=f"bulk-{i}")
        TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=100.0 + i)
        offer = OfferFactory(gpu=gpu, provider=provider)
        PriceObservationFactory(offer=offer)
        ResultAggregateFactory(gpu=gpu, workload=workload, median=50.0 + i)


@pytest.mark.parametrize(
    ("url", "limit"),
    [
        (lambda w: reverse("dashboard:rankings") + "?currency=CNY", 12),
        (lambda w: reverse("dashboard:rankings") + "?mode=buy", 12),
        (lambda w: reverse("dashboard:tiers"), 12),
        # The GPU page and the comparison compute every use case: the two LLM ones add the
        # fitted model's data check (3 queries) and their measured rows (1) each; the GPU page
        # also reads the GPU's LLM figures and the configurations reported not to fit (2).
        (lambda w: reverse("catalog:gpu-detail", args=[w.baseline.slug]), 56),
        (lambda w: reverse("dashboard:compare") + "?gpus=a100-sxm4-80-gb,h100-sxm5-80-gb,rtx-4090", 45),
        (lambda w: reverse("dashboard:architectures"), 3),
        (lambda w: reverse("dashboard:open-data"), 1),
    ],
)
@pytest.mark.parametrize("extra", [0, 25])
def test_query_count_is_bounded(client, django_assert_max_num_queries, url, limit, extra):
    world = build_world()
    _bulk(extra)
    with django_assert_max_num_queries(limit):
        response = client.get(url(world))
    assert response.status_code == 200
