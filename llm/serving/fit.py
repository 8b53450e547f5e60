"""Fit the serving model's constants to measured points, and measure its error (pure).

A measured point says what a system served: GPU, GPUs per replica (tensor parallel) and in all,
model, precision, engine class, prompt and output lengths, and where the point sits on the curve:

* at a known concurrency (our client's sweeps, one-stream chat figures): the model's point at
  that concurrency (its decode steps alone where the source timed only those: our client's
  decode microbenchmark prefills its prompts before the clock starts);
* at a latency bound or a measured tokens/s per user (MLPerf Server and Interactive): the most
  throughput the model allows at that tokens/s per user (its one stream where even that is
  slower: the measured system was faster, and the error says by how much);
* at maximum load (MLPerf Offline, TensorRT-LLM's throughput tables): the model's throughput at
  the KV-cache limit (throughput never falls with concurrency in the model, so that is its
  maximum).

The constants (``physics.ServingConstants``: bandwidth and compute shares per hardware class,
factors, a per-step overhead and a per-layer overhead of a mixture of experts per engine
class) are fitted by bounded robust least squares on
log residuals of tokens/s per GPU (and of tokens/s per user where the concurrency is known). The
class shares and the engine factors multiply, so the engine factors are pulled gently towards 1
and the class shares towards a typical share of the datasheet and towards each other (weak
priors) to keep them apart.

Errors: leave one GPU out and leave one model out (refit without it, estimate its points),
median and 90th percentile of ``|estimate / measured - 1|`` per scenario and per engine class,
split by whether the point lies inside the range of the points the constants were fitted on
(its hardware class, engine class and tensor-parallel kind all measured) or outside.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import least_squares

from llm.serving.physics import (
    AllReduce,
    CurvePoint,
    Hardware,
    ServingConstants,
    Workload,
    block_scaled_emulated,
    communication_seconds,
    decode_step,
    fp4_dequantised,
    is_moe,
    matrix_flops_per_gpu,
    matrix_peak,
    max_concurrency,
    point_at,
    prefill_peak_seconds,
    weights_bytes_per_gpu,
)

SCENARIOS = ("offline", "server", "interactive", "concurrency", "single-stream")
MAX_LOAD_SCENARIOS = frozenset({"offline", "max-throughput"})
_LOSS, _LOSS_SCALE = "soft_l1", 0.2
_ENGINE_PRIOR = 0.3  # weight of the pull of log(engine factor) towards 0
SHARE_BOUNDS = (0.02, 1.0)
ENGINE_BOUNDS = (0.2, 2.0)
OVERHEAD_MS_BOUNDS = (0.0, 3.0)
# A mixture of experts' layer runs about ten kernels a dense one does not (router, top-k,
# permutation, grouped matrices, combine), of a few microseconds each with almost nothing to do;
# some engines wait on the host for the routing; the dispatch and combine have their latency:
# at most 200 us a layer.
MOE_LAYER_OVERHEAD_US_BOUNDS = (0.0, 200.0)
DEQUANT_BOUNDS = (0.6, 1.0)
EXPERT_PARALLEL_BOUNDS = (0.05, 1.0)
BLOCK_SCALE_DECODE_BOUNDS = (0.2, 1.0)
DECODE_SHARE_PROFILE = (0.8, 0.6, 0.45, 0.35, 0.25)  # within BLOCK_SCALE_DECODE_BOUNDS
# The points fix a class share only as a product with an engine factor, and where a class is
# measured on one or two engines, or not on anything its compute limits, they barely split it.
# Two weak pulls keep the split where the points do not make it: towards a typical share of the
# datasheet, and towards the other classes' shares of the same kind (as a class with no points
# at all takes their mean, ``physics._lookup``). Without them the split drifts to wherever the
# last few points push it: a Hopper compute share near 0.2 (under a third of what its matrix units
# reach on a large prefill), or a GeForce compute share, which no point measures, that follows
# whatever engine factor the datacentre points leave.
_SHARE_PRIOR = 0.2
_CLASS_PRIOR = 0.2
# A held-out refit starts where the fit on every point started, never from that fit's result: a
# refit started there keeps whatever only the left-out points determine (a constant that only
# they pin stays at the value they gave it). Started cold, the demo's refits converge within
# this many evaluations (the same estimates as at 300).
HELD_OUT_MAX_NFEV = 100


@dataclass(frozen=True)
class MeasuredPoint:
    """One measured operating point, in plain numbers (see the module doc)."""

    gpu_key: str
    model_key: str
    hardware: Hardware
    workload: Workload
    scenario: str
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float | None = None
    concurrency: int | None = None  # sequences of the whole system
    gpu_count: int = 1
    link: AllReduce = field(default_factory=AllReduce)
    label: str = ""
    source: str = ""  # the source kind (mlperf, trtllm, llamacpp, ...): leave-one-source-out groups by it
    published: str = ""  # ISO date the source published the figure: the time split cuts on it
    decode_only: bool = False  # the source timed the decode steps alone (no prefill in its rates)
    max_batch: int | None = None  # the engine's own cap on sequences per replica, where the source's settings set one

    @property
    def replicas(self) -> int:
        return max(1, self.gpu_count // max(1, self.workload.tp))

    @property
    def engine(self) -> str:
        return self.workload.engine

    @property
    def regime(self) -> tuple[str, str, str]:
        """What must be among the fitted points for an estimate of this one to be inside the range."""
        w = self.workload
        return (self.hardware.hardware_class, w.engine, "ep" if w.ep > 1 else "tp" if w.tp > 1 else "single")


def predict(p: MeasuredPoint, c: ServingConstants) -> CurvePoint | None:
    """The model's point for a measured one (module doc); None when the model does not fit."""
    w, hw = p.workload, p.hardware
    limit = min(max_concurrency(w, hw, c), p.max_batch or c.max_concurrency)
    if limit < 1 or not hw.bandwidth_gbs or hw.compute_peak(w.weight_precision) is None:
        return None
    prefill = not p.decode_only
    if p.concurrency is not None and p.scenario not in MAX_LOAD_SCENARIOS:
        batch = max(1, min(limit, round(p.concurrency / p.replicas)))
        return point_at(w=w, hw=hw, c=c, batch=batch, link=p.link, prefill=prefill)
    if p.tokens_per_s_per_user and p.scenario not in MAX_LOAD_SCENARIOS:
        # The measured system reached this tokens/s per user; where the model's one stream is
        # slower, its one stream is the nearest point it has (as the fit scores it).
        got = at_interactivity(w=w, hw=hw, c=c, link=p.link, target=p.tokens_per_s_per_user, limit=limit,
                               prefill=prefill)  # fmt: skip
        return got or point_at(w=w, hw=hw, c=c, batch=1, link=p.link, prefill=prefill)
    return point_at(w=w, hw=hw, c=c, batch=limit, link=p.link, prefill=prefill)


