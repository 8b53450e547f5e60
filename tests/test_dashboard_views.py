"""Dashboard pages over HTTP: content, errors, CSV, escaping and bounded query counts."""

from __future__ import annotations

import csv
import io
import json
import re
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils.http import urlencode

from catalog.selectors.prices import gpu_rent_prices
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import rankings_compute
from dashboard.services import ranking_submitters_refresh
from tests.factories import (
    GpuAliasFactory,
    GpuFactory,
    OfferFactory,
    PriceObservationFactory,
    ProviderFactory,
    ResultAggregateFactory,
    TensorPeakFactory,
    WorkloadFactory,
)
from tests.world import DASHBOARD_WORLD, HOSTILE_GPU, HOSTILE_PROVIDER, world_build

pytestmark = pytest.mark.django_db


def _csv(response) -> list[dict[str, str]]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


def _figure(html: str, figure_id: str) -> dict:
    match = re.search(rf'<script id="{figure_id}" type="application/json">(.*?)</script>', html, re.S)
    assert match, figure_id
    return json.loads(match.group(1))


def test_rankings_page_shows_ranked_rows_and_figures(client):
    world_build(rows=DASHBOARD_WORLD)
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
    assert frontier["text"][0] == "RTX 4090"  # the cheapest GPU shown starts the frontier
    # the 12 GB RTX 3060 cannot train transformers: hidden, counted, one click away
    assert "RTX 3060" not in names and 'id="show-all"' in html and "2 GPUs that cannot do this are hidden" in html
    everything = client.get(reverse("dashboard:rankings"), {"show": "all"}).content.decode()
    frontier = next(t for t in _figure(everything, "fig-scatter")["data"] if t["name"] == "Pareto frontier")
    assert frontier["text"][0] == "RTX 3060"
    assert "cannot do this" in everything and "12 GB is below the 24 GB floor" in everything


def test_rankings_filters_change_the_figure(client):
    world_build(rows=DASHBOARD_WORLD)
    html = client.get(reverse("dashboard:rankings"), {"segment": "datacenter"}).content.decode()
    names = {n for trace in _figure(html, "fig-bar")["data"] for n in trace["y"]}
    assert names == {"A100 SXM4 80 GB", "H100 SXM5 80 GB"}


def test_rankings_bad_filter_is_a_400_naming_the_field(client):
    world_build(rows=DASHBOARD_WORLD)
    response = client.get(reverse("dashboard:rankings"), {"min_vram": "-4"})
    assert response.status_code == 400
    assert "min_vram" in response.content.decode()
    assert client.get(reverse("dashboard:rankings"), {"baseline": "nope"}).status_code == 400


def test_rankings_precision_left_over_from_another_use_case_is_dropped(client):
    world_build(rows=DASHBOARD_WORLD)
    response = client.get(reverse("dashboard:rankings"), {"use_case": "inference-8bit", "precision": "32bit"})
    assert response.status_code == 200
    html = response.content.decode()
    # The 8-bit ranking, as if the precision had not been given: its one precision chosen, its rows listed.
    assert '<select name="precision" data-autosubmit><option value="8bit" selected>' in html
    assert "H100 SXM5 80 GB" in html and "A100 SXM4 80 GB" in html


def test_rankings_csv_follows_filters(client):
    world_build(rows=DASHBOARD_WORLD)
    rows = _csv(client.get(reverse("dashboard:rankings"), {"format": "csv", "min_vram": "30"}))
    assert {r["gpu_slug"] for r in rows} == {"a100-sxm4-80-gb", "h100-sxm5-80-gb"}
    assert {r["perf_basis"] for r in rows} == {"measured"}


def test_csv_neutralises_formulas(client):
    world_build(rows=DASHBOARD_WORLD)
    GpuFactory(name="=HYPERLINK(1)", slug="formula-gpu")
    TensorPeakFactory(gpu=GpuFactory(slug="formula-gpu"), precision="bf16", dense_tflops=10.0)
    rows = _csv(client.get(reverse("dashboard:rankings"), {"format": "csv"}))
    assert any(r["gpu_name"] == "'=HYPERLINK(1)" for r in rows)


def test_tiers_page(client):
    world_build(rows=DASHBOARD_WORLD)
    response = client.get(reverse("dashboard:tiers"))
    html = response.content.decode()
    assert response.status_code == 200
    tier_s = html[html.index('id="tier-S"') : html.index('id="tier-A"')]
    assert "RTX 4090" in tier_s
    assert 'id="ineligible"' in html and "12 GB is below the 24 GB floor" in html
    rows = _csv(client.get(reverse("dashboard:tiers"), {"format": "csv"}))
    assert {r["gpu_slug"]: r["tier"] for r in rows}["rtx-4090"] == "S"


