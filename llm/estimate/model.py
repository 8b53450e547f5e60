"""LLM inference throughput from datasheet figures: the estimate model (pure arithmetic).

One stream (chat): every generated token reads the weights that take part in it (all of a dense
model, the active experts of a mixture of experts) and the KV cache of its context, so decode
is limited by memory bandwidth::

    seconds per token = (active weight bytes + context x KV bytes per token) / (eff_bw x bandwidth)
                        + overhead per layer x layers

(``eff_bw`` per weight-format group: 4-bit formats are dequantised on the fly, which reaches a
different share of the bandwidth than 8- or 16-bit weights).

With the layers split across GPUs (llama.cpp's default) the GPUs work one after the other:
the bandwidth is one GPU's and the memory is all of theirs, and each token's hidden state is
copied across every stage boundary. Split by tensor, the bandwidths add and every layer ends in
two all-reduces (llm/serving/comm.py prices both from the GPUs' link).

Prefill: ``2 x active parameters + 2 x layers x hidden x prompt length`` FLOP per prompt token
(the second term is attention over the prompt), at ``eff_prefill x dense tensor peak``.

Batched serving: a batch of B streams shares one read of all the weights per step, so
throughput grows with B until the tensor cores are the limit. B is bounded by the KV cache
that fits beside the weights (``memory x usable share - weights``) and by a cap per GPU::

    step time = (weight bytes + B x context x KV bytes) / (eff_bw x bandwidth x N)
                + 2 x active parameters x B / (eff_serving x peak x N)
                + 2 x layers x all-reduce(B x hidden x 2 bytes over N GPUs)
    tokens/s  = B / step time

The terms are added (reading, computing and communicating overlap only in part; the fit absorbs
the rest). N GPUs split the model by tensor: at most the fewest GPUs that hold the weights and a
full batch (the cap per GPU) of KV cache; a server with more GPUs runs data-parallel replicas of
that size. When the GPUs' link is known (``link``), N is the power of two up to that count with the
most tokens/s per GPU at datasheet peaks and nccl-tests link speeds: fewer GPUs hold a smaller
batch but talk less, which wins on slow links.
``eff_serving`` is fitted per benchmark: it also absorbs the prompt tokens each output token
costs in that benchmark's dataset. Efficiencies are fractions of datasheet peaks, fitted to
measured rows (llm/estimate/fit.py); constants live in llm/estimate/constants.json.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial

from llm.estimate.constants import LlmConstants, constants_default
from llm.serving.comm import GpuLink, layer_split_token_seconds, tensor_parallel_step_seconds

GIB = 1024**3
MODES = ("batched", "one_stream")
SPLITS = ("layer", "tensor")
# The tensor peak a weight format computes at, best first; "fp16_nontensor" is the vector FP16
# rate of a GPU without a curated tensor figure.
COMPUTE_CHAIN: dict[str, tuple[str, ...]] = {
    "fp4": ("fp4", "fp8", "int8", "fp16", "bf16", "fp16_nontensor"),
    "fp8": ("fp8", "int8", "fp16", "bf16", "fp16_nontensor"),
    "int8": ("int8", "fp8", "fp16", "bf16", "fp16_nontensor"),
    "int4": ("int8", "fp8", "fp16", "bf16", "fp16_nontensor"),
    "fp16": ("fp16", "bf16", "fp16_nontensor"),
    "bf16": ("bf16", "fp16", "fp16_nontensor"),
    "fp32": ("tf32", "fp16", "bf16", "fp16_nontensor"),
}


@dataclass(frozen=True)
class LlmEstimate:
    """What the model says for one GPU type, model and mode.

    ``tokens_per_s``: one stream's generation rate (one_stream), or all GPUs' output tokens per
    second together (batched); ``tokens_per_s_per_gpu`` divides that by ``gpu_count``.
    ``link_kind``: the path between the GPUs (llm.serving.comm.LINK_KINDS; "" when no link was
    given); ``communication_s``: seconds of a serving step, or of a token in one stream, spent
    communicating.
    """

    fits: bool
    gpu_count: int
    mode: str
    tokens_per_s: float | None
    tokens_per_s_per_gpu: float | None
    prefill_tokens_per_s: float | None
    batch: int
    bound: str
    compute_precision: str
    notes: tuple[str, ...] = ()
    link_kind: str = ""
    communication_s: float = 0.0


def kv_bytes_per_token(*, layers: int, kv_heads: int, head_dim: int, bytes_per_value: float = 2.0) -> float:
    """Keys and values of one token in every layer."""
    return 2.0 * layers * kv_heads * head_dim * bytes_per_value


def compute_peak(tensor_tflops: Mapping[str, float | None], *, weight_precision: str) -> tuple[float, str] | None:
    """The dense peak (TFLOPS) a weight format computes at on this GPU, and the format used."""
    for precision in COMPUTE_CHAIN.get(weight_precision, (weight_precision,)):
        value = tensor_tflops.get(precision)
        if value:
            return float(value), precision
    return None


def decode_seconds_per_token(
    *,
    bandwidth_gbs: float,
    active_weight_bytes: float,
    kv_bytes: float,
    layers: int,
    weight_precision: str,
    gpu_count: int = 1,
    split: str = "layer",
    communication_s: float = 0.0,
    constants: LlmConstants,
) -> float:
    """One stream: bytes read per token at the effective bandwidth, plus the per-layer overhead
    and the token's communication between GPUs."""
    bandwidth = bandwidth_gbs * 1e9 * (gpu_count if split == "tensor" else 1)
    return (active_weight_bytes + kv_bytes) / (constants.decode_efficiency(weight_precision) * bandwidth) + (
        constants.decode_overhead_ms_per_layer / 1000.0 * layers + communication_s
    )


