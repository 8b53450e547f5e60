"""The LLM serving model: throughput per GPU against tokens/s per user (pure arithmetic).

No Django, no project imports: callers pass plain numbers (a GPU's datasheet figures, a model's
shape, the all-reduce figures of the GPUs' link) and the fitted constants.

One decode step of a replica (``t`` GPUs split by tensor) at concurrency ``b`` and average
context ``c`` (the prompt plus half the output)::

    step = max(bytes read / effective bandwidth, FLOPs / effective compute)
           + per-step overhead (+ layers x per-layer overhead for a mixture of experts)
           + 2 x layers x all-reduce(b x hidden x 2 bytes)

    bytes read = weights touched / t + b x c x KV bytes per token / t
    compute    = 2 x active parameters x b / t / the weights' peak
                 + 4 x layers x hidden x c x b / t / the attention's peak (the cache's format)

A dense model touches all its weights every step; a mixture of experts touches each token's
active parameters, at most all of them (``min(total, b x active)``). Keys and values are split
across GPUs by KV head, so beyond ``t = KV heads`` each GPU keeps whole heads (replicated).

Prefill of a prompt of ``L`` tokens is the same arithmetic over ``L`` tokens at once
(compute-bound: ``2 x active`` FLOPs per token at the weights' peak and ``2 x layers x hidden x
L`` at the attention's, the causal attention over the prompt). Over a request's life a replica
spends ``out x step`` on its decode and the prefill time of the ``b`` requests that share it, so::

    tokens/s per GPU  = b x out / (out x step + prefill(b requests)) / t
    tokens/s per user = out / (out x step + prefill(b - 1 requests))   (1 / time per output token)
    TTFT              = prefill(one request) + step

The weights must fit in ``memory x usable share - runtime reserve`` (GiB); the KV cache takes
the usable share of what the weights and the reserve leave, and bounds concurrency for the full
context ``L + out``.

A mixture of experts may be served as engines serve it at scale (``ep`` GPUs, TensorRT-LLM's
DEPn, SGLang's DP attention with EP): every GPU runs attention for its own sequences (attention
data parallel, so each keeps only its own sequences' keys and values, MLA's latent included) and
holds the shared weights whole and ``1 / ep`` of the routed experts. A step then reads the shared
weights, the experts of this GPU that the ``b x ep`` tokens of the step route to, and its own
KV cache; and sends each token's hidden state to its ``k`` experts and back (two all-to-alls per
MoE layer) over the link. The routed experts touched by ``n`` tokens each choosing ``k`` of ``E``
are ``E (1 - (1 - k / E)^n)`` in expectation; the shared weights are what is left of the total
when the routed experts, ``(total - active) / (1 - k / E)``, are taken out.

All-reduce: ring, ``2 (t - 1) / t x message / bus bandwidth`` per call. The bus bandwidth at the
message's size is taken from a measured all-reduce run of the GPU and link where one exists
(interpolated in log-log between the run's message sizes; below the smallest, that size's time),
else from the datasheet link figure plus a per-call latency; :class:`AllReduce` says which.

Effective bandwidth and compute are the datasheet figures times a share per hardware class and
a factor per engine class (never above the datasheet); the overheads are per engine class: one
per step (scheduling, sampling, the host's work between steps) and, for a mixture of experts, one
per layer: the time its expert path takes when it has almost nothing to do (about ten kernels a
dense layer does not run: router, top-k, token permutation, grouped expert matrices, combine;
some engines wait on the host for the routing; and the latency of the dispatch and combine).
That is what a step of a deep mixture of experts costs at low concurrency, when the bytes read
take a few milliseconds: DeepSeek-R1 on eight GPUs, 61 layers, runs a token every 7 to 25 ms
whatever the GPUs' bandwidth. Nothing depends on the benchmark: FP8 reads half the bytes of BF16
and computes at the FP8 peak; attention computes at its cache's format (:func:`attention_tflops`:
FP8 with an 8-bit cache, else 16 bits), never at the 4 bits of FP4 weights; layers with a sliding
window keep at most the window's keys and values (:func:`cached_layer_tokens`); FP4 weights whose
checkpoint pairs them with 8-bit activations compute at the FP8 rate (:func:`matrix_peak`).
Weights scaled per small block (DeepSeek-R1's FP8 checkpoint) on a GPU whose matrix units do not
apply the scales decode their matrices at a fitted share of that peak
(``ServingConstants.block_scale_decode_share``); FP4 weights on a GPU without FP4 matrix units
are dequantised to 16 bits and decode at a share of their own (``fp4_dequant_decode_share``);
the prefill of both keeps the full rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

GIB = 1024**3
ACTIVATION_BYTES = 2.0  # 16-bit activations, whatever the weight format

ENGINE_CLASSES = ("tensorrt-llm", "vllm-sglang", "llama.cpp", "pytorch")
HARDWARE_CLASSES = ("hopper", "blackwell", "ampere", "ada", "cdna3", "consumer", "other")
# The tensor path a weight format computes at, best first ("fp16_nontensor": the vector FP16
# rate of a GPU without a tensor figure). 4-bit GGUF and INT4 weights are dequantised to 8 or
# 16 bits before the matrix units; FP4 weights on a GPU without FP4 matrix units are dequantised
# to 16 bits in the kernel (W4A16: TensorRT-LLM's Triton MXFP4 experts on Hopper, vLLM's Marlin).
COMPUTE_CHAIN: dict[str, tuple[str, ...]] = {
    "fp4": ("fp4", "fp16", "bf16", "fp16_nontensor"),
    "fp8": ("fp8", "fp16", "bf16", "fp16_nontensor"),
    "int8": ("int8", "fp8", "fp16", "bf16", "fp16_nontensor"),
    "int4": ("int8", "fp16", "bf16", "fp16_nontensor"),
    "fp16": ("fp16", "bf16", "fp16_nontensor"),
    "bf16": ("bf16", "fp16", "fp16_nontensor"),
    "fp32": ("tf32", "fp16", "bf16", "fp16_nontensor"),
}
# The KV-cache format an engine stores with a weight format: 8-bit weights come with an 8-bit
# cache where the GPU has an FP8 path (TensorRT-LLM's and vLLM's FP8 checkpoints), else 16 bits.
KV_BYTES = {"fp8": 1.0, "int8": 1.0, "fp16": 2.0, "bf16": 2.0}


def hardware_class(*, architecture: str, segment: str = "") -> str:
    """The hardware class of a GPU: its architecture family, or "consumer" for GeForce/Radeon
    cards (their memory systems and drivers differ from the data-centre parts of the same
    generation)."""
    if segment == "consumer":
        return "consumer"
    arch = architecture.lower()
    for prefix, name in (("hopper", "hopper"), ("blackwell", "blackwell"), ("ampere", "ampere"),
                         ("ada", "ada"), ("cdna", "cdna3")):  # fmt: skip
        if arch.startswith(prefix):
            return name
    return "other"


class ModelShapeLike(Protocol):
    @property
    def total_params_b(self) -> float: ...
    @property
    def active_params_b(self) -> float: ...
    @property
    def layers(self) -> int: ...
    @property
    def hidden(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def head_dim(self) -> int: ...


@dataclass(frozen=True)
class Hardware:
    """One GPU's datasheet figures: memory in GiB, bandwidth in GB/s (10^9 B/s), dense tensor
    peaks in TFLOPS by precision (None or absent: no such path)."""

    memory_gib: float
    bandwidth_gbs: float
    tensor_tflops: Mapping[str, float | None]
    hardware_class: str = "other"

    def compute_peak(self, weight_precision: str) -> tuple[float, str] | None:
        for precision in COMPUTE_CHAIN.get(weight_precision, (weight_precision,)):
            value = self.tensor_tflops.get(precision)
            if value:
                return float(value), precision
        return None

    def supports(self, precision: str) -> bool:
        return bool(self.tensor_tflops.get(precision))


@dataclass(frozen=True)
class AllReduce:
    """What one all-reduce costs between the GPUs of a replica.

    ``measured``: (message bytes, bus GB/s) of a measured run for this GPU, count and link;
    ``bus_gbs`` and ``latency_s``: the datasheet link's effective bus bandwidth and the latency
    of one call, used when nothing is measured. ``source`` names which (shown to users).
    """

    measured: tuple[tuple[float, float], ...] = ()
    bus_gbs: float | None = None
    latency_s: float = 6e-6
    source: str = ""

    @property
    def is_measured(self) -> bool:
        return bool(self.measured)

    @property
    def known(self) -> bool:
        return bool(self.measured) or bool(self.bus_gbs)

    def seconds(self, *, message_bytes: float, gpus: int) -> float:
        """One ring all-reduce of ``message_bytes`` over ``gpus`` GPUs (0 when unknown or one GPU)."""
        if gpus <= 1 or message_bytes <= 0:
            return 0.0
        ring = 2.0 * (gpus - 1) / gpus
        if self.measured:
            return ring * message_bytes / (self._measured_bus(message_bytes) * 1e9)
        if not self.bus_gbs:
            return 0.0
        return self.latency_s + ring * message_bytes / (self.bus_gbs * 1e9)

    def all_to_all_seconds(self, *, message_bytes: float, gpus: int) -> float:
        """One all-to-all in which each GPU sends ``message_bytes`` spread over the others (0 when
        unknown or one GPU): the share that leaves the GPU at the link's bus bandwidth."""
        if gpus <= 1 or message_bytes <= 0:
            return 0.0
        leaving = (gpus - 1) / gpus * message_bytes
        if self.measured:
            return leaving / (self._measured_bus(message_bytes) * 1e9)
        if not self.bus_gbs:
            return 0.0
        return self.latency_s + leaving / (self.bus_gbs * 1e9)

    def _measured_bus(self, message_bytes: float) -> float:
        points = sorted(self.measured)
        sizes = [math.log(s) for s, _ in points]
        # Interpolate the time per byte in log-log; below the smallest size the call takes at least
        # that size's time (latency-bound), above the largest the largest size's bandwidth holds.
        x = math.log(message_bytes)
        if x <= sizes[0]:
            smallest, bus = points[0]
            return bus * message_bytes / smallest
        if x >= sizes[-1]:
            return points[-1][1]
        for (_, b0), (_, b1), x0, x1 in zip(points, points[1:], sizes, sizes[1:], strict=False):
            if x0 <= x <= x1:
                w = (x - x0) / (x1 - x0) if x1 > x0 else 0.0
                return math.exp(math.log(b0) * (1 - w) + math.log(b1) * w)
        return points[-1][1]  # pragma: no cover - the loop covers the range


