"""One GPU's throughput for a training or non-LLM fit-calculator job: pure functions on plain numbers.

:func:`throughput_resolve` is ``(GPU facts, job) -> Throughput`` (rate, unit, basis, note, typical
error). Decoder inference (LLM serving and one stream) is not here: its rate depends on the GPU
count, and ``fitcalc.llm`` computes it with the serving model (``llm.serving``).

Throughput of one GPU (tokens/s for transformers, samples/s for image models)
------------------------------------------------------------------------------
In order of preference; ``throughput_basis`` says which one was used.

1. ``measured``: a Lambda training result for the same model (ResNet-50 -> ``resnet50``,
   BERT-Large -> ``bert_large_squad``; full fine-tuning and training modes; Lambda's FP16 runs
   for BF16/FP16, FP32 for FP32; single-GPU configurations). BERT's sequences/s become tokens/s
   as sequences/s x ``context`` (Lambda measured SQuAD fine-tuning at its own sequence length, so
   other contexts are approximate).
2. Transformer training (pretraining, full fine-tuning, LoRA, QLoRA): the training time model
   that also plans past one node (``fitcalc.training_time``)::

       tokens/s = dense peak of the job's format x MFU / model FLOP per token

   The MFU is the one fitted on the GPU's own MLPerf Training runs (``measured-scaled``: measured
   on this GPU, at the MLPerf benchmarks' models and scales), else its architecture's, else every
   run's (``estimated``, with the typical error of that figure for a GPU left out). The peak is
   the job format's (:func:`training_peak`): FP8 falls back to BF16 where a GPU lacks it, FP32
   trains on TF32 tensor cores, weight-only formats (QLoRA) multiply in BF16. Without any fitted
   run the MFU is ``ACHIEVABLE_COMPUTE_FRACTION`` (``estimated``).
3. ``measured-scaled`` for inference: the client's ``transformer-infer`` block measured on this GPU
   (its achieved FLOP rate: tokens/s x block FLOP per token, over the model's FLOP per token).
   Used for BF16/FP16 and for INT8/INT4 weights (weight-only quantised layers compute in 16-bit).
4. ``estimated`` inference from the spec sheet: ``ACHIEVABLE_COMPUTE_FRACTION x dense tensor peak /
   model FLOP per token``. The peak is the TensorPeak of the compute precision: BF16 or FP16 as
   chosen; TF32 for FP32 (the GPU selection help page: PyTorch enables TF32 on Ampere by default),
   else the non-tensor FP32 figure; BF16 (else FP16) for INT8/INT4 weights.

Model FLOP per token (Kaplan et al. 2020, arXiv:2001.08361, Table 1): forward ``2 P + 2 L s
d_attn`` (``d_attn`` = heads x head dim; the second term only when the shapes are known),
training three times that (forward + backward), i.e. the familiar ``6 P`` plus attention; four
times with activation checkpointing, which runs every layer's forward again during the backward
pass (Chen et al. 2016, arXiv:1604.06174; Korthikanti et al. 2022, arXiv:2205.05198, section 4:
full recomputation costs one more forward). A measured rate of a run without checkpointing (Lambda)
is scaled by 3/4 for a job with it. LoRA and QLoRA count one forward less: frozen weights need no
weight gradients, so the backward pass computes only the activation gradients (the adapters' own
FLOP, under 1 % at the usual ranks, are left out).

A Lambda training rate (item 1) is capped at the dense peak x the GPU's fitted LLM training MFU
(``GpuSpecs.training_mfu``; ``ACHIEVABLE_COMPUTE_FRACTION`` where nothing is fitted), as the time
model's rates are by construction: no plan trains faster than the GPU.

Image models (CNN, diffusion) have no spec-sheet estimate: their FLOP per sample depends on the
input resolution, which the calculator does not take. They show fit and memory only, unless a
Lambda measurement applies.

Constants
---------
* ``ACHIEVABLE_COMPUTE_FRACTION`` = 0.40: model FLOP utilisation of large BF16 training runs; the
  Llama 3 paper (arXiv:2407.21783, Table 4) reports 38-43% on H100s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from django.utils.translation import gettext as _

from fitcalc.memory import TRAINING_MODES, MemoryBreakdown, Mode
from fitcalc.presets import ModelSpec

ACHIEVABLE_COMPUTE_FRACTION = 0.40

TRANSFORMER_INFER = "transformer-infer"
#: Lambda training workloads that measure a preset's own model.
LAMBDA_WORKLOAD_FOR_PRESET = {"resnet-50": "resnet50", "bert-large": "bert_large_squad"}
LAMBDA_MODES = frozenset({Mode.FULL_FINETUNE, Mode.TRAIN})
LAMBDA_PRECISION = {"bf16": "fp16", "fp16": "fp16", "fp32": "fp32"}
#: Precisions of the TensorPeak used for the compute bound ("fp32_nontensor" = Gpu.fp32_tflops).
COMPUTE_PEAKS: dict[str, tuple[str, ...]] = {
    "fp32": ("tf32", "fp32_nontensor"),
    "bf16": ("bf16",),
    "fp16": ("fp16",),
    "fp8": ("fp8", "bf16", "fp16"),
}
#: Weight-only formats multiply in 16-bit (fitcalc.quant.WeightFormat.compute).
for _weight_only in ("int8", "int4", "gptq", "awq", "q4_k_m", "q8_0", "mxfp4"):
    COMPUTE_PEAKS[_weight_only] = ("bf16", "fp16")
#: Precisions for which the BF16 transformer-block measurement stands for the compute rate.
BLOCK_MEASUREMENT_PRECISIONS = frozenset(COMPUTE_PEAKS) - {"fp32", "fp8"}

Basis = Literal["measured", "measured-scaled", "estimated", "none"]


def model_flops_per_token(
    *, model: ModelSpec, context: int, training: bool, checkpointing: bool = False, lora: bool = False
) -> float:
    """Kaplan et al.'s FLOP per token: forward ``2P + 2 L s d_attn``; training x3, x4 with activation
    checkpointing (the forward runs again in the backward pass); LoRA one forward less (x2, x3), as
    frozen weights need no weight gradients. ``P`` is the parameters a token runs through: a mixture
    of experts' active ones."""
    forward = 2.0 * model.compute_params
    if model.layers and model.heads and model.head_dim:
        forward += 2.0 * model.layers * context * model.heads * model.head_dim
    if not training:
        return forward
    return forward * ((4 if checkpointing else 3) - (1 if lora else 0))


