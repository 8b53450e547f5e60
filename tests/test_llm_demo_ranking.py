"""The LLM rankings on the demo data (`manage.py load_demo`: the real catalogue, prices, MLPerf and
llama.cpp tables), as an expert read them: 8x RTX 5090, 3090 and 4090 were ranked first for
serving Llama 3 70B on tensor parallelism that cost nothing over PCIe."""

from __future__ import annotations

import math

import pytest

from dashboard.selectors.ranking_params import ranking_params_from_query
from dashboard.selectors.ranking_rows import RankingRow
from llm.selectors.model_page import llm_landmarks
from llm.selectors.single_stream import stream_fit_current
from tests.support import ranking_by_slug

pytestmark = pytest.mark.django_db


def _serving(size: str, **query: str) -> dict[str, RankingRow]:
    return ranking_by_slug(ranking_params_from_query({"use_case": "llm-serving", "model_size": size, **query}))


# Measured on MLPerf (closed division, available systems) for both models and rented by no
# current offer in the demo's price data. The RTX PRO 6000 Blackwell Server Edition, the MI300X and
# the MI355X were among them until offers were matched to them (RTXPRO6000S on several clouds,
# Oracle's bare-metal AMD shapes): they are priced now (asserted below).
MEASURED_UNPRICED = {
    "70b": ("radeon-instinct-mi325x", "h200-nvl"),
    "8b": ("h200-nvl",),
}  # fmt: skip
MEASURED_NOW_PRICED = {"70b": ("rtx-pro-6000-blackwell-server", "radeon-instinct-mi300x", "radeon-instinct-mi355x"),
                       "8b": ("rtx-pro-6000-blackwell-server",)}  # fmt: skip


@pytest.mark.parametrize("size", ["70b", "8b"])
def test_measured_gpus_stay_in_the_serving_ranking_priced_or_not(demo, size):
    """A measured GPU (MI300X and others) stays in the ranking when no offer gives it a price. Its
    MLPerf points give no request lengths, so they do not answer the 1,000/1,000 workload: its
    figure is the serving model's (measured only where a point was measured at the workload)."""
    rows = _serving(size, interactivity="max")
    for slug in MEASURED_NOW_PRICED[size]:
        assert rows[slug].perf is not None and rows[slug].llm_price_basis == "offer", slug
    for slug in MEASURED_UNPRICED[size]:
        row = rows[slug]
        assert row.perf is not None, slug
        assert row.llm_price_basis == "none" and row.price.amount is None and row.cost_per_million_tokens is None, slug
    priced = _serving(size, interactivity="max", **{f"gpu_price[{s}]": "2.00" for s in MEASURED_UNPRICED[size]})
    for slug in MEASURED_UNPRICED[size]:
        row = priced[slug]
        assert row.llm_price_basis == "user" and row.price.amount == 2.0 and row.rank is not None, slug
        assert row.cost_per_million_tokens == pytest.approx(2.0 / (row.perf * 3600) * 1e6), slug


@pytest.mark.parametrize("size", ["70b", "8b"])
@pytest.mark.parametrize("target", ["10", "20", "50", "max"])
def test_no_row_uses_a_count_nobody_rents_and_tiers_follow_the_ranked_figure(demo, size, target):
    rows = _serving(size, interactivity=target)
    for row in rows.values():
        if row.llm_rented_counts and row.perf is not None:
            assert row.llm_gpu_count in row.llm_rented_counts, (row.gpu_slug, row.llm_gpu_count)
    graded = sorted((r for r in rows.values() if r.tier), key=lambda r: -(r.ranked_value or 0))
    assert ["SABCD".index(r.tier) for r in graded] == sorted("SABCD".index(r.tier) for r in graded)
    # GH200 and H100 NVL are rented one or two at a time: never ranked on eight.
    for slug in ("gh200-96-gb", "h100-nvl-94-gb"):
        if slug in rows and rows[slug].perf is not None:
            assert rows[slug].llm_gpu_count <= max(rows[slug].llm_rented_counts), slug


@pytest.mark.parametrize("size", ["70b", "8b"])
def test_more_speed_per_user_costs_more_per_million_tokens(demo, size):
    """Physics: a larger batch reads the weights once for more streams, so serving each user faster
    leaves fewer tokens per GPU. Per GPU, the cost never falls as the target rises."""
    targets = ("max", "10", "20", "50", "100")
    by_target = {t: _serving(size, interactivity=t) for t in targets}
    compared = 0
    for slug in by_target["max"]:
        rows = [by_target[t].get(slug) for t in targets]
        # A GPU that cannot serve a target at all (no configuration reaches it) drops out of that
        # ranking and of every faster one.
        present = [row is not None and row.perf is not None for row in rows]
        assert present == sorted(present, reverse=True), (slug, present)
        costs = [row.cost_per_million_tokens for row in rows if row is not None and row.perf is not None]
        same_basis = len({row.perf_basis for row in rows if row is not None and row.perf is not None}) == 1
        if len(costs) >= 3 and None not in costs and same_basis:
            compared += 1
            assert costs == sorted(costs), (slug, costs)
    assert compared >= 10


def test_llama_70b_one_stream_on_h100_stays_where_the_measurement_is(demo):
    """llama.cpp's H100 PCIe row for one stream, against the single-stream model's estimate."""
    landmarks = {(m.size, m.gpu_name): m for m in llm_landmarks(stream=stream_fit_current())}
    chat = landmarks[("70b", "H100 PCIe 80 GB")]
    assert chat.measured == pytest.approx(25.03) and math.isclose(chat.estimate or 0, 25.03, rel_tol=0.25)


def test_no_page_or_api_read_fits_a_model(demo, client, monkeypatch) -> None:
    """The fits are stored when their inputs change; a read only reads them. Every fitter is made
    to fail, then the LLM pages and API reads are requested."""
    import llm.serving.fit
    import llm.serving.single_stream
    from llm.models import ServingModelFit

    assert ServingModelFit.objects.newest() is not None, "load_demo stores a fit"

    def refuse(*args, **kwargs):
        raise AssertionError("a read called a model fitter")

    monkeypatch.setattr(llm.serving.single_stream, "stream_fit", refuse)
    monkeypatch.setattr(llm.serving.fit, "least_squares", refuse)
    for url in (
        "/?use_case=llm-serving&model_size=70b",
        "/?use_case=llm-chat&model_size=8b",
        "/llm-model/",
        "/fit/?model=llama-3.1-70b&precision=fp8",
        "/api/v1/rankings/?use_case=llm-serving&model_size=70b",
        "/api/v1/fit/?model=llama-3.1-405b&precision=fp8",
        "/gpus/h100-sxm5-80-gb/",
    ):
        response = client.get(url)
        assert response.status_code in (200, 302), url
