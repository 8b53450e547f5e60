"""One answer to a serving question (``llm.question.ServingQuestion``) for one GPU configuration:
the output tokens/s per GPU it sustains while every user gets the target rate, measured where a
point was measured at the workload, else the serving model anchored on the GPU's own
measurements. Pure arithmetic, no database (tests/test_llm_answer.py); the reads that feed it
are in ``llm.selectors.answers``, and every page and API that shows a serving figure reads it.

The rules, one configuration (a GPU, a count of them, a precision) at a time:

* **Measured at the workload.** Points of that GPU and count (or of a count it is a multiple of:
  replicas run as the measured configuration did), model (or one of the same
  architecture) and precision class whose mean lengths are the question's within
  ``llm.question.LENGTH_TOLERANCE``. They lie on one curve of tokens/s per GPU against tokens/s
  per user; the frontier (no point beats another on both) is read at the target, interpolated on
  log-log axes between the two points that bracket it. Below the slowest point per user, that
  point's throughput (a floor: a larger batch would do more, which the points do not show);
  above the fastest, the points do not answer.
* **Anchored estimate.** Otherwise, the serving model's curve for that configuration, every rate
  multiplied by the GPU's anchor: the geometric mean of measured / modelled over its own points
  of the same model and precision class on the same engine class and batch regime (one stream
  on llama.cpp never anchors a batched engine), bounded to ``ANCHOR_BOUNDS`` and to the
  datasheet roofline. Where the GPU was measured at the question's lengths, the anchor is those
  points' at the nearest measured GPU count alone (``Anchor.counts``): the estimate is then the
  measured figure there scaled by the model from that count to this one, so fewer GPUs read
  below the measured configuration exactly when the model's curve for them lies below it (more
  memory-bound), and above it only where the model says why (less all-reduce per token). Where the same configuration was measured but not as fast per user as the
  target, the estimate is capped at the measured throughput at the fastest measured rate, so the
  curve never rises as the target rises.
* **Unreachable.** The configuration fits and neither answers at the target.

Throughput per GPU never rises as the target rises: the measured frontier falls with the user
rate, the model's curve is read as the best operating point at or above the target, the cap
keeps an estimate beyond the measured range below every measured figure of the configuration,
and the best over configurations of functions that never rise never rises.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from django.utils.translation import gettext as _

from llm.question import cost_per_million_output_tokens
from llm.serving.physics import CurvePoint, curve_at_interactivity

# The anchor moves a GPU's estimate by at most this factor either way: a larger miss says the
# model misses something the anchor should not hide (it is reported beside the figure).
ANCHOR_BOUNDS = (0.5, 1.5)

MEASURED, ESTIMATED, UNREACHABLE = "measured", "estimated", "unreachable"


@dataclass(frozen=True)
class WorkloadPoint:
    """One measured serving point (a median where several community results measured it)."""

    gpu_count: int
    precision: str
    engine_class: str
    input_tokens: int | None
    output_tokens: int | None
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float | None  # None: no user rate (a throughput run)
    label: str
    url: str = ""
    results: int = 1
    latency_bound: bool = False  # the user rate is a latency limit (a floor), not a measured rate
    decode_only: bool = False  # a decode microbenchmark: no prefill, no scheduler
    tp: int | None = None  # tensor-parallel size where the source gives it
    joules_per_token: float | None = None  # measured energy of all GPUs per output token
    power_w: float | None = None  # measured average power per GPU over the energy window


@dataclass(frozen=True)
class MeasuredRead:
    """A measured curve read at a target: the figure, whether it is a floor, the points it rests
    on, and the throughput at the fastest measured user rate (the cap of estimates beyond it)."""

    tokens_per_s_per_gpu: float
    floor: bool
    points: tuple[WorkloadPoint, ...]
    at_fastest: float


def _frontier(points: Iterable[WorkloadPoint]) -> list[WorkloadPoint]:
    """Points no other beats on both user rate and throughput, by rising user rate."""
    rated = sorted((p for p in points if p.tokens_per_s_per_user),
                   key=lambda p: (-(p.tokens_per_s_per_user or 0.0), -p.tokens_per_s_per_gpu))  # fmt: skip
    frontier: list[WorkloadPoint] = []
    best = -math.inf
    for p in rated:  # from the fastest per user down: keep a point only if it adds throughput
        if p.tokens_per_s_per_gpu > best:
            frontier.append(p)
            best = p.tokens_per_s_per_gpu
    return frontier[::-1]


def measured_read(points: Sequence[WorkloadPoint], *, target: float | None) -> MeasuredRead | None:
    """One curve's points (one configuration, lengths and engine) read at ``target`` (module doc)."""
    if not points:
        return None
    frontier = _frontier(points)
    fastest = frontier[-1].tokens_per_s_per_gpu if frontier else max(p.tokens_per_s_per_gpu for p in points)
    if target is None:
        best = max(points, key=lambda p: p.tokens_per_s_per_gpu)
        return MeasuredRead(best.tokens_per_s_per_gpu, False, (best,), fastest)
    if not frontier or target > (frontier[-1].tokens_per_s_per_user or 0.0):
        return None
    first = frontier[0]
    if target <= (first.tokens_per_s_per_user or 0.0):
        return MeasuredRead(first.tokens_per_s_per_gpu, target < (first.tokens_per_s_per_user or 0.0), (first,),
                            fastest)  # fmt: skip
    for lo, hi in zip(frontier, frontier[1:], strict=False):
        x0, x1 = lo.tokens_per_s_per_user or 0.0, hi.tokens_per_s_per_user or 0.0
        if x0 <= target <= x1:
            share = (math.log(target) - math.log(x0)) / (math.log(x1) - math.log(x0))
            y0, y1 = math.log(lo.tokens_per_s_per_gpu), math.log(hi.tokens_per_s_per_gpu)
            return MeasuredRead(math.exp(y0 + share * (y1 - y0)), False, (lo, hi), fastest)
    return None


