"""The fit calculator's request built from a valid form's data: the model, the sequences held at
once, the memory estimate and the work, each checked against the others.

A selector: it reads stored Hugging Face models (:mod:`fitcalc.selectors.hf_models`) and never
calls the Hub. Every combination it refuses is a :class:`fitcalc.FitInputError` naming the
parameter to change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fitcalc.errors import FitInputError
from fitcalc.forms import FitForm
from fitcalc.memory import MemoryBreakdown, Mode, memory_estimate
from fitcalc.plan import MAX_WORK_UNITS
from fitcalc.presets import MAX_HIDDEN, MAX_PARAMS, ModelSpec, model_spec_custom, model_spec_from_preset
from fitcalc.request import (
    DEFAULT_BATCH,
    DEFAULT_CONTEXT,
    DEFAULT_FLASH_ATTENTION,
    DEFAULT_HOURS_PER_DAY,
    DEFAULT_LORA_RANK,
    DEFAULT_LORA_TARGETS,
    DEFAULT_MODE,
    DEFAULT_TRAINING_DAYS,
    FULL_LOAD_SEQUENCES,
    FitRequest,
    FitWork,
    work_unit_for,
)
from fitcalc.selectors.hf_models import hf_model_spec
from llm.question import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS

#: Shape fields a preset or a Hugging Face model brings itself.
CUSTOM_ONLY_FIELDS = ("kind", "layers", "hidden", "heads", "kv_heads", "head_dim")


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


def fit_model_spec(*, data: Mapping[str, Any]) -> ModelSpec:
    """The model: a preset, a stored Hugging Face model, or a custom one by its parameter count."""
    preset, params, hf_id = data.get("model") or "", data.get("params"), data.get("hf_model") or ""
    given = [
        name for name, value in (("model", preset), ("params", params), ("hf_model", hf_id)) if value not in (None, "")
    ]
    if len(given) > 1:
        raise FitInputError(given[1], f"give one of model (a preset), params or hf_model, not {' and '.join(given)}")
    if preset or hf_id:
        for name in CUSTOM_ONLY_FIELDS:
            if data.get(name) not in (None, ""):
                raise FitInputError(name, f"{name} is for custom models (params=...); {preset or hf_id!r} has its own")
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


def fit_sequences(*, data: Mapping[str, Any], mode: str) -> tuple[str, int | None, int]:
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


def fit_request_build(*, data: Mapping[str, Any]) -> FitRequest:
    """The request of a valid :class:`fitcalc.forms.FitForm`'s ``cleaned_data``, defaults applied.

    Raises FitInputError naming the parameter of a combination the form can't check field by field."""
    model = fit_model_spec(data=data)
    mode = data.get("mode") or DEFAULT_MODE
    context = data.get("context") or DEFAULT_CONTEXT
    serving, users, batch = fit_sequences(data=data, mode=mode)
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
        input_len=data.get("input_len") or DEFAULT_INPUT_TOKENS,
        output_len=data.get("output_len") or DEFAULT_OUTPUT_TOKENS,
        days=data.get("days") or DEFAULT_TRAINING_DAYS,
    )


def fit_request_from_form(*, form: FitForm) -> FitRequest | None:
    """The request of a bound form, or None with every reason added to the form beside its
    field (a combination that names no field: the form's non-field errors)."""
    if not form.is_valid():
        return None
    try:
        return fit_request_build(data=form.cleaned_data)
    except FitInputError as error:
        form.add_error(error.field if error.field in form.fields else None, error.message)
        return None
