"""Pure ranking arithmetic: normalisation, estimates, value metrics, tiers (the use cases are in
dashboard/ranking/use_cases.py).

Nothing here touches the database: selectors gather plain values and call these functions, so
every rule below is tested with literals (tests/test_dashboard_metrics.py).

Method, as shown on the pages
-----------------------------
* Measured performance of a GPU for a use case: for every *comparison group* (workload and
  version, precision, GPU count) where both the GPU and the baseline GPU have a qualifying
  aggregate, take the ratio of medians (inverted for lower-is-better workloads); the use-case
  performance is the geometric mean of those ratios, so the baseline scores exactly 1.0.
  A comparison group ignores run parameters such as batch size on purpose: throughput benchmarks
  (Lambda's among them) run each GPU at the largest batch that fits, and that is what is compared.
  When a GPU has several aggregates in one group, the one with most results is used.
  The benchmark client's host runs on 2 GPUs or more (data-parallel training, all-reduce) are
  not compared: they measure the host's interconnect too, and are shown as scaling instead
  (:func:`compared_in_relative_method`, dashboard/multi_gpu_maths.py).
* A GPU that shares no comparison group with the baseline (Lambda's 2025 suite, which the
  baseline never ran) is compared the same way with the directly measured GPU it shares most
  groups with, and the ratio is multiplied by that GPU's figure (one step at most).
* An aggregate qualifies when it holds a lab result or at least ``MIN_COMMUNITY_N`` community
  results; GPUs without a qualifying aggregate matched with the baseline are *estimated*.
* Estimate from the specs: ``scale * (peak / peak_baseline) ** w * (bandwidth / bandwidth_baseline) ** (1 - w)``
  with the dense tensor peak of the use case's precision family. Per use case and precision two
  forms are checked on the measured GPUs (:func:`estimate_model_fit`): equal weights (``w`` = 0.5,
  ``scale`` = 1, nothing fitted) and ``w`` and ``scale`` fitted by least squares on logarithms,
  checked leaving one GPU out; the one with the smaller typical miss is used, and that miss is
  published beside every estimate. With fewer than ``MIN_FIT_GPUS`` measured GPUs nothing can
  be checked: equal weights, error unknown. Always labelled "estimated from specs".
* Eligibility: a use case states a memory floor and the tensor formats it needs (16-bit training:
  BF16; 8-bit inference: INT8 or FP8); GPUs that fail either are hidden by default
  (:func:`use_case_eligibility`).
* Value: performance per GPU-hour price, per 1,000 of purchase price, and per kilowatt of TDP.
* Tiers (:func:`tiers_from_measurements`): among GPUs eligible for the use case that have a price,
  the ranked figure (performance per dollar, an estimate at its conservative end:
  :func:`conservative_value`) relative to the best one: S >= 70 %, A >= 45 %, B >= 25 %,
  C >= 12 %, D below. Rows are ordered by the same figure, so tiers follow the ranked order.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from benchmarks_app.comparison_rules import PRECISION_FAMILIES, figure_counts

BASELINE_SLUG_DEFAULT = "a100-sxm4-80-gb"
ESTIMATE_COMPUTE_WEIGHT = 0.5

TIER_NAMES = ("S", "A", "B", "C", "D")
# Lower bounds of perf-per-dollar relative to the best eligible GPU; D takes the rest.
TIER_THRESHOLDS = {"S": 0.70, "A": 0.45, "B": 0.25, "C": 0.12}


@dataclass(frozen=True)
class AggregatePoint:
    """One ResultAggregate reduced to what the arithmetic needs."""

    gpu_id: int
    group: tuple[int, str, int]  # (workload id, precision, GPU count)
    median: float
    n: int
    distinct_submitters: int
    has_lab: bool
    higher_is_better: bool = True
    # A workload the benchmark client runs over several GPUs of one host (transformer-train-ddp,
    # allreduce-busbw: results that carry the interconnect). See compared_in_relative_method.
    host_run: bool = False


def compared_in_relative_method(point: AggregatePoint) -> bool:
    """Whether an aggregate enters the relative figure. A host run on 2 GPUs or more measures how the
    host joins its GPUs (NVLink or PCIe, its NCCL) as much as the GPU, and its 1-GPU result of the same
    run is already compared: it is shown as scaling (dashboard/multi_gpu_maths.py), never in the ratio."""
    return not (point.host_run and point.group[2] > 1)


@dataclass(frozen=True)
class MeasuredPerf:
    value: float
    groups: int
    n: int
    distinct_submitters_max: int
    via: int | None = None  # the GPU the figure is chained through, when not compared directly


@dataclass(frozen=True)
class SpecFigures:
    """Datasheet figures used by the estimate; ``peaks`` maps precision -> dense TFLOPS or None
    when the hardware does not support the format."""

    peaks: Mapping[str, float | None]
    bandwidth_gbs: float | None
    fp32_tflops: float | None = None


def geometric_mean(values: Iterable[float]) -> float:
    """Geometric mean of positive numbers; ValueError on an empty or non-positive input."""
    items = list(values)
    if not items:
        raise ValueError("geometric mean of nothing")
    if any(v <= 0 or math.isnan(v) for v in items):
        raise ValueError("geometric mean needs positive values")
    return math.exp(math.fsum(math.log(v) for v in items) / len(items))


def aggregate_qualifies(point: AggregatePoint) -> bool:
    return figure_counts(has_lab=point.has_lab, n=point.n)


def best_per_group(points: Iterable[AggregatePoint]) -> dict[int, dict[tuple[int, str, int], AggregatePoint]]:
    """gpu id -> group -> the qualifying aggregate with the most results (lab first on ties)."""
    chosen: dict[int, dict[tuple[int, str, int], AggregatePoint]] = {}
    for point in points:
        if not aggregate_qualifies(point) or not compared_in_relative_method(point):
            continue
        groups = chosen.setdefault(point.gpu_id, {})
        current = groups.get(point.group)
        if current is None or (point.n, point.has_lab, point.median) > (current.n, current.has_lab, current.median):
            groups[point.group] = point
    return chosen


def _ratios_to(
    groups: Mapping[tuple[int, str, int], AggregatePoint], reference: Mapping[tuple[int, str, int], AggregatePoint]
) -> tuple[list[float], int, int]:
    """Ratios to ``reference`` over the shared groups, the GPU's results in them, max submitters."""
    ratios, n, distinct = [], 0, 0
    for group, point in groups.items():
        ref = reference.get(group)
        if ref is None:
            continue
        ratios.append(point.median / ref.median if point.higher_is_better else ref.median / point.median)
        n += point.n
        distinct = max(distinct, point.distinct_submitters)
    return ratios, n, distinct