@dataclass(frozen=True)
class ServingConstants:
    """Effective shares of the datasheet figures. ``bandwidth_share``/``compute_share`` per
    hardware class, ``engine_bandwidth``/``engine_compute`` factors and ``overhead_ms`` (per
    decode step) per engine class; the product of share and factor is capped at 1. A class with
    no fitted value takes the geometric mean of the fitted ones. Assumed, not fitted: the usable
    share of GPU memory and a serving engine's runtime reserve per GPU (vLLM's memory profile of
    an RTX 5090: 0.33 GiB outside PyTorch plus a 1.01 GiB activation peak, vllm-project/vllm#14452).
    """

    bandwidth_share: Mapping[str, float] = field(default_factory=lambda: {"other": 0.75})
    compute_share: Mapping[str, float] = field(default_factory=lambda: {"other": 0.5})
    engine_bandwidth: Mapping[str, float] = field(default_factory=dict)
    engine_compute: Mapping[str, float] = field(default_factory=dict)
    overhead_ms: Mapping[str, float] = field(default_factory=lambda: {"other": 0.3})
    # Per layer of a mixture of experts (module doc), in microseconds per decode step or prefill.
    moe_layer_overhead_us: Mapping[str, float] = field(default_factory=lambda: {"other": 0.0})
    # Integer 4-bit weights (GGUF k-quants, AWQ, GPTQ) are unpacked and scaled inside the matrix
    # kernels: they stream at this share of the rate 8- and 16-bit weights stream at.
    dequant_share: float = 1.0
    # Experts spread over GPUs with attention data parallel (``Workload.ep``) reach this share of
    # the rates a replica reaches: uneven routing leaves some GPUs waiting at every layer's
    # all-to-all, and each rank's attention batch is uneven too. Fitted on the DEP points.
    expert_parallel_share: float = 1.0
    # Weights scaled per small block (:func:`block_scaled_emulated`) on a GPU whose matrix units do
    # not apply the scales (no FP4 path): a decode step's matrices compute at this share of the
    # rate. The kernels multiply block by block and apply each block's scales to the partial sums
    # on the vector cores (Hopper's FP8 block-scale GEMMs); on a decode step's short matrices
    # (tens to a few hundred tokens per expert) that work is not hidden behind the multiply, on a
    # prefill's thousands of tokens it is, so prefill keeps the rate. Fitted on the points that
    # run such weights (DeepSeek-R1 FP8 on Hopper and CDNA3).
    block_scale_decode_share: float = 1.0
    # FP4 weights on a GPU without FP4 matrix units (:func:`fp4_dequantised`): the kernels unpack
    # and scale every weight to 16 bits before the multiply (W4A16), and a decode step's short
    # matrices do not hide that work, so its matrices compute at this share of the 16-bit rate;
    # prefill keeps the rate. A kernel of its own, so a share of its own: fitted on the points
    # that run such weights (gpt-oss's MXFP4 checkpoint on Hopper).
    fp4_dequant_decode_share: float = 1.0
    memory_usable_fraction: float = 0.9
    reserve_gib: float = 1.34
    max_concurrency: int = 4096

    def effective_bandwidth_gbs(self, hw: Hardware, engine: str, weight_precision: str = "") -> float:
        share = _lookup(self.bandwidth_share, hw.hardware_class) * _lookup(self.engine_bandwidth, engine, 1.0)
        if weight_precision == "int4":
            share *= self.dequant_share
        return hw.bandwidth_gbs * min(1.0, share)

    def effective_tflops(self, peak_tflops: float, hw: Hardware, engine: str) -> float:
        share = _lookup(self.compute_share, hw.hardware_class) * _lookup(self.engine_compute, engine, 1.0)
        return peak_tflops * min(1.0, share)

    def overhead_s(self, engine: str, model: ModelShapeLike | None = None) -> float:
        """The fixed time of a step of ``model`` (per step, and per layer of a mixture of experts)."""
        fixed = _lookup(self.overhead_ms, engine) / 1000.0
        if model is None or not is_moe(model):
            return fixed
        return fixed + model.layers * _lookup_time(self.moe_layer_overhead_us, engine) / 1e6

    def usable_bytes(self, memory_gib: float) -> float:
        """Bytes per GPU the weights may take: the usable share of the memory less the runtime
        reserve (what vLLM's gpu_memory_utilization of 0.9 leaves)."""
        return max(0.0, memory_gib * self.memory_usable_fraction - self.reserve_gib) * GIB

    def as_dict(self) -> dict[str, object]:
        return {
            "bandwidth_share": dict(self.bandwidth_share),
            "compute_share": dict(self.compute_share),
            "engine_bandwidth": dict(self.engine_bandwidth),
            "engine_compute": dict(self.engine_compute),
            "overhead_ms": dict(self.overhead_ms),
            "moe_layer_overhead_us": dict(self.moe_layer_overhead_us),
            "dequant_share": self.dequant_share,
            "expert_parallel_share": self.expert_parallel_share,
            "block_scale_decode_share": self.block_scale_decode_share,
            "fp4_dequant_decode_share": self.fp4_dequant_decode_share,
            "memory_usable_fraction": self.memory_usable_fraction,
            "reserve_gib": self.reserve_gib,
            "max_concurrency": self.max_concurrency,
        }


