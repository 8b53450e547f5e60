"""The serving question and its one answer per configuration (llm/question.py,
llm/serving/answer.py): pure arithmetic, no database."""

from __future__ import annotations

import pytest

from dashboard.ranking.maths import TierCandidate, conservative_value, tier_mark, tiers_from_measurements
from gpuatlas.query_numbers import QueryNumberError
from llm.question import ServingQuestion, cost_per_million_output_tokens, same_architecture, target_parse
from llm.serving.answer import (
    ANCHOR_BOUNDS,
    ESTIMATED,
    MEASURED,
    UNREACHABLE,
    ModelledConfiguration,
    WorkloadPoint,
    anchor_from,
    anchored_curve,
    best_answer,
    configuration_answer,
    measured_read,
)
from llm.serving.physics import CurvePoint

TARGETS = (10.0, 20.0, 50.0, 100.0)


def _point(user: float | None, gpu: float, *, count: int = 1, lengths: tuple[int, int] = (1000, 1000)) -> WorkloadPoint:
    return WorkloadPoint(count, "fp8", "tensorrt-llm", lengths[0], lengths[1], gpu, user, f"{user}/{gpu}")


def _curve(*pairs: tuple[float, float]) -> tuple[CurvePoint, ...]:
    return tuple(CurvePoint(2**i, user, gpu, 0.1, 1 / user, "memory bandwidth") for i, (user, gpu) in enumerate(pairs))


def _answer(target: float | None, *, measured: list[WorkloadPoint], curve: tuple[CurvePoint, ...]):
    modelled = [ModelledConfiguration(1, curve, "model", 20.0, True)] if curve else []
    return configuration_answer(gpu_slug="g", gpu_count=1, precision="fp8", engine="tensorrt-llm", target=target,
                                modelled=modelled, measured=measured, anchor=None)  # fmt: skip


def test_question_defaults_and_parsing() -> None:
    q = ServingQuestion("llama-3.1-70b")
    assert (q.input_len, q.output_len, q.precision, q.target) == (1000, 1000, "any", 20.0)
    assert "1,000 prompt / 1,000 output tokens" in q.label() and "20 tokens/s per user" in q.label()
    assert q.engine_for("nvidia") == "tensorrt-llm" and q.engine_for("amd") == "vllm-sglang"
    assert q.precision_for({"fp8": 1979.0, "fp4": None}) == "fp8"
    assert q.precision_for({"fp8": 1979.0, "fp4": 4500.0}) == "fp4"
    assert ServingQuestion("llama-3.1-70b", precision="8bit").precision_for({"fp4": 1.0, "fp8": 1.0}) == "fp8"
    # gpt-oss is published in MXFP4 only: at the best precision a Hopper GPU runs that checkpoint
    # (dequantised), not an FP8 one nobody serves; a fixed FP8 question still gets FP8.
    oss = ServingQuestion("gpt-oss-120b")
    assert oss.precision_for({"fp8": 1979.0, "fp4": None}) == "fp4"
    assert oss.precision_for({"fp8": 4500.0, "fp4": 9000.0}) == "fp4"
    assert ServingQuestion("gpt-oss-120b", precision="fp8").precision_for({"fp8": 1979.0}) == "fp8"
    assert target_parse("max") is None and target_parse(None) == 20.0 and target_parse("50") == 50.0
    for bad in ("0", "nan", "1e9", "fast"):
        with pytest.raises(QueryNumberError) as error:
            target_parse(bad)
        assert error.value.field == "target"
    with pytest.raises(QueryNumberError) as error:
        ServingQuestion("llama-3.1-70b", input_len=0)
    assert error.value.field == "input_len"
    with pytest.raises(QueryNumberError):
        ServingQuestion("no-such-model")


def test_lengths_within_a_quarter_match_and_unknown_never() -> None:
    q = ServingQuestion("llama-3.1-8b")
    assert q.lengths_match(1024, 1024) and q.lengths_match(1250, 750)
    assert not q.lengths_match(128, 128) and not q.lengths_match(1000, 2048)
    assert not q.lengths_match(None, 1000) and not q.lengths_match(1000, None)


def test_same_architecture() -> None:
    assert same_architecture("llama-3.3-70b", "llama-3.1-70b")
    assert same_architecture("llama-3-8b", "llama-3.1-8b")
    assert not same_architecture("llama-2-70b", "llama-3.1-70b")


