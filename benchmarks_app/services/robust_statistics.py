"""Robust statistics of a pair's trusted results: the summary an aggregate stores and the
outlier test a new result faces (Iglewicz and Hoaglin's modified z-score)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

OUTLIER_Z = 3.5
OUTLIER_MIN_PEERS = 5
# Iglewicz and Hoaglin: 0.6745 is the 0.75 quantile of the standard normal, so that
# MAD / 0.6745 estimates the standard deviation; 1.253314 does the same for the mean deviation.
_MAD_SCALE = 0.6745
_MEAN_AD_SCALE = 1.253314


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    q1: float
    q3: float
    minimum: float
    maximum: float
    distinct_submitters: int


def quantile(ordered: Sequence[float], p: float) -> float:
    """Linear interpolation between order statistics of sorted values (the 'inclusive' method,
    as a box plot draws quartiles)."""
    position = (len(ordered) - 1) * p
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])


def summary_of_sorted(ordered: Sequence[float], *, distinct_submitters: int) -> Summary:
    """Median, quartiles and range of values already sorted."""
    if not len(ordered):
        raise ValueError("no values to summarise")
    return Summary(
        n=len(ordered),
        median=quantile(ordered, 0.5),
        q1=quantile(ordered, 0.25),
        q3=quantile(ordered, 0.75),
        minimum=ordered[0],
        maximum=ordered[-1],
        distinct_submitters=distinct_submitters,
    )


def summarise(values: Sequence[float], submitters: Iterable[str]) -> Summary:
    return summary_of_sorted(sorted(values), distinct_submitters=len({s for s in submitters if s}))


def _deviation_kth(ordered: np.ndarray, median: float, k: int) -> float:
    """The k-th smallest (0-based) of ``|v - median|`` over sorted values, in one pass.

    The k + 1 values nearest the median are consecutive in sorted order, so this is the
    smallest, over every run of k + 1 consecutive values, of the run's largest deviation.
    """
    return float(np.maximum(median - ordered[: len(ordered) - k], ordered[k:] - median).min())


def modified_z_score(value: float, ordered: Sequence[float]) -> float:
    """Iglewicz-Hoaglin modified z-score of ``value`` against peers sorted ascending.

    When more than half the peers are identical the MAD is zero; the mean absolute deviation
    stands in for it then. Returns 0 when every peer is identical to ``value``, and infinity
    when every peer is identical but ``value`` differs.
    """
    values = np.asarray(ordered, dtype=float)
    n = len(values)
    median = quantile(ordered, 0.5)
    half = n // 2
    mad = (
        _deviation_kth(values, median, half)
        if n % 2
        else (_deviation_kth(values, median, half - 1) + _deviation_kth(values, median, half)) / 2
    )
    if mad > 0:
        return _MAD_SCALE * (value - median) / mad
    mean_ad = float(np.abs(values - median).mean())
    if mean_ad > 0:
        return (value - median) / (_MEAN_AD_SCALE * mean_ad)
    return 0.0 if value == median else math.copysign(math.inf, value - median)


def is_outlier(value: float, ordered: Sequence[float]) -> tuple[bool, float | None]:
    """An outlier has |modified z| > 3.5 against at least five accepted peers (sorted ascending)."""
    if len(ordered) < OUTLIER_MIN_PEERS:
        return False, None
    z = modified_z_score(value, ordered)
    return abs(z) > OUTLIER_Z, z
