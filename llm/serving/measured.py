"""A measured curve read at a target tokens/s per user (pure).

Measured points of one GPU, count, model and precision are points of its curve of output
tokens/s per GPU against tokens/s per user. At a target:

* between two measured points (one at least as fast per user as the target, one slower), the
  throughput is interpolated linearly in tokens/s per user between the nearest two;
* when every measured point is at least as fast per user, the best of them is the figure (the
  system can do at least that at the slower target: a floor);
* when every point is slower per user than the target, there is no measured figure;
* with no target ("maximum throughput"), the most tokens/s per GPU measured, Offline included.

A point without a per-user rate (an Offline run) only answers "maximum throughput".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MeasuredOperatingPoint:
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float | None
    label: str = ""


@dataclass(frozen=True)
class MeasuredAt:
    tokens_per_s_per_gpu: float
    interpolated: bool
    floor: bool  # measured faster per user than the target: at least this much
    labels: tuple[str, ...]


def measured_at_interactivity(points: Sequence[MeasuredOperatingPoint], target: float | None) -> MeasuredAt | None:
    """The measured curve's throughput per GPU at ``target`` tokens/s per user (module doc)."""
    if not points:
        return None
    if target is None:
        best = max(points, key=lambda p: p.tokens_per_s_per_gpu)
        return MeasuredAt(best.tokens_per_s_per_gpu, False, False, (best.label,))
    rated = sorted((p for p in points if p.tokens_per_s_per_user), key=lambda p: p.tokens_per_s_per_user or 0.0)
    fast = [p for p in rated if (p.tokens_per_s_per_user or 0.0) >= target]
    slow = [p for p in rated if (p.tokens_per_s_per_user or 0.0) < target]
    if not fast:
        return None
    best_fast = max(fast, key=lambda p: p.tokens_per_s_per_gpu)
    if not slow:
        return MeasuredAt(best_fast.tokens_per_s_per_gpu, False, True, (best_fast.label,))
    above, below = fast[0], slow[-1]  # the nearest on either side of the target
    hi, lo = above.tokens_per_s_per_user or 0.0, below.tokens_per_s_per_user or 0.0
    share = (hi - target) / (hi - lo) if hi > lo else 0.0
    value = above.tokens_per_s_per_gpu + share * (below.tokens_per_s_per_gpu - above.tokens_per_s_per_gpu)
    if value < best_fast.tokens_per_s_per_gpu:
        # A faster-per-user point already did better: the curve is not monotone in the data.
        return MeasuredAt(best_fast.tokens_per_s_per_gpu, False, True, (best_fast.label,))
    return MeasuredAt(value, True, False, (above.label, below.label))
