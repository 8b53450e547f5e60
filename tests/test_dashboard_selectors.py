"""Rankings and tiers read from the database: parameters, arithmetic end to end, query counts."""

from __future__ import annotations

import datetime as dt
import math
import statistics
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from api.serializers import RankingRowSerializer
from benchmarks_app.models import Workload
from catalog.models import Gpu, PurchasePrice
from catalog.services.prices.currency import ecb_rate
from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors.ranking_params import RankingParamError, RankingParams, ranking_params_from_query
from dashboard.selectors.ranking_rows import ROW_COLUMNS
from dashboard.selectors.rankings import rankings_compute
from dashboard.selectors.standings import gpu_standings_compute
from dashboard.selectors.tiers import tiers_compute
from dashboard.views import RANKING_CSV_COLUMNS, RANKING_CSV_HEADER
from tests.factories import (
    ArchitectureFactory,
    ExchangeRateFactory,
    GpuFactory,
    OfferFactory,
    PurchasePriceFactory,
    ResultAggregateFactory,
    TensorPeakFactory,
    VendorFactory,
    WorkloadFactory,
)
from tests.world import DASHBOARD_WORLD, world_build


def test_params_defaults_and_round_trip():
    params = ranking_params_from_query({})
    assert params.use_case == "training" and params.precision == "16bit" and params.baseline == "a100-sxm4-80-gb"
    assert params.to_query() == {}
    custom = ranking_params_from_query(
        {"use_case": "inference-8bit", "min_vram": "24", "currency": "cny", "price": "spot"}
    )
    assert custom.precision == "8bit" and custom.min_vram == 24.0 and custom.currency == "CNY"
    assert ranking_params_from_query(custom.to_query()) == custom


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"use_case": "mining"}, "use_case"),
        ({"use_case": "inference-8bit", "precision": "16bit"}, "precision"),
        ({"min_vram": "-1"}, "min_vram"),
        ({"min_vram": "lots"}, "min_vram"),
        ({"currency": "EUR"}, "currency"),
        ({"mode": "lease"}, "mode"),
        ({"vendor": "<script>"}, "vendor"),
        ({"sort": "name"}, "sort"),
        ({"segment": "spaceship"}, "segment"),
    ],
)
def test_params_reject_bad_values_naming_the_field(query, field):
    with pytest.raises(RankingParamError) as error:
        ranking_params_from_query(query)
    assert error.value.field == field


@pytest.mark.django_db
def test_rankings_measured_estimated_prices_and_tiers():
    world_build(rows=DASHBOARD_WORLD)
    ranking = rankings_compute(params=RankingParams(show="all", price="cheapest"))
    rows = {r.gpu_slug: r for r in ranking.rows}
    assert ranking.baseline_measured
    base, h100, rtx, small = rows["a100-sxm4-80-gb"], rows["h100-sxm5-80-gb"], rows["rtx-4090"], rows["rtx-3060"]
    assert base.perf == pytest.approx(1.0) and base.perf_basis == "measured"
    assert h100.perf == pytest.approx(math.sqrt(2.5 * 3.0))
    assert h100.groups == 2 and h100.n == 3
    assert rtx.perf == pytest.approx(math.sqrt(1.2 * 0.8))
    assert rtx.distinct_submitters == 2  # lambda and user-7
    # no measurement: the spec estimate, marked as such, with no sample size
    assert small.perf_basis == "estimated" and small.n == 0 and small.perf_measured is None
    assert small.perf == pytest.approx(math.sqrt(50 / 300 * 360 / 2000))
    # cheapest on-demand per GPU-hour: 8-GPU instance at 16.00 beats the 3.00 single
    assert base.price.amount == pytest.approx(2.0) and base.price.providers == 2
    assert base.perf_per_dollar == pytest.approx(0.5)
    assert base.perf_per_kw == pytest.approx(2.5)
    # ranked by perf per dollar, best first
    assert [r.gpu_slug for r in ranking.rows][:2] == ["rtx-4090", "rtx-3060"]
    assert ranking.rows[0].rank == 1
    # tiers only among GPUs meeting the 24 GB training floor
    assert rtx.tier == "S" and h100.tier == "B" and base.tier == "B"
    assert small.tier is None and not small.meets_memory_floor