#: Passes of a training step without and with activation checkpointing (forward, backward = 2
#: forwards, and the recomputed forward): a rate measured without it runs at 3/4 with it.
CHECKPOINTING_SLOWDOWN = 3 / 4


def block_flops_per_token(*, params: Mapping[str, Any], training: bool) -> float | None:
    """FLOP per token of the client's transformer block at its recorded shapes (None if unknown)."""
    try:
        d, d_ff, seq = int(params["d_model"]), int(params["d_ff"]), int(params["seq_len"])
    except (KeyError, TypeError, ValueError):
        return None
    if min(d, d_ff, seq) <= 0:
        return None
    forward = 2.0 * (4 * d * d + 2 * d * d_ff) + 2.0 * seq * d
    return forward * (3 if training else 1)


@dataclass(frozen=True)
class GpuSpecs:
    """Spec-sheet figures of one GPU: dense tensor peaks by precision (None: unsupported)."""

    peaks: Mapping[str, float | None]
    fp32_tflops: float | None
    bandwidth_gbs: float | None
    #: LLM training MFU fitted on the MLPerf Training runs (benchmarks_app.selectors): of
    #: this GPU ("gpu"), of its architecture or of every run; None when nothing is fitted, then
    #: ``ACHIEVABLE_COMPUTE_FRACTION``. ``training_mfu_error``: an estimate's typical error.
    training_mfu: float | None = None
    training_mfu_basis: str = ""
    training_mfu_runs: int = 0
    training_mfu_error: float | None = None