def curve_key(point: WorkloadPoint) -> tuple[object, ...]:
    """Points of one curve: one count, precision, engine class and request shape."""
    return (point.gpu_count, point.precision, point.engine_class, point.input_tokens, point.output_tokens)


def measured_best(points: Sequence[WorkloadPoint], *, target: float | None) -> MeasuredRead | None:
    """The best of the curves among ``points`` at ``target`` (points of different curves are never
    interpolated across)."""
    curves: dict[tuple[object, ...], list[WorkloadPoint]] = {}
    for p in points:
        curves.setdefault(curve_key(p), []).append(p)
    reads = [r for group in curves.values() if (r := measured_read(group, target=target)) is not None]
    return max(reads, key=lambda r: r.tokens_per_s_per_gpu, default=None)


@dataclass(frozen=True)
class Anchor:
    """How a GPU's measurements sit against the model: ``factor`` multiplies the model's rates
    (bounded), ``raw`` is the unbounded geometric mean, ``spread_pct`` the largest miss of one
    point against the factor, ``points`` what it rests on."""

    factor: float
    raw: float
    spread_pct: float
    points: tuple[str, ...]
    # The GPU counts of points measured at the question's lengths it rests on (the nearest to the
    # configuration estimated); empty: all the GPU's points of the model, at any lengths.
    counts: tuple[int, ...] = ()
    measured_max: float | None = None  # the most tokens/s per GPU those points measured


def anchor_from(ratios: Sequence[tuple[float, str]]) -> Anchor | None:
    """The anchor of measured / modelled ratios (module doc); None without any."""
    usable = [(r, label) for r, label in ratios if r > 0 and math.isfinite(r)]
    if not usable:
        return None
    logs = [math.log(r) for r, _label in usable]
    raw = math.exp(sum(logs) / len(logs))
    factor = min(max(raw, ANCHOR_BOUNDS[0]), ANCHOR_BOUNDS[1])
    spread = max(abs(math.exp(v - math.log(factor)) - 1.0) for v in logs) * 100
    return Anchor(factor, raw, spread, tuple(label for _r, label in usable))


