"""The fit calculator's input: one Django form for the /fit/ page and GET /api/v1/fit/.

Field names are the API's query parameter names, so a field error names the parameter. The form
checks each value (type, bounds, vocabulary) and then the combination, through the pure
calculator: :meth:`FitForm.clean` builds the :class:`FitRequest` (model, memory breakdown, work
to do) and turns every :class:`fitcalc.FitInputError` into an error on the field it names.

Defaults (documented in the API schema too)
-------------------------------------------
* mode ``inference``; precision: the mode's default (bf16; int4 for qlora);
  context 2048 tokens; batch 1.
* ``flash_attention`` true: FlashAttention (or PyTorch's fused scaled-dot-product attention) is
  the default attention kernel of current training stacks, so the ``a x s x s`` attention
  matrices are not stored. Set it to false to count them (Korthikanti et al. 2022, eq. 1).
* ``activation_checkpointing``: empty = the estimator's default per mode (on for lora, qlora and
  full_finetune, off for train).
* inference: batched serving; without ``users``, at full load (as many sequences as the memory
  holds beside the weights; memory and fit are those of one sequence).
* ``price`` typical: the median of the providers' cheapest current on-demand offers.
* ``hours_per_day`` 12: seed 002 (buy when a GPU is busy about 12 hours a day for a month).
* ``electricity_price_per_kwh``: no default (no sourced figure); empty = electricity not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog.money import CURRENCIES
from fitcalc.errors import FitInputError
from fitcalc.hub import hf_model_spec
from fitcalc.memory import (
    MAX_BATCH,
    MAX_CONTEXT,
    MAX_LORA_RANK,
    LoraTargets,
    MemoryBreakdown,
    Mode,
    memory_estimate,
)
from fitcalc.plan import MAX_WORK_UNITS
from fitcalc.presets import (
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_PARAMS,
    MODEL_KINDS,
    PRESETS,
    ModelSpec,
    model_spec_custom,
    model_spec_from_preset,
)
from fitcalc.quant import WEIGHT_FORMATS, KvPrecision, Precision

CONDITIONS = ("new", "used")
WORK_FIELDS = ("tokens", "samples", "epochs")
CUSTOM_ONLY_FIELDS = ("kind", "layers", "hidden", "heads", "kv_heads", "head_dim")
SERVING_MODES = ("batched", "single")
#: Batched serving without a number of users runs at full load: as many sequences as the memory
#: left after the weights holds (up to the calibrated model's cap per GPU), as MLPerf's Offline
#: test does. Memory and fit are then those of one sequence beside the weights.
FULL_LOAD_SEQUENCES = 1
#: Rental price rules the calculator offers (catalog.selectors.prices.PRICE_RULES, on-demand only).
PRICE_RULES = ("typical", "cheapest")
MAX_HF_ID = 193
TRANSFORMER_KINDS = ("decoder", "encoder")

DEFAULT_MODE = Mode.INFERENCE.value
DEFAULT_CONTEXT = 2048
DEFAULT_BATCH = 1
DEFAULT_FLASH_ATTENTION = True
DEFAULT_HOURS_PER_DAY = 12.0
DEFAULT_LORA_RANK = 16
DEFAULT_LORA_TARGETS = LoraTargets.ALL_LINEAR.value
MAX_DATASET_SIZE = 10**12
MAX_EPOCHS = 10_000.0
MAX_ELECTRICITY_PRICE = 100.0
#: Bounds of the parameter count: a model needs at least one parameter; 100 trillion is the
#: estimator's absurd-size guard (fitcalc.presets.MAX_PARAMS).
MIN_PARAMS = 1.0

MODE_LABELS = {
    "inference": _("Inference"),
    "lora": _("LoRA fine-tuning"),
    "qlora": _("QLoRA fine-tuning (4-bit base)"),
    "full_finetune": _("Full fine-tuning (Adam, mixed precision)"),
    "train": _("Training from scratch (Adam, mixed precision)"),
}
PRECISION_LABELS = {precision.value: fmt.label for precision, fmt in WEIGHT_FORMATS.items()}
KV_PRECISION_LABELS = {
    "fp32": "FP32",
    "bf16": "BF16",
    "fp16": "FP16",
    "fp8": "FP8",
    "int8": "INT8",
    "q8_0": "llama.cpp q8_0 (8.5 bits)",
    "q4_0": "llama.cpp q4_0 (4.5 bits)",
}
SERVING_LABELS = {
    "batched": _("Batched serving (many users at once)"),
    "single": _("One stream (one user, e.g. a local chat)"),
}
KIND_LABELS = {
    "decoder": _("Decoder transformer (LLM)"),
    "encoder": _("Encoder transformer (BERT-like)"),
    "diffusion": _("Diffusion model"),
    "cnn": _("Convolutional network"),
}


class FiniteFloatField(forms.FloatField):
    """A float that must be finite (``1e999`` parses to infinity and is refused, not compared)."""

    def to_python(self, value: Any) -> float | None:  # type: ignore[override]  # stubs: FloatField < IntegerField
        number = super().to_python(value)
        if number is not None and not math.isfinite(number):
            raise forms.ValidationError(_("Enter a finite number."), code="invalid")
        return number


class GreaterThanFloatField(FiniteFloatField):
    """A finite float strictly above ``greater_than`` (an exclusive minimum)."""

    def __init__(self, *args: Any, greater_than: float, **kwargs: Any) -> None:
        self.greater_than = greater_than
        super().__init__(*args, **kwargs)

    def validate(self, value: Any) -> None:
        super().validate(value)
        if value is not None and value <= self.greater_than:
            raise forms.ValidationError(
                _("Must be more than %(limit)s.") % {"limit": f"{self.greater_than:g}"}, code="min_value"
            )


def _bool_choice(label: Any, help_text: Any) -> forms.TypedChoiceField:
    """``true`` / ``false`` only (empty = default): a checkbox can't say "off" in a GET form."""
    return forms.TypedChoiceField(
        label=label,
        help_text=help_text,
        required=False,
        choices=[("", _("default")), ("true", _("yes")), ("false", _("no"))],
        coerce=lambda value: value == "true",
        empty_value=None,
    )


