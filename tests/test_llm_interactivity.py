"""Serving at a chosen interactivity (llm/serving/answer.py, llm/question.py): reading tokens/s per
GPU off measured points at a target tokens/s per user, and its cost; the physics a curve must obey."""

from __future__ import annotations

import math
import random

import pytest

from dashboard.figures.serving import log_ticks
from llm.question import TARGETS, cost_per_million_output_tokens, target_rate
from llm.serving.answer import WorkloadPoint, measured_read


def CurvePoint(user: float | None, gpu: float) -> WorkloadPoint:  # noqa: N802 (reads as the point it builds)
    return WorkloadPoint(8, "fp8", "tensorrt-llm", 1000, 1000, gpu, user, "")


def throughput_at_target(points: list[WorkloadPoint], *, target: float | None) -> float | None:
    read = measured_read(points, target=target)
    return None if read is None else read.tokens_per_s_per_gpu


# An MLPerf-like system: Offline (no user rate), Server at its 200 ms per-token limit (5 tokens/s
# per user) and Interactive at 40 ms (25 tokens/s per user).
SYSTEM = [CurvePoint(None, 3000.0), CurvePoint(5.0, 2800.0), CurvePoint(25.0, 1800.0)]


def test_maximum_throughput_is_the_best_point_whatever_its_user_rate():
    assert throughput_at_target(SYSTEM, target=None) == 3000.0
    assert target_rate("max") is None and target_rate("20") == 20.0


def test_a_target_between_two_points_is_interpolated_on_log_log_axes():
    # log(y) linear in log(x) between (5, 2800) and (25, 1800): at 20, share = ln4 / ln5.
    share = math.log(4) / math.log(5)
    expected = math.exp(math.log(2800) + share * (math.log(1800) - math.log(2800)))
    assert throughput_at_target(SYSTEM, target=20.0) == pytest.approx(expected)
    assert 1800 < expected < 2800


def test_a_latency_bound_point_counts_at_its_bound_and_no_further():
    # Below the slowest point per user: that point meets the target.
    assert throughput_at_target(SYSTEM, target=2.0) == 2800.0
    assert throughput_at_target(SYSTEM, target=25.0) == pytest.approx(1800.0)
    # Faster per user than any point: the points cannot say.
    assert throughput_at_target(SYSTEM, target=50.0) is None
    # Offline alone answers only maximum throughput.
    assert throughput_at_target([CurvePoint(None, 3000.0)], target=10.0) is None
    assert throughput_at_target([], target=None) is None


def test_a_dominated_point_is_ignored():
    """A slower run at the same user rate (another system, an older round) never lowers the figure."""
    points = [*SYSTEM, CurvePoint(25.0, 900.0), CurvePoint(10.0, 1000.0)]
    assert throughput_at_target(points, target=25.0) == pytest.approx(1800.0)
    assert throughput_at_target(points, target=10.0) == throughput_at_target(SYSTEM, target=10.0)


def test_physics_more_speed_per_user_never_gives_more_tokens_per_gpu():
    rng = random.Random(7)
    for _ in range(200):
        points = [CurvePoint(rng.uniform(1, 200), rng.uniform(10, 20000)) for _ in range(rng.randint(1, 8))]
        previous = math.inf
        for target in (1, 2, 5, 10, 20, 50, 100, 200):
            value = throughput_at_target(points, target=float(target))
            if value is None:
                previous = -math.inf  # once unreachable, every faster target is too
                continue
            assert previous != -math.inf, points
            assert value <= previous + 1e-9, (points, target)
            previous = value
        assert throughput_at_target(points, target=None) >= max(
            v for t in (1.0, 200.0) if (v := throughput_at_target(points, target=t)) is not None
        )


def test_cost_per_million_output_tokens():
    # $2.40 per GPU-hour at 3,000 tokens/s per GPU: 2.40 / (3,000 x 3,600) x 10^6 = $0.222.
    assert cost_per_million_output_tokens(price_per_gpu_hour=2.4, tokens_per_s_per_gpu=3000) == pytest.approx(
        0.2222, rel=1e-3
    )
    assert cost_per_million_output_tokens(price_per_gpu_hour=None, tokens_per_s_per_gpu=3000) is None
    assert cost_per_million_output_tokens(price_per_gpu_hour=2.4, tokens_per_s_per_gpu=None) is None


def test_targets_offered():
    assert TARGETS == ("10", "20", "50", "100", "max")


def test_log_ticks_read_1_2_5():
    values, texts = log_ticks(30, 25000)
    assert values == [50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000]
    assert texts == ["50", "100", "200", "500", "1k", "2k", "5k", "10k", "20k"]
