"""LLM inference in the fit calculator where the serving answers do not cover the job: one
stream, and a fixed number of users. Pure: plain numbers in, plain numbers out, on the one LLM
model (``llm.serving``) with the constants of the newest stored fit.

Batched serving of a model the serving model knows, at full load, is not computed here: the
calculator reads the serving model's answers (``fitcalc.selectors.gpu_facts._serving_inputs``),
the rankings' figures. This module feeds the serving model the calculator's own job (its exact
weight bytes, KV cache format, lengths and users) and says what more GPUs buy.

One stream (``single``)
    ``llm.serving.single_stream``: batch-1 decode from memory bandwidth at the engine class's
    fitted efficiency (llama.cpp). llama.cpp's default splits the layers across the GPUs: they
    work one after the other, so the stream runs at one GPU's bandwidth whatever the count; more
    GPUs only add memory, and each token's hidden state is handed across the stage boundaries
    (``llm.serving.comm.layer_split_token_seconds``). XiongjieDai's llama.cpp table shows it:
    Llama 3 70B Q4_K_M on RTX 4090s generates 19.1, 18.8 and 18.8 tokens/s on 2, 4 and 8 cards.

A fixed number of users (``batched`` with ``users``), or full load of a model the serving model
has no shape of
    The serving curve (``llm.serving.physics.point_at``) at concurrency = the users each replica
    serves: ``n`` GPUs run ``n / t`` replicas of a ``t``-GPU tensor-parallel group; the calculator
    takes the group size (a power of two, at most 8 in one host) that makes the most tokens. A
    split whose KV cache cannot hold its users is not a plan; at full load a replica serves as
    many sequences as its memory holds. A group of several GPUs needs its link's all-reduce
    figure: a link the catalogue has no figure for gives no estimate above one GPU.

Memory is the serving model's: what the GPU exposes less the runtime reserve.

Measured figures first (one stream)
    A measurement of the same GPU, size class and weight-format family anchors the model: the
    figure for this job is ``measured x model(job) / model(measured configuration)``, so the
    measurement sets the level and the model carries it to this model, context and GPU count.
    The basis is "measured" when that factor is within 5% of 1 and "measured-scaled" otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from fitcalc.memory import GIB, MemoryBreakdown, kv_cache_bytes
from fitcalc.plan import CountRate
from fitcalc.presets import ModelSpec
from llm.question import AUTO_ENGINE, engine_for_vendor
from llm.serving.comm import GpuLink, layer_split_token_seconds
from llm.serving.physics import (
    AllReduce,
    Hardware,
    ServingConstants,
    Workload,
    communication_seconds,
    max_concurrency,
    point_at,
)
from llm.serving.shapes import ModelShape
from llm.serving.shapes import bytes_per_weight as llm_bytes_per_weight
from llm.serving.single_stream import StreamFit, single_stream_compute

SERVING = "batched"
ONE_STREAM = "single"
#: The calculator's weight formats as the serving model names them.
LLM_PRECISION = {
    "fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "q8_0": "int8",
    "int4": "int4", "gptq": "int4", "awq": "int4", "q4_k_m": "int4", "mxfp4": "fp4",
}  # fmt: skip
#: The measured rows' weight-format families (benchmarks_app.comparison_rules.PRECISION_FAMILIES) a format counts in.
PRECISION_FAMILY = {
    "bf16": "16bit", "fp16": "16bit", "fp8": "8bit", "int8": "8bit", "q8_0": "8bit",
    "int4": "4bit", "gptq": "4bit", "awq": "4bit", "q4_k_m": "4bit", "mxfp4": "4bit",
}  # fmt: skip
#: Tensor-parallel groups stay within one server.
MAX_GROUP = 8
#: Within this factor of 1, a measurement carried to the job by the model still reads "measured".
MEASURED_TOLERANCE = 0.05
#: One stream runs on llama.cpp's engine class, as the chat ranking's measurements do.
STREAM_ENGINE = "llama.cpp"


@dataclass(frozen=True)
class JobModel:
    """A calculator model as the serving model reads its shape (``physics.ModelShapeLike``): the
    KV cache as ``kv_heads`` ways tensor parallelism can split it of ``head_dim`` keys and as many
    values each (a compressed latent, as DeepSeek's MLA: one head of half the latent's width)."""

    name: str
    total_params_b: float
    active_params_b: float
    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    heads: int = 0
    experts: int = 0
    active_experts: int = 0


@dataclass(frozen=True)
class LlmShape:
    """A decoder at a weight format: the shape, bytes per weight (scales included), the weight
    format as the serving model names it and bytes per KV value (None: the engine's default)."""

    model: JobModel | ModelShape
    bytes_per_weight: float
    weight_precision: str
    kv_bytes: float | None = None

    @property
    def name(self) -> str:
        return self.model.name

    def workload(self, *, input_len: int, output_len: int, tp: int = 1, engine: str) -> Workload:
        return Workload(self.model, self.weight_precision, self.bytes_per_weight, input_len, output_len, tp=tp,
                        kv_bytes=self.kv_bytes, engine=engine)  # fmt: skip


def llm_shape_of_job(*, model: ModelSpec, breakdown: MemoryBreakdown) -> LlmShape | None:
    """The calculator's job: its exact weight bytes (scales, 16-bit embeddings) and KV values (the
    KV format, latent attention)."""
    if not (model.layers and model.hidden and model.params) or breakdown.precision.value not in LLM_PRECISION:
        return None
    values = model.kv_values_per_token_layer or (
        2 * model.kv_heads * model.head_dim if model.kv_heads and model.head_dim else None
    )
    kv = kv_cache_bytes(model=model, context=breakdown.context, sequences=1, kv_precision=breakdown.kv_cache_precision)
    if not values or not kv:
        return None
    shards = max(1, model.kv_shards or model.kv_heads or 1)
    shape = JobModel(
        name=model.name,
        total_params_b=model.params / 1e9,
        active_params_b=model.compute_params / 1e9,
        layers=model.layers,
        hidden=model.hidden,
        kv_heads=shards,
        head_dim=max(1, round(values / (2 * shards))),
        heads=model.heads or 0,
        experts=model.experts or 0,
        active_experts=model.experts_active or 0,
    )
    # Bytes per value over the context: sliding windows keep fewer tokens in some layers.
    kv_value = kv / (breakdown.context * model.layers * values)
    return LlmShape(shape, breakdown.weights_gib * GIB / model.params, LLM_PRECISION[breakdown.precision.value],
                    kv_value)  # fmt: skip


def llm_shape_of_measured(*, shape: ModelShape, precision: str, quant: str) -> LlmShape:
    """A measured configuration (the engine's default KV format)."""
    return LlmShape(shape, llm_bytes_per_weight(precision=precision, quant=quant), precision)


@dataclass(frozen=True)
class LlmGpu:
    """One GPU model as the serving model reads it (``physics.Hardware``), the link between cards
    (``llm.serving.comm.catalogue_link``; None: no figure) and its vendor (the engine class)."""

    hardware: Hardware
    link: GpuLink | None = None
    vendor: str = ""
    memory: str = "other"  # llm.serving.single_stream.memory_family

    @property
    def batched_engine(self) -> str:
        return engine_for_vendor(AUTO_ENGINE, self.vendor)


@dataclass(frozen=True)
class LlmModel:
    """The stored fit's constants the calculator reads: the serving model's and the single stream's."""

    serving: ServingConstants
    stream: StreamFit


@dataclass(frozen=True)
class LlmRate:
    """Output tokens/s of ``count`` GPUs (batched: all of them together; one stream: the stream)
    as ``replicas`` groups of ``group`` GPUs at ``batch`` sequences each. ``link_kind``: the path
    between a group's GPUs (llm.serving.comm.LINK_KINDS; "single" for one); ``comm_s``: seconds
    of a step (one stream: of a token) spent communicating."""

    per_s: float
    count: int
    group: int
    replicas: int
    batch: int
    bound: str
    link_kind: str = "single"
    comm_s: float = 0.0
    engine: str = ""

    @property
    def configuration(self) -> str:
        """single, layer (one stream split by layers), or the link kind of a tensor-parallel group."""
        if self.bound == ONE_STREAM_BOUND:
            return "single" if self.count <= 1 else "layer"
        return "single" if self.group <= 1 else self.link_kind


ONE_STREAM_BOUND = "one stream"


def _link_kind(link: GpuLink | None, gpus: int) -> str:
    if gpus <= 1:
        return "single"
    return link.kind(gpus) if link is not None else "unknown"


def group_link(link: GpuLink | None, gpus: int) -> AllReduce | None:
    """The datasheet all-reduce figure of ``gpus`` GPUs over their link; None above one GPU when
    the catalogue has no figure for it (communication is never free)."""
    if gpus <= 1:
        return AllReduce()
    bus = link.bus_gbs(gpus) if link is not None else None
    if link is None or bus is None:
        return None
    return AllReduce(bus_gbs=bus, latency_s=link.latency_s(gpus))


def llm_rate(
    *,
    gpu: LlmGpu,
    shape: LlmShape,
    mode: str,
    count: int,
    input_len: int,
    output_len: int,
    users: int | None,
    model: LlmModel,
) -> LlmRate | None:
    """The serving model's figure for ``count`` GPUs (module doc); None without the datasheet
    figures, or when the job does not fit."""
    hw = gpu.hardware
    if not hw.bandwidth_gbs:
        return None
    if mode == ONE_STREAM:
        link = gpu.link
        stream = single_stream_compute(
            w=shape.workload(input_len=input_len, output_len=output_len, engine=STREAM_ENGINE),
            hw=hw,
            fit=model.stream,
            serving=model.serving,
            memory=gpu.memory,
            gpus=count,
            handover_s=lambda n: None if link is None else layer_split_token_seconds(link=link, gpus=n,
                                                                                    hidden=shape.model.hidden),
        )  # fmt: skip
        if stream is None:
            return None
        kind = _link_kind(gpu.link, 2) if count > 1 else "single"
        return LlmRate(stream.tokens_per_s, count, count, 1, 1, ONE_STREAM_BOUND, kind, stream.handover_s,
                       STREAM_ENGINE)  # fmt: skip
    engine = gpu.batched_engine
    best: LlmRate | None = None
    group = 1
    while group <= min(count, MAX_GROUP):
        if count % group == 0:
            found = _group_rate(gpu=gpu, shape=shape, group=group, count=count, input_len=input_len,
                                output_len=output_len, users=users, constants=model.serving,
                                engine=engine)  # fmt: skip
            if found is not None and (best is None or found.per_s > best.per_s * (1 + 1e-9)):
                best = found
        group *= 2
    return best


def _group_rate(
    *,
    gpu: LlmGpu,
    shape: LlmShape,
    group: int,
    count: int,
    input_len: int,
    output_len: int,
    users: int | None,
    constants: ServingConstants,
    engine: str,
) -> LlmRate | None:
    """``count`` GPUs as replicas of ``group`` GPUs: the serving curve's point at the users each
    replica serves (full load: as many as its memory holds)."""
    link = group_link(gpu.link, group)
    if link is None:
        return None
    hw = gpu.hardware
    if hw.compute_peak(shape.weight_precision) is None:
        return None
    w = shape.workload(input_len=input_len, output_len=output_len, tp=group, engine=engine)
    limit = max_concurrency(w, hw, constants)
    if limit < 1:
        return None
    replicas = count // group
    batch = limit if users is None else max(1, math.ceil(users / replicas))
    if batch > limit:
        return None  # the users' caches do not fit beside the weights in this split
    point = point_at(w=w, hw=hw, c=constants, batch=batch, link=link)
    total = point.tokens_per_s_per_gpu * count
    if users is not None and batch * replicas > users:  # the last replica serves fewer
        total *= users / (batch * replicas)
    return LlmRate(total, count, group, replicas, batch, point.bound, _link_kind(gpu.link, group),
                   communication_seconds(w, link, batch), engine)  # fmt: skip


LINK_LABELS = {
    "fabric": gettext_lazy("NVLink-class links"),
    "pcie_p2p": gettext_lazy("PCIe, GPU to GPU"),
    "pcie_host": gettext_lazy("PCIe through host memory (no peer-to-peer)"),
}


def llm_rate_note(rate: LlmRate, *, mode: str) -> str:
    """How the model reached a figure, in words (the page's tooltip)."""
    if mode == ONE_STREAM:
        if rate.count == 1:
            return _("one stream, bound by memory bandwidth")
        text = _(
            "one stream with the layers split over %(count)d GPUs (llama.cpp's default): they work in turn, "
            "so it runs at one GPU's bandwidth"
        ) % {"count": rate.count}
    else:
        text = _("%(replicas)d × %(group)d-GPU tensor-parallel group, %(batch)d sequences each, %(bound)s") % {
            "replicas": rate.replicas,
            "group": rate.group,
            "batch": rate.batch,
            "bound": BOUND_LABELS.get(rate.bound, rate.bound),
        }
    if rate.comm_s and mode == ONE_STREAM:
        text += _("; %(us).0f µs per token handing over between GPUs over %(link)s") % {
            "us": rate.comm_s * 1e6,
            "link": LINK_LABELS.get(rate.link_kind, rate.link_kind),
        }
    elif rate.comm_s:
        text += _("; %(ms).1f ms per step on all-reduces over %(link)s") % {
            "ms": rate.comm_s * 1000,
            "link": LINK_LABELS.get(rate.link_kind, rate.link_kind),
        }
    return text


BOUND_LABELS = {
    "memory bandwidth": gettext_lazy("bound by memory bandwidth"),
    "compute": gettext_lazy("bound by tensor throughput"),
    "overhead": gettext_lazy("bound by the engine's time per step"),
    "all-reduce": gettext_lazy("bound by communication between the GPUs"),
}


@dataclass(frozen=True)
class LlmError:
    """The model's held-out error for this job (0.2 = 20 %): of the single-stream points of its
    engine class (one stream), or of the serving model's points of the scenario, inside or outside
    the measured range (batched)."""

    one_stream: float | None = None
    stream: StreamFit | None = None  # the stored single-stream fit: its groups are the measured range
    serving: Mapping[bool, float | None] | None = None
    serving_regimes: frozenset[tuple[str, str, str]] = frozenset()

    def of(self, *, gpu: LlmGpu, rate: LlmRate, mode: str) -> tuple[float | None, tuple[str, ...]]:
        """(typical error, reasons it lies outside the measured range) of one estimate."""
        if mode == ONE_STREAM:
            inside = self.stream is None or self.stream.key(STREAM_ENGINE, gpu.memory, "int4") != "*"
            return self.one_stream, () if inside else ("engine",)
        regime = (gpu.hardware.hardware_class, rate.engine, "tp" if rate.group > 1 else "single")
        inside = not self.serving_regimes or regime in self.serving_regimes
        error = (self.serving or {}).get(inside)
        if inside:
            return error, ()
        if not any(r[0] == regime[0] for r in self.serving_regimes):
            return error, ("architecture",)
        if not any(r[:2] == regime[:2] for r in self.serving_regimes):
            return error, ("engine",)
        return error, ("configuration",)


@dataclass(frozen=True)
class LlmMeasured:
    """A measured one-stream figure of one GPU model on ``gpu_count`` GPUs; ``n`` results behind
    it; ``shape`` and the lengths describe the measured configuration to the model."""

    tokens_per_s: float
    gpu_count: int
    n: int
    source: str
    url: str
    shape: LlmShape
    input_len: int
    output_len: int


def llm_count_rates(
    *,
    gpu: LlmGpu,
    shape: LlmShape,
    mode: str,
    counts: tuple[int, ...],
    input_len: int,
    output_len: int,
    users: int | None,
    model: LlmModel,
    measured: LlmMeasured | None = None,
    error: LlmError | None = None,
) -> dict[int, CountRate]:
    """The rate of each GPU count: the model's estimate with its held-out error, or (one stream)
    the measurement carried to the job by the model (module doc)."""
    error = error or LlmError()
    scaling = "layer-split" if mode == ONE_STREAM else "tensor-parallel"
    anchor: LlmRate | None = None
    if measured is not None and mode == ONE_STREAM:
        anchor = llm_rate(gpu=gpu, shape=measured.shape, mode=mode, count=measured.gpu_count,
                          input_len=measured.input_len, output_len=measured.output_len, users=None,
                          model=model)  # fmt: skip
    out: dict[int, CountRate] = {}
    for count in counts:
        kind = "single" if count == 1 else scaling
        estimate = llm_rate(gpu=gpu, shape=shape, mode=mode, count=count, input_len=input_len,
                            output_len=output_len, users=users, model=model)  # fmt: skip
        if estimate is None:
            out[count] = CountRate(None, "none", kind, _no_rate_note(gpu=gpu, count=count, mode=mode))
            continue
        how = llm_rate_note(estimate, mode=mode)
        if anchor is None or measured is None:
            typical, outside = error.of(gpu=gpu, rate=estimate, mode=mode)
            note = _("estimated by the serving model: %(how)s") % {"how": how}
            out[count] = CountRate(estimate.per_s, "estimated", kind, note, typical, outside, estimate.configuration)
            continue
        factor = estimate.per_s / anchor.per_s
        basis = "measured" if abs(factor - 1) <= MEASURED_TOLERANCE else "measured-scaled"
        note = measured_note(measured=measured)
        if basis == "measured-scaled":
            note += _(
                "; × %(factor).2f by the serving model for %(model)s, %(context)d-token context on %(count)d GPU(s)"
            ) % {"factor": factor, "model": shape.name, "context": input_len + output_len, "count": count}
        out[count] = CountRate(measured.tokens_per_s * factor, basis, kind, f"{note}; {how}",
                               configuration=estimate.configuration)  # fmt: skip
    return out


def _no_rate_note(*, gpu: LlmGpu, count: int, mode: str) -> str:
    if count > 1 and (gpu.link is None or gpu.link.bus_gbs(2 if mode == ONE_STREAM else count) is None):
        return _("no estimate above one GPU: the catalogue has no figure for the link between these GPUs")
    return _("the model finds no room for a sequence beside the weights")


def measured_note(*, measured: LlmMeasured) -> str:
    values = {
        "value": f"{measured.tokens_per_s:,.4g}",
        "count": measured.gpu_count,
        "model": measured.shape.name,
        "source": measured.source,
        "n": measured.n,
    }
    return (
        _("measured %(value)s tokens/s for one stream on %(count)d GPU(s), %(model)s: %(source)s (n = %(n)d)") % values
    )