@dataclass(frozen=True)
class GpuMeasurements:
    """What the benchmarks measured on one GPU, already reduced to rates."""

    infer_flops: float | None = None  # achieved FLOP/s of the transformer-infer block
    lambda_per_s: Mapping[str, float] = field(default_factory=dict)  # lambda precision -> items/s


@dataclass(frozen=True)
class Throughput:
    """A rate in ``unit``; ``basis`` measured / measured-scaled / estimated / none; ``typical_error``:
    the model's typical relative error (0.25 = 25%) where it has been measured, else None."""

    per_s: float | None
    unit: str
    basis: Basis
    note: str
    typical_error: float | None = None

    @property
    def is_estimate(self) -> bool:
        return self.basis == "estimated"


def compute_peak_flops(specs: GpuSpecs, precision: str) -> tuple[float | None, str]:
    """FLOP/s of the compute precision's dense peak and the peak's name; (None, why) if unknown."""
    for key in COMPUTE_PEAKS[precision]:
        if key == "fp32_nontensor":
            if specs.fp32_tflops:
                return specs.fp32_tflops * 1e12, _("FP32 (non-tensor)")
            continue
        if key in specs.peaks:
            value = specs.peaks[key]
            if value:
                return value * 1e12, key.upper()
            if precision == key and precision != "fp8":
                return None, _("this GPU has no %(format)s support") % {"format": key.upper()}
    return None, _("no dense tensor peak on record for %(formats)s") % {
        "formats": "/".join(k.upper() for k in COMPUTE_PEAKS[precision])
    }


def throughput_resolve(
    *,
    model: ModelSpec,
    breakdown: MemoryBreakdown,
    specs: GpuSpecs,
    measured: GpuMeasurements,
) -> Throughput:
    """One GPU's rate for this job, per the module docstring (pure: plain data in)."""
    mode, precision = breakdown.mode, breakdown.precision.value
    context = breakdown.context
    training = mode in TRAINING_MODES
    checkpointing = training and breakdown.activation_checkpointing
    lora = mode in (Mode.LORA, Mode.QLORA)
    slowdown = CHECKPOINTING_SLOWDOWN if checkpointing else 1.0
    transformer = model.kind in ("decoder", "encoder")
    unit = "tokens/s" if transformer else "samples/s"

    if precision == "bf16" and "bf16" in specs.peaks and specs.peaks["bf16"] is None:
        # V100 and older: BF16 is emulated, not run on tensor cores; no figure stands for it.
        return Throughput(None, unit, "none", _("this GPU has no BF16 support: choose FP16"))
    lambda_precision = LAMBDA_PRECISION.get(precision)
    if model.slug in LAMBDA_WORKLOAD_FOR_PRESET and mode in LAMBDA_MODES and lambda_precision:
        per_s = measured.lambda_per_s.get(lambda_precision)
        if per_s:
            workload = LAMBDA_WORKLOAD_FOR_PRESET[model.slug]
            if transformer:
                note = _("Lambda %(workload)s %(precision)s: %(rate)s sequences/s × %(context)d tokens") % {
                    "workload": workload,
                    "precision": lambda_precision.upper(),
                    "rate": f"{per_s:g}",
                    "context": context,
                }
                rate = Throughput(per_s * context * slowdown, unit, "measured", _with_recompute(note, checkpointing))
                flops_per_token = model_flops_per_token(
                    model=model, context=context, training=training, checkpointing=checkpointing, lora=lora
                )
                return (
                    _capped(rate, specs=specs, precision=precision, flops_per_token=flops_per_token)
                    if (training)
                    else rate
                )
            note = _("Lambda %(workload)s %(precision)s: %(rate)s samples/s") % {
                "workload": workload,
                "precision": lambda_precision.upper(),
                "rate": f"{per_s:g}",
            }
            return Throughput(per_s * slowdown, unit, "measured", _with_recompute(note, checkpointing))

    if not transformer:
        return Throughput(
            None,
            unit,
            "none",
            _("no measurement for this model; image models need FLOP per sample, which depend on the input size"),
        )
    if model.params <= 0:
        return Throughput(None, unit, "none", _("no parameters"))

    if mode is Mode.INFERENCE and model.kind == "decoder":
        raise ValueError("decoder inference depends on the GPU count: fitcalc.llm computes it")
    flops_per_token = model_flops_per_token(
        model=model, context=context, training=training, checkpointing=checkpointing, lora=lora
    )
    if training:
        return _time_model_rate(specs=specs, precision=precision, flops_per_token=flops_per_token, unit=unit)
    compute, basis, note = _compute_rate(
        specs=specs,
        measured_flops=measured.infer_flops,
        block=TRANSFORMER_INFER,
        precision=precision,
        flops_per_token=flops_per_token,
    )
    if compute is None:
        return Throughput(None, unit, "none", note)
    return Throughput(compute, unit, basis, note)


