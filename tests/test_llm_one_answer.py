"""One serving question, one answer on every page and API (demo data): the rankings,
/api/v1/fit/serving/, /api/v1/fit/ and compare give the same tokens/s per GPU and $ per million output tokens;
curves never rise as the target rises; a row is measured only at its workload; tiers follow the
ranked figure; the header accounts for every GPU."""

from __future__ import annotations

import pytest
from django.test import Client

from catalog.models import Gpu
from dashboard.selectors.compare import compare_compute
from dashboard.selectors.ranking_params import ranking_params_from_query
from dashboard.selectors.rankings import rankings_compute
from dashboard.selectors.tiers import tiers_compute
from llm.question import ServingQuestion, cost_per_million_output_tokens

pytestmark = pytest.mark.django_db
TARGETS = ("10", "20", "50", "100", "max")


def _ranking(size: str, target: str, **more: str):  # type: ignore[no-untyped-def]
    query = {"use_case": "llm-serving", "model_size": size, "interactivity": target, **more}
    return rankings_compute(params=ranking_params_from_query(query))


@pytest.mark.parametrize("size", ["8b", "70b"])
def test_curves_never_rise_as_the_target_rises(demo, size: str) -> None:  # type: ignore[no-untyped-def]
    series: dict[str, list[float]] = {}
    for target in TARGETS:
        for row in _ranking(size, target).rows:
            series.setdefault(row.gpu_slug, []).append(row.perf or 0.0)
    checked = 0
    for slug, values in series.items():
        if len(values) < len(TARGETS):
            continue
        checked += 1
        at_targets, at_max = values[:-1], values[-1]
        assert all(b <= a * (1 + 1e-9) for a, b in zip(at_targets, at_targets[1:], strict=False)), (slug, values)
        assert at_max >= max(at_targets) * (1 - 1e-9), (slug, values)
    assert checked >= 10


def test_measured_rows_were_measured_at_their_workload(demo) -> None:  # type: ignore[no-untyped-def]
    for size in ("8b", "70b"):
        for target in ("20", "max"):
            ranking = _ranking(size, target)
            question = ServingQuestion(
                {"8b": "llama-3.1-8b", "70b": "llama-3.1-70b"}[size], target=None if target == "max" else 20.0
            )
            assert ranking.workload_label == question.label()
            for row in ranking.rows:
                assert row.llm_workload == question.label()
                choice = ranking.serving_choices[row.gpu_id]
                if row.perf_basis == "measured":
                    answer = choice.answer
                    assert answer is not None and answer.measured_points, row.gpu_slug
                    assert all(question.lengths_match(p.input_tokens, p.output_tokens) for p in answer.measured_points)
                    assert not any(p.decode_only for p in answer.measured_points)
                if row.llm_target_unreached:
                    assert row.perf is None and row.perf_basis == "unreachable"


def test_tiers_follow_the_ranked_figure_and_the_header_accounts_for_every_gpu(demo) -> None:  # type: ignore[no-untyped-def]
    for size in ("8b", "70b"):
        ranking = _ranking(size, "20")
        assert ranking.gpus_accounted == ranking.gpus_considered
        tier_list = tiers_compute(params=ranking.params)
        graded = [r for r in tier_list.ranking.rows if r.tier]
        order = "SABCD"
        ranked = sorted(graded, key=lambda r: -(r.ranked_value or 0))
        assert [order.index(r.tier) for r in ranked] == sorted(order.index(r.tier) for r in ranked)
        mark = tier_list.ranking.tier_mark
        assert mark and all((r.ranked_value or 0) <= mark * (1 + 1e-9) for r in graded)
        values = [r.ranked_value for r in ranking.rows if r.ranked_value is not None]
        assert values == sorted(values, reverse=True)