@pytest.mark.django_db
def test_price_modes_filters_and_currency():
    world_build(rows=DASHBOARD_WORLD)
    rows = lambda **kw: {r.gpu_slug: r for r in rankings_compute(params=RankingParams(show="all", **kw)).rows}  # noqa: E731
    # typical (default; "median" is an accepted alias): the median of the providers' cheapest, 2.0 and 3.0,
    # the middle two averaged
    assert rows(price="median")["a100-sxm4-80-gb"].price.amount == pytest.approx(2.5)
    assert (
        rows()["a100-sxm4-80-gb"].price.amount == pytest.approx(2.5) and rows()["a100-sxm4-80-gb"].price.minimum == 2.0
    )
    spot = rows(price="spot")
    assert spot["a100-sxm4-80-gb"].price.amount == pytest.approx(1.0) and spot["h100-sxm5-80-gb"].price.amount is None
    assert rows(provider="lambda")["a100-sxm4-80-gb"].price.amount == pytest.approx(2.0)
    assert rows(region="eu-")["a100-sxm4-80-gb"].price.amount == pytest.approx(3.0)
    assert set(rows(min_vram=30)) == {"a100-sxm4-80-gb", "h100-sxm5-80-gb"}
    assert set(rows(segment="consumer")) == {"rtx-4090", "rtx-3060", "hostile-card"}
    assert set(rows(basis="measured")) == {"a100-sxm4-80-gb", "h100-sxm5-80-gb", "rtx-4090"}

    # CNY at the newest ECB reference rate, with its date (a table rate does not override it).
    ExchangeRateFactory(usd_per_unit="0.125")
    cny = rankings_compute(params=RankingParams(currency="CNY", price="cheapest"))
    base = next(r for r in cny.rows if r.gpu_slug == "a100-sxm4-80-gb")
    ecb = ecb_rate("CNY", dt.date.today())
    assert cny.currency == "CNY" and base.currency == "CNY" and cny.exchange_rate["date"] == ecb.date
    assert base.price.amount == pytest.approx(2.0 / float(ecb.usd_per_unit), rel=1e-3)


@pytest.mark.django_db
def test_buy_mode_uses_purchase_prices_then_launch_price():
    world = world_build(rows=DASHBOARD_WORLD)
    PurchasePriceFactory(gpu=world.gpus["baseline"], price="10000")
    PurchasePriceFactory(gpu=world.gpus["rtx4090"], condition="used", price="1000")
    ExchangeRateFactory(currency="CNY", usd_per_unit="0.125")
    PurchasePriceFactory(gpu=world.gpus["small"], condition="used", price="800", currency="CNY")
    new = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(mode="buy")).rows}
    assert new["a100-sxm4-80-gb"].price.amount == pytest.approx(10000) and new[
        "a100-sxm4-80-gb"
    ].perf_per_dollar == pytest.approx(0.1)
    assert new["rtx-4090"].price.amount == pytest.approx(1599) and "launch" in new["rtx-4090"].price.source
    used = {
        r.gpu_slug: r for r in rankings_compute(params=RankingParams(mode="buy", condition="used", show="all")).rows
    }
    assert used["rtx-4090"].price.amount == pytest.approx(1000)
    observed_on = PurchasePrice.objects.get(gpu=world.gpus["small"]).observed_on
    assert used["rtx-3060"].price.amount == pytest.approx(800 * float(ecb_rate("CNY", observed_on).usd_per_unit))
    assert used["a100-sxm4-80-gb"].price.amount is None


@pytest.mark.django_db
def test_unknown_baseline_and_unmeasured_baseline():
    world_build(rows=DASHBOARD_WORLD)
    with pytest.raises(RankingParamError) as error:
        rankings_compute(params=RankingParams(baseline="no-such-gpu"))
    assert error.value.field == "baseline"
    # baseline without measurements: everything becomes estimated, with a warning
    ranking = rankings_compute(params=RankingParams(baseline="rtx-3060", show="all"))
    assert not ranking.baseline_measured and ranking.warnings
    assert {r.perf_basis for r in ranking.rows} == {"estimated"}
    assert next(r for r in ranking.rows if r.gpu_slug == "rtx-3060").perf == pytest.approx(1.0)