#: The dense peaks a training job's format runs against, first found first (module doc, item 2):
#: FP8 falls back to BF16 where a GPU lacks it; weight-only formats (QLoRA) multiply in BF16.
_TRAINING_PEAKS: dict[str, tuple[str, ...]] = {"fp8": ("fp8", "bf16"), "fp32": ("tf32",)}
TRAINING_PEAK_PRECISIONS = ("fp8", "bf16", "fp16", "tf32")


def training_peak_formats(precision: str | None) -> tuple[str, ...]:
    """The TensorPeak formats a training job in ``precision`` runs against, in order (None: FP8
    where the GPU has it, the format the MFU was fitted in)."""
    if precision is None or precision in _TRAINING_PEAKS:
        return _TRAINING_PEAKS[precision or "fp8"]
    if precision in ("bf16", "fp16"):
        return (precision,)
    return tuple(key for key in COMPUTE_PEAKS.get(precision, ()) if key in TRAINING_PEAK_PRECISIONS)


def training_peak(peaks: Mapping[str, float | None], precision: str | None) -> tuple[str, float] | None:
    """(format, dense TFLOPS) of the peak a training job in ``precision`` runs against; None when
    the GPU has none of them on record."""
    for key in training_peak_formats(precision):
        value = peaks.get(key)
        if value:
            return key, value
    return None


def _time_model_rate(*, specs: GpuSpecs, precision: str, flops_per_token: float, unit: str) -> Throughput:
    """One GPU's training rate from the time model (module doc, item 2)."""
    chosen = training_peak(specs.peaks, precision)
    if chosen is None and precision == "fp32" and specs.fp32_tflops:
        chosen = (str(_("FP32 (non-tensor)")), specs.fp32_tflops)  # no TF32 tensor cores (Pascal and older)
    if chosen is None:
        formats = "/".join(key.upper() for key in training_peak_formats(precision))
        return Throughput(None, unit, "none", _("no %(formats)s dense peak on record") % {"formats": formats})
    peak_format, peak = chosen
    mfu = training_mfu_of(specs)
    measured = specs.training_mfu_basis == "gpu"
    if measured:
        source = _("MFU %(mfu).0f%% measured on %(runs)d MLPerf Training runs of this GPU") % {
            "mfu": mfu * 100,
            "runs": specs.training_mfu_runs,
        }
    elif specs.training_mfu_basis == "architecture":
        source = _("MFU %(mfu).0f%% of its architecture's %(runs)d MLPerf Training runs (not measured on this GPU)") % {
            "mfu": mfu * 100,
            "runs": specs.training_mfu_runs,
        }
    elif specs.training_mfu_basis == "pooled":
        source = _("MFU %(mfu).0f%%, the median of all %(runs)d MLPerf Training runs (none on this architecture)") % {
            "mfu": mfu * 100,
            "runs": specs.training_mfu_runs,
        }
    else:
        source = _("MFU %(mfu).0f%% (Llama 3's published utilisation; no MLPerf Training runs imported)") % {
            "mfu": mfu * 100
        }
    note = _("%(source)s × the %(peak)s dense peak (%(tflops)s TFLOPS) ÷ %(gflop).1f GFLOP per token") % {
        "source": source,
        "peak": peak_format.upper() if peak_format in TRAINING_PEAK_PRECISIONS else peak_format,
        "tflops": f"{peak:g}",
        "gflop": flops_per_token / 1e9,
    }
    return Throughput(
        mfu * peak * 1e12 / flops_per_token,
        unit,
        "measured-scaled" if measured else "estimated",
        note,
        None if measured else specs.training_mfu_error,
    )