@dataclass(frozen=True)
class FitWork:
    """The job's size: ``amount`` of ``given_as`` (tokens, samples, epochs), and the same in the
    unit of the throughput (``work_units`` of ``unit``: tokens for transformers, samples else)."""

    given_as: str
    amount: float
    unit: str
    work_units: float


@dataclass(frozen=True)
class FitRequest:
    """Everything the calculator needs, validated: what ``fitcalc.selectors.fit_compute`` takes."""

    model: ModelSpec
    breakdown: MemoryBreakdown
    mode: str
    precision: str
    context: int
    batch: int
    flash_attention: bool
    activation_checkpointing: bool | None
    lora_rank: int
    lora_targets: str
    work: FitWork | None
    work_unit: str
    hours_per_day: float
    electricity_price_per_kwh: float | None
    condition: str
    currency: str
    serving: str = "batched"
    users: int | None = None
    kv_cache_precision: str = "bf16"
    hf_model: str | None = None
    price_rule: str = "typical"

    def echo(self) -> dict[str, Any]:
        """The inputs as the API answers them (after defaults)."""
        return {
            "model": self.model.slug,
            "params": self.model.params,
            "mode": self.mode,
            "precision": self.precision,
            "context": self.context,
            "batch": self.batch,
            "flash_attention": self.flash_attention,
            "activation_checkpointing": self.breakdown.activation_checkpointing,
            "lora_rank": self.lora_rank,
            "lora_targets": self.lora_targets,
            "work": None
            if self.work is None
            else {
                "given_as": self.work.given_as,
                "amount": self.work.amount,
                "unit": self.work.unit,
                "work_units": self.work.work_units,
            },
            "hours_per_day": self.hours_per_day,
            "electricity_price_per_kwh": self.electricity_price_per_kwh,
            "condition": self.condition,
            "currency": self.currency,
            "serving": self.serving,
            "users": self.users,
            "kv_cache_precision": self.kv_cache_precision,
            "hf_model": self.hf_model,
            "price": self.price_rule,
        }


def work_unit_for(model: ModelSpec) -> str:
    """Transformers are measured in tokens (per second); image models in samples."""
    return "tokens" if model.kind in TRANSFORMER_KINDS else "samples"