def test_rankings_api_and_compare_give_one_answer(demo, client: Client) -> None:  # type: ignore[no-untyped-def]
    ranking = _ranking("70b", "20")
    rows = {
        r.gpu_slug: r for r in ranking.rows if r.perf and r.cost_per_million_tokens and r.llm_price_basis == "offer"
    }
    assert len(rows) >= 3
    checked = 0
    for slug, row in list(rows.items())[:4]:
        response = client.get(
            "/api/v1/fit/serving/",
            {"model": "llama-3.1-70b", "precision": row.llm_precision, "target": "20", "input_len": "1000",
             "output_len": "1000"},
        )  # fmt: skip
        assert response.status_code == 200, response.content
        options = [o for o in response.json()["options"] if o["gpu"] == slug]
        best = max(options, key=lambda o: o["tokens_per_s_per_gpu"])
        assert best["tokens_per_s_per_gpu"] == pytest.approx(row.perf, rel=1e-3), slug
        assert best["basis"] == row.perf_basis
        assert best["cost_per_million_tokens_usd"] == pytest.approx(row.cost_per_million_tokens, rel=1e-3), slug
        checked += 1
    assert checked >= 3
    slugs = list(rows)[:2]
    gpus = list(Gpu.objects.with_related().filter(slug__in=slugs))
    gpus.sort(key=lambda g: slugs.index(g.slug))
    comparison = compare_compute(gpus=gpus)
    for column in comparison.columns:
        cell = column.cells["llm-serving"]
        assert cell.row is not None
        assert cell.row.perf == pytest.approx(rows[column.gpu.slug].perf, rel=1e-9)
        assert cell.row.cost_per_million_tokens == pytest.approx(
            rows[column.gpu.slug].cost_per_million_tokens, rel=1e-9
        )


def test_a_user_price_says_your_price_and_nothing_else(demo) -> None:  # type: ignore[no-untyped-def]
    ranking = _ranking("8b", "20", **{"gpu_price[h100-sxm5-80-gb]": "1.5"})
    row = next(r for r in ranking.rows if r.gpu_slug == "h100-sxm5-80-gb")
    assert row.price.amount == 1.5 and row.llm_price_basis == "user"
    assert (row.price.provider, row.price.observed_at, row.price.providers) == ("", None, 0)


def test_the_fit_api_gives_the_ranking_answer_at_maximum_throughput(demo, client: Client) -> None:  # type: ignore[no-untyped-def]
    # /api/v1/fit/ answers batched serving at maximum throughput and 1,000/1,000 tokens: at the
    # ranking row's GPU count, the same tokens/s per GPU, basis and $ per million output tokens (in
    # the formats the calculator offers by these names).
    ranking = _ranking("70b", "max")
    rows = [r for r in ranking.rows if r.perf and r.cost_per_million_tokens and r.llm_price_basis == "offer"
            and r.llm_gpu_count in (1, 2, 4, 8) and r.llm_precision in ("fp8", "int8", "bf16", "fp16")]  # fmt: skip
    assert len(rows) >= 3
    for row in rows[:4]:
        response = client.get("/api/v1/fit/", {"model": "llama-3.1-70b", "precision": row.llm_precision})
        assert response.status_code == 200, response.content
        plan = next(p for p in response.json()["plans"] if p["gpu"]["slug"] == row.gpu_slug)
        at = next(c for c in plan["counts"] if c["count"] == row.llm_gpu_count)
        per_gpu = at["throughput_per_s"] / at["count"]
        assert per_gpu == pytest.approx(row.perf, rel=1e-3), row.gpu_slug
        assert at["throughput_basis"] == row.perf_basis, row.gpu_slug
        cost = cost_per_million_output_tokens(
            price_per_gpu_hour=plan["gpu"]["price_per_gpu_hour"], tokens_per_s_per_gpu=per_gpu
        )
        assert cost == pytest.approx(row.cost_per_million_tokens, rel=1e-3), row.gpu_slug