def at_interactivity(
    *, w: Workload, hw: Hardware, c: ServingConstants, link: AllReduce, target: float, limit: int, prefill: bool = True
) -> CurvePoint | None:
    """The largest concurrency whose tokens/s per user still meets ``target`` (tokens/s per user
    falls with concurrency): bisection over 1..limit. None when one stream is already slower."""

    def at(b: int) -> CurvePoint:
        return point_at(w=w, hw=hw, c=c, batch=b, link=link, prefill=prefill)

    low = at(1)
    if low.tokens_per_s_per_user < target:
        return None
    top = at(limit)
    if top.tokens_per_s_per_user >= target:
        return top
    lo, hi = 1, limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if at(mid).tokens_per_s_per_user >= target:
            lo = mid
        else:
            hi = mid
    return at(lo)


# -- the fit ----------------------------------------------------------------------------------
#
# Everything in a step but the fitted shares is fixed for a point at a given batch: the bytes it
# reads, the FLOPs, the all-reduces. The fit precomputes those (seconds at the datasheet figures)
# for every point at its batch, or, for a point at a tokens/s-per-user target, on a grid of
# batches up to the KV-cache limit, and evaluates the model as array arithmetic.


@dataclass(frozen=True)
class _Layout:
    classes: tuple[str, ...]
    engines: tuple[str, ...]
    moe_engines: frozenset[str] = frozenset()  # engine classes with a mixture of experts among the points

    def constants(self, theta: np.ndarray, base: ServingConstants) -> ServingConstants:
        k, e = len(self.classes), len(self.engines)
        bw = {cls: float(np.exp(theta[i])) for i, cls in enumerate(self.classes)}
        comp = {cls: float(np.exp(theta[k + i])) for i, cls in enumerate(self.classes)}
        ebw = {eng: float(np.exp(theta[2 * k + i])) for i, eng in enumerate(self.engines)}
        ecomp = {eng: float(np.exp(theta[2 * k + e + i])) for i, eng in enumerate(self.engines)}
        over = {eng: float(theta[2 * k + 2 * e + i]) for i, eng in enumerate(self.engines)}
        # An engine class no mixture of experts was measured on has no figure of its own (the
        # lookup takes the mean of the others), not the start value the fit never moved.
        moe = {eng: float(theta[2 * k + 3 * e + i]) for i, eng in enumerate(self.engines) if eng in self.moe_engines}
        return replace(base, bandwidth_share=bw, compute_share=comp, engine_bandwidth=ebw, engine_compute=ecomp,
                       overhead_ms=over, moe_layer_overhead_us=moe,
                       dequant_share=float(np.exp(theta[-1])),
                       expert_parallel_share=float(np.exp(theta[-2])),
                       block_scale_decode_share=float(np.exp(theta[-3])),
                       fp4_dequant_decode_share=float(np.exp(theta[-4])))  # fmt: skip

    def start_and_bounds(self, base: ServingConstants) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        k, e = len(self.classes), len(self.engines)
        start = np.concatenate([
            [math.log(min(0.95, base.bandwidth_share.get(c, 0.7))) for c in self.classes],
            [math.log(min(0.95, base.compute_share.get(c, 0.5))) for c in self.classes],
            [math.log(base.engine_bandwidth.get(g, 1.0)) for g in self.engines],
            [math.log(base.engine_compute.get(g, 1.0)) for g in self.engines],
            [min(OVERHEAD_MS_BOUNDS[1] * 0.99, base.overhead_ms.get(g, 0.3)) for g in self.engines],
            [min(MOE_LAYER_OVERHEAD_US_BOUNDS[1] * 0.99, base.moe_layer_overhead_us.get(g, 5.0)) for g in self.engines],
            [math.log(min(0.99, base.fp4_dequant_decode_share))],
            [math.log(min(0.99, base.block_scale_decode_share))],
            [math.log(min(0.99, base.expert_parallel_share))],
            [math.log(min(0.99, base.dequant_share))],
        ])  # fmt: skip
        low = np.concatenate([np.full(2 * k, math.log(SHARE_BOUNDS[0])), np.full(2 * e, math.log(ENGINE_BOUNDS[0])),
                              np.full(e, OVERHEAD_MS_BOUNDS[0]), np.full(e, MOE_LAYER_OVERHEAD_US_BOUNDS[0]),
                              [math.log(BLOCK_SCALE_DECODE_BOUNDS[0])],
                              [math.log(BLOCK_SCALE_DECODE_BOUNDS[0])], [math.log(EXPERT_PARALLEL_BOUNDS[0])],
                              [math.log(DEQUANT_BOUNDS[0])]])  # fmt: skip
        high = np.concatenate([np.full(2 * k, math.log(SHARE_BOUNDS[1])), np.full(2 * e, math.log(ENGINE_BOUNDS[1])),
                               np.full(e, OVERHEAD_MS_BOUNDS[1]), np.full(e, MOE_LAYER_OVERHEAD_US_BOUNDS[1]),
                               [math.log(BLOCK_SCALE_DECODE_BOUNDS[1])],
                               [math.log(BLOCK_SCALE_DECODE_BOUNDS[1])], [math.log(EXPERT_PARALLEL_BOUNDS[1])],
                               [math.log(DEQUANT_BOUNDS[1])]])  # fmt: skip
        return np.clip(start, low + 1e-9, high - 1e-9), low, high