def test_gpu_page_has_offers_history_results_and_tiers(client):
    world = world_build(rows=DASHBOARD_WORLD)
    response = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["baseline"].slug]))
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
    # observed 10 days apart: steps broken across the gaps, not a line claiming the days between
    assert history["data"][0]["y"] == [pytest.approx(2.2), None, pytest.approx(2.2), None, pytest.approx(2.0)]
    assert "Specifications" in html  # the catalogue's part is kept
    rows = _csv(client.get(reverse("dashboard:gpu-detail", args=[world.gpus["baseline"].slug]), {"format": "csv"}))
    assert sorted(float(r["price_per_gpu_hour"]) for r in rows) == [1.0, 2.0, 3.0]


def test_gpu_page_efficiency_against_peak(client):
    world = world_build(rows=DASHBOARD_WORLD)
    matmul = WorkloadFactory(slug="matmul", category="micro", unit="TFLOPS")
    ResultAggregateFactory(gpu=world.gpus["h100"], workload=matmul, precision="bf16", median=750.0)
    html = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["h100"].slug])).content.decode()
    assert "75 %" in html


def test_compare_page(client):
    world_build(rows=DASHBOARD_WORLD)
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
    assert float(rows[1]["training_relative_to_first"]) == pytest.approx(1 / (2.5 * 3.0) ** 0.5)
    assert rows[0]["bf16_dense_tflops"] == "1000.0" and rows[0]["typical_price_per_gpu_hour"] == "5.0"
    assert rows[0]["typical_provider"] == "Lambda" and rows[0]["cheapest_price_per_gpu_hour"] == "5.0"


def test_compare_picker_takes_names_as_people_type_them(client):
    """The old form wanted slugs typed by hand, and its own example `rtx-4090` was "Unknown GPU"."""
    world = world_build(rows=DASHBOARD_WORLD)
    GpuAliasFactory(gpu=world.gpus["rtx4090"], alias="GeForce RTX 4090")
    url = reverse("dashboard:compare")
    page = client.get(url).content.decode()
    assert '<datalist id="gpu-names">' in page and '<option value="RTX 4090">' in page
    for typed in ("RTX 4090", "rtx 4090", "rtx-4090", "GeForce RTX 4090"):
        response = client.get(url + "?" + urlencode([("gpu", "H100 SXM5 80 GB"), ("gpu", typed), ("gpu", "")]))
        assert response.status_code == 200, typed
        assert [c.gpu.slug for c in response.context["columns"]] == ["h100-sxm5-80-gb", "rtx-4090"]
    missing = client.get(url + "?" + urlencode([("gpu", "H100 SXM5 80 GB"), ("gpu", "RTX 40")]))
    assert missing.status_code == 404 and "RTX 40" in missing.content.decode()
    assert "<strong>RTX 4090</strong>" in missing.content.decode()  # a suggestion


def test_compare_uses_the_rankings_figures_and_n(client):
    """RTX 4090 was 0.38x H100 on the compare page and 0.32x in the rankings; H100's n was 749 and
    210: the comparison recomputed with H100 as the baseline. Now both read the same ranking."""
    world = world_build(rows=DASHBOARD_WORLD)
    response = client.get(reverse("dashboard:compare"), {"gpus": "h100-sxm5-80-gb,rtx-4090"})
    h100, rtx = response.context["columns"]
    ranking = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(show="all")).rows}
    cell = rtx.cells["training"]
    assert cell.relative == pytest.approx(ranking["rtx-4090"].perf / ranking["h100-sxm5-80-gb"].perf)
    assert h100.cells["training"].row.n == ranking["h100-sxm5-80-gb"].n == 3
    assert cell.per_price == pytest.approx(cell.relative / 0.5)
    assert cell.per_price == pytest.approx(ranking["rtx-4090"].perf_per_dollar / ranking["h100-sxm5-80-gb"].perf)
    html = response.content.decode()
    for label in ("BF16", "INT8", "Interconnect", "Cheapest offer", "Performance per USD/GPU-hour"):
        assert label in html
    assert world.gpus["h100"].name in html and "How to read this" in html