def test_the_fit_api_serves_405b_as_tensorrt_llm_measures_it_and_deepseek_does_not_fit_80_gb(  # type: ignore[no-untyped-def]
    demo, client: Client
) -> None:
    body = client.get("/api/v1/fit/", {"model": "llama-3.1-405b", "precision": "fp8"}).json()
    h200 = next(p for p in body["plans"] if p["gpu"]["slug"] == "h200-sxm-141-gb")
    eight = next(c for c in h200["counts"] if c["count"] == 8)
    # TensorRT-LLM's performance overview: 3,330 output tokens/s on 8 x H200 at 1000/1000.
    assert 0.75 * 3330 <= eight["throughput_per_s"] <= 1.25 * 3330
    # Nor as one stream or for a fixed number of users: every LLM job fits in the memory the GPU
    # exposes less the runtime reserve.
    for job in ({}, {"users": "8"}, {"serving": "single"}):
        body = client.get("/api/v1/fit/", {"model": "deepseek-v3", "precision": "fp8", **job}).json()
        for slug in ("h100-sxm5-80-gb", "a100-sxm4-80-gb"):
            plan = next(p for p in body["plans"] if p["gpu"]["slug"] == slug)
            assert plan["gpus_needed"] is None, (slug, job)
            assert not any(c["fits"] for c in plan["counts"]), (slug, job)


def test_405b_fp8_at_maximum_throughput_is_one_answer_on_the_rankings_api_and_both_fit_apis(  # type: ignore[no-untyped-def]
    demo, client: Client
) -> None:
    # One question (Llama 3.1 405B, FP8, 1,000/1,000 tokens, maximum throughput) asked of the rankings
    # API, /api/v1/fit/serving/ and /api/v1/fit/: on the H200 the same count, tokens/s per GPU, basis
    # and $ per million output tokens; and on eight H200s what TensorRT-LLM measures (3,330 tokens/s).
    query = {"use_case": "llm-serving", "model_size": "405b", "interactivity": "max", "precision": "8bit"}
    rows = client.get("/api/v1/rankings/", query).json()["results"]
    row = next(r for r in rows if r["gpu"] == "h200-sxm-141-gb")
    assert row["llm_precision"] == "fp8" and row["perf"] and row["cost_per_million_tokens"]
    count = row["llm_gpu_count"]
    serving = client.get("/api/v1/fit/serving/", {"model": "llama-3.1-405b", "precision": "fp8", "target": "max",
                                                  "input_len": "1000", "output_len": "1000"}).json()  # fmt: skip
    options = {o["gpu_count"]: o for o in serving["options"] if o["gpu"] == "h200-sxm-141-gb"}
    assert options[count]["tokens_per_s_per_gpu"] == pytest.approx(row["perf"], rel=1e-3)
    assert options[count]["basis"] == row["perf_basis"]
    assert options[count]["cost_per_million_tokens_usd"] == pytest.approx(row["cost_per_million_tokens"], rel=1e-3)
    fit = client.get("/api/v1/fit/", {"model": "llama-3.1-405b", "precision": "fp8"}).json()
    plan = next(p for p in fit["plans"] if p["gpu"]["slug"] == "h200-sxm-141-gb")
    counts = {c["count"]: c for c in plan["counts"]}
    for n in (count, 8):
        assert counts[n]["throughput_per_s"] / n == pytest.approx(options[n]["tokens_per_s_per_gpu"], rel=1e-3)
        assert counts[n]["throughput_basis"] == options[n]["basis"]
        cost = cost_per_million_output_tokens(price_per_gpu_hour=plan["gpu"]["price_per_gpu_hour"],
                                              tokens_per_s_per_gpu=counts[n]["throughput_per_s"] / n)  # fmt: skip
        assert cost == pytest.approx(options[n]["cost_per_million_tokens_usd"], rel=1e-3)
    assert 0.75 * 3330 <= counts[8]["throughput_per_s"] <= 1.25 * 3330