@dataclass
class _Design:
    """The fixed parts of every point's step at its candidate batches (one row per point and batch)."""

    point: np.ndarray  # which point a row belongs to
    batch: np.ndarray
    memory_s: np.ndarray  # decode step: bytes read / datasheet bandwidth
    compute_s: np.ndarray  # the weights' matrix FLOPs / datasheet peak of their format
    attention_s: np.ndarray  # attention FLOPs / datasheet peak of the cache's format
    allreduce_s: np.ndarray
    prefill_compute_s: np.ndarray  # prefill of the batch's prompts
    prefill_memory_s: np.ndarray
    prefill_allreduce_s: np.ndarray
    has_prefill: np.ndarray
    others_compute_s: np.ndarray  # prefill of the other b - 1 prompts (between a user's tokens)
    others_allreduce_s: np.ndarray
    has_others: np.ndarray
    output_len: np.ndarray
    tp: np.ndarray
    cls: np.ndarray
    engine: np.ndarray
    int4: np.ndarray
    ep: np.ndarray  # 1 where the experts are spread (attention data parallel)
    block_scaled: np.ndarray  # 1 where block-scaled weights run on a GPU that does not apply the scales
    fp4_dequantised: np.ndarray  # 1 where FP4 weights run on a GPU without FP4 matrix units
    moe_layers: np.ndarray  # the layers of a mixture of experts, else 0