def fit_work_resolve(
    *,
    model: ModelSpec,
    context: int,
    tokens: float | None,
    samples: float | None,
    epochs: float | None,
    dataset_size: int | None,
) -> FitWork | None:
    """The job in the throughput's unit. A transformer sample is one sequence of ``context`` tokens;
    an epoch is ``dataset_size`` samples. Raises FitInputError naming the offending parameter."""
    given = [
        name for name, value in (("tokens", tokens), ("samples", samples), ("epochs", epochs)) if value is not None
    ]
    if len(given) > 1:
        raise FitInputError(given[1], f"give one of tokens, samples or epochs, not {' and '.join(given)}")
    if dataset_size is not None and epochs is None:
        raise FitInputError("dataset_size", "dataset_size is the number of samples in one epoch: give epochs too")
    if not given:
        return None
    unit = work_unit_for(model)
    name = given[0]
    if name == "tokens":
        assert tokens is not None
        if unit != "tokens":
            raise FitInputError(
                "tokens",
                f"{model.name} is a {model.kind} model that processes samples (images), not tokens: give samples or epochs",
            )
        amount, units = tokens, tokens
    elif name == "samples":
        assert samples is not None
        amount = samples
        units = samples * context if unit == "tokens" else samples
    else:
        assert epochs is not None
        if dataset_size is None:
            raise FitInputError("dataset_size", "give the number of samples in one epoch (dataset_size) with epochs")
        amount = epochs
        units = epochs * dataset_size * (context if unit == "tokens" else 1)
    if units > MAX_WORK_UNITS:
        raise FitInputError(name, f"that is {units:.3g} {unit}, beyond the supported maximum of {MAX_WORK_UNITS:g}")
    return FitWork(given_as=name, amount=amount, unit=unit, work_units=units)


def _check_breakdown_bounds(*, model: ModelSpec, breakdown: MemoryBreakdown) -> None:
    """Shapes the estimator derived can go beyond what it accepts when given (heads x head_dim
    above the largest hidden size); refuse them, and any total that is not a finite number."""
    if model.hidden is not None and model.hidden > MAX_HIDDEN:
        raise FitInputError(
            "heads", f"heads x head_dim = {model.hidden:,} is beyond the supported hidden size of {MAX_HIDDEN:,}"
        )
    if breakdown.trainable_params > MAX_PARAMS:
        raise FitInputError(
            "lora_rank", f"{breakdown.trainable_params:.3g} trainable adapter parameters is beyond {MAX_PARAMS:g}"
        )
    if not math.isfinite(breakdown.total_gib):
        raise FitInputError("params", "the memory estimate overflows: the model is far too large")