def test_a_repeated_comparison_is_read_from_the_cache_until_the_data_changes(  # type: ignore[no-untyped-def]
    client, versioned_cache, settings, django_capture_on_commit_callbacks
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from gpuatlas.data_version import data_version_bump

    settings.DATA_VERSION_DEBOUNCE_S = 0
    world = world_build(rows=DASHBOARD_WORLD)
    query = {"gpus": "h100-sxm5-80-gb,rtx-4090"}

    def compared() -> tuple[int, float | None]:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(reverse("dashboard:compare"), query)
        assert response.status_code == 200
        # The body is cached as HTML: the first column's cheapest price, as the page shows it.
        shown = re.search(r'Cheapest offer</th><td class="num">([0-9.,]+)<br>', response.content.decode())
        return len(queries.captured_queries), float(shown.group(1).replace(",", "")) if shown else None

    cold, first = compared()
    warm, second = compared()
    # The picker's GPU names, the session and the lookup: the comparison itself is not read again.
    assert warm <= 4 < cold and second == first == 5.0
    with django_capture_on_commit_callbacks(execute=True):
        OfferFactory(
            provider=ProviderFactory(slug="later-cloud", name="Later Cloud"),
            gpu=world.gpus["h100"],
            instance_type="h100.later",
            current_price_per_hour=Decimal("1.00"),
        )
        data_version_bump()
    _again, cheapest = compared()
    assert cheapest == 1.0


def test_compare_and_catalogue_show_the_rankings_price_with_its_origin(client):
    """Both pages read prices through an older selector: the median of every current offer (not
    the providers' cheapest, as the rankings) and no provider, date or age beside the figure."""
    world = world_build(rows=DASHBOARD_WORLD)
    extra = ProviderFactory(slug="third-cloud", name="Third Cloud")
    for instance, price in (("h100.a", "2.00"), ("h100.b", "9.00"), ("h100.c", "9.50")):
        OfferFactory(
            provider=extra, gpu=world.gpus["h100"], instance_type=instance, current_price_per_hour=Decimal(price)
        )
    typical = gpu_rent_prices(gpu_ids=[world.gpus["h100"].id], rule="typical")[world.gpus["h100"].id]
    cheapest = gpu_rent_prices(gpu_ids=[world.gpus["h100"].id], rule="cheapest")[world.gpus["h100"].id]
    # The providers' cheapest: Third Cloud 2.00, Lambda 5.00: their mean (the offers' median: 7.00).
    assert (typical.price_usd, cheapest.price_usd) == (Decimal("3.50"), Decimal("2.00"))
    assert typical.typical_between == ("Third Cloud", "Lambda")
    response = client.get(reverse("dashboard:compare"), {"gpus": "h100-sxm5-80-gb,rtx-4090"})
    h100 = response.context["columns"][0]
    assert (h100.typical_price, h100.cheapest_price) == (3.5, 2.0)
    assert h100.typical_origin == typical.provenance and h100.cheapest_origin.provider == "Third Cloud"
    ranking = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(show="all")).rows}
    assert ranking["h100-sxm5-80-gb"].price.amount == h100.typical_price
    html = response.content.decode()
    # The offers have no snapshot recording how their date is known: estimated, so no age.
    assert "Third Cloud · date unknown, file of" in html and "d old" not in html
    catalogue = client.get(reverse("catalog:gpu-list"), {"query": "H100"})
    row = next(r for r in catalogue.context["page"] if r.gpu.slug == "h100-sxm5-80-gb")
    assert row.price.price_usd == Decimal("3.50") and row.price.provenance.provider == "Third Cloud"
    assert "mean of Third Cloud and Lambda · " in catalogue.content.decode()


def test_gpu_page_compares_an_llm_figure_only_with_the_same_configuration(client):
    """The RTX 4090 page showed its llama.cpp 8B prompt rate as 13.8x the baseline's: it was set
    against the baseline's row of another model, the most-submitted one of the same workload."""
    world = world_build(rows=DASHBOARD_WORLD)
    pp = WorkloadFactory(slug="llamacpp-pp", category="inference", unit="tokens/s")
    ResultAggregateFactory(gpu=world.gpus["baseline"], workload=pp, median=800.0, comparison_key="70b", n=5)
    ResultAggregateFactory(gpu=world.gpus["baseline"], workload=pp, median=6000.0, comparison_key="8b")
    ResultAggregateFactory(gpu=world.gpus["rtx4090"], workload=pp, median=9000.0, comparison_key="8b")
    ResultAggregateFactory(gpu=world.gpus["rtx4090"], workload=pp, median=700.0, comparison_key="13b")
    page = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["rtx4090"].slug])).context["page"]
    relative = {a.median: a.relative for a in page.aggregates if a.workload == pp.name}
    assert relative == {9000.0: pytest.approx(1.5), 700.0: None}
    assert {a.category for a in page.aggregates if a.workload == pp.name} == {"Inference"}


