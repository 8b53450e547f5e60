"""LLM inference in the fit calculator: the calibrated model at each GPU count, anchored on a
measurement where one exists. Pure: plain numbers in, plain numbers out.

Batched serving of a model the serving model knows, at full load, is not computed here: the
calculator reads the serving model's answers (``fitcalc.selectors.gpu_facts._serving_inputs``),
the rankings' figures. This module answers one stream and a fixed number of users.

The model is ``llm.estimate`` (fitted to MLPerf Inference and llama.cpp measurements; its
leave-one-GPU-out error is on /llm-model/). This module feeds it the calculator's own job (the
model's exact weight bytes, KV cache bytes per token, context and users) and says what more GPUs
buy.

One stream (``single``)
    llama.cpp's default splits the layers across the GPUs: they work one after the other, so the
    stream runs at one GPU's bandwidth whatever the count (``split="layer"``). More GPUs only add
    memory. XiongjieDai's llama.cpp table shows it: Llama 3 70B Q4_K_M on RTX 4090s generates
    19.1, 18.8 and 18.8 tokens/s on 2, 4 and 8 cards. Each token's hidden state is handed across
    the stage boundaries (``llm.serving.comm.layer_split_token_seconds``).

Batched serving (``batched``)
    The calibrated serving step: ``(weight bytes + batch x KV bytes) / (eff_bw x bandwidth x t) +
    2 x active parameters x batch / (eff_serving x peak x t)`` for a tensor-parallel group of
    ``t`` GPUs. The batch is ``users`` when given, else as many sequences as the memory left after
    the weights holds, up to the model's cap per GPU ("full load", the regime of MLPerf's Offline
    test). ``n`` GPUs run ``n / t`` replicas of a ``t``-GPU group; the calculator takes the group
    size (a power of two, at most 8 in one host) that makes the most tokens.

    Every step of a group of several GPUs also waits for two all-reduces per layer of the batch's
    activations, priced by ``llm.serving.comm`` from the GPUs' link (NVLink-class fabric, PCIe
    GPU to GPU, or PCIe staged through host memory on consumer cards, with nccl-tests figures)
    and scaled by the fitted communication factor of that link, as on the LLM rankings. A link
    the catalogue has no figure for is not priced, and the note says so.

Error
    An estimate carries the model's leave-one-GPU-out error; when its configuration lies outside
    the measured range (``llm.estimate.coverage``: no calibration row of its vendor, architecture,
    multi-GPU link or tensor format) it carries the larger error the model makes when it
    extrapolates, and the reasons.

Measured figures first
    A measurement of the same GPU, size class and weight-format family anchors the model: the
    figure for this job is ``measured x model(job) / model(measured configuration)``, so the
    measurement sets the level and the model carries it to this model, context and GPU count.
    The basis is "measured" when that factor is within 5% of 1 and "measured-scaled" otherwise.
    Batched measurements (MLPerf Offline) are full-load figures: they anchor full-load jobs only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from fitcalc.memory import GIB, MemoryBreakdown, kv_cache_bytes
from fitcalc.plan import CountRate
from fitcalc.presets import ModelSpec
from llm.estimate.constants import LlmConstants
from llm.estimate.coverage import Coverage, Regime, configuration_of
from llm.estimate.model import compute_peak, decode_seconds_per_token, serving_tokens_per_s
from llm.serving.comm import GpuLink, layer_split_token_seconds, tensor_parallel_step_seconds
from llm.serving.shapes import ModelShape
from llm.serving.shapes import bytes_per_weight as llm_bytes_per_weight

SERVING = "batched"
ONE_STREAM = "single"
#: The calculator's weight formats as llm.estimate names them (its efficiencies are per group).
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


@dataclass(frozen=True)
class LlmShape:
    """A decoder as the model needs it: parameters (billions), layers, hidden size, weight bytes
    per parameter, KV cache bytes per token (every layer), and the weight format."""

    name: str
    total_params_b: float
    active_params_b: float
    layers: int
    hidden: int
    bytes_per_weight: float
    kv_bytes_per_token: float
    weight_precision: str


def llm_shape_of_job(*, model: ModelSpec, breakdown: MemoryBreakdown) -> LlmShape | None:
    """The calculator's job: its exact weight bytes (scales, 16-bit embeddings) and KV bytes per
    token (sliding windows, latent attention, the KV format), averaged over the context."""
    if not (model.layers and model.hidden and model.params) or breakdown.precision.value not in LLM_PRECISION:
        return None
    kv = kv_cache_bytes(model=model, context=breakdown.context, sequences=1, kv_precision=breakdown.kv_cache_precision)
    return LlmShape(
        name=model.name,
        total_params_b=model.params / 1e9,
        active_params_b=model.compute_params / 1e9,
        layers=model.layers,
        hidden=model.hidden,
        bytes_per_weight=breakdown.weights_gib * GIB / model.params,
        kv_bytes_per_token=(kv or 0.0) / breakdown.context,
        weight_precision=LLM_PRECISION[breakdown.precision.value],
    )


def llm_shape_of_measured(*, shape: ModelShape, precision: str, quant: str, mode: str) -> LlmShape:
    """A measured configuration, as llm.estimate's fit sees it (8-bit KV cache beside weights of a
    byte or less when batched; 16-bit otherwise)."""
    weight_bytes = llm_bytes_per_weight(precision=precision, quant=quant)
    kv_value_bytes = 1.0 if mode == SERVING and weight_bytes <= 1.0 else 2.0
    return LlmShape(
        name=shape.name,
        total_params_b=shape.total_params_b,
        active_params_b=shape.active_params_b,
        layers=shape.layers,
        hidden=shape.hidden,
        bytes_per_weight=weight_bytes,
        kv_bytes_per_token=2.0 * shape.layers * shape.kv_heads * shape.head_dim * kv_value_bytes,
        weight_precision=precision,
    )


@dataclass(frozen=True)
class LlmGpu:
    """Datasheet figures of one GPU model: memory (GiB), bandwidth (GB/s), dense tensor TFLOPS by
    precision (llm.estimate's keys, "fp16_nontensor" the vector rate), the link between cards
    (``llm.serving.comm.gpu_link``; None: not priced), and vendor and architecture slugs (for
    the measured range)."""

    memory_gib: float
    bandwidth_gbs: float | None
    tensor_tflops: Mapping[str, float | None]
    link: GpuLink | None = None
    vendor: str = ""
    architecture: str = ""


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
    compute_precision: str = ""

    @property
    def configuration(self) -> str:
        """The configuration class of the measured range (llm.estimate.coverage)."""
        split = "layer" if self.bound == ONE_STREAM_BOUND else "tensor"
        return configuration_of(gpu_count=self.group, split=split, link_kind=self.link_kind)


ONE_STREAM_BOUND = "one stream"


def _link_kind(link: GpuLink | None, gpus: int) -> str:
    if gpus <= 1:
        return "single"
    return link.kind(gpus) if link is not None else "unknown"


def _group_rate(
    *,
    gpu: LlmGpu,
    shape: LlmShape,
    group: int,
    context: int,
    users: int | None,
    benchmark: str,
    constants: LlmConstants,
) -> LlmRate | None:
    """One tensor-parallel group's tokens/s (``count`` = ``group``), its batch, what binds it and
    its communication per step."""
    peak = compute_peak(gpu.tensor_tflops, weight_precision=shape.weight_precision)
    if peak is None or not gpu.bandwidth_gbs:
        return None
    if users is not None:
        # The calculator's own memory check has decided that the users' caches fit: the batch is theirs.
        constants = replace(
            constants,
            serving_max_batch_per_gpu=max(1, math.ceil(users / group)),
            memory_usable_fraction=1.0,
            serving_reserve_gib=0.0,
        )
    kind = _link_kind(gpu.link, group)
    factor = constants.communication(kind)

    def talk(batch: int) -> float:
        if gpu.link is None or group <= 1:
            return 0.0
        seconds = tensor_parallel_step_seconds(
            link=gpu.link, gpus=group, tokens=batch, layers=shape.layers, hidden=shape.hidden
        )
        return 0.0 if seconds is None else seconds * factor

    step = serving_tokens_per_s(
        memory_gib=gpu.memory_gib,
        bandwidth_gbs=gpu.bandwidth_gbs,
        peak_tflops=peak[0],
        total_weight_bytes=shape.total_params_b * 1e9 * shape.bytes_per_weight,
        active_params_b=shape.active_params_b,
        kv_bytes_per_token_=shape.kv_bytes_per_token,
        gpu_count=group,
        context_tokens=context,
        benchmark=benchmark,
        communication_s=talk,
        constants=constants,
    )
    if step is None:
        return None
    rate, batch = step.tokens_per_s, step.batch
    if users is not None and batch > users:  # the cap rounded the users up to a multiple of the group
        rate, batch = rate * users / batch, users
    return LlmRate(rate, group, group, 1, batch, step.bound, kind, step.communication_s, peak[1])


def llm_rate(
    *,
    gpu: LlmGpu,
    shape: LlmShape,
    mode: str,
    count: int,
    context: int,
    users: int | None,
    benchmark: str,
    constants: LlmConstants,
) -> LlmRate | None:
    """The calibrated model's figure for ``count`` GPUs (module docstring); None without the
    datasheet figures, or when not one sequence fits beside the weights."""
    if not gpu.bandwidth_gbs:
        return None
    if mode == ONE_STREAM:
        hand_over = (
            layer_split_token_seconds(link=gpu.link, gpus=count, hidden=shape.hidden) if gpu.link is not None else None
        )
        if count <= 1:
            hand_over = 0.0
        seconds = decode_seconds_per_token(
            bandwidth_gbs=gpu.bandwidth_gbs,
            active_weight_bytes=shape.active_params_b * 1e9 * shape.bytes_per_weight,
            kv_bytes=shape.kv_bytes_per_token * context / 2,  # the context grows to its end: half on average
            layers=shape.layers,
            weight_precision=shape.weight_precision,
            gpu_count=count,
            split="layer",
            communication_s=hand_over or 0.0,
            constants=constants,
        )
        kind = "single" if count <= 1 else ("unknown" if hand_over is None else _link_kind(gpu.link, 2))
        return LlmRate(1.0 / seconds, count, count, 1, 1, ONE_STREAM_BOUND, kind, hand_over or 0.0)
    best: LlmRate | None = None
    group = 1
    while group <= min(count, MAX_GROUP):
        if count % group == 0:
            replicas = count // group
            per_replica = None if users is None else max(1, math.ceil(users / replicas))
            found = _group_rate(
                gpu=gpu,
                shape=shape,
                group=group,
                context=context,
                users=per_replica,
                benchmark=benchmark,
                constants=constants,
            )
            if found is not None:
                candidate = replace(found, per_s=found.per_s * replicas, count=count, replicas=replicas)
                if best is None or candidate.per_s > best.per_s * (1 + 1e-9):
                    best = candidate
        group *= 2
    return best


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
    if rate.link_kind == "unknown":
        text += _("; the link between these GPUs is not in the catalogue: communication is not counted")
    elif rate.comm_s and mode == ONE_STREAM:
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
    "KV-cache memory": gettext_lazy("bound by the memory left for the KV cache"),
    "tensor throughput": gettext_lazy("bound by tensor throughput"),
    "communication": gettext_lazy("bound by communication between the GPUs"),
}


@dataclass(frozen=True)
class LlmError:
    """The model's error for this job: ``inside`` the measured range, ``outside`` it (0.2 = 20%),
    and the range (``llm.estimate.coverage``; None: every estimate counts as inside)."""

    inside: float | None = None
    outside: float | None = None
    coverage: Coverage | None = None
    kind: str = "serving"  # the coverage's use case: serving | decode

    def of(self, *, gpu: LlmGpu, rate: LlmRate) -> tuple[float | None, tuple[str, ...]]:
        """(typical error, reasons it lies outside the measured range) of one estimate."""
        if self.coverage is None:
            return self.inside, ()
        regime = Regime(self.kind, gpu.vendor, gpu.architecture, rate.configuration,
                        rate.compute_precision if self.kind == "serving" else "")  # fmt: skip
        reasons = self.coverage.outside(regime)
        return (self.outside if reasons and self.outside is not None else self.inside), reasons


@dataclass(frozen=True)
class LlmMeasured:
    """A measured figure of one GPU model: ``tokens_per_s`` per GPU (batched, full load) or of the
    stream (one stream), on ``gpu_count`` GPUs; ``n`` results or systems behind it; ``shape``,
    ``context`` and ``benchmark`` describe the measured configuration to the model."""

    tokens_per_s: float
    gpu_count: int
    n: int
    source: str
    url: str
    shape: LlmShape
    context: int
    benchmark: str = ""


def llm_count_rates(
    *,
    gpu: LlmGpu,
    shape: LlmShape,
    mode: str,
    counts: tuple[int, ...],
    context: int,
    users: int | None,
    benchmark: str,
    constants: LlmConstants,
    measured: LlmMeasured | None = None,
    error: LlmError | None = None,
) -> dict[int, CountRate]:
    """The rate of each GPU count: the model's estimate with its error (``error``: the model's
    leave-one-GPU-out error inside and outside the measured range), or the measurement carried to
    the job by the model (module docstring)."""
    error = error or LlmError()
    scaling = "layer-split" if mode == ONE_STREAM else "tensor-parallel"
    anchor: LlmRate | None = None
    if measured is not None and (mode == ONE_STREAM or users is None):
        anchor = llm_rate(
            gpu=gpu,
            shape=measured.shape,
            mode=mode,
            count=measured.gpu_count,
            context=measured.context,
            users=None,
            benchmark=measured.benchmark,
            constants=constants,
        )
    out: dict[int, CountRate] = {}
    for count in counts:
        kind = "single" if count == 1 else scaling
        estimate = llm_rate(
            gpu=gpu,
            shape=shape,
            mode=mode,
            count=count,
            context=context,
            users=users,
            benchmark=benchmark,
            constants=constants,
        )
        if estimate is None:
            out[count] = CountRate(None, "none", kind, _("the model finds no room for a sequence beside the weights"))
            continue
        how = llm_rate_note(estimate, mode=mode)
        if anchor is None or measured is None:
            typical, outside = error.of(gpu=gpu, rate=estimate)
            note = _("estimated by the calibrated model: %(how)s") % {"how": how}
            out[count] = CountRate(estimate.per_s, "estimated", kind, note, typical, outside, estimate.configuration)
            continue
        total = measured.tokens_per_s * (measured.gpu_count if mode == SERVING else 1)
        factor = estimate.per_s / anchor.per_s
        basis = "measured" if abs(factor - 1) <= MEASURED_TOLERANCE else "measured-scaled"
        note = measured_note(measured=measured, mode=mode)
        if basis == "measured-scaled":
            note += _(
                "; × %(factor).2f by the calibrated model for %(model)s, %(context)d-token context on %(count)d GPU(s)"
            ) % {
                "factor": factor,
                "model": shape.name,
                "context": context,
                "count": count,
            }
        out[count] = CountRate(total * factor, basis, kind, f"{note}; {how}", configuration=estimate.configuration)
    return out


def measured_note(*, measured: LlmMeasured, mode: str) -> str:
    values = {
        "value": f"{measured.tokens_per_s:,.4g}",
        "count": measured.gpu_count,
        "model": measured.shape.name,
        "source": measured.source,
        "n": measured.n,
    }
    if mode == SERVING:
        return _("measured %(value)s tokens/s per GPU on %(count)d GPU(s), %(model)s: %(source)s (n = %(n)d)") % values
    return (
        _("measured %(value)s tokens/s for one stream on %(count)d GPU(s), %(model)s: %(source)s (n = %(n)d)") % values
    )