def _batches(p: MeasuredPoint, limit: int) -> list[int]:
    if p.concurrency is not None and p.scenario not in MAX_LOAD_SCENARIOS:
        return [max(1, min(limit, round(p.concurrency / p.replicas)))]
    if p.tokens_per_s_per_user and p.scenario not in MAX_LOAD_SCENARIOS:
        grid, b = [], 1
        while b < limit:
            grid.append(b)
            b = max(b + 1, int(b * 1.5))
        return [*grid, limit]
    return [limit]


def _design(points: Sequence[MeasuredPoint], layout: _Layout) -> tuple[_Design, list[int]]:
    """The design rows of the points the model fits (and the indices of those points)."""
    unit = ServingConstants(bandwidth_share={"other": 1.0}, compute_share={"other": 1.0}, overhead_ms={"other": 0.0})
    rows: dict[str, list[float]] = defaultdict(list)
    kept: list[int] = []
    for i, p in enumerate(points):
        w, hw = p.workload, p.hardware
        limit = min(max_concurrency(w, hw, unit), p.max_batch or unit.max_concurrency)
        if limit < 1 or not hw.bandwidth_gbs or hw.compute_peak(w.weight_precision) is None:
            continue
        kept.append(i)
        peak_hw = replace(hw, hardware_class="other")
        peak_w = replace(w, engine="other", weight_precision=w.weight_precision)
        m = w.model
        for b in _batches(p, limit):
            step = decode_step(w=peak_w, hw=peak_hw, c=unit, batch=b, link=p.link, peak=True)
            talk = communication_seconds(w, p.link, b)
            tokens = 0 if p.decode_only else b * w.input_len
            peak = matrix_peak(w, hw)
            tflops = peak[0] if peak else 0.0
            matrix_s = matrix_flops_per_gpu(w, b) / (tflops * 1e12)
            pre_s = prefill_peak_seconds(w, hw, tokens) if tokens else 0.0
            rows["point"].append(len(kept) - 1)
            rows["batch"].append(b)
            rows["memory_s"].append(step.memory_s)
            rows["compute_s"].append(matrix_s)
            rows["attention_s"].append(step.compute_s - matrix_s)
            rows["allreduce_s"].append(talk)
            rows["prefill_compute_s"].append(pre_s)
            rows["prefill_memory_s"].append(weights_bytes_per_gpu(w) / (hw.bandwidth_gbs * 1e9))
            rows["prefill_allreduce_s"].append(communication_seconds(w, p.link, tokens))
            rows["has_prefill"].append(1.0 if tokens > 0 else 0.0)
            others = 0 if p.decode_only else (b - 1) * w.input_len
            rows["others_compute_s"].append(pre_s * others / tokens if tokens else 0.0)
            rows["others_allreduce_s"].append(communication_seconds(w, p.link, others))
            rows["has_others"].append(1.0 if others > 0 else 0.0)
            rows["output_len"].append(w.output_len)
            rows["tp"].append(w.tp)
            rows["cls"].append(layout.classes.index(hw.hardware_class))
            rows["engine"].append(layout.engines.index(w.engine))
            rows["int4"].append(1.0 if w.weight_precision == "int4" else 0.0)
            rows["ep"].append(1.0 if w.ep > 1 else 0.0)
            rows["block_scaled"].append(1.0 if block_scaled_emulated(w, hw) else 0.0)
            rows["fp4_dequantised"].append(1.0 if fp4_dequantised(w, hw) else 0.0)
            rows["moe_layers"].append(m.layers if is_moe(m) else 0.0)
    arrays = {k: np.asarray(v, dtype=float) for k, v in rows.items()}
    for key in ("point", "cls", "engine"):
        arrays[key] = arrays.get(key, np.zeros(0)).astype(int)
    fields = _Design.__dataclass_fields__
    return _Design(**{k: arrays.get(k, np.zeros(0)) for k in fields}), kept


