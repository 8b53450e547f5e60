"""GPU memory estimator: how much memory a model needs for inference, LoRA, QLoRA, fine-tuning or training.

Units: bytes internally; results in GiB (1 GiB = 2^30 bytes). Where a source quotes decimal GB
(1 GB = 10^9 bytes) the tests convert explicitly. ``P`` = parameter count, ``T`` = trainable
parameter count, ``L`` = layers, ``h`` = hidden size, ``a`` = attention heads, ``s`` = context
(sequence) length in tokens, ``b`` = batch (sequences per GPU), ``V`` = vocabulary size.

The terms (each a field of :class:`MemoryBreakdown`)
------------------------------------------------------

**weights** - bytes per parameter by precision: fp32 4, bf16/fp16 2, int8 1, int4 0.5.
Quantised formats also store scales: int4 adds 0.5 bits/param (one fp32 absmax per block of 64
weights, 32/64 bits; QLoRA paper, arXiv:2305.14314, section 3); QLoRA's NF4 with double
quantisation adds 0.127 bits/param (same section: 8/64 + 32/(64*256)). int8 adds nothing: its
row-wise scales cost under 0.01 bits/param. When weights are quantised, the embedding and output
projection (V x h each) stay in 16-bit, as bitsandbytes, GPTQ and AWQ leave them. LoRA/QLoRA
adapters add T x 2 bytes (bf16).

**kv_cache** (inference with decoder models only) - ``2 x L x kv_heads x head_dim x s x b x
bytes(cache dtype)``: a key and a value vector per layer, KV head and token. The cache dtype
defaults to bf16 (fp32 when the weights are fp32). Encoders (BERT) and training keep no cache.

**activations**

* training modes (lora, qlora, full_finetune, train), transformers: Korthikanti et al. 2022,
  "Reducing Activation Recomputation in Large Transformer Models" (arXiv:2205.05198), eq. (1):
  each layer stores ``s*b*h*(34 + 5*a*s/h)`` bytes without recomputation (16-bit activations,
  1-byte dropout masks, no tensor or sequence parallelism). The ``5*a*s/h`` term is the ``a x s x s``
  attention matrices; ``flash_attention=True`` drops it (FlashAttention never stores them). With
  full activation checkpointing only each layer's 16-bit input (``2*s*b*h`` bytes) is kept, plus one
  layer's full activations while it is recomputed: ``L*2*s*b*h + s*b*h*(34 + 5*a*s/h)``. Decoders
  and encoders with a known vocabulary add the fp32 logits kept for the loss, ``4*s*b*V``. fp32
  training doubles the total. Defaults: checkpointing on for lora, qlora and full_finetune (the
  usual fine-tuning recipes), off for train ("activations at full batch").
* inference, transformers: a working set, not stored activations: one layer's transient tensors
  during prefill of ``t = min(s*b, 8192)`` tokens (chunked prefill, :data:`PREFILL_CHUNK_TOKENS`),
  ``t*(4*h + 2*intermediate)*2`` bytes (residual stream, normed
  input, attention output and query; the MLP's two inner-width tensors), plus the last position's
  fp32 logits ``4*b*V``.
* CNN and diffusion models: depends on the input resolution and is not estimated (0, with a note)
  unless ``activation_gib_per_sample`` is given (then that x batch, for any model kind).

**gradients** and **optimizer** (Adam)

* full_finetune and train, bf16/fp16: mixed-precision Adam, 16 bytes/param (ZeRO paper,
  Rajbhandari et al. 2019, arXiv:1910.02054, section 3.1): 16-bit weights 2 (in ``weights``) +
  16-bit gradients 2 (``gradients``) + fp32 master weights 4 + fp32 Adam momentum 4 + variance 4
  (12, ``optimizer``).
* full_finetune and train, fp32: weights 4 + gradients 4 + Adam m, v 8 = 16 bytes/param.
* lora and qlora: only the T adapter parameters train, kept in bf16 as the QLoRA recipe does:
  weights 2 + gradients 2 + fp32 Adam m, v 8 = 12 bytes per trainable parameter. T is computed
  from the rank and the targeted projections (see :func:`lora_trainable_params`), or 1% of P
  (:data:`LORA_FALLBACK_FRACTION`) when the shapes are unknown.

**overhead** - ``cuda_context + fragmentation``. The CUDA context with cuBLAS/cuDNN workspaces
costs roughly 0.3-1 GiB per process depending on GPU and library versions; we take
:data:`CUDA_CONTEXT_GIB` = 1 GiB per GPU. The caching allocator fragments memory that is
allocated and freed every step (activations, gradients, KV cache blocks); we add
:data:`FRAGMENTATION_FACTOR` = 10% of those. Weights and optimizer states are allocated once and
get no fragmentation allowance.

``total = weights + kv_cache + activations + gradients + optimizer + overhead`` on one GPU. For
several GPUs see :mod:`fitcalc.plan`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, TypeVar

from django.utils.translation import gettext as _

from fitcalc.errors import FitInputError
from fitcalc.presets import ModelSpec
from fitcalc.quant import KV_BYTES, WEIGHT_FORMATS, KvPrecision, Precision

GIB = 2**30

MAX_CONTEXT = 10_000_000
MAX_BATCH = 65_536
MAX_LORA_RANK = 65_536


class Mode(StrEnum):
    INFERENCE = "inference"
    LORA = "lora"
    QLORA = "qlora"
    FULL_FINETUNE = "full_finetune"
    TRAIN = "train"


class LoraTargets(StrEnum):
    """Which linear layers get adapters. ``qv``: W_q and W_v, as in the LoRA paper (Hu et al. 2021,
    arXiv:2106.09685); ``attention``: q, k, v, o; ``all_linear``: attention and MLP, as in QLoRA."""

    QV = "qv"
    ATTENTION = "attention"
    ALL_LINEAR = "all_linear"


#: QLoRA's NF4 with double quantisation: scale overhead in bits per parameter (module docstring).
NF4_DOUBLE_QUANT_SCALE_BITS = 0.127

#: LoRA/QLoRA adapters: bf16 weight 2 + bf16 gradient 2 + fp32 Adam m and v 8.
ADAPTER_WEIGHT_BYTES = 2
ADAPTER_GRADIENT_BYTES = 2
ADAPTER_OPTIMIZER_BYTES = 8

#: Mixed-precision Adam split of the 16 bytes/param (ZeRO paper): weights, gradients, optimizer states.
MIXED_ADAM_BYTES = (2, 2, 12)
FP32_ADAM_BYTES = (4, 4, 8)

#: Trainable share of the parameters for LoRA when the model's shapes are unknown.
LORA_FALLBACK_FRACTION = 0.01

#: Serving engines process long prompts in chunks (vLLM's and SGLang's chunked prefill, llama.cpp's
#: micro-batches): the prefill working set is bounded by the tokens of one chunk. 8,192 tokens is
#: our assumption of a typical chunk budget, not a measured figure.
PREFILL_CHUNK_TOKENS = 8192

CUDA_CONTEXT_GIB = 1.0
FRAGMENTATION_FACTOR = 0.10

#: Korthikanti et al. 2022, eq. (1): bytes per layer = s*b*h*(34 + 5*a*s/h).
KORTHIKANTI_LINEAR_BYTES = 34
KORTHIKANTI_ATTENTION_BYTES = 5

#: Default weight precision per mode; inference defaults to the model's own release format
#: (``ModelSpec.native_precision``: DeepSeek V3 FP8, gpt-oss MXFP4) where it has one.
DEFAULT_PRECISION: dict[Mode, Precision] = {
    Mode.INFERENCE: Precision.BF16,
    Mode.LORA: Precision.BF16,
    Mode.QLORA: Precision.INT4,
    Mode.FULL_FINETUNE: Precision.BF16,
    Mode.TRAIN: Precision.BF16,
}
TRAINING_MODES = frozenset({Mode.LORA, Mode.QLORA, Mode.FULL_FINETUNE, Mode.TRAIN})

_E = TypeVar("_E", bound=StrEnum)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Itemised memory of one model run on one GPU, in GiB (2^30 bytes).

    ``overhead_gib = cuda_context_gib + fragmentation_gib``; ``total_gib`` is the sum of the six
    items. ``sharded_gib`` (weights + gradients + optimizer) is what FSDP/ZeRO-3 or tensor
    parallelism splits across GPUs; ``replicated_gib`` (KV cache + activations) is what each GPU
    holds for its own batch.
    """

    model_slug: str
    model_name: str
    mode: Mode
    precision: Precision
    kv_cache_precision: KvPrecision
    context: int
    batch: int
    params: int
    trainable_params: int
    activation_checkpointing: bool
    weights_gib: float
    kv_cache_gib: float
    activations_gib: float
    gradients_gib: float
    optimizer_gib: float
    cuda_context_gib: float
    fragmentation_gib: float
    fragmentation_factor: float
    notes: tuple[str, ...] = ()
    kv_shards: int = 1

    @property
    def is_inference(self) -> bool:
        return self.mode is Mode.INFERENCE

    @property
    def overhead_gib(self) -> float:
        return self.cuda_context_gib + self.fragmentation_gib

    @property
    def total_gib(self) -> float:
        return (
            self.weights_gib
            + self.kv_cache_gib
            + self.activations_gib
            + self.gradients_gib
            + self.optimizer_gib
            + self.overhead_gib
        )

    @property
    def total_bytes(self) -> int:
        return round(self.total_gib * GIB)

    @property
    def sharded_gib(self) -> float:
        return self.weights_gib + self.gradients_gib + self.optimizer_gib

    @property
    def replicated_gib(self) -> float:
        return self.kv_cache_gib + self.activations_gib

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: GiB figures rounded to 3 decimals, enums as their string values."""

        def gib(value: float) -> float:
            return round(value, 3)

        return {
            "model": self.model_slug,
            "model_name": self.model_name,
            "mode": self.mode.value,
            "precision": self.precision.value,
            "kv_cache_precision": self.kv_cache_precision.value,
            "context": self.context,
            "batch": self.batch,
            "params": self.params,
            "trainable_params": self.trainable_params,
            "activation_checkpointing": self.activation_checkpointing,
            "unit": "GiB",
            "weights": gib(self.weights_gib),
            "kv_cache": gib(self.kv_cache_gib),
            "activations": gib(self.activations_gib),
            "gradients": gib(self.gradients_gib),
            "optimizer": gib(self.optimizer_gib),
            "overhead": gib(self.overhead_gib),
            "cuda_context": gib(self.cuda_context_gib),
            "fragmentation": gib(self.fragmentation_gib),
            "total": gib(self.total_gib),
            "notes": list(self.notes),
        }


def _enum_value(enum_type: type[_E], value: str | _E, field_name: str) -> _E:
    if isinstance(value, enum_type):
        return value
    text = value.strip().lower() if isinstance(value, str) else value
    try:
        return enum_type(text)
    except ValueError:
        known = ", ".join(member.value for member in enum_type)
        raise FitInputError(field_name, f"unknown {field_name} {value!r}; choose one of: {known}") from None


def _check_int(field_name: str, value: int, *, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FitInputError(field_name, f"must be a whole number, got {value!r}")
    if value != int(value):
        raise FitInputError(field_name, f"must be a whole number, got {value!r}")
    if value < minimum:
        raise FitInputError(field_name, f"must be at least {minimum}, got {value:g}")
    if value > maximum:
        raise FitInputError(field_name, f"{value:g} is beyond the supported maximum of {maximum:,}")
    return int(value)


def lora_trainable_params(*, model: ModelSpec, rank: int, targets: LoraTargets | str) -> int | None:
    """Adapter parameters of LoRA at ``rank`` on the ``targets`` projections of every layer.

    An adapter on a ``d_in x d_out`` matrix adds ``rank x (d_in + d_out)`` parameters (A and B).
    Per layer: q ``r(h + a*d)``, k and v ``r(h + kv*d)`` each, o ``r(a*d + h)``, and for
    ``all_linear`` the MLP's ``mlp_matrices`` matrices ``r(h + intermediate)`` each (d = head dim).
    ``None`` when the model's shapes are unknown.
    """
    chosen = _enum_value(LoraTargets, targets, "lora_targets")
    rank = _check_int("lora_rank", rank, minimum=1, maximum=MAX_LORA_RANK)
    if not model.has_attention_shapes:
        return None
    assert model.hidden and model.heads and model.kv_heads and model.head_dim and model.layers
    h, d = model.hidden, model.head_dim
    q = rank * (h + model.heads * d)
    kv = rank * (h + model.kv_heads * d)
    o = rank * (model.heads * d + h)
    if chosen is LoraTargets.QV:
        return (q + kv) * model.layers
    per_layer = rank * model.lora_attention_width if model.lora_attention_width else q + 2 * kv + o
    if chosen is LoraTargets.ATTENTION:
        return per_layer * model.layers
    if model.lora_mlp_width is not None:
        # From the config: every expert's matrices (PEFT's all-linear targets each expert's layers).
        return per_layer * model.layers + rank * model.lora_mlp_width
    if model.intermediate is None:
        return None
    per_layer += model.mlp_matrices * rank * (h + model.intermediate)
    return per_layer * model.layers


def _weights_bytes(*, model: ModelSpec, precision: Precision, qlora: bool) -> tuple[float, list[str]]:
    """Bytes of the weights in ``precision``'s format (fitcalc.quant): the quantised share at the
    format's bits per weight, scales included, the rest (embeddings, attention of a quantised MoE)
    in 16-bit."""
    fmt = WEIGHT_FORMATS[precision]
    if not fmt.quantised:
        return model.params * fmt.bits / 8, []
    bits = 4 + NF4_DOUBLE_QUANT_SCALE_BITS if qlora else fmt.bits
    if fmt.scope == "all":
        quantised = model.params
    elif fmt.scope == "experts_or_linear" and model.expert_params:
        quantised = model.expert_params
    else:
        quantised = model.params - min(model.embedding_params, model.params)
    kept = model.params - quantised
    notes = [
        _("weights in %(format)s: %(bits).3g bits per quantised weight, scales included")
        % {"format": fmt.label, "bits": bits}
    ]
    if kept:
        if quantised == model.expert_params:
            notes.append(
                _("%(billions).2fB attention, router, embedding and output parameters kept in 16-bit")
                % {"billions": kept / 1e9}
            )
        else:
            notes.append(_("%(billions).2fB embedding and output parameters kept in 16-bit") % {"billions": kept / 1e9})
    return quantised * bits / 8 + kept * 2, notes


def kv_cache_bytes(*, model: ModelSpec, context: int, sequences: int, kv_precision: KvPrecision) -> float | None:
    """KV cache of ``sequences`` sequences of ``context`` tokens; None when the shapes are unknown.

    ``values per token and layer x (full layers x context + sliding layers x min(context, window))
    x sequences x bytes per value``."""
    values = model.kv_values_per_token
    if not (model.layers and values):
        return None
    sliding = model.sliding_layers if model.sliding_window else 0
    tokens_per_sequence = (model.layers - sliding) * context + sliding * min(context, model.sliding_window or 0)
    return values * tokens_per_sequence * sequences * KV_BYTES[kv_precision]


def _training_activation_bytes(
    *, model: ModelSpec, context: int, batch: int, checkpointing: bool, flash_attention: bool
) -> float:
    assert model.layers and model.hidden and model.heads
    s, b, h, a, layers = context, batch, model.hidden, model.heads, model.layers
    attention_term = 0.0 if flash_attention else KORTHIKANTI_ATTENTION_BYTES * a * s / h
    one_layer = s * b * h * (KORTHIKANTI_LINEAR_BYTES + attention_term)
    stored = layers * 2 * s * b * h + one_layer if checkpointing else layers * one_layer
    logits = 4 * s * b * model.vocab if model.vocab else 0
    return stored + logits


def _inference_activation_bytes(*, model: ModelSpec, context: int, batch: int) -> float:
    assert model.hidden
    intermediate = model.intermediate or 4 * model.hidden  # a mixture of experts: the active experts' width
    tokens = min(context * batch, PREFILL_CHUNK_TOKENS)
    working_set = tokens * (4 * model.hidden + 2 * intermediate) * 2
    logits = 4 * batch * model.vocab if model.vocab else 0
    return working_set + logits


def _chosen_precision(*, model: ModelSpec, mode: Mode, precision: Precision | str | None) -> Precision:
    """The weights' format: the one given, the model's release format for inference, else the mode's default."""
    if precision is not None:
        return _enum_value(Precision, precision, "precision")
    if mode is Mode.INFERENCE and model.native_precision:
        return Precision(model.native_precision)
    return DEFAULT_PRECISION[mode]