def test_architectures_page(client):
    world_build(rows=DASHBOARD_WORLD)
    response = client.get(reverse("dashboard:architectures"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Ada Lovelace" in html and "Tensor Cores gen 4" in html
    timeline = _figure(html, "fig-timeline")
    assert "Hopper" in timeline["data"][0]["text"]
    assert len(_csv(client.get(reverse("dashboard:architectures"), {"format": "csv"}))) == 3


def test_open_data_page_and_table_download(client):
    world_build(rows=DASHBOARD_WORLD)
    assert client.get(reverse("dashboard:open-data")).status_code == 200
    gpus = _csv(client.get(reverse("dashboard:open-data"), {"table": "gpus"}))
    assert {"a100-sxm4-80-gb", "hostile-card"} <= {r["slug"] for r in gpus}
    assert client.get(reverse("dashboard:open-data"), {"table": "secrets"}).status_code == 404


def test_hostile_names_are_escaped_in_html_and_figures(client):
    world = world_build(rows=DASHBOARD_WORLD)
    for url in (
        reverse("dashboard:rankings") + "?segment=consumer&show=all",
        reverse("dashboard:tiers") + "?use_case=inference-16bit",
        reverse("dashboard:gpu-detail", args=[world.gpus["hostile"].slug]),
        reverse("dashboard:compare") + f"?gpus={world.gpus['hostile'].slug},rtx-4090",
    ):
        html = client.get(url).content.decode()
        assert "<script>window.__pwned" not in html, url
        assert "<img src=x" not in html, url
        assert "&lt;script&gt;window.__pwned" in html or "\\u003cscript\\u003e" in html, url
    html = client.get(reverse("dashboard:rankings"), {"segment": "consumer", "show": "all"}).content.decode()
    bar = _figure(html, "fig-bar")
    labels = [n for t in bar["data"] for n in t["y"]]
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt; Card" in labels
    hover = [c[0] for t in bar["data"] for c in t["customdata"]]
    assert HOSTILE_GPU not in hover
    page = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["hostile"].slug])).content.decode()
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
    ("url", "limit", "shows"),
    [
        (lambda w: reverse("dashboard:rankings") + "?currency=CNY", 12, ("H100 SXM5 80 GB", "CNY")),
        (lambda w: reverse("dashboard:rankings") + "?mode=buy", 12, ("H100 SXM5 80 GB", "RTX 4090")),
        (lambda w: reverse("dashboard:tiers"), 12, ("H100 SXM5 80 GB", "RTX 4090")),
        # The GPU page and the comparison compute every use case: the two LLM ones add the
        # fitted model's data check (3 queries) and their measured rows (1) each; the GPU page
        # also reads the GPU's LLM figures and the configurations reported not to fit (2); the
        # comparison reads the typical and the cheapest price through gpu_rent_prices (3 each).
        # Ranked in USD to rent, no use case reads the exchange-rate table.
        # The 8-bit and 16-bit inference use cases read the measured serving points (1 each).
        (
            lambda w: reverse("dashboard:gpu-detail", args=[w.gpus["baseline"].slug]),
            66,
            ("A100 SXM4 80 GB", "gpu_8x_a100"),
        ),
        (
            lambda w: reverse("dashboard:compare") + "?gpus=a100-sxm4-80-gb,h100-sxm5-80-gb,rtx-4090",
            55,  # one for the columns' multi-GPU figures, two for the measured serving points
            ("A100 SXM4 80 GB", "H100 SXM5 80 GB", "RTX 4090"),
        ),
        (lambda w: reverse("dashboard:architectures"), 3, ("Ampere", "Hopper")),
        (lambda w: reverse("dashboard:open-data"), 1, ("<h1>Open data</h1>",)),
    ],
)
@pytest.mark.parametrize("extra", [0, 25])
def test_query_count_is_bounded(client, django_assert_max_num_queries, url, limit, shows, extra):
    world = world_build(rows=DASHBOARD_WORLD)
    _bulk(extra)
    # What the writers' follow-up stores (the factories write no aggregates through the services):
    # the rankings then read each GPU's distinct submitters, not its results.
    ranking_submitters_refresh()
    with django_assert_max_num_queries(limit):
        response = client.get(url(world))
    assert response.status_code == 200
    html = response.content.decode()
    assert all(text in html for text in shows), [text for text in shows if text not in html]


