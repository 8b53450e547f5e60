"""One stream (chat, concurrency 1): batch-1 decode from memory bandwidth (pure arithmetic).

At one sequence a decode step reads the weights a token touches (all of a dense model; the shared
weights and the token's experts of a mixture of experts) and the sequence's own keys and values,
and computes almost nothing: a few FLOPs per byte, far below any GPU's ratio of compute to
bandwidth. So the step is the bytes over the memory bandwidth an engine reaches, plus the fixed
time of a step (kernel launches, sampling, the host's work between tokens)::

    step = (weights touched + context x KV bytes per token) / (bandwidth x efficiency[engine])
           + overhead[engine] + hand-over between GPUs

With the layers split across GPUs (llama.cpp's default) the GPUs work in turn: the stream runs at
one GPU's bandwidth over the whole model, and each stage boundary hands a token's hidden state on.

``efficiency`` and ``overhead`` are fitted per engine class (llama.cpp, the benchmark client's
PyTorch, TensorRT-LLM, vLLM/SGLang), memory family (HBM stacks need many more requests in flight
than GDDR to reach their bandwidth, and one stream's kernels issue few: llama.cpp reads half an
H100's HBM bandwidth where it reads three quarters of a GeForce's GDDR) and weight-format group
(4-bit integer formats are unpacked inside the kernels, 8- and 16-bit ones are not) on the
measured single-stream points, when the points change (``llm.services.serving_fit``), by least
squares on the relative error of the step time, which is linear in ``1 / efficiency`` and
``overhead``. A group with too few points takes the next wider one (engine and memory, engine
and format, engine), an engine with none the fit over every point. Nothing else of the GPU
counts: two GPUs of the same bandwidth and memory family get the same estimate, whatever tensor
figures the catalogue has for them.

Prefill, where a question has a prompt, is compute-bound and priced by the serving model
(``physics.prefill_seconds``); it gives the time to the first token, not the stream's rate.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from llm.serving.physics import (
    GIB,
    AllReduce,
    Hardware,
    ServingConstants,
    Workload,
    kv_bytes_per_sequence_per_gpu,
    prefill_seconds,
    touched_bytes_per_gpu,
    weights_bytes,
)

ANY = "*"
# A group (engine, or engine and format) is fitted on its own from this many points on at least
# two GPUs; below that it takes the wider group's figures.
MIN_POINTS = 5
EFFICIENCY_BOUNDS = (0.1, 1.0)
OVERHEAD_MS_BOUNDS = (0.0, 5.0)
# A relative miss beyond this counts linearly in the fit (Huber's loss).
HUBER = 0.1
# Before any fit: a typical share of the datasheet bandwidth a batch-1 decode reaches.
DEFAULT = (0.7, 0.3)


def memory_family(memory_type: str) -> str:
    """hbm, gddr, or other (LPDDR and unified memory) of a catalogue memory type."""
    kind = memory_type.strip().lower()
    return "hbm" if kind.startswith("hbm") else "gddr" if kind.startswith("gddr") else "other"


def format_group(weight_precision: str) -> str:
    """4-bit integer weights (GGUF k-quants, AWQ, GPTQ) are unpacked inside the matrix kernels; 8-
    and 16-bit (and FP4 on a GPU with its path) stream as they are."""
    return "4bit" if weight_precision == "int4" else "8-16bit"


@dataclass(frozen=True)
class StreamPoint:
    """One measured single-stream rate: the bytes one token's step reads (whole model, one GPU's
    bandwidth) and what was measured."""

    gpu_key: str
    engine: str
    memory: str  # memory_family
    weight_precision: str
    bytes_per_token: float
    bandwidth_gbs: float
    tokens_per_s: float
    label: str = ""


def stream_bytes_per_token(w: Workload, hw: Hardware) -> float:
    """Bytes one decode step of one sequence reads over the whole model: the weights it touches and
    its keys and values at the average context (the prompt plus half the output)."""
    one = replace(w, tp=1, ep=1)
    context = w.input_len + w.output_len / 2.0
    return touched_bytes_per_gpu(one, 1) + kv_bytes_per_sequence_per_gpu(one, hw, context)


@dataclass(frozen=True)
class StreamFit:
    """Per group (``engine``, ``engine/format`` or ``*``): the bandwidth efficiency, the overhead of
    a step (ms) and the points it was fitted on; the held-out error of each engine (median and 90th
    percentile of ``|estimate / measured - 1|``, each GPU's points estimated without them)."""

    efficiency: Mapping[str, float] = field(default_factory=dict)
    overhead_ms: Mapping[str, float] = field(default_factory=dict)
    points: Mapping[str, int] = field(default_factory=dict)
    errors: Mapping[str, Mapping[str, float | int]] = field(default_factory=dict)

    def key(self, engine: str, memory: str, weight_precision: str) -> str:
        """The narrowest fitted group of an engine class, memory family and weight format."""
        for key in _keys(engine, memory, weight_precision):
            if key in self.efficiency:
                return key
        return ANY

    def constants(self, engine: str, memory: str, weight_precision: str) -> tuple[float, float]:
        """(efficiency, overhead in seconds) of an engine class, memory family and weight format."""
        key = self.key(engine, memory, weight_precision)
        if key not in self.efficiency:
            return DEFAULT[0], DEFAULT[1] / 1000.0
        return self.efficiency[key], self.overhead_ms[key] / 1000.0

    def seconds_per_token(self, *, bytes_per_token: float, bandwidth_gbs: float, engine: str, memory: str,
                          weight_precision: str) -> float:  # fmt: skip
        efficiency, overhead = self.constants(engine, memory, weight_precision)
        return bytes_per_token / (bandwidth_gbs * 1e9 * efficiency) + overhead

    def error_pct(self, engine: str) -> float | None:
        cell = self.errors.get(engine) or self.errors.get(ANY)
        return float(cell["median_pct"]) if cell else None

    def as_dict(self) -> dict[str, object]:
        return {"efficiency": dict(self.efficiency), "overhead_ms": dict(self.overhead_ms), "points": dict(self.points),
                "errors": {k: dict(v) for k, v in self.errors.items()}}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> StreamFit:
        def mapping(name: str) -> dict[str, object]:
            value = data.get(name)
            return dict(value) if isinstance(value, Mapping) else {}

        return cls(
            {k: float(v) for k, v in mapping("efficiency").items()},  # type: ignore[arg-type]
            {k: float(v) for k, v in mapping("overhead_ms").items()},  # type: ignore[arg-type]
            {k: int(v) for k, v in mapping("points").items()},  # type: ignore[call-overload]
            {k: dict(v) for k, v in mapping("errors").items() if isinstance(v, Mapping)},
        )


def _solve(points: Sequence[StreamPoint]) -> tuple[float, float]:
    """``1 / efficiency`` and the overhead that make ``bytes / bandwidth x a + o`` closest to the
    measured step times in relative terms, within their bounds: least squares, reweighted so that a
    point missed by more than ``HUBER`` counts in proportion to its miss, not its square (a host
    that held a GPU back does not move every other GPU's estimate)."""
    x = np.array([p.bytes_per_token / (p.bandwidth_gbs * 1e9) for p in points])
    t = np.array([1.0 / p.tokens_per_s for p in points])
    weights = np.ones_like(t)
    a, o = 1.0 / DEFAULT[0], DEFAULT[1] / 1000.0
    for _ in range(20):
        a, o = _bounded_weighted(x / t, 1.0 / t, weights)
        misses = np.abs(a * x / t + o / t - 1.0)
        weights = 1.0 / np.maximum(1.0, misses / HUBER)
    return 1.0 / a, o * 1000.0


def _bounded_weighted(u: np.ndarray, v: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """min sum w (a u + o v - 1)^2 over ``a`` in [1 / max efficiency, 1 / min efficiency] and ``o``
    within its bounds: the free solution where it lies inside, else the best on an edge."""
    a_low, a_high = 1.0 / EFFICIENCY_BOUNDS[1], 1.0 / EFFICIENCY_BOUNDS[0]
    o_low, o_high = OVERHEAD_MS_BOUNDS[0] / 1000.0, OVERHEAD_MS_BOUNDS[1] / 1000.0
    root = np.sqrt(weights)

    def cost(a: float, o: float) -> float:
        return float(np.sum(weights * (a * u + o * v - 1.0) ** 2))

    (a, o), *_ = np.linalg.lstsq(np.column_stack([u * root, v * root]), root, rcond=None)
    if a_low <= a <= a_high and o_low <= o <= o_high:
        return float(a), float(o)
    candidates = []
    for o_edge in (o_low, o_high):  # the overhead on an edge: the best efficiency for it
        a_fit = float(np.clip(np.sum(weights * u * (1 - o_edge * v)) / np.sum(weights * u * u), a_low, a_high))
        candidates.append((a_fit, o_edge))
    for a_edge in (a_low, a_high):  # the efficiency on an edge: the best overhead for it
        o_fit = float(np.clip(np.sum(weights * v * (1 - a_edge * u)) / np.sum(weights * v * v), o_low, o_high))
        candidates.append((a_edge, o_fit))
    return min(candidates, key=lambda c: cost(*c))


def _keys(engine: str, memory: str, weight_precision: str) -> tuple[str, ...]:
    """The groups a point belongs to, narrowest first (``*``, every point, is the last resort)."""
    fmt = format_group(weight_precision)
    return (f"{engine}/{memory}/{fmt}", f"{engine}/{memory}", f"{engine}/{fmt}", engine)


def _groups(points: Iterable[StreamPoint]) -> dict[str, list[StreamPoint]]:
    out: dict[str, list[StreamPoint]] = defaultdict(list)
    for p in points:
        out[ANY].append(p)
        for key in _keys(p.engine, p.memory, p.weight_precision):
            out[key].append(p)
    return out


def _constants_fit(points: Sequence[StreamPoint]) -> StreamFit:
    efficiency, overhead, counts = {}, {}, {}
    for key, group in _groups(points).items():
        if len(group) < (1 if key == ANY else MIN_POINTS) or (key != ANY and len({p.gpu_key for p in group}) < 2):
            continue
        efficiency[key], overhead[key] = _solve(group)
        counts[key] = len(group)
    return StreamFit(efficiency, overhead, counts)


def stream_fit(points: Sequence[StreamPoint]) -> StreamFit:
    """The constants on every point, and their leave-one-GPU-out error per engine class."""
    fitted = _constants_fit(points)
    misses: dict[str, list[float]] = defaultdict(list)
    for gpu in sorted({p.gpu_key for p in points}):
        without = _constants_fit([p for p in points if p.gpu_key != gpu])
        for p in points:
            if p.gpu_key != gpu:
                continue
            seconds = without.seconds_per_token(bytes_per_token=p.bytes_per_token, bandwidth_gbs=p.bandwidth_gbs,
                                                engine=p.engine, memory=p.memory,
                                                weight_precision=p.weight_precision)  # fmt: skip
            miss = abs(1.0 / seconds / p.tokens_per_s - 1.0)
            misses[p.engine].append(miss)
            misses[ANY].append(miss)
    errors = {
        key: {
            "n": len(values),
            "median_pct": 100 * statistics.median(values),
            "p90_pct": 100 * float(np.percentile(values, 90)),
        }  # fmt: skip
        for key, values in misses.items()
    }
    return replace(fitted, errors=errors)


def stream_usable_bytes(memory_gib: float, serving: ServingConstants) -> float:
    """Bytes per GPU one stream's weights and cache may take. One stream allocates no KV-cache pool
    (llama.cpp sizes its cache to the context): what the GPU exposes less the runtime reserve."""
    return max(0.0, memory_gib - serving.reserve_gib) * GIB


@dataclass(frozen=True)
class SingleStream:
    """One stream on ``gpus`` GPUs (the fewest whose memory holds it, layers split across them):
    its decode rate, the time of a step's bytes and of its hand-overs, and (where the GPU has a
    compute figure) the time to the first token."""

    tokens_per_s: float
    gpus: int
    memory_s: float
    overhead_s: float
    handover_s: float
    ttft_s: float | None


def single_stream_compute(
    *,
    w: Workload,
    hw: Hardware,
    fit: StreamFit,
    serving: ServingConstants,
    memory: str,
    max_gpus: int = 8,
    gpus: int | None = None,
    handover_s: Callable[[int], float | None],
) -> SingleStream | None:
    """One stream of ``w`` on ``hw`` with memory of ``memory``'s family (module doc): on ``gpus`` GPUs when given, else on the fewest
    whose memory (less the runtime reserve) holds the weights and one sequence's cache. None without a bandwidth figure, when it fits on none, or when the layers are split over
    a link with no figure (a hand-over is never free)."""
    if not hw.bandwidth_gbs:
        return None
    one = replace(w, tp=1, ep=1)
    need = weights_bytes(one) + kv_bytes_per_sequence_per_gpu(one, hw, w.input_len + w.output_len)
    usable = stream_usable_bytes(hw.memory_gib, serving)
    counts = [gpus] if gpus is not None else list(range(1, max_gpus + 1))
    for count in counts:
        if usable * count < need:
            continue
        talk = handover_s(count) if count > 1 else 0.0
        if talk is None:
            return None
        efficiency, overhead = fit.constants(w.engine, memory, w.weight_precision)
        reading = stream_bytes_per_token(one, hw) / (hw.bandwidth_gbs * 1e9 * efficiency)
        ttft = None
        if hw.compute_peak(w.weight_precision) is not None and w.input_len > 0:
            ttft = prefill_seconds(w=one, hw=hw, c=serving, requests=1, link=AllReduce()) + reading + overhead
            ttft = ttft if math.isfinite(ttft) else None
        return SingleStream(1.0 / (reading + overhead + talk), count, reading, overhead, talk, ttft)
    return None