class FitForm(forms.Form):
    """Inputs of the fit calculator; valid forms carry ``fit_request``."""

    model = forms.ChoiceField(
        label=_("Model preset"),
        required=False,
        choices=[("", _("— custom model (give the parameter count) —"))]
        + [(slug, spec.name) for slug, spec in sorted(PRESETS.items())],
        help_text=_("A published model, or empty for a custom model given by its parameter count."),
    )
    hf_model = forms.CharField(
        label=_("Hugging Face model id"),
        required=False,
        max_length=MAX_HF_ID,
        strip=True,
        help_text=_("Online deployments only: owner/name, e.g. Qwen/Qwen3-8B; its config.json is read."),
    )
    params = FiniteFloatField(
        label=_("Parameters"),
        required=False,
        min_value=MIN_PARAMS,
        max_value=MAX_PARAMS,
        help_text=_("Custom model: parameter count, e.g. 7e9 for 7B."),
    )
    kind = forms.ChoiceField(
        label=_("Model kind"),
        required=False,
        choices=[("", _("default (decoder)"))] + [(kind, KIND_LABELS[kind]) for kind in MODEL_KINDS],
        help_text=_("Custom model only."),
    )
    layers = forms.IntegerField(label=_("Layers"), required=False, min_value=1, max_value=MAX_LAYERS)
    hidden = forms.IntegerField(label=_("Hidden size"), required=False, min_value=1, max_value=MAX_HIDDEN)
    heads = forms.IntegerField(label=_("Attention heads"), required=False, min_value=1, max_value=MAX_HIDDEN)
    kv_heads = forms.IntegerField(label=_("KV heads"), required=False, min_value=1, max_value=MAX_HIDDEN)
    head_dim = forms.IntegerField(label=_("Head dim"), required=False, min_value=1, max_value=MAX_HIDDEN)
    mode = forms.ChoiceField(
        label=_("What to do"), required=False, choices=[(mode.value, MODE_LABELS[mode.value]) for mode in Mode]
    )
    precision = forms.ChoiceField(
        label=_("Weights precision"),
        required=False,
        choices=[("", _("default for the mode"))] + [(p.value, PRECISION_LABELS[p.value]) for p in Precision],
    )
    serving = forms.ChoiceField(
        label=_("Inference"),
        required=False,
        choices=[(key, SERVING_LABELS[key]) for key in SERVING_MODES],
    )
    users = forms.IntegerField(
        label=_("Concurrent users"),
        required=False,
        min_value=1,
        max_value=MAX_BATCH,
        help_text=_(
            "Batched inference: sequences served at once; each keeps its own KV cache. Empty: full load, as "
            "many as the memory holds."
        ),
    )
    kv_cache_precision = forms.ChoiceField(
        label=_("KV cache precision"),
        required=False,
        choices=[("", _("default (16-bit)"))] + [(p.value, KV_PRECISION_LABELS[p.value]) for p in KvPrecision],
    )
    context = forms.IntegerField(
        label=_("Context (tokens)"),
        required=False,
        min_value=1,
        max_value=MAX_CONTEXT,
        help_text=_("Tokens per sequence: prompt and answer together."),
    )
    batch = forms.IntegerField(
        label=_("Batch"),
        required=False,
        min_value=1,
        max_value=MAX_BATCH,
        help_text=_("Training: sequences or samples per GPU."),
    )
    flash_attention = _bool_choice(_("FlashAttention"), _("Default yes: the attention matrices are never stored."))
    activation_checkpointing = _bool_choice(
        _("Activation checkpointing"), _("Default: on for LoRA, QLoRA and fine-tuning, off for training.")
    )
    lora_rank = forms.IntegerField(label=_("LoRA rank"), required=False, min_value=1, max_value=MAX_LORA_RANK)
    lora_targets = forms.ChoiceField(
        label=_("LoRA targets"),
        required=False,
        choices=[("", _("default (all linear)"))] + [(t.value, t.value) for t in LoraTargets],
    )
    tokens = GreaterThanFloatField(
        label=_("Tokens to process"), required=False, greater_than=0, max_value=MAX_WORK_UNITS
    )
    samples = GreaterThanFloatField(
        label=_("Samples to process"), required=False, greater_than=0, max_value=MAX_WORK_UNITS
    )
    epochs = GreaterThanFloatField(label=_("Epochs"), required=False, greater_than=0, max_value=MAX_EPOCHS)
    dataset_size = forms.IntegerField(
        label=_("Samples per epoch"), required=False, min_value=1, max_value=MAX_DATASET_SIZE
    )
    hours_per_day = GreaterThanFloatField(label=_("Hours of use per day"), required=False, greater_than=0, max_value=24)
    electricity_price_per_kwh = FiniteFloatField(
        label=_("Electricity price per kWh"), required=False, min_value=0, max_value=MAX_ELECTRICITY_PRICE
    )
    condition = forms.ChoiceField(
        label=_("Buy new or used"), required=False, choices=[("new", _("new")), ("used", _("used"))]
    )
    currency = forms.ChoiceField(label=_("Currency"), required=False, choices=[(c, c) for c in CURRENCIES])
    price = forms.ChoiceField(
        label=_("Rental price"),
        required=False,
        choices=[("typical", _("typical (median of providers)")), ("cheapest", _("cheapest on-demand"))],
    )

    fit_request: FitRequest

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            self.fit_request = self._build_request(data)
        except FitInputError as error:
            self.add_error(error.field if error.field in self.fields else None, error.message)
        return data

    def _model(self, data: dict[str, Any]) -> ModelSpec:
        preset, params, hf_id = data.get("model") or "", data.get("params"), data.get("hf_model") or ""
        given = [
            name
            for name, value in (("model", preset), ("params", params), ("hf_model", hf_id))
            if value not in (None, "")
        ]
        if len(given) > 1:
            raise FitInputError(
                given[1], f"give one of model (a preset), params or hf_model, not {' and '.join(given)}"
            )
        if preset or hf_id:
            for name in CUSTOM_ONLY_FIELDS:
                if data.get(name) not in (None, ""):
                    raise FitInputError(
                        name, f"{name} is for custom models (params=...); {preset or hf_id!r} has its own"
                    )
            return model_spec_from_preset(preset=preset) if preset else hf_model_spec(repo_id=hf_id)
        if params is None:
            raise FitInputError("model", "choose a model preset or give a parameter count (params)")
        return model_spec_custom(
            params=params,
            kind=data.get("kind") or "decoder",
            layers=data.get("layers"),
            hidden=data.get("hidden"),
            heads=data.get("heads"),
            kv_heads=data.get("kv_heads"),
            head_dim=data.get("head_dim"),
        )

    def _sequences(self, data: dict[str, Any], mode: str) -> tuple[str, int | None, int]:
        """(serving, users, sequences the memory holds at once): inference serves ``users``
        sequences together (batched) or one stream; training takes ``batch`` per GPU."""
        serving = data.get("serving") or "batched"
        users, batch = data.get("users"), data.get("batch")
        if mode != Mode.INFERENCE.value:
            if users is not None:
                raise FitInputError("users", "concurrent users are for inference; training takes batch (per GPU)")
            return serving, None, batch or DEFAULT_BATCH
        if batch is not None:
            raise FitInputError("batch", "inference takes users (concurrent sequences), not batch")
        if serving == "single":
            if users not in (None, 1):
                raise FitInputError("users", "one stream serves one user: choose batched serving for more")
            return serving, 1, 1
        return serving, users, users or FULL_LOAD_SEQUENCES

    def _build_request(self, data: dict[str, Any]) -> FitRequest:
        model = self._model(data)
        mode = data.get("mode") or DEFAULT_MODE
        context = data.get("context") or DEFAULT_CONTEXT
        serving, users, batch = self._sequences(data, mode)
        flash = DEFAULT_FLASH_ATTENTION if data.get("flash_attention") is None else data["flash_attention"]
        lora_rank = data.get("lora_rank") or DEFAULT_LORA_RANK
        lora_targets = data.get("lora_targets") or DEFAULT_LORA_TARGETS
        breakdown = memory_estimate(
            model=model,
            mode=mode,
            precision=data.get("precision") or None,
            context=context,
            batch=batch,
            kv_cache_precision=data.get("kv_cache_precision") or None,
            activation_checkpointing=data.get("activation_checkpointing"),
            flash_attention=flash,
            lora_rank=lora_rank,
            lora_targets=lora_targets,
        )
        _check_breakdown_bounds(model=model, breakdown=breakdown)
        work = fit_work_resolve(
            model=model,
            context=context,
            tokens=data.get("tokens"),
            samples=data.get("samples"),
            epochs=data.get("epochs"),
            dataset_size=data.get("dataset_size"),
        )
        hours = data.get("hours_per_day")
        return FitRequest(
            model=model,
            breakdown=breakdown,
            mode=breakdown.mode.value,
            precision=breakdown.precision.value,
            context=context,
            batch=batch,
            flash_attention=flash,
            activation_checkpointing=data.get("activation_checkpointing"),
            lora_rank=lora_rank,
            lora_targets=lora_targets,
            work=work,
            work_unit=work_unit_for(model),
            hours_per_day=DEFAULT_HOURS_PER_DAY if hours is None else hours,
            electricity_price_per_kwh=data.get("electricity_price_per_kwh"),
            condition=data.get("condition") or "new",
            currency=data.get("currency") or "USD",
            serving=serving,
            users=users,
            kv_cache_precision=breakdown.kv_cache_precision.value,
            hf_model=data.get("hf_model") or None,
            price_rule=data.get("price") or "typical",
        )

    def errors_by_field(self) -> dict[str, list[str]]:
        """``{parameter: [messages]}``; errors of the combination as a whole under ``non_field_errors``."""
        return {
            ("non_field_errors" if name == "__all__" else name): [str(message) for message in messages]
            for name, messages in self.errors.items()
        }