def prefill_tokens_per_s(
    *,
    peak_tflops: float,
    active_params_b: float,
    layers: int,
    hidden: int,
    prompt_tokens: int,
    weight_precision: str,
    gpu_count: int = 1,
    split: str = "layer",
    communication_s_per_token: float = 0.0,
    constants: LlmConstants,
) -> float:
    flop_per_token = 2.0 * active_params_b * 1e9 + 2.0 * layers * hidden * prompt_tokens
    peak = peak_tflops * 1e12 * (gpu_count if split == "tensor" else 1)
    return 1.0 / (flop_per_token / (constants.prefill_efficiency(weight_precision) * peak) + communication_s_per_token)


@dataclass(frozen=True)
class ServingStep:
    tokens_per_s: float
    batch: int
    bound: str
    communication_s: float = 0.0


def serving_tokens_per_s(
    *,
    memory_gib: float,
    bandwidth_gbs: float,
    peak_tflops: float,
    total_weight_bytes: float,
    active_params_b: float,
    kv_bytes_per_token_: float,
    gpu_count: int,
    context_tokens: int,
    benchmark: str = "",
    communication_s: float | Callable[[int], float] = 0.0,
    constants: LlmConstants,
) -> ServingStep | None:
    """All GPUs' output tokens/s at the largest batch the KV cache and the cap allow; None when
    not even one stream's cache fits beside the weights. ``communication_s``: seconds a step
    spends communicating, or a function of the batch that gives them."""
    free = gpu_count * serving_memory_bytes(memory_gib, constants) - total_weight_bytes
    per_stream = context_tokens * kv_bytes_per_token_
    if free < per_stream:
        return None
    batch_kv = int(free // per_stream)
    batch_cap = constants.serving_max_batch_per_gpu * gpu_count
    batch = max(1, min(batch_kv, batch_cap))
    memory_time = (total_weight_bytes + batch * per_stream) / (
        constants.serving_bandwidth_efficiency * bandwidth_gbs * 1e9 * gpu_count
    )
    compute_time = (2.0 * active_params_b * 1e9 * batch) / (
        constants.serving_efficiency(benchmark) * peak_tflops * 1e12 * gpu_count
    )
    talk = communication_s(batch) if callable(communication_s) else communication_s
    if talk > max(compute_time, memory_time):
        bound = "communication"
    elif compute_time >= memory_time:
        bound = "tensor throughput"
    else:
        bound = "KV-cache memory" if batch_kv < batch_cap else "memory bandwidth"
    return ServingStep(batch / (compute_time + memory_time + talk), batch, bound, talk)


def serving_memory_bytes(memory_gib: float, constants: LlmConstants) -> float:
    """What a serving engine has per GPU for weights and KV cache: the usable share of the memory
    less what its runtime and activations hold."""
    return (memory_gib * constants.memory_usable_fraction - constants.serving_reserve_gib) * GIB


def _fits(memory_bytes: float, gpu_count: int, weight_bytes: float, kv_bytes: float) -> bool:
    return gpu_count * memory_bytes >= weight_bytes + kv_bytes


# The note an estimate carries when the GPUs' link is missing from the catalogue.
_LINK_UNKNOWN = "the link between the GPUs is not in the catalogue: communication is not counted"


@dataclass(frozen=True)
class _Estimating:
    """One estimate's inputs and what follows from them before a GPU count is chosen: the bytes
    of the weights and of one token's KV cache, and the tensor peak the weights compute at.
    ``notes`` gathers, in the order found, what the estimate leaves out."""

    mode: str
    split: str
    active_params_b: float
    layers: int
    hidden: int | None
    weight_precision: str
    context_tokens: int
    benchmark: str
    constants: LlmConstants
    link: GpuLink | None
    total_weight_bytes: float
    active_weight_bytes: float
    kv_bytes_per_token: float
    peak: tuple[float, str] | None
    notes: list[str]

    @property
    def compute_precision(self) -> str:
        """The tensor format the weights compute at; "" without a peak."""
        return self.peak[1] if self.peak else ""

    @property
    def context_kv_bytes(self) -> float:
        """The KV cache of one stream's full context."""
        return self.context_tokens * self.kv_bytes_per_token

    def link_kind(self, gpus: int) -> str:
        """The path between ``gpus`` GPUs; "" without a link."""
        return self.link.kind(gpus) if self.link else ""

    def unestimated(self, bound: str, gpus: int) -> LlmEstimate:
        """The answer when no rate can be given; ``bound`` says why."""
        return LlmEstimate(False, gpus, self.mode, None, None, None, 0, bound, self.compute_precision,
                           tuple(self.notes), self.link_kind(gpus))  # fmt: skip

    def tensor_talk_seconds(self, gpus: int, tokens: int, *, rates: LlmConstants) -> float | None:
        """Seconds a tensor-parallel step over ``tokens`` tokens spends in its all-reduces, at the
        communication share of ``rates``; 0 when nothing is priced (no link, no hidden size, or a
        layer split), None when the link is not in the catalogue."""
        if self.link is None or not self.hidden or self.split != "tensor":
            return 0.0
        seconds = tensor_parallel_step_seconds(
            link=self.link, gpus=gpus, tokens=tokens, layers=self.layers, hidden=self.hidden
        )
        return None if seconds is None else seconds * rates.communication(self.link.kind(gpus))

    def prefill_rate(self, gpus: int) -> float | None:
        """Prompt tokens/s on ``gpus`` GPUs (a prompt's all-reduces spread over its tokens); None
        without a tensor peak or a hidden size."""
        if not self.peak or not self.hidden:
            return None
        prompt_tokens = self.context_tokens
        talk = (
            (self.tensor_talk_seconds(gpus, prompt_tokens, rates=self.constants) or 0.0)
            if self.split == "tensor"
            else 0.0
        )
        return prefill_tokens_per_s(
            peak_tflops=self.peak[0],
            active_params_b=self.active_params_b,
            layers=self.layers,
            hidden=self.hidden,
            prompt_tokens=prompt_tokens,
            weight_precision=self.weight_precision,
            gpu_count=gpus,
            split=self.split,
            communication_s_per_token=talk / max(1, prompt_tokens),
            constants=self.constants,
        )


def llm_throughput_estimate(
    *,
    memory_gib: float | None,
    bandwidth_gbs: float | None,
    tensor_tflops: Mapping[str, float | None],
    total_params_b: float,
    active_params_b: float | None = None,
    layers: int,
    kv_heads: int,
    head_dim: int,
    hidden: int | None = None,
    bytes_per_weight: float,
    weight_precision: str,
    mode: str,
    context_tokens: int = 2048,
    gpu_count: int | None = None,
    split: str | None = None,
    benchmark: str = "",
    max_gpus: int = 8,
    constants: LlmConstants | None = None,
    link: GpuLink | None = None,
) -> LlmEstimate:
    """Tokens/s of one GPU type for a model (see the module doc).

    ``tensor_tflops`` maps precisions (fp16, bf16, fp8, int8, fp4; "fp16_nontensor" for the
    vector rate) to dense TFLOPS. ``mode`` is "batched" (serving, tensor parallel over a power
    of two of GPUs) or "one_stream" (chat, layers split across GPUs unless ``split`` says
    otherwise). ``gpu_count`` None = the fewest GPUs the model fits on, up to ``max_gpus``
    (batched with a ``link``: the tensor-parallel degree with the most tokens/s per GPU).
    ``link`` (llm.serving.comm.gpu_link) prices the communication between the GPUs; None
    leaves it out.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    constants = constants or constants_default()
    split = split or ("tensor" if mode == "batched" else "layer")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    active = active_params_b if active_params_b is not None else total_params_b
    # Batched engines keep an 8-bit KV cache beside 8-bit or smaller weights.
    kv_value_bytes = 1.0 if mode == "batched" and bytes_per_weight <= 1.0 else 2.0
    estimating = _Estimating(
        mode=mode, split=split, active_params_b=active, layers=layers, hidden=hidden,
        weight_precision=weight_precision, context_tokens=context_tokens, benchmark=benchmark,
        constants=constants, link=link,
        total_weight_bytes=total_params_b * 1e9 * bytes_per_weight,
        active_weight_bytes=active * 1e9 * bytes_per_weight,
        kv_bytes_per_token=kv_bytes_per_token(
            layers=layers, kv_heads=kv_heads, head_dim=head_dim, bytes_per_value=kv_value_bytes
        ),
        peak=compute_peak(tensor_tflops, weight_precision=weight_precision),
        notes=[],
    )  # fmt: skip
    if estimating.compute_precision == "fp16_nontensor":
        estimating.notes.append("no tensor-core figure: the vector FP16 rate is used")
    if not memory_gib:
        return estimating.unestimated("no memory figure", gpu_count or 1)
    counts = [gpu_count] if gpu_count else _candidate_counts(mode, max_gpus)
    per_gpu = _memory_per_gpu_bytes(memory_gib, mode=mode, constants=constants)
    fitting = [n for n in counts if _fits(per_gpu, n, estimating.total_weight_bytes, estimating.context_kv_bytes)]
    if not fitting:
        return estimating.unestimated("does not fit", counts[-1])
    chosen = fitting[0]
    if mode == "batched" and not gpu_count:
        chosen = _full_batch_gpu_count(estimating, fitting=fitting, memory_per_gpu_bytes=per_gpu)
    if not bandwidth_gbs:
        return estimating.unestimated("no bandwidth figure", chosen)
    if mode == "one_stream":
        return _one_stream_estimate(estimating, gpus=chosen, bandwidth_gbs=bandwidth_gbs)
    if estimating.peak is None:
        return estimating.unestimated("no tensor figure", chosen)
    serve = partial(
        _serving_step, estimating, memory_gib=memory_gib, bandwidth_gbs=bandwidth_gbs, peak_tflops=estimating.peak[0]
    )
    if not gpu_count and link is not None:
        chosen = _serving_gpu_count(serve, candidates=[n for n in fitting if n <= chosen], constants=constants)
    return _batched_estimate(estimating, serve=serve, gpus=chosen)


def _memory_per_gpu_bytes(memory_gib: float, *, mode: str, constants: LlmConstants) -> float:
    """What one GPU holds for the weights and the KV cache in ``mode``."""
    # Serving engines hold a runtime reserve beside the weights and the KV cache.
    if mode == "batched":
        return serving_memory_bytes(memory_gib, constants)
    return memory_gib * GIB * constants.memory_usable_fraction


def _full_batch_gpu_count(estimating: _Estimating, *, fitting: list[int], memory_per_gpu_bytes: float) -> int:
    """Batched, before the link is weighed: the fewest of the ``fitting`` GPU counts that hold the
    weights and a full batch of KV cache (the cap per GPU); failing that, the most GPUs allowed,
    whose batch per GPU is the largest."""
    full_batch_per_gpu = estimating.context_kv_bytes * estimating.constants.serving_max_batch_per_gpu
    full = [n for n in fitting if _fits(memory_per_gpu_bytes, n, estimating.total_weight_bytes, full_batch_per_gpu * n)]
    return full[0] if full else fitting[-1]


def _one_stream_estimate(estimating: _Estimating, *, gpus: int, bandwidth_gbs: float) -> LlmEstimate:
    """One stream's generation rate on ``gpus`` GPUs: memory-bandwidth bound, plus the token's
    communication across the split (the all-reduces by tensor, the stage copies by layer)."""
    link, hidden = estimating.link, estimating.hidden
    if estimating.split == "tensor":
        talk = estimating.tensor_talk_seconds(gpus, 1, rates=estimating.constants)
    else:
        talk = layer_split_token_seconds(link=link, gpus=gpus, hidden=hidden) if link and hidden else 0.0
    if talk is None:
        estimating.notes.append(_LINK_UNKNOWN)
    seconds = decode_seconds_per_token(
        bandwidth_gbs=bandwidth_gbs,
        active_weight_bytes=estimating.active_weight_bytes,
        kv_bytes=estimating.context_kv_bytes / 2,  # the context grows from the prompt to its end: half on average
        layers=estimating.layers,
        weight_precision=estimating.weight_precision,
        gpu_count=gpus,
        split=estimating.split,
        communication_s=talk or 0.0,
        constants=estimating.constants,
    )
    rate = 1.0 / seconds
    return LlmEstimate(True, gpus, estimating.mode, rate, rate / gpus, estimating.prefill_rate(gpus), 1,
                       "memory bandwidth", estimating.compute_precision, tuple(estimating.notes),
                       estimating.link_kind(gpus), talk or 0.0)  # fmt: skip


def _serving_step(
    estimating: _Estimating,
    gpus: int,
    rates: LlmConstants,
    *,
    memory_gib: float,
    bandwidth_gbs: float,
    peak_tflops: float,
) -> tuple[ServingStep | None, bool]:
    """Serving on ``gpus`` GPUs split by tensor at the efficiencies of ``rates``, and whether some
    all-reduce went unpriced because the link is not in the catalogue."""
    unknown = False

    def talk(batch: int) -> float:
        nonlocal unknown
        seconds = estimating.tensor_talk_seconds(gpus, batch, rates=rates)
        unknown = unknown or seconds is None
        return seconds or 0.0

    step = serving_tokens_per_s(
        memory_gib=memory_gib,
        bandwidth_gbs=bandwidth_gbs,
        peak_tflops=peak_tflops,
        total_weight_bytes=estimating.total_weight_bytes,
        active_params_b=estimating.active_params_b,
        kv_bytes_per_token_=estimating.kv_bytes_per_token,
        gpu_count=gpus,
        context_tokens=estimating.context_tokens,
        benchmark=estimating.benchmark,
        communication_s=talk,
        constants=rates,
    )
    return step, unknown


def _serving_gpu_count(
    serve: Callable[[int, LlmConstants], tuple[ServingStep | None, bool]],
    *,
    candidates: list[int],
    constants: LlmConstants,
) -> int:
    """The tensor-parallel degree among ``candidates`` (fitting counts up to the full-batch one,
    which is the last) that serves the most tokens/s per GPU; on a tie, the fewer GPUs.

    With a link, fewer GPUs than the full-batch count may serve more per GPU: a smaller batch
    that talks less. More GPUs than that count run as data-parallel replicas of it.
    """
    # The degree is picked at datasheet peaks and the nccl-tests link figures (no fitted share),
    # so that it does not move with the constants fitted on the rows it configures.
    peaks = replace(constants, serving_bandwidth_efficiency=1.0, serving_compute_efficiency=1.0,
                    serving_compute_efficiency_by_benchmark={}, communication_factor={})  # fmt: skip
    steps = {n: serve(n, peaks) for n in candidates}
    if len(steps) > 1 and not any(unknown for _step, unknown in steps.values()):
        ranked = [(s.tokens_per_s / n, -n) for n, (s, _u) in steps.items() if s is not None]
        if ranked:
            return -max(ranked)[1]
    return candidates[-1]


def _batched_estimate(
    estimating: _Estimating,
    *,
    serve: Callable[[int, LlmConstants], tuple[ServingStep | None, bool]],
    gpus: int,
) -> LlmEstimate:
    """All ``gpus`` GPUs' serving rate at the fitted efficiencies."""
    step, unknown = serve(gpus, estimating.constants)
    if unknown:
        estimating.notes.append(_LINK_UNKNOWN)
    if step is None:
        return estimating.unestimated("does not fit", gpus)
    return LlmEstimate(True, gpus, estimating.mode, step.tokens_per_s, step.tokens_per_s / gpus,
                       estimating.prefill_rate(gpus), step.batch, step.bound, estimating.compute_precision,
                       tuple(estimating.notes), estimating.link_kind(gpus), step.communication_s)  # fmt: skip


def _candidate_counts(mode: str, max_gpus: int) -> list[int]:
    if mode == "batched":
        return [2**k for k in range(int(math.log2(max(1, max_gpus))) + 1)]
    return list(range(1, max(1, max_gpus) + 1))


def cost_per_million_tokens(
    *, price_per_gpu_hour: float | None, gpu_count: int, tokens_per_s: float | None
) -> float | None:
    """Price of a million tokens: the GPUs' hourly price over the tokens they make in an hour."""
    if not price_per_gpu_hour or not tokens_per_s or tokens_per_s <= 0 or price_per_gpu_hour <= 0:
        return None
    return price_per_gpu_hour * gpu_count / (tokens_per_s * 3600.0) * 1e6