@pytest.mark.django_db
def test_tiers_compute_groups_rows():
    world_build(rows=DASHBOARD_WORLD)
    tiers = tiers_compute(params=RankingParams(price="cheapest"))
    assert [r.gpu_slug for r in tiers.tiers["S"]] == ["rtx-4090"]
    assert {r.gpu_slug for r in tiers.tiers["B"]} == {"h100-sxm5-80-gb", "a100-sxm4-80-gb"}
    assert {r.gpu_slug for r in tiers.below_floor} == {"rtx-3060", "hostile-card"}
    assert tiers.memory_floor_gib == 24


@pytest.mark.django_db
def test_query_count_does_not_grow_with_data(django_assert_max_num_queries):
    world_build(rows=DASHBOARD_WORLD)
    workload = WorkloadFactory(slug="resnet50", category="training")
    for i in range(30):
        gpu = GpuFactory(name=f"Extra {i}", slug=f"extra-{i}")
        TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=100.0 + i)
        OfferFactory(gpu=gpu)
        ResultAggregateFactory(gpu=gpu, workload=workload, median=50.0 + i)
        PurchasePriceFactory(gpu=gpu)
    for mode in ("rent", "buy"):
        with django_assert_max_num_queries(9):
            ranking = rankings_compute(params=RankingParams(mode=mode, currency="CNY", show="all"))
        assert len(ranking.rows) == 35


def _volta_card(name="V100 16 GB", slug="v100-16", memory=16.0):
    """A measured Volta card: FP16 tensor cores, no BF16, no INT8/FP8 (as the curated V100s)."""
    volta = ArchitectureFactory(
        slug=f"volta-{slug}", name="Volta", tensor_core_generation=1, supports_bf16=False, supports_fp8=False
    )
    gpu = GpuFactory(
        name=name, slug=slug, memory_gib=memory, memory_bandwidth_gbs=900.0, architecture=volta, is_curated=True
    )
    TensorPeakFactory(gpu=gpu, precision="fp16", dense_tflops=125.0)
    TensorPeakFactory(gpu=gpu, precision="bf16", supported=False, dense_tflops=None)
    TensorPeakFactory(gpu=gpu, precision="int8", supported=False, dense_tflops=None)
    OfferFactory(gpu=gpu, current_price_per_hour=Decimal("0.05"))  # the cheapest card of all
    return gpu


@pytest.mark.django_db
def test_gpus_that_cannot_do_the_use_case_are_hidden_with_a_count():
    """A V100 16 GB (16 GB and no BF16) must not rank #1 for training: it is hidden by default,
    counted, and listed with its reasons on request; ranks count only the GPUs shown."""
    world = world_build(rows=DASHBOARD_WORLD)
    v100 = _volta_card()
    resnet = Workload.objects.get(slug="resnet50")
    ResultAggregateFactory(gpu=v100, workload=resnet, median=40.0)
    ranking = rankings_compute(params=RankingParams())
    shown = {r.gpu_slug for r in ranking.rows}
    assert v100.slug not in shown and world.gpus["small"].slug not in shown
    assert {r.gpu_slug for r in ranking.ineligible_rows} == {
        v100.slug,
        world.gpus["small"].slug,
        world.gpus["hostile"].slug,
    }
    assert ranking.hidden_ineligible == 3
    assert all(r.eligible for r in ranking.rows) and [r.rank for r in ranking.rows] == [1, 2, 3]
    everything = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(show="all")).rows}
    assert everything[v100.slug].ineligible_reasons == ["16 GB is below the 24 GB floor", "no BF16 tensor cores"]
    assert everything[v100.slug].rank == 1  # it is still the best value: shown, marked, when asked
    # a 32 GB V100 has the memory but still no BF16
    big = _volta_card("V100 32 GB", "v100-32", memory=32.0)
    row = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(show="all")).rows}[big.slug]
    assert not row.eligible and row.meets_memory_floor and row.ineligible_reasons == ["no BF16 tensor cores"]
    tiers = tiers_compute(params=RankingParams())
    assert big.slug in {r.gpu_slug for r in tiers.lacking_precision}
    assert v100.slug in {r.gpu_slug for r in tiers.below_floor}
    assert all(big.slug not in {r.gpu_slug for r in rows} for rows in tiers.tiers.values())