def measured_relative(points: Iterable[AggregatePoint], *, baseline_gpu_id: int | None) -> dict[int, MeasuredPerf]:
    """Measured use-case performance of every GPU relative to the baseline (baseline = 1.0).

    A GPU that shares no comparison group with the baseline (a newer benchmark suite the baseline
    never ran) is compared with the directly measured GPU it shares the most groups with, and
    chained: its ratio to that bridge times the bridge's figure. ``via`` names the bridge.
    """
    chosen = best_per_group(points)
    if baseline_gpu_id is None or baseline_gpu_id not in chosen:
        return {}
    reference = chosen[baseline_gpu_id]
    out: dict[int, MeasuredPerf] = {}
    for gpu_id, groups in chosen.items():
        ratios, n, distinct = _ratios_to(groups, reference)
        if ratios:
            out[gpu_id] = MeasuredPerf(geometric_mean(ratios), len(ratios), n, distinct)
    direct = dict(out)
    for gpu_id, groups in chosen.items():
        if gpu_id in out:
            continue
        best: tuple[tuple[int, int, int], int, list[float], int, int] | None = None
        for bridge_id, bridge in direct.items():
            ratios, n, distinct = _ratios_to(groups, chosen[bridge_id])
            # most shared groups, then the best-backed bridge, then a stable order
            rank = (len(ratios), bridge.n, -bridge_id)
            if ratios and (best is None or rank > best[0]):
                best = (rank, bridge_id, ratios, n, distinct)
        if best is not None:
            _rank, bridge_id, ratios, n, distinct = best
            value = geometric_mean(ratios) * direct[bridge_id].value
            out[gpu_id] = MeasuredPerf(value, len(ratios), n, distinct, via=bridge_id)
    return out


def spec_peak(specs: SpecFigures, *, family: str) -> float | None:
    """Dense peak for a precision family: the first supported precision with a figure."""
    for precision in PRECISION_FAMILIES[family][1]:
        if precision == "fp32_nontensor":
            if specs.fp32_tflops:
                return specs.fp32_tflops
            continue
        value = specs.peaks.get(precision)
        if value:
            return value
    return None


def spec_ratios(specs: SpecFigures, baseline: SpecFigures, *, family: str) -> tuple[float, float] | None:
    """(compute ratio, bandwidth ratio) to the baseline; None when a needed figure is missing."""
    peak, ref_peak = spec_peak(specs, family=family), spec_peak(baseline, family=family)
    if not (peak and ref_peak and specs.bandwidth_gbs and baseline.bandwidth_gbs):
        return None
    return peak / ref_peak, specs.bandwidth_gbs / baseline.bandwidth_gbs


MIN_FIT_GPUS = 5  # measured GPUs needed to fit the estimate (two parameters, then leave-one-out)