def test_cost_per_million_is_one_formula() -> None:
    assert cost_per_million_output_tokens(price_per_gpu_hour=3.6, tokens_per_s_per_gpu=1000.0) == pytest.approx(1.0)
    assert cost_per_million_output_tokens(price_per_gpu_hour=None, tokens_per_s_per_gpu=1000.0) is None
    assert cost_per_million_output_tokens(price_per_gpu_hour=2.0, tokens_per_s_per_gpu=0.0) is None


def test_measured_read_interpolates_on_the_frontier_and_floors_below_it() -> None:
    points = [_point(10, 4000), _point(40, 1000), _point(30, 500)]  # the last is beaten by (40, 1000)
    at_20 = measured_read(points, target=20)
    assert at_20 is not None and 1000 < at_20.tokens_per_s_per_gpu < 4000 and not at_20.floor
    at_5 = measured_read(points, target=5)
    assert at_5 is not None and at_5.tokens_per_s_per_gpu == 4000 and at_5.floor
    assert measured_read(points, target=50) is None
    assert measured_read(points + [_point(None, 6000)], target=None).tokens_per_s_per_gpu == 6000  # type: ignore[union-attr]


def test_an_answer_never_rises_as_the_target_rises() -> None:
    """Measured up to 30 tokens/s per user, the model beyond: the estimate past the measured range
    is held at the throughput measured at the fastest rate, so the curve only falls."""
    measured = [_point(10, 900), _point(30, 400)]
    curve = _curve((150, 300), (90, 1500), (60, 2500), (25, 4000), (8, 6000))
    figures = []
    for target in (*TARGETS, None):
        answer = _answer(target, measured=measured, curve=curve)
        assert answer is not None
        figures.append(answer.tokens_per_s_per_gpu or 0.0)
        if target is not None and target <= 30:
            assert answer.basis == MEASURED
        elif target is not None:
            assert answer.basis == ESTIMATED and answer.capped
    assert all(later <= earlier for earlier, later in zip(figures[:-1], figures[1:-1], strict=False)), figures
    assert figures[-1] >= max(figures[:-1])  # maximum throughput is at least every target's


def test_unreachable_and_not_fitting() -> None:
    curve = _curve((40, 100), (20, 300))
    answer = _answer(100, measured=[], curve=curve)
    assert answer is not None and answer.basis == UNREACHABLE and answer.tokens_per_s_per_gpu is None
    assert _answer(20, measured=[], curve=()) is None
    assert best_answer([answer, _answer(20, measured=[], curve=curve)]).basis == ESTIMATED  # type: ignore[union-attr]


def test_anchor_is_a_bounded_geometric_mean() -> None:
    anchor = anchor_from([(0.8, "a"), (1.25, "b")])
    assert anchor is not None and anchor.factor == pytest.approx(1.0) and anchor.points == ("a", "b")
    wild = anchor_from([(4.0, "one stream")])
    assert wild is not None and wild.factor == ANCHOR_BOUNDS[1] and wild.raw == pytest.approx(4.0)
    assert anchor_from([]) is None
    scaled = anchored_curve(_curve((50, 1000)), 0.5)
    assert (scaled[0].tokens_per_s_per_user, scaled[0].tokens_per_s_per_gpu) == (25, 500)


def test_tiers_follow_the_ranked_figure_and_no_share_passes_the_best() -> None:
    raw = {"m1": (10.0, True, None), "e1": (30.0, False, 40.0), "m2": (6.0, True, None), "e2": (5.0, False, 40.0)}
    candidates = [TierCandidate(k, conservative_value(v, measured=m, error_pct=e), m) for k, (v, m, e) in raw.items()]
    mark = tier_mark(candidates)
    assert mark == pytest.approx(30.0 / 1.4)  # the best figure, estimates at their conservative end
    tiers = tiers_from_measurements(candidates)
    order = sorted(candidates, key=lambda c: -(c.value or 0))
    names = "SABCD"
    ranks = [names.index(tiers[c.key]) for c in order]
    assert ranks == sorted(ranks)
    assert all((c.value or 0) / mark <= 1.0 for c in candidates)
    assert tiers["e1"] == "S"  # no cap: the rule is the share of the best
