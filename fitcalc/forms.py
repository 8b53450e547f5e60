"""The fit calculator's input: one Django form for the /fit/ page and GET /api/v1/fit/.

Field names are the API's query parameter names, so a field error names the parameter. The form
checks each value alone (type, bounds, vocabulary, the shape of a Hugging Face id) and nothing
more: :func:`fitcalc.selectors.fit_request.fit_request_build`, called by the views, checks the
combination and builds the :class:`fitcalc.request.FitRequest` (defaults: :mod:`fitcalc.request`).
"""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog.money import CURRENCIES
from fitcalc.errors import FitInputError
from fitcalc.hub import hf_repo_id_check
from fitcalc.memory import MAX_BATCH, MAX_CONTEXT, MAX_LORA_RANK, LoraTargets, Mode
from fitcalc.models import MAX_HF_ID
from fitcalc.plan import MAX_WORK_UNITS
from fitcalc.presets import MAX_HIDDEN, MAX_LAYERS, MAX_PARAMS, MODEL_KINDS, PRESETS
from fitcalc.quant import WEIGHT_FORMATS, KvPrecision, Precision
from llm.question import MAX_SEQUENCE_TOKENS, MIN_SEQUENCE_TOKENS

CONDITIONS = ("new", "used")
WORK_FIELDS = ("tokens", "samples", "epochs")
SERVING_MODES = ("batched", "single")
#: Rental price rules the calculator offers (catalog.selectors.prices.PRICE_RULES, on-demand only).
PRICE_RULES = ("typical", "cheapest")

MAX_DATASET_SIZE = 10**12
# The smallest amounts of work and time asked: a positive number can still underflow once
# multiplied (5e-324 hours a day made the break-even a division by zero), and nothing smaller
# than these is a real question.
MIN_EPOCHS = 0.001
MIN_DAYS = 0.01  # a quarter of an hour
MIN_HOURS_PER_DAY = 0.01  # half a minute
MAX_EPOCHS = 10_000.0
#: The longest training deadline asked: ten years.
MAX_TRAINING_DAYS = 3650.0
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
# Short enough for the select at a phone's width; the field's help text says what each means.
SERVING_LABELS = {
    "batched": _("Batched serving"),
    "single": _("One stream (chat)"),
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


class FitForm(forms.Form):
    """Inputs of the fit calculator, each checked alone (see the module docstring)."""

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
        help_text=_("A model imported from Hugging Face (its config.json): owner/name, e.g. Qwen/Qwen3-8B."),
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
        help_text=_("Batched serving: many users at once. One stream: one user, as in a local chat."),
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
    # The bounds of every page and API that takes a request shape (llm.question).
    input_len = forms.IntegerField(
        label=_("Prompt tokens per request"),
        required=False,
        min_value=MIN_SEQUENCE_TOKENS,
        max_value=MAX_SEQUENCE_TOKENS,
        help_text=_("Batched serving: the request shape the serving figures answer (default 1,000)."),
    )
    output_len = forms.IntegerField(
        label=_("Output tokens per request"),
        required=False,
        min_value=MIN_SEQUENCE_TOKENS,
        max_value=MAX_SEQUENCE_TOKENS,
        help_text=_("Batched serving: output tokens per request (default 1,000)."),
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
    tokens = FiniteFloatField(label=_("Tokens to process"), required=False, min_value=1, max_value=MAX_WORK_UNITS)
    samples = FiniteFloatField(label=_("Samples to process"), required=False, min_value=1, max_value=MAX_WORK_UNITS)
    epochs = FiniteFloatField(label=_("Epochs"), required=False, min_value=MIN_EPOCHS, max_value=MAX_EPOCHS)
    dataset_size = forms.IntegerField(
        label=_("Samples per epoch"), required=False, min_value=1, max_value=MAX_DATASET_SIZE
    )
    days = FiniteFloatField(
        label=_("Training deadline (days)"),
        required=False,
        min_value=MIN_DAYS,
        max_value=MAX_TRAINING_DAYS,
        help_text=_("Training: the GPUs and nodes to finish within this many days (default 30)."),
    )
    hours_per_day = FiniteFloatField(
        label=_("Hours of use per day"), required=False, min_value=MIN_HOURS_PER_DAY, max_value=24
    )
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

    def clean_hf_model(self) -> str:
        """The id's shape only; whether it has been imported is the request builder's question."""
        repo_id = self.cleaned_data.get("hf_model") or ""
        if not repo_id:
            return ""
        try:
            return hf_repo_id_check(repo_id=repo_id)
        except FitInputError as error:
            raise forms.ValidationError(error.message, code="invalid") from None

    def errors_by_field(self) -> dict[str, list[str]]:
        """``{parameter: [messages]}``; errors of the combination as a whole under ``non_field_errors``."""
        return {
            ("non_field_errors" if name == "__all__" else name): [str(message) for message in messages]
            for name, messages in self.errors.items()
        }