@dataclass(frozen=True)
class EstimateSample:
    """A measured GPU for the fit: its measured performance and spec ratios to the baseline."""

    key: str
    measured: float
    compute_ratio: float
    bandwidth_ratio: float
    vendor: str = ""  # vendor slug, for the error by vendor and class
    gpu_class: str = ""  # market segment (datacenter, consumer, workstation, ...)


@dataclass(frozen=True)
class EstimateMiss:
    """How far the estimate missed one measured GPU (out of sample: see EstimateModel)."""

    key: str
    vendor: str
    gpu_class: str
    miss: float


@dataclass(frozen=True)
class EstimateModel:
    """``scale * compute_ratio ** compute_weight * bandwidth_ratio ** (1 - compute_weight)``.

    Two forms are checked against the measured GPUs and the one that misses less is used: equal
    weights with no scale (nothing fitted, so its misses on the measured GPUs are out of sample
    as they are), and ``compute_weight`` and ``scale`` fitted by least squares on the logarithms,
    checked by leaving one GPU out (each measured GPU predicted by a fit without it).
    ``typical_error`` is the median and ``worst_error`` the largest relative miss of the form
    used, ``other_error`` the median miss of the other form; all None when fewer than
    ``MIN_FIT_GPUS`` GPUs were measured (``checked_on`` = 0).
    """

    compute_weight: float = ESTIMATE_COMPUTE_WEIGHT
    scale: float = 1.0
    least_squares: bool = False  # False: the equal-weight form
    checked_on: int = 0  # measured GPUs behind the check; 0 = not checked
    typical_error: float | None = None
    worst_error: float | None = None
    other_error: float | None = None
    misses: tuple[EstimateMiss, ...] = ()  # per measured GPU, of the form used

    @property
    def checked(self) -> bool:
        return self.checked_on > 0

    def predict(self, *, compute_ratio: float, bandwidth_ratio: float) -> float:
        w = self.compute_weight
        return self.scale * compute_ratio**w * bandwidth_ratio ** (1 - w)


def _least_squares(samples: Sequence[EstimateSample]) -> tuple[float, float] | None:
    """(weight, log scale) of log m - log b = log s + w (log c - log b), w kept within [0, 1]."""
    xs = [math.log(s.compute_ratio) - math.log(s.bandwidth_ratio) for s in samples]
    ys = [math.log(s.measured) - math.log(s.bandwidth_ratio) for s in samples]
    if len(samples) < 2 or max(xs) - min(xs) < 1e-9:
        return None
    slope, intercept = statistics.linear_regression(xs, ys)
    weight = min(1.0, max(0.0, slope))
    if weight != slope:  # clamped: refit the scale alone for the bound weight
        intercept = statistics.fmean(y - weight * x for x, y in zip(xs, ys, strict=True))
    return weight, intercept


def _miss(model: EstimateModel, sample: EstimateSample) -> float:
    predicted = model.predict(compute_ratio=sample.compute_ratio, bandwidth_ratio=sample.bandwidth_ratio)
    return abs(predicted / sample.measured - 1)


def estimate_model_fit(samples: Sequence[EstimateSample], *, min_gpus: int = MIN_FIT_GPUS) -> EstimateModel:
    """The spec estimate that misses the measured GPUs least (see EstimateModel).

    Least squares on logarithms weighs a 20 % miss the same for a cheap and an expensive GPU.
    Fewer than ``min_gpus`` samples: the equal-weight form, unchecked.
    """
    usable = [s for s in samples if s.measured > 0 and s.compute_ratio > 0 and s.bandwidth_ratio > 0]
    if len(usable) < min_gpus:
        return EstimateModel()
    equal = EstimateModel()
    equal_errors = [_miss(equal, s) for s in usable]
    whole = _least_squares(usable)
    fitted_errors: list[float] = []
    for i, held_out in enumerate(usable):
        fit = _least_squares(usable[:i] + usable[i + 1 :])
        if whole is None or fit is None:
            fitted_errors = []
            break
        fitted_errors.append(_miss(EstimateModel(compute_weight=fit[0], scale=math.exp(fit[1])), held_out))
    equal_typical = statistics.median(equal_errors)

    def misses(errors: list[float]) -> tuple[EstimateMiss, ...]:
        return tuple(EstimateMiss(s.key, s.vendor, s.gpu_class, e) for s, e in zip(usable, errors, strict=True))

    if whole is None or not fitted_errors or statistics.median(fitted_errors) >= equal_typical:
        return EstimateModel(
            checked_on=len(usable),
            typical_error=equal_typical,
            worst_error=max(equal_errors),
            other_error=statistics.median(fitted_errors) if fitted_errors else None,
            misses=misses(equal_errors),
        )
    weight, log_scale = whole
    return EstimateModel(
        compute_weight=weight,
        scale=math.exp(log_scale),
        least_squares=True,
        checked_on=len(usable),
        typical_error=statistics.median(fitted_errors),
        worst_error=max(fitted_errors),
        other_error=equal_typical,
        misses=misses(fitted_errors),
    )