def _check_mode_precision(*, mode: Mode, chosen: Precision) -> None:
    """qlora is 4-bit only; full updates need a float format."""
    if mode is Mode.QLORA and chosen is not Precision.INT4:
        raise FitInputError(
            "precision", "qlora keeps the base weights in 4-bit NF4; use mode=lora for 8, 16 or 32-bit base weights"
        )
    if mode in (Mode.FULL_FINETUNE, Mode.TRAIN) and WEIGHT_FORMATS[chosen].quantised:
        raise FitInputError(
            "precision",
            f"{mode.value} updates every weight, which can't be done in {chosen.value}; "
            "use fp32, bf16 or fp16, or mode=qlora / lora for a quantised base",
        )


def _chosen_kv_precision(*, weights: Precision, kv_cache_precision: KvPrecision | str | None) -> KvPrecision:
    """The KV cache's format: the one given, else FP32 beside FP32 weights and BF16 beside any other."""
    if kv_cache_precision is None:
        return KvPrecision.FP32 if weights is Precision.FP32 else KvPrecision.BF16
    return _enum_value(KvPrecision, kv_cache_precision, "kv_cache_precision")


def _model_notes(*, model: ModelSpec, context: int) -> list[str]:
    """The model's own notes, and a context beyond its published maximum."""
    notes = list(model.notes)
    if model.max_context is not None and model.is_transformer and context > model.max_context:
        notes.append(
            _("context %(context)s exceeds the model's published maximum of %(maximum)s tokens")
            % {"context": f"{context:,}", "maximum": f"{model.max_context:,}"}
        )
    return notes