@pytest.mark.django_db
def test_8bit_inference_needs_int8_or_fp8_tensor_cores():
    world = world_build(rows=DASHBOARD_WORLD)
    v100 = _volta_card(memory=32.0)
    # measured at INT8 (DP4A on the vector units runs, slowly): a figure, yet no INT8 tensor cores
    infer = WorkloadFactory(slug="transformer-infer", category="inference")
    for gpu, median in ((world.gpus["baseline"], 1000.0), (v100, 300.0)):
        ResultAggregateFactory(gpu=gpu, workload=infer, precision="int8", median=median)
    ranking = rankings_compute(params=RankingParams(use_case="inference-8bit"))
    hidden = {r.gpu_slug: r.ineligible_reasons for r in ranking.ineligible_rows}
    assert hidden[v100.slug] == ["no INT8 or FP8 tensor cores"]
    shown = {r.gpu_slug for r in ranking.rows}
    assert {"a100-sxm4-80-gb", "h100-sxm5-80-gb"} <= shown  # INT8 figures on record


def _two_more_measured() -> None:
    """Two more measured GPUs beside the world's three: enough for a checked estimate."""
    resnet = Workload.objects.get(slug="resnet50")
    for i, (bf16, bandwidth, median) in enumerate([(200.0, 1500.0, 80.0), (600.0, 2500.0, 190.0)]):
        gpu = GpuFactory(name=f"Measured {i}", slug=f"measured-{i}", memory_gib=48.0, memory_bandwidth_gbs=bandwidth)
        TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=bf16)
        ResultAggregateFactory(gpu=gpu, workload=resnet, median=median)


@pytest.mark.django_db
def test_estimate_is_fitted_on_every_measured_gpu_and_carries_its_error():
    """With five measured GPUs the estimate is checked; its error is on every estimated row, and
    a filter that hides measured GPUs does not change anybody's estimate."""
    world = world_build(rows=DASHBOARD_WORLD)
    _two_more_measured()
    ranking = rankings_compute(params=RankingParams(show="all"))
    assert ranking.estimate.checked and ranking.estimate.checked_on == 5
    rows = {r.gpu_slug: r for r in ranking.rows}
    small = rows[world.gpus["small"].slug]
    consumer_misses = [m.miss for m in ranking.estimate.misses if m.gpu_class == "consumer"]
    assert consumer_misses  # the measured RTX 4090
    assert small.perf_basis == "estimated" and small.estimate_error_pct == pytest.approx(
        statistics.median(consumer_misses) * 100
    )
    datacenter_misses = [m.miss for m in ranking.estimate.misses if m.gpu_class == "datacenter"]
    assert rows["a100-sxm4-80-gb"].estimate_error_pct == pytest.approx(statistics.median(datacenter_misses) * 100)
    consumer = rankings_compute(params=RankingParams(show="all", segment="consumer"))
    assert consumer.estimate == ranking.estimate
    assert {r.gpu_slug: r.perf for r in consumer.rows}[world.gpus["small"].slug] == pytest.approx(small.perf)


@pytest.mark.django_db
def test_estimate_for_an_unmeasured_vendor_is_outside_the_measured_range():
    """A spec-only estimate of a vendor nobody measured carried the miss measured on NVIDIA's GPUs
    ("3.30x A100 ±5 %" for MI300X); its error is unknown, and it says so."""
    world_build(rows=DASHBOARD_WORLD)
    _two_more_measured()
    amd = VendorFactory(name="AMD", slug="amd")
    mi = GpuFactory(
        name="Instinct MI300X", slug="instinct-mi300x", vendor=amd, memory_gib=192.0, memory_bandwidth_gbs=5300
    )
    TensorPeakFactory(gpu=mi, precision="bf16", dense_tflops=1307.0)
    OfferFactory(gpu=mi, current_price_per_hour=Decimal("0.50"))
    ranking = rankings_compute(params=RankingParams(show="all"))
    row = {r.gpu_slug: r for r in ranking.rows}["instinct-mi300x"]
    assert row.perf_basis == "estimated"
    assert row.estimate_error_pct is None and row.estimate_outside_range and row.estimate_outside_reasons == ["vendor"]
    # Its error unknown, it is ranked and graded at half its estimate (off by 100 %).
    assert row.ranked_value == pytest.approx(row.perf_per_dollar / 2)
    graded = [r for r in ranking.rows if r.eligible and r.ranked_value]
    assert ranking.tier_mark == max(r.ranked_value for r in graded)
    order = "SABCD"
    by_value = sorted(graded, key=lambda r: -r.ranked_value)
    assert [order.index(r.tier) for r in by_value] == sorted(order.index(r.tier) for r in by_value)
    body = Client().get(reverse("dashboard:rankings"), {"show": "all"}).content.decode()
    assert "outside the measured range, error unknown" in body