def _rates(d: _Design, theta: np.ndarray, layout: _Layout) -> tuple[np.ndarray, np.ndarray]:
    """(tokens/s per GPU, tokens/s per user) of every design row."""
    k, e = len(layout.classes), len(layout.engines)
    bw = np.exp(theta[d.cls] + theta[2 * k + d.engine]) * np.where(d.int4 > 0, np.exp(theta[-1]), 1.0)
    comp = np.exp(theta[k + d.cls] + theta[2 * k + e + d.engine])
    bw, comp = np.minimum(bw, 1.0), np.minimum(comp, 1.0)
    spread = np.where(d.ep > 0, np.exp(theta[-2]), 1.0)
    bw, comp = bw * spread, comp * spread
    decode_comp = comp * np.where(d.block_scaled > 0, np.exp(theta[-3]), 1.0)
    decode_comp = decode_comp * np.where(d.fp4_dequantised > 0, np.exp(theta[-4]), 1.0)
    overhead = theta[2 * k + 2 * e + d.engine] / 1e3 + d.moe_layers * theta[2 * k + 3 * e + d.engine] / 1e6
    step = np.maximum(d.memory_s / bw, d.compute_s / decode_comp + d.attention_s / comp) + overhead + d.allreduce_s
    prefill = d.has_prefill * (
        np.maximum(d.prefill_compute_s / comp, d.prefill_memory_s / bw) + overhead + d.prefill_allreduce_s
    )
    others = d.has_others * (
        np.maximum(d.others_compute_s / comp, d.prefill_memory_s / bw) + overhead + d.others_allreduce_s
    )
    per_gpu = d.batch * d.output_len / (d.output_len * step + prefill) / d.tp
    return per_gpu, d.output_len / (d.output_len * step + others)