def _check_activation_gib(value: float | None) -> None:
    if value is not None and (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or value > 1e6
    ):
        raise FitInputError("activation_gib_per_sample", "must be a non-negative number of GiB below 1,000,000")


@dataclass(frozen=True)
class TrainedState:
    """Bytes of the weights (with any adapters), gradients and optimizer, and the trainable parameters."""

    weights: float
    gradients: float
    optimizer: float
    trainable: int
    notes: tuple[str, ...]


def _lora_state(*, model: ModelSpec, weights: float, lora_rank: int, lora_targets: LoraTargets | str) -> TrainedState:
    """LoRA and QLoRA: the base weights frozen, the adapters trained with Adam."""
    targets = _enum_value(LoraTargets, lora_targets, "lora_targets")
    computed = lora_trainable_params(model=model, rank=lora_rank, targets=targets)
    if computed is None:
        trainable = round(model.params * LORA_FALLBACK_FRACTION)
        note = _("model shapes unknown: LoRA trainable parameters taken as %(share)s of the total") % {
            "share": f"{LORA_FALLBACK_FRACTION:.0%}"
        }
    else:
        trainable = computed
        note = _("LoRA rank %(rank)d on %(targets)s: %(trainable)s trainable parameters") % {
            "rank": lora_rank,
            "targets": targets.value,
            "trainable": f"{trainable:,}",
        }
    return TrainedState(
        weights=weights + trainable * ADAPTER_WEIGHT_BYTES,
        gradients=trainable * ADAPTER_GRADIENT_BYTES,
        optimizer=trainable * ADAPTER_OPTIMIZER_BYTES,
        trainable=trainable,
        notes=(note,),
    )