def test_gpu_page_separates_pcie_from_memory_and_names_workloads(client):
    """The H100 page listed "memory 55.1 GB/s vs 3350 = 2%": a PCIe transfer against HBM bandwidth.
    Charts and tables named workloads by slug (`bert_large_squad`)."""
    world = world_build(rows=DASHBOARD_WORLD)
    world.gpus["h100"].bus_interface = "PCIe 5.0 x16"
    world.gpus["h100"].memory_bandwidth_gbs = 3350.0
    world.gpus["h100"].save()
    for slug, unit, median in (("pcie-d2h", "GB/s", 55.1), ("membw-copy", "GB/s", 3028.9), ("matmul", "TFLOPS", 680.0)):
        workload = WorkloadFactory(slug=slug, category="micro", unit=unit)
        ResultAggregateFactory(
            gpu=world.gpus["h100"], workload=workload, precision="bf16" if slug == "matmul" else "fp32", median=median
        )
    response = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["h100"].slug]))
    pcie = next(e for e in response.context["page"].efficiency if e.kind == "host link")
    assert pcie.peak == pytest.approx(63.0, abs=0.1) and pcie.efficiency == pytest.approx(55.1 / 63.0, rel=1e-3)
    memory = next(e for e in response.context["page"].efficiency if e.kind == "memory")
    assert memory.peak == 3350.0 and memory.measured == 3028.9
    html = response.content.decode()
    assert 'id="efficiency-host-link"' in html and "Host-to-GPU" not in html and "GPU-to-host transfer (PCIe)" in html
    box = _figure(html, "fig-box")
    labels = [x for trace in box["data"] for x in trace["x"]]
    assert labels and all("bert_large_squad" not in x and "resnet50" not in x for x in labels)
    assert any(x.startswith("BERT-Large fine-tuning (SQuAD)") for x in labels)
    table = html[html.index('id="results"') :]
    assert "bert_large_squad" not in re.sub(r"<[^>]+>", "", table.split("</table>")[0])  # links may carry it


def _table_gpus(html: str) -> list[str]:
    table = html.split('id="ranking-table"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<td class="card-name"><a href="/gpus/([^/]+)/">', table)


def test_the_ranking_table_is_paged_and_keeps_prices_typed_on_other_pages(client, monkeypatch):
    from dashboard import fragments

    world_build(rows=DASHBOARD_WORLD)
    monkeypatch.setattr(fragments, "RANKING_ROWS_PER_PAGE", 2)
    everything = rankings_compute(params=RankingParams(show="all"))
    slugs = [row.gpu_slug for row in everything.rows]
    assert len(slugs) > 4
    first = client.get(reverse("dashboard:rankings"), {"show": "all"}).content.decode()
    assert _table_gpus(first) == slugs[:2]
    assert "Page 1 of" in first and "page=2" in first and "Previous" not in first.split('id="ranking-pages"')[1]
    # the summary and the bar chart still count every GPU
    assert f'<span class="big">{len(slugs)}</span>' in first
    assert len({n for trace in _figure(first, "fig-bar")["data"] for n in trace["y"]}) == len(slugs)
    second = client.get(reverse("dashboard:rankings"), {"show": "all", "page": "2"}).content.decode()
    assert _table_gpus(second) == slugs[2:4] and "Page 2 of" in second
    past_the_end = client.get(reverse("dashboard:rankings"), {"show": "all", "page": "999"}).content.decode()
    assert _table_gpus(past_the_end) == slugs[(len(slugs) - 1) // 2 * 2 :]
    for nonsense in ("0", "-1", "x", "1" * 5000):
        assert (
            _table_gpus(client.get(reverse("dashboard:rankings"), {"show": "all", "page": nonsense}).content.decode())
            == slugs[:2]
        )
    # a price typed for a GPU of another page goes on with the filter form
    priced = client.get(
        reverse("dashboard:rankings"), {"show": "all", f"gpu_price[{slugs[3]}]": "1.5"}
    ).content.decode()
    assert f'<input type="hidden" name="gpu_price[{slugs[3]}]" form="ranking-filters" value="1.5">' in priced
    assert f'type="hidden" name="gpu_price[{slugs[0]}]"' not in priced


def test_a_figure_script_parses_back_to_its_value_and_cannot_close_its_element():
    from dashboard.templatetags.charts import figure_script

    value = {"name": "</script><script>alert(1)</script> & 显卡 ±", "x": [1.5, 2.0], "none": None}
    html = str(figure_script(value, "fig-test"))
    body = html.removeprefix('<script id="fig-test" type="application/json">').removesuffix("</script>")
    assert "<" not in body and ">" not in body and "&" not in body
    assert json.loads(body) == value
    assert "显卡" in body and ", " not in body  # UTF-8 as it is, no spaces between items