def training_mfu_of(specs: GpuSpecs) -> float:
    """The MFU a training rate may reach on this GPU: the fitted one, else the published fraction."""
    return specs.training_mfu if specs.training_mfu is not None else ACHIEVABLE_COMPUTE_FRACTION


def ceiling_peak_flops(specs: GpuSpecs, precision: str) -> tuple[float | None, str]:
    """The peak a training rate is bounded by: the compute precision's, else the other 16-bit
    format's (BF16 and FP16 run at one tensor rate wherever a GPU has both), else non-tensor FP32."""
    keys = [*COMPUTE_PEAKS[precision], "bf16", "fp16"]
    for key in dict.fromkeys(keys):
        value = specs.peaks.get(key) if key != "fp32_nontensor" else None
        if value:
            return value * 1e12, key.upper()
    if specs.fp32_tflops:
        return specs.fp32_tflops * 1e12, _("FP32 (non-tensor)")
    return None, ""


def _capped(rate: Throughput, *, specs: GpuSpecs, precision: str, flops_per_token: float) -> Throughput:
    """A training rate no faster than the dense peak x the fitted MFU: a ranking ratio or a small
    measured block can imply more model FLOP/s than the GPU sustains in LLM training."""
    if rate.per_s is None or flops_per_token <= 0:
        return rate
    peak, peak_name = ceiling_peak_flops(specs, precision)
    if peak is None:
        return Throughput(None, rate.unit, "none", _("no dense peak on record to bound a training rate"))
    mfu = training_mfu_of(specs)
    ceiling = peak * mfu / flops_per_token
    if rate.per_s <= ceiling:
        return rate
    note = _(
        "%(note)s; capped at %(share).0f%% of the %(peak)s dense peak (%(tflops)s TFLOPS), the LLM training "
        "MFU measured on this GPU class"
    ) % {"note": rate.note, "share": mfu * 100, "peak": peak_name, "tflops": f"{peak / 1e12:g}"}
    return Throughput(ceiling, rate.unit, rate.basis, note, rate.typical_error)


def _with_recompute(note: str, checkpointing: bool) -> str:
    if not checkpointing:
        return note
    return note + _("; × 3/4 for activation checkpointing (the forward pass runs again)")


def _compute_rate(
    *,
    specs: GpuSpecs,
    measured_flops: float | None,
    block: str,
    precision: str,
    flops_per_token: float,
) -> tuple[float | None, Basis, str]:
    """Tokens/s the compute allows: the measured block's FLOP rate, else 40% of the dense peak."""
    if measured_flops and precision in BLOCK_MEASUREMENT_PRECISIONS:
        note = _("%(block)s block measured at %(tflops).1f TFLOP/s, scaled to %(gflop).1f GFLOP per token") % {
            "block": block,
            "tflops": measured_flops / 1e12,
            "gflop": flops_per_token / 1e9,
        }
        return measured_flops / flops_per_token, "measured-scaled", note
    peak, peak_name = compute_peak_flops(specs, precision)
    if peak is None:
        return None, "none", peak_name
    share = ACHIEVABLE_COMPUTE_FRACTION
    note = _("%(share).0f%% of the %(peak)s dense peak (%(tflops)s TFLOPS) ÷ %(gflop).1f GFLOP per token") % {
        "share": share * 100,
        "peak": peak_name,
        "tflops": f"{peak / 1e12:g}",
        "gflop": flops_per_token / 1e9,
    }
    return share * peak / flops_per_token, "estimated", note