def _point_rates(
    d: _Design, per_gpu: np.ndarray, per_user: np.ndarray, targets: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per point: the row's figures, or at a target the most throughput meeting it (linear
    between the grid's batches; a point whose one stream misses the target gets its one stream)."""
    # Rows are written point by point in order: a point's last row is its only one, or its largest batch.
    last = np.searchsorted(d.point, np.arange(n), side="right") - 1
    first = np.searchsorted(d.point, np.arange(n))
    out_gpu, out_user = per_gpu[last].copy(), per_user[last].copy()
    for i in np.nonzero((last > first) & (targets > 0))[0]:
        rows = np.arange(first[i], last[i] + 1)
        users, gpus = per_user[rows], per_gpu[rows]
        ok = np.nonzero(users >= targets[i])[0]
        if len(ok) == 0:
            out_gpu[i], out_user[i] = gpus[0], users[0]
            continue
        j = ok[-1]
        if j + 1 < len(rows) and users[j] > users[j + 1]:
            f = (users[j] - targets[i]) / (users[j] - users[j + 1])
            out_gpu[i] = gpus[j] + f * (gpus[j + 1] - gpus[j])
            out_user[i] = targets[i]
        else:
            out_gpu[i], out_user[i] = gpus[j], users[j]
    return out_gpu, out_user


def constants_fit(
    points: Sequence[MeasuredPoint], *, base: ServingConstants | None = None, max_nfev: int = 300
) -> ServingConstants:
    """Constants fitted to ``points`` (module doc); ``base`` gives the start and the assumptions."""
    base = base or ServingConstants()
    usable = [p for p in points if p.tokens_per_s_per_gpu > 0]
    if not usable:
        return base
    layout = _Layout(
        classes=tuple(sorted({p.hardware.hardware_class for p in usable})),
        engines=tuple(sorted({p.engine for p in usable})),
        moe_engines=frozenset(p.engine for p in usable if is_moe(p.workload.model)),
    )
    design, kept = _design(usable, layout)
    if not kept:
        return base
    fitted_points = [usable[i] for i in kept]
    n = len(fitted_points)
    measured_gpu = np.log([p.tokens_per_s_per_gpu for p in fitted_points])
    targets = np.array([
        (p.tokens_per_s_per_user or 0.0)
        if p.concurrency is None and p.scenario not in MAX_LOAD_SCENARIOS else 0.0
        for p in fitted_points
    ])  # fmt: skip
    user_rows = np.array([
        p.concurrency is not None and bool(p.tokens_per_s_per_user) and p.scenario not in MAX_LOAD_SCENARIOS
        for p in fitted_points
    ])  # fmt: skip
    measured_user = np.log([p.tokens_per_s_per_user or 1.0 for p in fitted_points])
    start, low, high = layout.start_and_bounds(base)
    k, e = len(layout.classes), len(layout.engines)

    def residuals(theta: np.ndarray) -> np.ndarray:
        per_gpu, per_user = _rates(design, theta, layout)
        gpu, user = _point_rates(design, per_gpu, per_user, targets, n)
        parts = [np.log(gpu) - measured_gpu, (np.log(user) - measured_user)[user_rows]]
        # Weak priors keep what the points do not determine near ordinary values: engine factors
        # near 1, shares near a typical share of the datasheet and near the other classes' shares.
        parts.append(_ENGINE_PRIOR * theta[2 * k : 2 * k + 2 * e])
        parts.append(_SHARE_PRIOR * (theta[: 2 * k] - math.log(0.6)))
        parts.append(_CLASS_PRIOR * (theta[:k] - theta[:k].mean()))
        parts.append(_CLASS_PRIOR * (theta[k : 2 * k] - theta[k : 2 * k].mean()))
        return np.concatenate(parts)

    def solve(theta0: np.ndarray) -> np.ndarray:
        return least_squares(residuals, theta0, bounds=(low, high), loss=_LOSS, f_scale=_LOSS_SCALE, diff_step=1e-4,
                             tr_solver="lsmr", max_nfev=max_nfev).x  # fmt: skip

    theta = solve(start)
    # The decode shares of emulated scales act only through max(memory, compute): where their rows
    # are memory-bound at the solution, their residuals are flat in the share and the solver cannot
    # move it, even when a slower compute would fit them better. Profile each over its range and
    # solve again from the best value where one beats the solution.
    for index, flagged in ((-3, design.block_scaled), (-4, design.fp4_dequantised)):
        if not flagged.any():
            continue
        best, best_cost = theta, _robust_cost(residuals(theta))
        for share in DECODE_SHARE_PROFILE:
            trial = theta.copy()
            trial[index] = math.log(share)
            trial_cost = _robust_cost(residuals(trial))
            if trial_cost < best_cost - 1e-9:
                best, best_cost = trial, trial_cost
        if best is not theta:
            theta = solve(best)
    return layout.constants(theta, base)


def _robust_cost(residuals: np.ndarray) -> float:
    """The cost least_squares minimises with the soft-L1 loss (``_LOSS``) at ``_LOSS_SCALE``."""
    z = (residuals / _LOSS_SCALE) ** 2
    return float(np.sum(2.0 * (np.sqrt(1.0 + z) - 1.0)))


# -- errors -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorCell:
    """The error of a group of held-out estimates: ``n`` points, median and 90th percentile of
    ``|estimate / measured - 1|`` in per cent."""

    n: int
    median_pct: float
    p90_pct: float

    def as_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "median_pct": round(self.median_pct, 1), "p90_pct": round(self.p90_pct, 1)}