def constants_from_dict(data: Mapping[str, object]) -> ServingConstants:
    known = set(ServingConstants.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown serving-model constant(s): {', '.join(unknown)}")
    return ServingConstants(**data)  # type: ignore[arg-type]


def _lookup(values: Mapping[str, float], key: str, default: float | None = None) -> float:
    if key in values:
        return values[key]
    if default is not None:
        return default
    known = [v for v in values.values() if v > 0]
    return math.exp(sum(math.log(v) for v in known) / len(known)) if known else 1.0


def _lookup_time(values: Mapping[str, float], key: str) -> float:
    """A time of an engine class; a class with none fitted takes the mean of the fitted ones."""
    if key in values:
        return values[key]
    return sum(values.values()) / len(values) if values else 0.0


@dataclass(frozen=True)
class Workload:
    """What is served: a model at a weight format (``bytes_per_weight`` includes the scales of
    quantised formats), its KV format, prompt and output lengths, on ``tp`` GPUs per replica."""

    model: ModelShapeLike
    weight_precision: str
    bytes_per_weight: float
    input_len: int
    output_len: int
    tp: int = 1
    kv_bytes: float | None = None  # per value; None = the engine's default for the weights
    engine: str = "vllm-sglang"
    ep: int = 1  # GPUs the routed experts are spread over, attention data parallel on each (tp = 1)

    def kv_value_bytes(self, hw: Hardware) -> float:
        if self.kv_bytes is not None:
            return self.kv_bytes
        # FP4 weights come with an 8-bit cache only where they run as FP4: dequantised to 16 bits
        # (no FP4 path) the engines keep the checkpoint's 16-bit cache.
        eight_bit = (self.weight_precision == "fp8" and hw.supports("fp8")) or (
            self.weight_precision == "fp4" and hw.supports("fp4")
        )
        return 1.0 if eight_bit else 2.0


@dataclass(frozen=True)
class CurvePoint:
    """One operating point of a replica. ``concurrency``: sequences a replica serves at once."""

    concurrency: int
    tokens_per_s_per_user: float
    tokens_per_s_per_gpu: float
    ttft_s: float
    step_s: float
    bound: str  # "memory bandwidth" | "compute" | "all-reduce" | "overhead"


@dataclass(frozen=True)
class ServingCurve:
    fits: bool
    points: tuple[CurvePoint, ...]
    max_concurrency: int
    weights_gib_per_gpu: float
    kv_gib_per_sequence_per_gpu: float
    usable_gib_per_gpu: float
    compute_precision: str
    allreduce_source: str
    reason: str = ""  # why it does not fit, or why no figure


def weights_bytes(w: Workload) -> float:
    return w.model.total_params_b * 1e9 * w.bytes_per_weight


def attention_width(model: ModelShapeLike, *, prefill: bool = False) -> int:
    """Query heads x the width each head attends over, per context token (the hidden size where
    the shape does not give its heads): ``width`` FLOPs-pairs for the scores and as many for the
    values, so ``4 x width`` FLOPs per context token and layer. A head attends over ``head_dim``
    unless the shape says otherwise (``attention_head_width``): multi-head latent attention decodes
    with the up-projections absorbed, each of DeepSeek's 128 heads scoring the 576-wide latent
    (512 + 64 rotary) and reading the 512-wide values, (576 + 512) / 2 = 544 a head, while its
    prefill runs the heads unabsorbed, 192-wide keys and 128-wide values, 160 a head."""
    heads = getattr(model, "heads", 0) or 0
    widths = getattr(model, "attention_head_width", None) or (0, 0)
    per_head = (widths[1] if prefill else widths[0]) or model.head_dim
    return max(model.hidden, heads * per_head)


def is_moe(model: ModelShapeLike) -> bool:
    """A mixture of experts: fewer parameters active per token than in all. Every layer counts as
    an expert layer (DeepSeek's first three dense layers of 61 are within the fit's error)."""
    return model.active_params_b < model.total_params_b


def routed_expert_params_b(model: ModelShapeLike) -> float:
    """Parameters of the routed experts (0 for a dense model or one without its expert counts)."""
    experts, k = getattr(model, "experts", 0), getattr(model, "active_experts", 0)
    if not experts or not k or model.active_params_b >= model.total_params_b:
        return 0.0
    return (model.total_params_b - model.active_params_b) / (1.0 - k / experts)


def weights_bytes_per_gpu(w: Workload) -> float:
    """The weights one GPU holds: a ``1 / tp`` slice, or with experts spread over ``ep`` GPUs the
    shared weights whole and ``1 / ep`` of the routed experts."""
    if w.ep > 1:
        routed = routed_expert_params_b(w.model)
        return ((w.model.total_params_b - routed) + routed / w.ep) * 1e9 * w.bytes_per_weight
    return weights_bytes(w) / w.tp


def touched_bytes_per_gpu(w: Workload, batch: int) -> float:
    """Weight bytes one GPU reads in a decode step of ``batch`` sequences (per replica of ``tp``
    GPUs, or per GPU of an expert-parallel group): the shared weights and the routed experts the
    step's tokens choose (module doc)."""
    m = w.model
    routed = routed_expert_params_b(m)
    if not routed:
        return min(m.total_params_b, m.active_params_b * batch) * 1e9 * w.bytes_per_weight / w.tp
    experts, k = m.experts, m.active_experts  # type: ignore[attr-defined]
    tokens = batch * max(1, w.ep)
    touched_share = 1.0 - (1.0 - k / experts) ** tokens
    shared = m.total_params_b - routed
    per_gpu = (shared + routed * touched_share / max(1, w.ep)) / w.tp
    return per_gpu * 1e9 * w.bytes_per_weight


def block_scaled_emulated(w: Workload, hw: Hardware) -> bool:
    """Whether 8-bit weights are scaled per small block (a checkpoint the shape says is
    block-scaled at this precision) on a GPU without block-scaled matrix units (no FP4 path)."""
    scaled = w.weight_precision != "fp4" and w.weight_precision in getattr(w.model, "block_scaled", ())
    return scaled and not hw.supports("fp4")


def fp4_dequantised(w: Workload, hw: Hardware) -> bool:
    """Whether FP4 weights run on a GPU without FP4 matrix units (dequantised to 16 bits)."""
    return w.weight_precision == "fp4" and not hw.supports("fp4")


def communication_seconds(w: Workload, link: AllReduce, tokens: int) -> float:
    """What a step of ``tokens`` tokens per replica (per GPU with experts spread) spends on the link:
    two all-reduces per layer under tensor parallelism, two all-to-alls per layer (dispatch to
    the experts and back) under expert parallelism."""
    m = w.model
    if w.ep > 1:
        k = getattr(m, "active_experts", 0) or 1
        return 2 * m.layers * link.all_to_all_seconds(message_bytes=tokens * k * m.hidden * ACTIVATION_BYTES, gpus=w.ep)
    return 2 * m.layers * link.seconds(message_bytes=tokens * m.hidden * ACTIVATION_BYTES, gpus=w.tp)


def kv_bytes_per_token_per_gpu(w: Workload, hw: Hardware) -> float:
    """Keys and values of one token in every layer, on one GPU of the replica (whole KV heads per
    GPU: beyond ``tp = kv_heads`` heads are replicated)."""
    m = w.model
    heads_per_gpu = max(m.kv_heads / w.tp, 1.0) if m.kv_heads >= 1 else 1.0
    return 2.0 * m.layers * heads_per_gpu * m.head_dim * w.kv_value_bytes(hw)


def sliding_window(model: ModelShapeLike) -> tuple[int, int]:
    """(window in tokens, layers that attend over it only); (0, 0) for full attention throughout."""
    window = getattr(model, "sliding_window", 0) or 0
    return (window, getattr(model, "sliding_layers", 0)) if window else (0, 0)


def cached_layer_tokens(model: ModelShapeLike, context: float) -> float:
    """The keys and values a sequence of ``context`` tokens keeps, in tokens summed over the
    layers: every token in a full-attention layer, at most the window in a sliding-window one."""
    window, sliding = sliding_window(model)
    return (model.layers - sliding) * context + sliding * min(context, window)


def matrix_flops_per_gpu(w: Workload, tokens: float) -> float:
    """FLOPs one GPU of a replica spends on ``tokens`` tokens through the active weights' matrices."""
    return 2.0 * w.model.active_params_b * 1e9 * tokens / w.tp


def kv_bytes_per_sequence_per_gpu(w: Workload, hw: Hardware, tokens: float) -> float:
    """Keys and values of a sequence of ``tokens`` tokens on one GPU of the replica."""
    return cached_layer_tokens(w.model, tokens) * kv_bytes_per_token_per_gpu(w, hw) / w.model.layers


def max_concurrency(w: Workload, hw: Hardware, c: ServingConstants) -> int:
    """Sequences of full context (prompt + output) whose KV cache fits beside the weights."""
    weights = weights_bytes_per_gpu(w)
    if weights > c.usable_bytes(hw.memory_gib):
        return 0
    # The KV cache takes its share of what the weights and the runtime leave (TensorRT-LLM's
    # kv_cache_free_gpu_mem_fraction, 0.9 by default).
    free = c.memory_usable_fraction * ((hw.memory_gib - c.reserve_gib) * GIB - weights)
    per_sequence = kv_bytes_per_sequence_per_gpu(w, hw, w.input_len + w.output_len)
    if free <= 0 or per_sequence <= 0 or free < per_sequence:
        return 0
    return min(int(free // per_sequence), c.max_concurrency)


@dataclass(frozen=True)
class StepTimes:
    memory_s: float
    compute_s: float
    overhead_s: float
    allreduce_s: float

    @property
    def total(self) -> float:
        return max(self.memory_s, self.compute_s) + self.overhead_s + self.allreduce_s

    @property
    def bound(self) -> str:
        parts = {
            "memory bandwidth": self.memory_s if self.memory_s >= self.compute_s else 0.0,
            "compute": self.compute_s if self.compute_s > self.memory_s else 0.0,
            "overhead": self.overhead_s,
            "all-reduce": self.allreduce_s,
        }
        return max(parts, key=lambda k: parts[k])


def matrix_peak(w: Workload, hw: Hardware) -> tuple[float, str] | None:
    """The tensor peak a step's weight matrices compute at: the weights' format's
    (:meth:`Hardware.compute_peak`), except FP4 weights whose checkpoint pairs them with 8-bit
    activations on a GPU with FP4 matrix units (``fp4_activations``: gpt-oss's MXFP4, W4A8), which
    compute at the FP8 rate."""
    activations = getattr(w.model, "fp4_activations", "")
    if w.weight_precision == "fp4" and activations and hw.supports("fp4"):
        return hw.compute_peak(activations)
    return hw.compute_peak(w.weight_precision)


def attention_tflops(w: Workload, hw: Hardware) -> float:
    """The tensor peak attention computes at: the KV cache's format, 8-bit where the GPU has an
    FP8 path (TensorRT-LLM's and vLLM's FP8 attention kernels) and 16-bit otherwise, whatever the
    weights' format: 4-bit weights make the matrices 4-bit, never the attention. The weights'
    peak where the GPU has neither figure."""
    eight_bit = w.kv_value_bytes(hw) <= 1.0 and hw.supports("fp8")
    got = hw.compute_peak("fp8" if eight_bit else "bf16") or hw.compute_peak(w.weight_precision)
    return got[0] if got else 0.0


def decode_step(
    *, w: Workload, hw: Hardware, c: ServingConstants, batch: int, link: AllReduce, peak: bool = False
) -> StepTimes:
    """One decode step of a replica at ``batch`` sequences. ``peak``: at the datasheet figures
    with no overhead (the roofline)."""
    m = w.model
    context = w.input_len + w.output_len / 2.0
    read = touched_bytes_per_gpu(w, batch) + batch * kv_bytes_per_sequence_per_gpu(w, hw, context)
    matrix_flops = matrix_flops_per_gpu(w, batch)
    attention_flops = 4.0 * attention_width(m) * cached_layer_tokens(m, context) * batch / w.tp
    peak_compute = matrix_peak(w, hw)
    tflops = peak_compute[0] if peak_compute else 0.0
    attention = attention_tflops(w, hw)
    if peak:
        bandwidth, compute = hw.bandwidth_gbs, tflops
        attention_compute = attention
    else:
        spread = c.expert_parallel_share if w.ep > 1 else 1.0
        scales = (
            c.block_scale_decode_share
            if block_scaled_emulated(w, hw)
            else c.fp4_dequant_decode_share
            if fp4_dequantised(w, hw)
            else 1.0
        )
        bandwidth, compute = (
            c.effective_bandwidth_gbs(hw, w.engine, w.weight_precision) * spread,
            c.effective_tflops(tflops, hw, w.engine) * spread * scales,
        )
        attention_compute = c.effective_tflops(attention, hw, w.engine) * spread
    memory_s = read / (bandwidth * 1e9)
    if compute > 0 and attention_compute > 0:
        compute_s = matrix_flops / (compute * 1e12) + attention_flops / (attention_compute * 1e12)
    else:
        compute_s = math.inf
    if peak:
        return StepTimes(memory_s, compute_s, 0.0, 0.0)
    return StepTimes(memory_s, compute_s, c.overhead_s(w.engine, m), communication_seconds(w, link, batch))


def prefill_peak_seconds(w: Workload, hw: Hardware, tokens: int) -> float:
    """Seconds one GPU of a replica spends on ``tokens`` prompt tokens (prompts of ``input_len``)
    at the datasheet peaks: the active weights' matrices at their format's peak and the causal
    attention over the prompt at the cache's (:func:`attention_tflops`)."""
    m = w.model
    peak = matrix_peak(w, hw)
    attention = attention_tflops(w, hw)
    if not peak or not attention:
        return math.inf
    matrices = matrix_flops_per_gpu(w, tokens)
    # A prompt token attends to the tokens before it: L / 2 on average in a full layer, at most the
    # window in a sliding one (W - W^2 / 2L on average over a prompt longer than the window).
    length, (window, sliding) = w.input_len, sliding_window(m)
    attended = (m.layers - sliding) * length / 2 + sliding * (
        length / 2 if length <= window else window - window * window / (2 * length)
    )
    scores = tokens * 4.0 * attention_width(m, prefill=True) * attended / w.tp
    return (matrices / peak[0] + scores / attention) / 1e12


def prefill_seconds(*, w: Workload, hw: Hardware, c: ServingConstants, requests: int, link: AllReduce) -> float:
    """Prefill of ``requests`` prompts of ``input_len`` tokens on a replica."""
    m = w.model
    tokens = requests * w.input_len
    if tokens <= 0:
        return 0.0
    peak_compute = hw.compute_peak(w.weight_precision)
    if not peak_compute:
        return math.inf
    spread = c.expert_parallel_share if w.ep > 1 else 1.0
    share = c.effective_tflops(1.0, hw, w.engine) * spread
    compute_s = prefill_peak_seconds(w, hw, tokens) / share if share > 0 else math.inf
    memory_s = weights_bytes_per_gpu(w) / (c.effective_bandwidth_gbs(hw, w.engine, w.weight_precision) * spread * 1e9)
    return max(compute_s, memory_s) + c.overhead_s(w.engine, m) + communication_seconds(w, link, tokens)


def concurrency_grid(limit: int) -> list[int]:
    """1, 2, 4, ... below ``limit``, then ``limit`` itself."""
    grid, b = [], 1
    while b < limit:
        grid.append(b)
        b *= 2
    if limit >= 1:
        grid.append(limit)
    return grid


def point_at(
    *, w: Workload, hw: Hardware, c: ServingConstants, batch: int, link: AllReduce, prefill: bool = True
) -> CurvePoint:
    """The operating point of a replica at ``batch`` sequences. ``prefill=False``: a decode
    microbenchmark, whose prompts are in the cache before the clock starts (our client's
    ``llm-decode``): its rates are the decode steps' alone."""
    step = decode_step(w=w, hw=hw, c=c, batch=batch, link=link)
    # The replica's time per ``batch`` requests: their decode steps and all their prefills.
    prefills = prefill_seconds(w=w, hw=hw, c=c, requests=batch, link=link) if prefill else 0.0
    life = w.output_len * step.total + prefills
    # A user's tokens are paced by the steps and by the other requests' prefills between them
    # (1 / time per output token, as MLPerf and TensorRT-LLM measure it: the user's own prefill
    # is the time to the first token).
    others = prefill_seconds(w=w, hw=hw, c=c, requests=batch - 1, link=link) if prefill else 0.0
    per_user = w.output_len / (w.output_len * step.total + others)
    ttft = prefill_seconds(w=w, hw=hw, c=c, requests=1, link=link) + step.total
    return CurvePoint(batch, per_user, batch * w.output_len / life / w.tp, ttft, step.total, step.bound)


def serving_curve_compute(
    *, w: Workload, hw: Hardware, c: ServingConstants, link: AllReduce | None = None
) -> ServingCurve:
    """The curve of one replica from concurrency 1 to the memory limit (module doc)."""
    link = link or AllReduce()
    limit = max_concurrency(w, hw, c)
    peak = matrix_peak(w, hw)
    common = {
        "weights_gib_per_gpu": weights_bytes_per_gpu(w) / GIB,
        "kv_gib_per_sequence_per_gpu": kv_bytes_per_sequence_per_gpu(w, hw, w.input_len + w.output_len) / GIB,
        "usable_gib_per_gpu": c.usable_bytes(hw.memory_gib) / GIB,
        "compute_precision": peak[1] if peak else "",
        "allreduce_source": link.source if w.tp > 1 or w.ep > 1 else "",
    }
    if not hw.bandwidth_gbs or not peak:
        return ServingCurve(False, (), 0, reason="no bandwidth or tensor figure", **common)  # type: ignore[arg-type]
    if limit < 1:
        return ServingCurve(False, (), 0, reason="does not fit", **common)  # type: ignore[arg-type]
    points = tuple(point_at(w=w, hw=hw, c=c, batch=b, link=link) for b in concurrency_grid(limit))
    return ServingCurve(True, points, limit, **common)  # type: ignore[arg-type]


def curve_at_interactivity(curve: Sequence[CurvePoint], target: float | None) -> CurvePoint | None:
    """The operating point with the most tokens/s per GPU at which every user gets at least
    ``target`` tokens/s (None target: the most tokens/s per GPU on the curve). Between two grid
    points the concurrency is interpolated linearly (throughput and interactivity too); None when
    even one stream is slower than the target."""
    if not curve:
        return None
    if target is None:
        return max(curve, key=lambda p: p.tokens_per_s_per_gpu)
    ok = [p for p in curve if p.tokens_per_s_per_user >= target]
    if not ok:
        return None
    best = max(ok, key=lambda p: p.tokens_per_s_per_gpu)
    later = [p for p in curve if p.concurrency > best.concurrency and p.tokens_per_s_per_user < target]
    if not later:
        return best
    nxt = min(later, key=lambda p: p.concurrency)
    span = best.tokens_per_s_per_user - nxt.tokens_per_s_per_user
    f = (best.tokens_per_s_per_user - target) / span if span > 0 else 0.0
    gpu = best.tokens_per_s_per_gpu + f * (nxt.tokens_per_s_per_gpu - best.tokens_per_s_per_gpu)
    if gpu <= best.tokens_per_s_per_gpu:
        return best
    return CurvePoint(
        concurrency=best.concurrency + round(f * (nxt.concurrency - best.concurrency)),
        tokens_per_s_per_user=target,
        tokens_per_s_per_gpu=gpu,
        ttft_s=best.ttft_s + f * (nxt.ttft_s - best.ttft_s),
        step_s=best.step_s + f * (nxt.step_s - best.step_s),
        bound=best.bound,
    )


def roofline_tokens_per_s_per_gpu(*, w: Workload, hw: Hardware, batch: int) -> float:
    """The most output tokens/s per GPU the datasheet figures allow at ``batch`` (decode only,
    no overhead, no communication, no prefill)."""
    step = decode_step(w=w, hw=hw, c=ServingConstants(), batch=batch, link=AllReduce(), peak=True)
    return batch / max(step.memory_s, step.compute_s) / w.tp


@dataclass(frozen=True)
class OneStream:
    """One stream's decode rate on ``gpus`` GPUs with the layers split across them (llama.cpp's
    default: they work in turn, so the stream runs at one GPU's bandwidth; more GPUs add memory)."""

    tokens_per_s: float
    gpus: int
    step: StepTimes
    handover_s: float


def one_stream_compute(
    *, w: Workload, hw: Hardware, c: ServingConstants, max_gpus: int = 8, handover_s: Callable[[int], float | None]
) -> OneStream | None:
    """The same decode step as serving at concurrency 1, on the fewest GPUs whose pooled memory
    holds the weights and one sequence's cache; ``handover_s(gpus)`` prices handing a token's
    hidden state across the stage boundaries (None: the link has no figure). None when it fits on
    none, or on the fewest GPUs that hold it the hand-over has no figure."""
    if not hw.bandwidth_gbs:
        return None
    one = replace(w, tp=1, ep=1)
    need = weights_bytes(one) + kv_bytes_per_sequence_per_gpu(one, hw, w.input_len + w.output_len)
    for gpus in range(1, max_gpus + 1):
        if c.usable_bytes(hw.memory_gib) * gpus >= need:
            step = decode_step(w=one, hw=hw, c=c, batch=1, link=AllReduce())
            talk = handover_s(gpus) if gpus > 1 else 0.0
            if talk is None:  # a hand-over over a link with no figure is not free: no figure
                return None
            return OneStream(1.0 / (step.total + talk), gpus, step, talk)
    return None