def anchored_curve(points: Sequence[CurvePoint], factor: float) -> tuple[CurvePoint, ...]:
    """The model's curve run ``factor`` times as fast per decode step (rates multiplied)."""
    if factor == 1.0:
        return tuple(points)
    return tuple(
        replace(p, tokens_per_s_per_user=p.tokens_per_s_per_user * factor,
                tokens_per_s_per_gpu=p.tokens_per_s_per_gpu * factor, step_s=p.step_s / factor)
        for p in points
    )  # fmt: skip


@dataclass(frozen=True)
class ModelledConfiguration:
    """The serving model's curve of one configuration (already anchored) and what it rests on."""

    tp: int
    points: tuple[CurvePoint, ...]
    label: str
    error_pct: float | None
    inside: bool
    allreduce_source: str = ""
    allreduce_priced: bool = True
    # The 80 % held-out interval as factors on an estimate (llm.serving.heldout), and its kind.
    interval: tuple[float, float] | None = None
    interval_kind: str = ""


@dataclass(frozen=True)
class ServingAnswer:
    """A configuration's answer to the question (module doc). ``tokens_per_s_per_gpu`` is None
    when ``basis`` is UNREACHABLE."""

    gpu_slug: str
    gpu_count: int
    tp: int
    precision: str
    engine: str
    basis: str  # measured | estimated | unreachable
    tokens_per_s_per_gpu: float | None
    tokens_per_s_per_user: float | None
    concurrency: int | None  # sequences in flight on all the GPUs (estimates)
    ttft_s: float | None
    source: str  # measured: the points read; estimate: the model's configuration
    url: str = ""
    results: int = 0  # results behind a measured figure
    floor: bool = False  # measured faster per user than the target: at least this much
    error_pct: float | None = None
    inside: bool = True
    anchor: Anchor | None = None
    capped: bool = False  # an estimate held at the configuration's measured throughput
    allreduce_source: str = ""
    allreduce_priced: bool = True
    measured_points: tuple[WorkloadPoint, ...] = ()
    interval: tuple[float, float] | None = None  # estimates: the 80 % interval as factors on the figure
    interval_kind: str = ""

    @property
    def replicas(self) -> int:
        return max(1, self.gpu_count // self.tp)

    @property
    def tokens_per_s(self) -> float | None:
        return None if self.tokens_per_s_per_gpu is None else self.tokens_per_s_per_gpu * self.gpu_count

    @property
    def tokens_per_s_per_gpu_interval(self) -> tuple[float, float] | None:
        """An estimate's 80 % interval in tokens/s per GPU (None: measured, or no interval stored)."""
        if self.basis != ESTIMATED or self.interval is None or self.tokens_per_s_per_gpu is None:
            return None
        return self.tokens_per_s_per_gpu * self.interval[0], self.tokens_per_s_per_gpu * self.interval[1]

    @property
    def estimate_factors(self) -> tuple[float, float] | None:
        """How far an estimated figure may be off, as (low, high) factors on it: its 80 % interval,
        else its typical error either way (100 % where none is stored); None for a measured figure."""
        if self.basis != ESTIMATED:
            return None
        if self.interval is not None:
            return self.interval
        error = 1.0 + (100.0 if self.error_pct is None else self.error_pct) / 100.0
        return 1.0 / error, error

    def cost_per_million(self, price_per_gpu_hour: float | None) -> float | None:
        return cost_per_million_output_tokens(price_per_gpu_hour=price_per_gpu_hour,
                                              tokens_per_s_per_gpu=self.tokens_per_s_per_gpu)  # fmt: skip

    def conservative_tokens_per_s_per_gpu(self) -> float | None:
        """The figure at its conservative end: an estimate less its typical error (divided by
        1 + error), a measurement as it is."""
        if self.tokens_per_s_per_gpu is None:
            return None
        if self.basis == ESTIMATED:
            return self.tokens_per_s_per_gpu / (1.0 + (100.0 if self.error_pct is None else self.error_pct) / 100.0)
        return self.tokens_per_s_per_gpu


def configuration_answer(
    *,
    gpu_slug: str,
    gpu_count: int,
    precision: str,
    engine: str,
    target: float | None,
    modelled: Sequence[ModelledConfiguration],
    measured: Sequence[WorkloadPoint],
    anchor: Anchor | None,
) -> ServingAnswer | None:
    """The answer of one configuration (module doc); None when the model fits in no
    tensor-parallel split of it and nothing was measured there."""
    read = measured_best(measured, target=target)
    if read is not None:
        tp = read.points[0].tp or read.points[0].gpu_count
        labels = "; ".join(dict.fromkeys(p.label for p in read.points))
        measured_on = read.points[0].gpu_count
        if measured_on != gpu_count:
            labels += " · " + _("%(replicas)d replicas of the configuration measured on %(count)d GPU(s)") % {
                "replicas": gpu_count // measured_on,
                "count": measured_on,
            }
        return ServingAnswer(gpu_slug, gpu_count, tp, precision, engine, MEASURED, read.tokens_per_s_per_gpu,
                             target, None, None, labels, read.points[0].url,
                             sum(p.results for p in read.points), read.floor,
                             measured_points=tuple(measured))  # fmt: skip
    best: tuple[CurvePoint, ModelledConfiguration] | None = None
    for m in modelled:
        at = curve_at_interactivity(m.points, target)
        if at is not None and (best is None or at.tokens_per_s_per_gpu > best[0].tokens_per_s_per_gpu):
            best = (at, m)
    if best is None:
        if not modelled and not measured:
            return None
        m0 = modelled[0] if modelled else None
        return ServingAnswer(gpu_slug, gpu_count, m0.tp if m0 else gpu_count, precision, engine, UNREACHABLE, None,
                             None, None, None, m0.label if m0 else "", error_pct=m0.error_pct if m0 else None,
                             anchor=anchor, measured_points=tuple(measured))  # fmt: skip
    at, m = best
    rate, capped = at.tokens_per_s_per_gpu, False
    if measured:
        # Measured here, but not this fast per user: never above the throughput measured at the
        # fastest measured rate (beyond the measured range the curve only falls).
        cap = measured_cap(measured)
        if rate > cap:
            rate, capped = cap, True
    replicas = max(1, gpu_count // m.tp)
    return ServingAnswer(gpu_slug, gpu_count, m.tp, precision, engine, ESTIMATED, rate, at.tokens_per_s_per_user,
                         at.concurrency * replicas, at.ttft_s, m.label, error_pct=m.error_pct, inside=m.inside,
                         anchor=anchor, capped=capped, allreduce_source=m.allreduce_source,
                         allreduce_priced=m.allreduce_priced, measured_points=tuple(measured),
                         interval=m.interval, interval_kind=m.interval_kind)  # fmt: skip


def measured_cap(points: Sequence[WorkloadPoint]) -> float:
    """The lowest throughput the measured curves of a configuration answer at any target: the
    throughput at the fastest user rate measured (the curve that reaches furthest); the most
    measured where no point has a user rate."""
    curves: dict[tuple[object, ...], list[WorkloadPoint]] = {}
    for p in points:
        curves.setdefault(curve_key(p), []).append(p)
    ends = [frontier[-1] for group in curves.values() if (frontier := _frontier(group))]
    if ends:
        return max(ends, key=lambda p: (p.tokens_per_s_per_user or 0.0, p.tokens_per_s_per_gpu)).tokens_per_s_per_gpu
    return max(p.tokens_per_s_per_gpu for p in points)


def best_answer(answers: Iterable[ServingAnswer | None]) -> ServingAnswer | None:
    """The configuration with the most tokens/s per GPU at the target (measured first on a tie);
    an unreachable one only when none reaches it."""
    known = [a for a in answers if a is not None]
    reached = [a for a in known if a.tokens_per_s_per_gpu is not None]
    if reached:
        return max(reached, key=lambda a: (a.tokens_per_s_per_gpu or 0.0, a.basis == MEASURED, -a.gpu_count))
    return known[0] if known else None