@dataclass(frozen=True)
class HeldOut:
    point: MeasuredPoint
    estimate: float | None
    inside: bool
    held_out_by: str  # "gpu" | "model"

    @property
    def error(self) -> float | None:
        if self.estimate is None:
            return None
        return abs(self.estimate / self.point.tokens_per_s_per_gpu - 1.0)


def cell(errors: Iterable[float]) -> ErrorCell | None:
    values = np.asarray(list(errors), dtype=float)
    if values.size == 0:
        return None
    return ErrorCell(int(values.size), float(np.median(values) * 100), float(np.percentile(values, 90) * 100))


def measured_regimes(points: Iterable[MeasuredPoint]) -> set[tuple[str, str, str]]:
    return {p.regime for p in points}


def held_out(
    points: Sequence[MeasuredPoint],
    *,
    by: str,
    base: ServingConstants,
    fit: Callable[..., ServingConstants] = constants_fit,
) -> list[HeldOut]:
    """Every point estimated by constants fitted without its GPU (``by="gpu"``) or its model;
    ``base`` is where each refit starts: the full fit's start, not its result."""
    key: Callable[[MeasuredPoint], str] = (lambda p: p.gpu_key) if by == "gpu" else (lambda p: p.model_key)
    groups: dict[str, list[MeasuredPoint]] = defaultdict(list)
    for p in points:
        groups[key(p)].append(p)
    out: list[HeldOut] = []
    for name, test in groups.items():
        train = [p for p in points if key(p) != name]
        if not train:
            continue
        constants = fit(train, base=base, max_nfev=HELD_OUT_MAX_NFEV)
        regimes = measured_regimes(train)
        for p in test:
            got = predict(p, constants)
            out.append(HeldOut(p, got.tokens_per_s_per_gpu if got else None, p.regime in regimes, by))
    return out


def error_table(results: Sequence[HeldOut]) -> dict[str, dict[str, dict[str, dict[str, float | int]]]]:
    """``{held_out_by: {"scenario:<s>" | "engine:<e>" | "all": {"inside" | "outside": cell}}}``;
    a point the model does not fit at all counts as 100 % off."""
    table: dict[str, dict[str, dict[str, dict[str, float | int]]]] = {}
    for by in sorted({r.held_out_by for r in results}):
        rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"inside": [], "outside": []})
        for r in results:
            if r.held_out_by != by:
                continue
            err = 1.0 if r.error is None else r.error
            where = "inside" if r.inside else "outside"
            for group in ("all", f"scenario:{r.point.scenario}", f"engine:{r.point.engine}"):
                rows[group][where].append(err)
        table[by] = {
            group: {where: c.as_dict() for where, values in parts.items() if (c := cell(values))}
            for group, parts in sorted(rows.items())
        }
    return table


def error_for(
    table: dict[str, dict[str, dict[str, dict[str, float | int]]]], *, scenario: str, engine: str, inside: bool
) -> float | None:
    """The median error (per cent) an estimate carries: the larger of leave-one-GPU-out and
    leave-one-model-out, of its scenario (else its engine class, else all points), inside or
    outside the measured range as it is."""
    where = "inside" if inside else "outside"
    found: list[float] = []
    for by in ("gpu", "model"):
        groups = table.get(by, {})
        for group in (f"scenario:{scenario}", f"engine:{engine}", "all"):
            value = groups.get(group, {}).get(where)
            if value and int(value["n"]) >= 3:
                found.append(float(value["median_pct"]))
                break
    return max(found) if found else None