@dataclass(frozen=True)
class EstimateError:
    """The error to show beside one spec-only estimate. ``scope``: "class" (measured GPUs of its
    vendor and class), "vendor" (of its vendor, none of its class), "outside" (no GPU of its vendor
    measured: error unknown), "unchecked" (too few measured GPUs to check the estimate at all)."""

    error: float | None
    scope: str
    checked_on: int = 0  # measured GPUs the error is the median miss over


def estimate_error_for(model: EstimateModel, *, vendor: str, gpu_class: str) -> EstimateError:
    """The typical error of an estimate for a GPU of this vendor and class: the median out-of-sample
    miss over the measured GPUs of the same vendor and class, else of the same vendor. Where no GPU
    of the vendor was measured the estimate is outside the measured range and its error unknown: a
    miss measured on one vendor's GPUs says nothing about another's software and datasheet habits."""
    if not model.misses:
        return EstimateError(None, "unchecked")
    same_class = [m.miss for m in model.misses if m.vendor == vendor and m.gpu_class == gpu_class]
    if same_class:
        return EstimateError(statistics.median(same_class), "class", len(same_class))
    same_vendor = [m.miss for m in model.misses if m.vendor == vendor]
    if same_vendor:
        return EstimateError(statistics.median(same_vendor), "vendor", len(same_vendor))
    return EstimateError(None, "outside")


def per_kilowatt(perf: float | None, tdp_w: float | None) -> float | None:
    if perf is None or not tdp_w or tdp_w <= 0:
        return None
    return perf / (tdp_w / 1000)


def tier_for(ratio_to_best: float) -> str:
    for name in TIER_NAMES[:-1]:
        if ratio_to_best >= TIER_THRESHOLDS[name]:
            return name
    return "D"


@dataclass(frozen=True)
class TierCandidate:
    """A GPU that can be graded: eligible for the use case, with a price. ``value`` is its ranked
    figure (performance per price, an estimate's at its conservative end: ``conservative_value``);
    ``measured`` whether that performance is measured (else estimated)."""

    key: str
    value: float | None
    measured: bool


# The error an estimate counts with where its own is unknown (no measured GPU of its vendor, no fit).
UNKNOWN_ERROR_PCT = 100.0


def conservative_value(value: float | None, *, measured: bool, error_pct: float | None) -> float | None:
    """The figure a row is ranked and graded by: a measurement as it is, an estimate at its
    conservative end, divided by 1 + its typical error (an estimate typically off by 40 % counts
    as 1 / 1.4 of itself; one whose error is unknown as off by ``UNKNOWN_ERROR_PCT``), so a guess
    never outranks a measurement on its optimistic side."""
    if value is None or measured:
        return value
    error = UNKNOWN_ERROR_PCT if error_pct is None else max(error_pct, 0.0)
    return value / (1.0 + error / 100.0)


def tier_mark(candidates: Iterable[TierCandidate]) -> float | None:
    """The 100 % mark of a tier list: the best ranked figure among the candidates (measured or
    estimated, each at its conservative end). None when nothing has a positive value."""
    return max((c.value for c in candidates if c.value is not None and c.value > 0), default=None)


def tiers_from_measurements(candidates: Iterable[TierCandidate]) -> dict[str, str]:
    """Tier rule: key -> tier for every candidate with a positive value.

    Every GPU is graded by its ranked figure (an estimate at its conservative end,
    :func:`conservative_value`) as a share of the best one (:func:`tier_mark`), with
    ``TIER_THRESHOLDS``: every share is at most 100 %, and the tiers are monotone along the
    ranked order (a GPU ranked above another is never in a lower tier).
    """
    items = list(candidates)
    mark = tier_mark(items)
    if mark is None:
        return {}
    return {c.key: tier_for(c.value / mark) for c in items if c.value is not None and c.value > 0}


def pareto_frontier(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Keys of points not dominated on (lower price, higher performance), sorted by price.

    ``points`` are (key, price, performance); a point is dominated when another is at most as
    expensive and at least as fast, and strictly better on one of the two.
    """
    frontier: list[str] = []
    best_perf = -math.inf
    for key, _price, perf in sorted(points, key=lambda p: (p[1], -p[2])):
        if perf > best_perf:
            frontier.append(key)
            best_perf = perf
    return frontier


@dataclass(frozen=True)
class EfficiencyRow:
    """A micro-benchmark against the datasheet figure it can be compared with: tensor peaks for
    matmuls, memory bandwidth for in-memory copies, the host link for PCIe transfers."""

    precision: str
    measured: float
    peak: float | None
    unit: str
    kind: str = "compute"  # "compute" | "memory" | "host link"
    label: str = ""

    @property
    def efficiency(self) -> float | None:
        return self.measured / self.peak if self.peak else None