def _trained_state(
    *, model: ModelSpec, mode: Mode, precision: Precision, lora_rank: int, lora_targets: LoraTargets | str
) -> TrainedState:
    """Weights, gradients and optimizer states of the mode: inference keeps the weights only."""
    weights, notes = _weights_bytes(model=model, precision=precision, qlora=mode is Mode.QLORA)
    if mode in (Mode.LORA, Mode.QLORA):
        lora = _lora_state(model=model, weights=weights, lora_rank=lora_rank, lora_targets=lora_targets)
        return replace(lora, notes=(*notes, *lora.notes))
    if mode in (Mode.FULL_FINETUNE, Mode.TRAIN):
        weight_b, grad_b, optim_b = FP32_ADAM_BYTES if precision is Precision.FP32 else MIXED_ADAM_BYTES
        return TrainedState(
            weights=model.params * weight_b,
            gradients=model.params * grad_b,
            optimizer=model.params * optim_b,
            trainable=model.params,
            notes=tuple(notes),
        )
    return TrainedState(weights=weights, gradients=0.0, optimizer=0.0, trainable=0, notes=tuple(notes))


def _kv_bytes(
    *, model: ModelSpec, mode: Mode, context: int, batch: int, kv_precision: KvPrecision
) -> tuple[float, list[str]]:
    """The KV cache: autoregressive inference only."""
    if mode is not Mode.INFERENCE:
        return 0.0, []
    if model.kind == "encoder":
        return 0.0, [_("encoder model: no KV cache")]
    if model.kind != "decoder":
        return 0.0, []
    cache = kv_cache_bytes(model=model, context=context, sequences=batch, kv_precision=kv_precision)
    if cache is None:
        return 0.0, [_("KV cache not estimated: layers, KV heads and head dim are unknown")]
    return cache, []


