"""The LLM serving ranking's 80 % intervals, uncertain order and energy, as the page and
/api/v1/rankings/ publish them: each estimated row's interval is its answer's held-out interval,
the cost interval follows from it, the runs of adjacent rows whose intervals overlap are named under
the table and under the tier list (in Chinese too), and buy mode with ``kwh_price`` puts each row's energy per token and
electricity per million tokens in the API's rows."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from dashboard.selectors.ranking_params import ranking_params_from_query
from dashboard.selectors.ranking_rows import RankingRow, RowPrice, uncertain_order_spans
from dashboard.selectors.rankings import rankings_compute
from llm.question import cost_per_million_output_tokens
from llm.serving.energy import electricity_per_million_tokens

pytestmark = pytest.mark.django_db

SERVING_70B = {"use_case": "llm-serving", "model_size": "70b", "interactivity": "20"}


def _row(rank: int, value: float, *, low: float | None = None, high: float | None = None) -> RankingRow:
    estimated = low is not None
    return RankingRow(
        gpu_id=rank, gpu_slug=f"gpu-{rank}", gpu_name=f"GPU {rank}", vendor="V", vendor_slug="v", segment="datacenter",
        architecture="", memory_gib=80.0, tdp_w=700, perf=value, perf_basis="estimated" if estimated else "measured",
        perf_measured=None if estimated else value, perf_estimated=value if estimated else None, n=0,
        distinct_submitters=0, groups=0, price=RowPrice(amount=1.0), currency="USD", perf_per_dollar=value,
        perf_per_dollar_unit="", perf_per_kw=None, meets_memory_floor=True, rank=rank, perf_low=low, perf_high=high,
    )  # fmt: skip


def test_adjacent_rows_whose_intervals_overlap_form_one_run() -> None:
    rows = [
        _row(1, 100.0),  # measured: a point, above #2's interval
        _row(2, 80.0, low=60.0, high=95.0),
        _row(3, 70.0, low=50.0, high=90.0),  # overlaps #2
        _row(4, 65.0),  # a point inside #3's interval
        _row(5, 40.0, low=30.0, high=50.0),  # below #4
        _row(6, 35.0, low=30.0, high=45.0),  # overlaps #5
    ]
    assert uncertain_order_spans(rows, "perf_per_dollar") == [(2, 4), (5, 6)]
    # Only the ranked order counts: two measured points never overlap unless equal.
    assert uncertain_order_spans([_row(1, 3.0), _row(2, 2.0)], "perf_per_dollar") == []
    assert uncertain_order_spans([_row(1, 2.0), _row(2, 2.0)], "perf_per_dollar") == [(1, 2)]


def _api(client: Client, **query: str) -> dict[str, Any]:
    response = client.get("/api/v1/rankings/", query)
    assert response.status_code == 200, response.content[:400]
    return response.json()


def test_estimated_rows_carry_their_answers_interval_and_the_order_says_where_it_is_uncertain(  # type: ignore[no-untyped-def]
    demo, client: Client
) -> None:
    ranking = rankings_compute(params=ranking_params_from_query(SERVING_70B))
    body = _api(client, **SERVING_70B)
    question = body["serving_question"]
    assert (question["model"], question["input_len"], question["output_len"]) == ("llama-3.1-70b", 1000, 1000)
    assert question["target_tokens_per_s_per_user"] == 20.0
    rows = {r["gpu"]: r for r in body["results"]}
    checked = 0
    for row in ranking.rows:
        published = rows[row.gpu_slug]
        answer = ranking.serving_choices[row.gpu_id].answer
        if row.perf_basis != "estimated" or answer is None or answer.interval is None:
            assert published["perf_low"] is None and published["perf_high"] is None, row.gpu_slug
            continue
        low, high = answer.interval
        assert published["perf_low"] == pytest.approx(row.perf * low, rel=1e-9)
        assert published["perf_high"] == pytest.approx(row.perf * high, rel=1e-9)
        assert published["perf_low"] < published["perf"] < published["perf_high"]
        assert published["interval_kind"] == answer.interval_kind != ""
        if published["price"] is not None:
            assert published["cost_per_million_tokens_low"] == pytest.approx(cost_per_million_output_tokens(
                price_per_gpu_hour=published["price"], tokens_per_s_per_gpu=published["perf_high"]), rel=1e-9)  # fmt: skip
            assert published["cost_per_million_tokens_high"] == pytest.approx(cost_per_million_output_tokens(
                price_per_gpu_hour=published["price"], tokens_per_s_per_gpu=published["perf_low"]), rel=1e-9)  # fmt: skip
        checked += 1
    assert checked >= 5
    # The runs, recomputed from the published rows alone.
    ranked = [r for r in body["results"] if r["rank"] is not None]
    runs: list[list[int]] = []
    for a, b in zip(ranked, ranked[1:], strict=False):

        def ends(r: dict[str, Any]) -> tuple[float, float]:
            if r["perf_low"] is None:
                return r["perf_per_dollar"], r["perf_per_dollar"]
            return (r["perf_per_dollar"] * r["perf_low"] / r["perf"], r["perf_per_dollar"] * r["perf_high"] / r["perf"])

        (a_low, a_high), (b_low, b_high) = ends(a), ends(b)
        if max(a_low, b_low) <= min(a_high, b_high):
            if runs and runs[-1][1] == a["rank"]:
                runs[-1][1] = b["rank"]
            else:
                runs.append([a["rank"], b["rank"]])
    assert body["uncertain_order"] == runs and runs
    # The page says it under the table, in English and in Chinese.
    spans = ", ".join(f"#{first}–#{last}" for first, last in runs)
    page = client.get("/", SERVING_70B).content.decode()
    assert f"The order of {spans} is uncertain: their 80 % intervals overlap." in page
    first = next(r for r in ranking.rows if r.perf_low is not None)
    assert "80 % interval" in page and f"{first.perf_low:,.0f}" in page
    chinese = client.get("/", SERVING_70B, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert f"{spans} 的先后顺序不确定" in chinese
    # The tier list answers the same question and says the same under its tiers, in both languages.
    tiers = client.get("/tiers/", SERVING_70B).content.decode()
    assert f"The order of {spans} is uncertain: their 80 % intervals overlap." in tiers
    assert "The ranks are those of the ranking for the same question." in tiers
    tiers_zh = client.get("/tiers/", SERVING_70B, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert f"{spans} 的先后顺序不确定" in tiers_zh and "名次即同一问题下排行榜中的名次" in tiers_zh


def test_buy_mode_with_an_electricity_price_puts_the_energy_in_the_api_rows(demo, client: Client) -> None:  # type: ignore[no-untyped-def]
    query = {**SERVING_70B, "mode": "buy", "kwh_price": "0.2"}
    body = _api(client, **query)
    assert body["params"]["kwh_price"] == 0.2
    with_energy = [r for r in body["results"] if r["joules_per_token"] is not None]
    assert len(with_energy) >= 3
    ranking = rankings_compute(params=ranking_params_from_query(query))
    by_slug = {r.gpu_slug: r for r in ranking.rows}
    for row in with_energy:
        assert row["energy_basis"] in ("measured", "estimated")
        assert row["joules_per_token"] == pytest.approx(by_slug[row["gpu"]].joules_per_token, rel=1e-9)
        assert row["electricity_per_million_tokens"] == pytest.approx(
            electricity_per_million_tokens(energy_per_token_j=row["joules_per_token"], price_per_kwh=0.2), rel=1e-9
        )
        if row["energy_basis"] == "estimated":
            assert row["joules_per_token_low"] <= row["joules_per_token"] <= row["joules_per_token_high"]
    # Rent mode, or no price per kWh: no energy figures.
    assert all(r["joules_per_token"] is None for r in _api(client, **SERVING_70B)["results"])
    response = client.get("/api/v1/rankings/", {**query, "kwh_price": "-1"})
    assert response.status_code == 400 and list(response.json()["errors"]) == ["kwh_price"]
