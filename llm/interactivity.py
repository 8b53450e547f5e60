"""LLM serving at a chosen interactivity: the tokens/s per GPU a configuration sustains while every
user receives at least a target rate of output tokens, read off its measured points, and the
cost of a million output tokens there. Pure arithmetic, no database (tests/test_llm_interactivity.py).

A serving system trades speed per user for throughput per GPU: a larger batch reads the weights
once for more streams (more tokens per GPU) but makes every decode step longer (fewer tokens per
user). Published curves (SemiAnalysis InferenceX, Artificial Analysis, NVIDIA's TensorRT-LLM
performance overview) plot output tokens/s per GPU against tokens/s per user; MLPerf's Server and
Interactive scenarios give points on that curve at their per-token latency limit (a user rate of
at least 1 / limit), its Offline scenario the high-throughput end with no user rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Targets in output tokens/s per user ("max": the highest throughput, whatever each user gets).
TARGETS = ("10", "20", "50", "100", "max")
DEFAULT_TARGET = "20"
MAX_THROUGHPUT = "max"


def target_rate(target: str) -> float | None:
    """Tokens/s per user of a target (None for maximum throughput)."""
    return None if target == MAX_THROUGHPUT else float(target)


@dataclass(frozen=True)
class CurvePoint:
    """One measured operating point of a configuration."""

    tokens_per_s_per_user: float | None  # None where the source gives no user rate (MLPerf Offline)
    tokens_per_s_per_gpu: float


def _frontier(points: Iterable[CurvePoint]) -> list[tuple[float, float]]:
    """(user rate, tokens/s per GPU) points no other point beats on both, by rising user rate
    (so falling throughput): a configuration can always run at any of them."""
    known = sorted(
        ((p.tokens_per_s_per_user, p.tokens_per_s_per_gpu) for p in points if p.tokens_per_s_per_user),
        key=lambda xy: (-xy[0], -xy[1]),
    )
    frontier: list[tuple[float, float]] = []
    best = -math.inf
    for x, y in known:  # from the fastest per user down: keep a point only if it adds throughput
        if y > best:
            frontier.append((x, y))
            best = y
    return frontier[::-1]


def throughput_at_target(points: Sequence[CurvePoint], *, target: float | None) -> float | None:
    """Tokens/s per GPU while every user gets at least ``target`` tokens/s (None: the most it does).

    Between two points that bracket the target: interpolated on log-log axes, where published
    curves are close to straight. Below the slowest point per user: that point's throughput (it
    meets the target; a larger batch would give more, which the points do not show). Above the
    fastest point per user: None, the points do not say whether the target can be met.
    """
    if not points:
        return None
    if target is None:
        return max(p.tokens_per_s_per_gpu for p in points)
    frontier = _frontier(points)
    if not frontier or target > frontier[-1][0]:
        return None
    if target <= frontier[0][0]:
        return frontier[0][1]
    for (x0, y0), (x1, y1) in zip(frontier, frontier[1:], strict=False):
        if x0 <= target <= x1:
            share = (math.log(target) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return math.exp(math.log(y0) + share * (math.log(y1) - math.log(y0)))
    return None  # unreachable: the target lies inside the frontier's range


def cost_per_million_output_tokens(
    *, price_per_gpu_hour: float | None, tokens_per_s_per_gpu: float | None
) -> float | None:
    """Price of a million output tokens at a per-GPU rate and price (every GPU of a configuration
    is paid for, and each produces ``tokens_per_s_per_gpu``)."""
    if not price_per_gpu_hour or not tokens_per_s_per_gpu or tokens_per_s_per_gpu <= 0:
        return None
    return price_per_gpu_hour / (tokens_per_s_per_gpu * 3600) * 1e6
