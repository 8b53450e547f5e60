"""Rankings and tiers read from the database: parameters, arithmetic end to end, query counts."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from catalog.models import PurchasePrice
from catalog.services.prices.currency import ecb_rate
from dashboard.selectors import (
    RankingParamError,
    RankingParams,
    ranking_params_from_query,
    rankings_compute,
    tiers_compute,
)
from tests.dashboard_world import build_world
from tests.factories import GpuFactory, OfferFactory, TensorPeakFactory
from tests.factories_dashboard import ExchangeRateFactory, PurchasePriceFactory, ResultAggregateFactory, WorkloadFactory


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
    build_world()
    ranking = rankings_compute(params=RankingParams(price="cheapest"))
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
    assert base.price == pytest.approx(2.0) and base.price_providers == 2
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
    build_world()
    rows = lambda **kw: {r.gpu_slug: r for r in rankings_compute(params=RankingParams(**kw)).rows}  # noqa: E731
    # typical (default; "median" is its former name): the higher middle of the providers' cheapest, 2.0 and 3.0
    assert rows(price="median")["a100-sxm4-80-gb"].price == pytest.approx(3.0)
    assert rows()["a100-sxm4-80-gb"].price == pytest.approx(3.0) and rows()["a100-sxm4-80-gb"].price_min == 2.0
    spot = rows(price="spot")
    assert spot["a100-sxm4-80-gb"].price == pytest.approx(1.0) and spot["h100-sxm5-80-gb"].price is None
    assert rows(provider="lambda")["a100-sxm4-80-gb"].price == pytest.approx(2.0)
    assert rows(region="eu-")["a100-sxm4-80-gb"].price == pytest.approx(3.0)
    assert set(rows(min_vram=30)) == {"a100-sxm4-80-gb", "h100-sxm5-80-gb"}
    assert set(rows(segment="consumer")) == {"rtx-4090", "rtx-3060", "hostile-card"}
    assert set(rows(basis="measured")) == {"a100-sxm4-80-gb", "h100-sxm5-80-gb", "rtx-4090"}

    # CNY at the newest ECB reference rate, with its date (a table rate does not override it).
    ExchangeRateFactory(usd_per_unit="0.125")
    cny = rankings_compute(params=RankingParams(currency="CNY", price="cheapest"))
    base = next(r for r in cny.rows if r.gpu_slug == "a100-sxm4-80-gb")
    ecb = ecb_rate("CNY", dt.date.today())
    assert cny.currency == "CNY" and base.currency == "CNY" and cny.exchange_rate["date"] == ecb.date
    assert base.price == pytest.approx(2.0 / float(ecb.usd_per_unit), rel=1e-3)


@pytest.mark.django_db
def test_buy_mode_uses_purchase_prices_then_launch_price():
    world = build_world()
    PurchasePriceFactory(gpu=world.baseline, price="10000")
    PurchasePriceFactory(gpu=world.rtx4090, condition="used", price="1000")
    ExchangeRateFactory(currency="CNY", usd_per_unit="0.125")
    PurchasePriceFactory(gpu=world.small, condition="used", price="800", currency="CNY")
    new = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(mode="buy")).rows}
    assert new["a100-sxm4-80-gb"].price == pytest.approx(10000) and new[
        "a100-sxm4-80-gb"
    ].perf_per_dollar == pytest.approx(0.1)
    assert new["rtx-4090"].price == pytest.approx(1599) and "launch" in new["rtx-4090"].price_source
    used = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(mode="buy", condition="used")).rows}
    assert used["rtx-4090"].price == pytest.approx(1000)
    observed_on = PurchasePrice.objects.get(gpu=world.small).observed_on
    assert used["rtx-3060"].price == pytest.approx(800 * float(ecb_rate("CNY", observed_on).usd_per_unit))
    assert used["a100-sxm4-80-gb"].price is None


@pytest.mark.django_db
def test_unknown_baseline_and_unmeasured_baseline():
    build_world()
    with pytest.raises(RankingParamError) as error:
        rankings_compute(params=RankingParams(baseline="no-such-gpu"))
    assert error.value.field == "baseline"
    # baseline without measurements: everything becomes estimated, with a warning
    ranking = rankings_compute(params=RankingParams(baseline="rtx-3060"))
    assert not ranking.baseline_measured and ranking.warnings
    assert {r.perf_basis for r in ranking.rows} == {"estimated"}
    assert next(r for r in ranking.rows if r.gpu_slug == "rtx-3060").perf == pytest.approx(1.0)


@pytest.mark.django_db
def test_tiers_compute_groups_rows():
    build_world()
    tiers = tiers_compute(params=RankingParams(price="cheapest"))
    assert [r.gpu_slug for r in tiers.tiers["S"]] == ["rtx-4090"]
    assert {r.gpu_slug for r in tiers.tiers["B"]} == {"h100-sxm5-80-gb", "a100-sxm4-80-gb"}
    assert {r.gpu_slug for r in tiers.below_floor} == {"rtx-3060", "hostile-card"}
    assert tiers.memory_floor_gib == 24


@pytest.mark.django_db
def test_query_count_does_not_grow_with_data(django_assert_max_num_queries):
    build_world()
    workload = WorkloadFactory(slug="resnet50", category="training")
    for i in range(30):
        gpu = GpuFactory(name=f"Extra {i}", slug=f"extra-{i}")
        TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=100.0 + i)
        OfferFactory(gpu=gpu)
        ResultAggregateFactory(gpu=gpu, workload=workload, median=50.0 + i)
        PurchasePriceFactory(gpu=gpu)
    for mode in ("rent", "buy"):
        with django_assert_max_num_queries(9):
            ranking = rankings_compute(params=RankingParams(mode=mode, currency="CNY"))
        assert len(ranking.rows) == 35
