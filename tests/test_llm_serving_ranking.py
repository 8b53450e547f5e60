"""The LLM serving ranking at a chosen interactivity, on the real curated catalogue with measured
serving points and offers written here: the target, rentable configurations, prices nobody
offers, the user's own price, the tiers, and the parameters' errors (page and API)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from benchmarks_app.models import SourceKind, TrustLabel
from catalog.models import Gpu
from dashboard.selectors.ranking_params import RankingParamError, RankingParams, ranking_params_from_query
from llm.models import Interconnect, PerUserBasis, PrecisionStatus, Scenario, ServingPoint
from tests.factories import BenchmarkResultFactory, OfferFactory, ProviderFactory, WorkloadFactory
from tests.support import ranking_by_slug
from tests.world import LLM_WORLD

pytestmark = pytest.mark.django_db
WORLD = LLM_WORLD

H100, MI300X, H100_NVL = "h100-sxm5-80-gb", "radeon-instinct-mi300x", "h100-nvl-94-gb"
OFFLINE, SERVER, INTERACTIVE = Scenario.OFFLINE, Scenario.SERVER, Scenario.INTERACTIVE


def _point(gpu: Gpu, *, count: int, scenario: str, per_gpu: float, per_user: float | None) -> ServingPoint:
    """An MLPerf-like Llama 3.1 70B point at the ranking's workload (1,000 prompt and output tokens):
    Offline has no user rate, Server/Interactive their latency floor."""
    workload = WorkloadFactory(slug=f"mlperf-llama2-70b-99-{scenario}-tokens", version="5.1", category="inference")
    result = BenchmarkResultFactory(
        gpu=gpu, workload=workload, precision="fp8", gpu_count=count, value=per_gpu * count, trust=TrustLabel.LAB,
        params={"division": "closed", "availability": "available"}, comparison_key=f"{gpu.slug}-{scenario}-{count}",
    )  # fmt: skip
    return ServingPoint.objects.create(
        result=result, source_kind=SourceKind.MLPERF, gpu=gpu, gpu_count=count, interconnect=Interconnect.NVLINK,
        model="llama-3.1-70b", weight_precision="fp8", precision_status=PrecisionStatus.STATED, engine="TensorRT-LLM",
        engine_class="tensorrt-llm", input_tokens=1024, output_tokens=1024, scenario=scenario,
        tpot_limit_ms=None if per_user is None else 1000 / per_user, tokens_per_s_per_gpu=per_gpu,
        tokens_per_s_per_user=per_user,
        per_user_basis=PerUserBasis.UNDEFINED if per_user is None else PerUserBasis.LATENCY_FLOOR,
        measured_on=dt.date(2025, 9, 1), source="mlperf-inference-v5.1", source_title="MLPerf Inference v5.1",
    )  # fmt: skip


@pytest.fixture
def serving(world):
    gpus = {g.slug: g for g in Gpu.objects.filter(slug__in=[H100, MI300X, H100_NVL])}
    for count in (1, 8):  # H100 SXM is rented alone and in eights
        OfferFactory(provider=ProviderFactory(slug=f"cloud-{count}", name=f"Cloud {count}"), gpu=gpus[H100],
                     gpu_count=count, current_price_per_hour=Decimal("2.40") * count)  # fmt: skip
    OfferFactory(provider=ProviderFactory(slug="nvl-cloud", name="NVL Cloud"), gpu=gpus[H100_NVL], gpu_count=2,
                 current_price_per_hour=Decimal("4.00"))  # fmt: skip
    for slug, offline, server, interactive in ((H100, 3000, 2800, 1800), (MI300X, 3400, 2600, 1500)):
        _point(gpus[slug], count=8, scenario=OFFLINE, per_gpu=offline, per_user=None)
        _point(gpus[slug], count=8, scenario=SERVER, per_gpu=server, per_user=5.0)
        _point(gpus[slug], count=8, scenario=INTERACTIVE, per_gpu=interactive, per_user=25.0)
    # Measured only on four H100 NVL, which no offer rents in one machine.
    _point(gpus[H100_NVL], count=4, scenario=INTERACTIVE, per_gpu=2500, per_user=25.0)
    return gpus


def _rows(**query: str):
    return ranking_by_slug(ranking_params_from_query({"use_case": "llm-serving", "model_size": "70b", **query}))


def test_the_default_target_is_20_tokens_per_user_and_reads_between_server_and_interactive(serving):
    rows = _rows()
    h100 = rows[H100]
    assert h100.llm_target == "20" and h100.perf_basis == "measured" and h100.llm_gpu_count == 8
    assert 1800 < h100.perf < 2800  # between the Interactive (25/user) and Server (5/user) points
    assert h100.cost_per_million_tokens == pytest.approx(2.40 / (h100.perf * 3600) * 1e6)
    assert h100.llm_price_basis == "offer" and h100.llm_rented_counts == [1, 8]
    # Maximum throughput reads the Offline point.
    assert _rows(interactivity="max")[H100].perf == pytest.approx(3000)


def test_higher_interactivity_means_fewer_tokens_per_gpu_and_a_higher_cost(serving):
    costs = [_rows(interactivity=t)[H100].cost_per_million_tokens for t in ("max", "10", "20")]
    assert costs[0] < costs[1] < costs[2]
    # At 50 tokens/s per user no measured point reaches the target: the row is the model's estimate.
    fast = _rows(interactivity="50")[H100]
    assert fast.perf_basis == "estimated" and fast.llm_gpu_count in (1, 8)


def test_a_measured_gpu_nobody_rents_stays_in_the_ranking_without_a_price(serving):
    # Its row is its best configuration, measured (8 GPUs) or the model's on fewer, whichever does more.
    row = _rows()[MI300X]
    assert row.perf is not None and row.price.amount is None and row.llm_price_basis == "none"
    assert row.cost_per_million_tokens is None and row.tier is None and row.rank is None
    assert row.llm_rented_counts == []


def test_your_price_prices_it_and_overrides_an_offer(serving):
    rows = _rows(**{f"gpu_price[{MI300X}]": "2.10", f"gpu_price[{H100}]": "1.00"})
    mi300x, h100 = rows[MI300X], rows[H100]
    assert mi300x.price.amount == 2.10 and mi300x.llm_price_basis == "user" and mi300x.rank is not None
    assert mi300x.cost_per_million_tokens == pytest.approx(2.10 / (mi300x.perf * 3600) * 1e6)
    assert h100.price.amount == 1.00 and h100.llm_price_basis == "user"
    assert h100.cost_per_million_tokens == pytest.approx(1.00 / (h100.perf * 3600) * 1e6)


def test_no_row_uses_a_gpu_count_no_offer_rents(serving):
    rows = _rows()
    nvl = rows[H100_NVL]
    # The 4-GPU measurement is not rentable (offers rent 2): the row is an estimate on 1 or 2.
    assert nvl.llm_rented_counts == [2] and nvl.perf_basis == "estimated" and nvl.llm_gpu_count == 2
    for row in rows.values():
        if row.llm_rented_counts and row.perf is not None:
            assert row.llm_gpu_count in row.llm_rented_counts, row.gpu_slug


def test_tiers_grade_the_ranked_figure_and_follow_the_order(serving):
    rows = _rows(**{f"gpu_price[{MI300X}]": "2.10"})
    graded = sorted((r for r in rows.values() if r.tier), key=lambda r: -(r.ranked_value or 0))
    assert graded and graded[0].tier == "S"
    assert ["SABCD".index(r.tier) for r in graded] == sorted("SABCD".index(r.tier) for r in graded)


def test_parameters_are_validated_and_round_trip():
    params = ranking_params_from_query(
        {"use_case": "llm-serving", "interactivity": "50", f"gpu_price[{MI300X}]": "2.1"}
    )
    assert params.interactivity == "50" and params.gpu_price_map == {MI300X: 2.1}
    assert ranking_params_from_query(params.to_query()) == params
    assert RankingParams(use_case="llm-serving").interactivity == "20"
    assert RankingParams(use_case="llm-chat").interactivity == ""
    for query, field in (
        ({"interactivity": "7"}, "interactivity"),
        ({f"gpu_price[{MI300X}]": "cheap"}, f"gpu_price[{MI300X}]"),
        ({f"gpu_price[{MI300X}]": "0"}, f"gpu_price[{MI300X}]"),
        ({f"gpu_price[{MI300X}]": "nan"}, f"gpu_price[{MI300X}]"),
        ({"gpu_price[<b>x</b>]": "1"}, "gpu_price[<b>x</b>]"),
    ):
        with pytest.raises(RankingParamError) as error:
            ranking_params_from_query({"use_case": "llm-serving", **query})
        assert error.value.field == field


def test_api_exposes_target_and_basis_and_refuses_bad_values_by_name(serving, client):
    url = "/api/v1/rankings/?use_case=llm-serving&model_size=70b"
    data = client.get(f"{url}&gpu_price[{MI300X}]=2.10").json()
    assert data["params"]["interactivity"] == "20" and data["params"]["gpu_prices"] == {MI300X: 2.1}
    rows = {r["gpu"]: r for r in data["results"]}
    assert rows[MI300X]["llm_price_basis"] == "user" and rows[MI300X]["perf"]
    assert rows[H100]["measured"] and "1,000 prompt / 1,000 output tokens" in rows[H100]["llm_workload"]
    assert "1,000 prompt" in data["workload"] and data["gpus_considered"] >= len(rows)
    assert rows[H100]["llm_price_basis"] == "offer" and rows[H100]["llm_target"] == "20"
    assert rows[H100_NVL]["estimate_error_pct"] is None or rows[H100_NVL]["estimate_error_pct"] > 0
    for bad, field in (("interactivity=7", "interactivity"), ("gpu_price[nonesuch]=1", "gpu_price[nonesuch]"),
                       (f"gpu_price[{MI300X}]=-1", f"gpu_price[{MI300X}]")):  # fmt: skip
        response = client.get(f"{url}&{bad}")
        assert response.status_code == 400 and field in response.json()["errors"], bad


def test_page_shows_the_target_the_missing_price_and_the_price_field(serving, client):
    page = client.get(f"/?use_case=llm-serving&model_size=70b&interactivity=50&gpu_price[{MI300X}]=2.1")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'name="interactivity"' in html and '<option value="50" selected>' in html
    assert f'name="gpu_price[{H100}]"' in html and 'id="chart-serving"' in html
    assert "no rental price on record" in html or "your price" in html
    bad = client.get("/?use_case=llm-serving&interactivity=7")
    assert bad.status_code == 400 and "interactivity" in bad.content.decode()


def test_gpu_page_shows_its_serving_curve_per_model(serving, client):
    html = client.get(f"/gpus/{H100}/").content.decode()
    assert 'id="chart-serving"' in html
    figure = html.split('id="fig-serving" type="application/json">', 1)[1].split("</script>", 1)[0]
    assert "Llama 3.1 70B" in figure and "MLPerf Inference v5.1" in figure
    # Its two points with a user rate are drawn (Offline has none), at the typical price's cost.
    assert figure.count("per million output tokens") >= 2