def _activation_bytes(
    *,
    model: ModelSpec,
    precision: Precision,
    context: int,
    batch: int,
    training: bool,
    checkpointing: bool,
    flash_attention: bool,
    activation_gib_per_sample: float | None,
) -> tuple[float, list[str]]:
    """Activations: the given GiB per sample, else the transformer formulas (module docstring)."""
    if activation_gib_per_sample is not None:
        note = _("activations from the given %(gib)s GiB per sample") % {"gib": f"{activation_gib_per_sample:g}"}
        return activation_gib_per_sample * batch * GIB, [note]
    if not model.is_transformer:
        return 0.0, []
    if not (model.layers and model.hidden and model.heads):
        return 0.0, [_("activations not estimated: layers, hidden size and heads are unknown")]
    if not training:
        return _inference_activation_bytes(model=model, context=context, batch=batch), []
    stored = _training_activation_bytes(
        model=model, context=context, batch=batch, checkpointing=checkpointing, flash_attention=flash_attention
    )
    return stored * 2 if precision is Precision.FP32 else stored, []


def memory_estimate(
    *,
    model: ModelSpec,
    mode: Mode | str,
    precision: Precision | str | None = None,
    context: int = 2048,
    batch: int = 1,
    kv_cache_precision: KvPrecision | str | None = None,
    activation_checkpointing: bool | None = None,
    flash_attention: bool = False,
    lora_rank: int = 16,
    lora_targets: LoraTargets | str = LoraTargets.ALL_LINEAR,
    activation_gib_per_sample: float | None = None,
) -> MemoryBreakdown:
    """Estimate the memory of running ``model`` in ``mode`` on one GPU (formulas: module docstring).

    ``precision`` is the weights' precision (default bf16; int4 for qlora, the only one it
    accepts); full_finetune and train accept fp32/bf16/fp16 only. ``context`` is tokens per
    sequence, ``batch`` sequences (or samples) per GPU. Raises :class:`FitInputError` naming the
    field for impossible or unsupported input.
    """
    chosen_mode = _enum_value(Mode, mode, "mode")
    chosen_precision = _chosen_precision(model=model, mode=chosen_mode, precision=precision)
    context = _check_int("context", context, minimum=1, maximum=MAX_CONTEXT)
    batch = _check_int("batch", batch, minimum=1, maximum=MAX_BATCH)
    _check_mode_precision(mode=chosen_mode, chosen=chosen_precision)
    cache_precision = _chosen_kv_precision(weights=chosen_precision, kv_cache_precision=kv_cache_precision)
    _check_activation_gib(activation_gib_per_sample)
    training = chosen_mode in TRAINING_MODES
    checkpointing = training and (
        (chosen_mode is not Mode.TRAIN) if activation_checkpointing is None else activation_checkpointing
    )
    state = _trained_state(
        model=model, mode=chosen_mode, precision=chosen_precision, lora_rank=lora_rank, lora_targets=lora_targets
    )
    kv_bytes, kv_notes = _kv_bytes(
        model=model, mode=chosen_mode, context=context, batch=batch, kv_precision=cache_precision
    )
    activation_bytes, activation_notes = _activation_bytes(
        model=model,
        precision=chosen_precision,
        context=context,
        batch=batch,
        training=training,
        checkpointing=checkpointing,
        flash_attention=flash_attention,
        activation_gib_per_sample=activation_gib_per_sample,
    )
    fragmentation_bytes = FRAGMENTATION_FACTOR * (activation_bytes + state.gradients + kv_bytes)
    return MemoryBreakdown(
        model_slug=model.slug,
        model_name=model.name,
        mode=chosen_mode,
        precision=chosen_precision,
        kv_cache_precision=cache_precision,
        context=context,
        batch=batch,
        params=model.params,
        trainable_params=state.trainable,
        activation_checkpointing=checkpointing,
        weights_gib=state.weights / GIB,
        kv_cache_gib=kv_bytes / GIB,
        activations_gib=activation_bytes / GIB,
        gradients_gib=state.gradients / GIB,
        optimizer_gib=state.optimizer / GIB,
        cuda_context_gib=CUDA_CONTEXT_GIB,
        fragmentation_gib=fragmentation_bytes / GIB,
        fragmentation_factor=FRAGMENTATION_FACTOR,
        notes=(*_model_notes(model=model, context=context), *state.notes, *kv_notes, *activation_notes),
        kv_shards=(model.kv_shards or model.kv_heads or 1) if chosen_mode is Mode.INFERENCE else 1,
    )