@dataclass(frozen=True)
class MeasuredCoverage:
    """What the fitted points measured: GPUs, models, GPU and model pairs, and per model the range
    of prompt and output lengths. An estimate's kinds of extrapolation (``llm.serving.heldout``)
    are read against it."""

    gpus: frozenset[str] = frozenset()
    models: frozenset[str] = frozenset()
    pairs: frozenset[tuple[str, str]] = frozenset()
    lengths: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # input min, max, output min, max

    @classmethod
    def of(cls, points: Iterable[MeasuredPoint]) -> MeasuredCoverage:
        spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
        gpus, models, pairs = set(), set(), set()
        for p in points:
            gpus.add(p.gpu_key)
            models.add(p.model_key)
            pairs.add((p.gpu_key, p.model_key))
            spans[p.model_key].append((p.workload.input_len, p.workload.output_len))
        lengths = {
            model: (min(v[0] for v in values), max(v[0] for v in values), min(v[1] for v in values),
                    max(v[1] for v in values))
            for model, values in spans.items()
        }  # fmt: skip
        return cls(frozenset(gpus), frozenset(models), frozenset(pairs), lengths)

    def kinds(self, *, gpu_key: str, model_key: str, engine: str, hardware_class: str, input_len: int,
              output_len: int) -> tuple[str, ...]:  # fmt: skip
        """The kinds of extrapolation an estimate makes (``llm.serving.heldout``'s module doc)."""
        if (gpu_key, model_key) in self.pairs:
            pair = "pair:measured"
        elif gpu_key not in self.gpus:
            pair = "gpu:new"
        elif model_key not in self.models:
            pair = "model:new"
        else:
            pair = "pair:new"
        out = ["all", pair, f"engine:{engine}", f"class:{hardware_class}"]
        span = self.lengths.get(model_key)
        if span is None or not (span[0] <= input_len <= span[1] and span[2] <= output_len <= span[3]):
            out.append("lengths:outside")
        return tuple(out)

    def as_dict(self) -> dict[str, object]:
        return {"gpus": sorted(self.gpus), "models": sorted(self.models), "pairs": sorted(list(p) for p in self.pairs),
                "lengths": {m: list(v) for m, v in sorted(self.lengths.items())}}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> MeasuredCoverage:
        pairs = data.get("pairs") or []
        lengths = data.get("lengths") or {}
        return cls(
            frozenset(str(g) for g in data.get("gpus") or []),  # type: ignore[attr-defined]
            frozenset(str(m) for m in data.get("models") or []),  # type: ignore[attr-defined]
            frozenset((str(g), str(m)) for g, m in pairs),  # type: ignore[attr-defined]
            {str(m): (int(v[0]), int(v[1]), int(v[2]), int(v[3])) for m, v in lengths.items()},  # type: ignore[attr-defined]
        )


@dataclass(frozen=True)
class ServingFit:
    """What a fit stores: the constants, the held-out error table (:func:`error_table`), the
    regimes (hardware class, engine class, single or tensor parallel) of the fitted points, how
    many points it was fitted on, and (from the reviewer's checks, ``llm.serving.heldout``) the
    80 % intervals by kind of extrapolation and what the points measured, to read an estimate's
    kinds against."""

    constants: ServingConstants
    errors: dict[str, dict[str, dict[str, dict[str, float | int]]]] = field(default_factory=dict)
    regimes: frozenset[tuple[str, str, str]] = frozenset()
    points: int = 0
    intervals: dict[str, dict[str, float | None]] = field(default_factory=dict)
    coverage: MeasuredCoverage = field(default_factory=MeasuredCoverage)

    def inside(self, *, hardware_class: str, engine: str, tp: int, ep: int = 1) -> bool:
        """Whether an estimate lies inside the measured range (module doc)."""
        return (hardware_class, engine, "ep" if ep > 1 else "tp" if tp > 1 else "single") in self.regimes

    def error_pct(self, *, scenario: str, engine: str, inside: bool) -> float | None:
        return error_for(self.errors, scenario=scenario, engine=engine, inside=inside)


def serving_fit_build(
    points: Sequence[MeasuredPoint], *, base: ServingConstants | None = None, with_errors: bool = True
) -> ServingFit:
    """Constants on every point, and (``with_errors``) the leave-one-GPU-out and
    leave-one-model-out error table."""
    base = base or ServingConstants()
    constants = constants_fit(points, base=base)
    errors: dict[str, dict[str, dict[str, dict[str, float | int]]]] = {}
    if with_errors and points:
        # Each refit starts where this fit started (HELD_OUT_MAX_NFEV says why).
        results = held_out(points, by="gpu", base=base) + held_out(points, by="model", base=base)
        errors = error_table(results)
    return ServingFit(constants, errors, frozenset(measured_regimes(points)), len(points))