@pytest.mark.django_db
def test_estimate_error_is_one_field_in_percent_in_the_api_and_csv(client):
    """The API and CSV carried ``estimate_error`` (a fraction) beside ``estimate_error_pct`` (a
    percentage, LLM use cases only): one field, in percent, for every use case."""
    world = world_build(rows=DASHBOARD_WORLD)
    _two_more_measured()
    ranking = rankings_compute(params=RankingParams(show="all"))
    typical = {r.gpu_slug: r for r in ranking.rows}[world.gpus["small"].slug].estimate_error_pct
    api = client.get("/api/v1/rankings/", {"show": "all"}).json()
    rows = {r["gpu"]: r for r in api["results"]}
    assert "estimate_error" not in rows[world.gpus["small"].slug]
    assert typical is not None and typical > 1
    assert rows[world.gpus["small"].slug]["estimate_error_pct"] == pytest.approx(typical)
    response = client.get("/", {"show": "all", "format": "csv"})
    csv = b"".join(response.streaming_content).decode().splitlines()
    header = csv[0].split(",")
    assert header.count("estimate_error_pct") == 1 and "estimate_error" not in header


@pytest.mark.django_db
def test_a_gpu_measured_only_on_a_newer_suite_is_measured_via_a_bridge():
    """Lambda's 2025 suite: B200 never ran the suite the A100 baseline ran; H100 ran both."""
    world = world_build(rows=DASHBOARD_WORLD)
    new_suite = WorkloadFactory(slug="resnet50", version="2.0", category="training")
    ResultAggregateFactory(gpu=world.gpus["h100"], workload=new_suite, median=1000.0)
    b200 = GpuFactory(name="B200", slug="b200", memory_gib=180.0, memory_bandwidth_gbs=8000.0)
    TensorPeakFactory(gpu=b200, precision="bf16", dense_tflops=2250.0)
    ResultAggregateFactory(gpu=b200, workload=new_suite, median=1600.0)
    row = {r.gpu_slug: r for r in rankings_compute(params=RankingParams()).rows}["b200"]
    h100 = math.sqrt(2.5 * 3.0)
    assert row.perf_basis == "measured" and row.perf == pytest.approx(1.6 * h100)
    assert row.measured_via == "H100 SXM5 80 GB" and row.n == 1


@pytest.mark.django_db
def test_standings_are_the_rankings_rows_of_those_gpus():
    world_build(rows=DASHBOARD_WORLD)
    gpus = list(Gpu.objects.filter(slug__in=["a100-sxm4-80-gb", "h100-sxm5-80-gb", "rtx-4090", "rtx-3060"]))
    standings = gpu_standings_compute(gpus=gpus, graded=True)
    compared = gpu_standings_compute(gpus=gpus)
    for use_case in USE_CASES:
        ranking = rankings_compute(params=RankingParams(use_case=use_case, show="all"))
        full = {row.gpu_id: row for row in ranking.rows if row.gpu_id in {g.id for g in gpus}}
        read = standings[use_case].rows
        assert set(read) == set(full) == set(compared[use_case].rows), use_case
        for gpu_id, row in full.items():
            shown = (row.perf, row.perf_basis, row.n, row.price, row.perf_per_dollar, row.eligible, row.tier)
            got = read[gpu_id]
            assert (got.perf, got.perf_basis, got.n, got.price, got.perf_per_dollar, got.eligible, got.tier) == shown
            assert compared[use_case].rows[gpu_id].perf == row.perf
        assert standings[use_case].baseline_name == ranking.baseline_name


def test_the_api_row_and_the_csv_read_the_published_columns():
    assert list(RankingRowSerializer().fields) == list(ROW_COLUMNS)
    assert set(RANKING_CSV_COLUMNS) <= set(ROW_COLUMNS)
    assert RANKING_CSV_HEADER[:4] == ("rank", "gpu_slug", "gpu_name", "vendor")
