"""GET /api/v1/fit/: will a model fit, on how many GPUs, how long and at what cost.

The same form (fitcalc.forms.FitForm) and selectors (fitcalc.selectors.fit_request.fit_request_build,
fitcalc.selectors.fit.fit_compute) as the /fit/ page. Every parameter is optional except the model:
``model`` (a preset), ``params`` (a custom model's parameter count) or ``hf_model`` (a Hugging
Face id imported first with POST /api/v1/fit/models/; this read never calls the Hub). Invalid
input is a 400 in the API's error shape, naming the parameter:
``{"detail": "Invalid parameter: context.", "errors": {"context": ["..."]}}``.

Besides the per-parameter bounds in the schema, these combinations are refused (400, naming the
parameter): more than one of ``model``/``params``/``hf_model``, or none (``model``); an
``hf_model`` that is malformed or not imported yet; ``users`` outside inference or
above 1 with ``serving=single``, ``batch`` for inference (``users``/``batch``); ``kind``/``layers``/``hidden``/
``heads``/``kv_heads``/``head_dim`` with a preset; ``kv_heads`` above ``heads``; ``mode=qlora``
with a precision other than int4, ``full_finetune``/``train`` with int8/int4 (``precision``);
more than one of ``tokens``/``samples``/``epochs``; ``epochs`` without ``dataset_size`` or the
reverse; ``tokens`` for an image model; work beyond 1e18 tokens or samples; custom shapes whose
``heads x head_dim`` exceeds the largest hidden size (``heads``); LoRA adapters larger than the
largest model (``lora_rank``). :data:`CROSS_FIELD_PARAMETERS`
lists the parameters those rules can name.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import ErrorSerializer
from api.serializers_fit import (
    FitResponseSerializer,
)
from api.views.base import ERROR_429, ApiMixin, response_cached
from fitcalc.errors import FitInputError
from fitcalc.forms import (
    CONDITIONS,
    CURRENCIES,
    MAX_DATASET_SIZE,
    MAX_ELECTRICITY_PRICE,
    MAX_EPOCHS,
    MAX_HF_ID,
    MAX_TRAINING_DAYS,
    MIN_DAYS,
    MIN_EPOCHS,
    MIN_HOURS_PER_DAY,
    MIN_PARAMS,
    PRICE_RULES,
    SERVING_MODES,
    FitForm,
)
from fitcalc.memory import MAX_BATCH, MAX_CONTEXT, MAX_LORA_RANK, LoraTargets, Mode
from fitcalc.plan import MAX_WORK_UNITS, BuyVsRent, CountPlan, GpuPlan
from fitcalc.presets import MAX_HIDDEN, MAX_LAYERS, MAX_PARAMS, MODEL_KINDS, PRESETS
from fitcalc.quant import KvPrecision, Precision
from fitcalc.request import (
    DEFAULT_BATCH,
    DEFAULT_CONTEXT,
    DEFAULT_HOURS_PER_DAY,
    DEFAULT_LORA_RANK,
    DEFAULT_TRAINING_DAYS,
    FitRequest,
)
from fitcalc.selectors.fit import BuyRentRow, FitResult, fit_compute
from fitcalc.selectors.fit_request import fit_request_from_form
from fitcalc.selectors.gpu_facts import GpuDetail
from fitcalc.selectors.hf_models import hf_models_newest_import
from fitcalc.selectors.training_plans import TrainingPlan
from llm.question import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, MAX_SEQUENCE_TOKENS, MIN_SEQUENCE_TOKENS


def _param(name: str, schema: dict[str, Any], description: str) -> OpenApiParameter:
    return OpenApiParameter(
        name, type=schema, location=OpenApiParameter.QUERY, required=False, allow_blank=True, description=description
    )


def _enum_schema(values: list[str] | tuple[str, ...]) -> dict[str, Any]:
    # An empty value means "the default", as everywhere in the API, so "" is a documented choice.
    return {"type": "string", "enum": [*values, ""]}


def _int(minimum: int, maximum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


def _number(minimum: float, maximum: float) -> dict[str, Any]:
    return {"type": "number", "minimum": minimum, "maximum": maximum}


_BOOL = {"type": "string", "enum": ["true", "false", ""]}

PARAMETERS = [
    _param("model", _enum_schema(sorted(PRESETS)), "Model preset. Give this, `params` or `hf_model`."),
    _param(
        "hf_model",
        {"type": "string", "maxLength": MAX_HF_ID},
        "Hugging Face model id (owner/name) of a model imported with POST /api/v1/fit/models/; an id not "
        "imported yet is a 400 saying so.",
    ),
    _param(
        "params",
        {"type": "number", "minimum": MIN_PARAMS, "maximum": MAX_PARAMS},
        "Custom model: parameter count (7e9 = 7B).",
    ),
    _param("kind", _enum_schema(MODEL_KINDS), "Custom model: decoder (default), encoder, diffusion or cnn."),
    _param("layers", _int(1, MAX_LAYERS), "Custom model: layers."),
    _param("hidden", _int(1, MAX_HIDDEN), "Custom model: hidden size."),
    _param("heads", _int(1, MAX_HIDDEN), "Custom model: attention heads."),
    _param("kv_heads", _int(1, MAX_HIDDEN), "Custom model: KV heads (at most `heads`)."),
    _param("head_dim", _int(1, MAX_HIDDEN), "Custom model: head dimension."),
    _param("mode", _enum_schema([m.value for m in Mode]), "inference (default), lora, qlora, full_finetune or train."),
    _param(
        "precision",
        _enum_schema([p.value for p in Precision]),
        "Weights format: fp32, bf16, fp16, fp8, int8, int4 (bitsandbytes), gptq, awq, q4_k_m, q8_0 (llama.cpp), "
        "mxfp4. Default bf16 (int4 for qlora; the model's release format for inference, e.g. fp8 for DeepSeek V3).",
    ),
    _param(
        "serving",
        _enum_schema(SERVING_MODES),
        "Inference: batched (default; `users` sequences together) or single (one stream).",
    ),
    _param(
        "users",
        _int(1, MAX_BATCH),
        "Inference: concurrent sequences when batched. Empty: full load, as many as the memory holds beside the "
        "weights (memory and fit are then those of one sequence).",
    ),
    _param(
        "kv_cache_precision",
        _enum_schema([p.value for p in KvPrecision]),
        "KV cache format: fp32, bf16, fp16, fp8, int8, q8_0, q4_0 (default 16-bit).",
    ),
    _param("context", _int(1, MAX_CONTEXT), f"Tokens per sequence (default {DEFAULT_CONTEXT})."),
    _param("batch", _int(1, MAX_BATCH), f"Training: sequences or samples per GPU (default {DEFAULT_BATCH})."),
    _param(
        "input_len",
        _int(MIN_SEQUENCE_TOKENS, MAX_SEQUENCE_TOKENS),
        f"Batched LLM serving: prompt tokens per request the serving figures answer (default {DEFAULT_INPUT_TOKENS}), "
        "as on the rankings and /api/v1/fit/serving/; `context` stays the memory breakdown's length.",
    ),
    _param(
        "output_len",
        _int(MIN_SEQUENCE_TOKENS, MAX_SEQUENCE_TOKENS),
        f"Batched LLM serving: output tokens per request (default {DEFAULT_OUTPUT_TOKENS}).",
    ),
    _param(
        "flash_attention", _BOOL, "Default true: FlashAttention is standard now; the attention matrices are not stored."
    ),
    _param("activation_checkpointing", _BOOL, "Default: on for lora, qlora and full_finetune, off for train."),
    _param("lora_rank", _int(1, MAX_LORA_RANK), f"LoRA/QLoRA rank (default {DEFAULT_LORA_RANK})."),
    _param(
        "lora_targets", _enum_schema([t.value for t in LoraTargets]), "LoRA/QLoRA adapted layers (default all_linear)."
    ),
    _param(
        "tokens", _number(1, MAX_WORK_UNITS), "Work: tokens to process (transformers). One of tokens, samples, epochs."
    ),
    _param(
        "samples", _number(1, MAX_WORK_UNITS), "Work: samples (sequences of `context` tokens, or images) to process."
    ),
    _param("epochs", _number(MIN_EPOCHS, MAX_EPOCHS), "Work: epochs over `dataset_size` samples."),
    _param("dataset_size", _int(1, MAX_DATASET_SIZE), "Samples per epoch (with `epochs`)."),
    _param(
        "days",
        _number(MIN_DAYS, MAX_TRAINING_DAYS),
        f"Training: plan past one node, the fewest whole nodes of each GPU that finish the work within this many "
        f"days (default {DEFAULT_TRAINING_DAYS:g}); answered in `training`.",
    ),
    _param(
        "hours_per_day",
        _number(MIN_HOURS_PER_DAY, 24),
        f"Buy vs rent: hours of use per day (default {DEFAULT_HOURS_PER_DAY:g}).",
    ),
    _param(
        "electricity_price_per_kwh",
        {"type": "number", "minimum": 0, "maximum": MAX_ELECTRICITY_PRICE},
        "Buy vs rent: electricity price per kWh in `currency`; absent = not counted.",
    ),
    _param("condition", _enum_schema(CONDITIONS), "Buy vs rent: new (default) or used."),
    _param("currency", _enum_schema(CURRENCIES), "Currency of prices and costs (default USD)."),
    _param(
        "price",
        _enum_schema(PRICE_RULES),
        "Rental price per GPU-hour: typical (default; the median of the providers' cheapest current on-demand "
        "offers) or cheapest (the cheapest current on-demand offer).",
    ),
]


# --- the view --------------------------------------------------------------------------------


def _count_plan_data(plan: CountPlan) -> dict[str, Any]:
    return plan.to_dict()


def _gpu_plan_data(plan: GpuPlan, detail: GpuDetail) -> dict[str, Any]:
    gpu = plan.gpu
    return {
        "gpu": {
            "slug": gpu.slug,
            "name": gpu.name,
            "memory_gib": gpu.memory_gib,
            "throughput_per_s": gpu.throughput_per_s,
            "throughput_unit": detail.throughput_unit,
            "throughput_basis": detail.throughput_basis,
            "throughput_is_estimate": gpu.throughput_is_estimate,
            "throughput_note": detail.throughput_note,
            "throughput_typical_error": detail.throughput_typical_error,
            "price_per_gpu_hour": gpu.price_per_gpu_hour,
            "price": detail.price.to_dict() if detail.price else None,
            "purchase_price": gpu.purchase_price,
            "purchase_price_source": detail.purchase_price_source,
            "tdp_w": gpu.tdp_w,
            "measured_source": detail.measured_source,
            "measured_url": detail.measured_url,
            "measured_n": detail.measured_n,
            "max_count_offered": gpu.max_count_offered,
        },
        "gpus_needed": plan.gpus_needed,
        "recommended": _count_plan_data(plan.recommended) if plan.recommended else None,
        "reason": plan.reason,
        "counts": [_count_plan_data(count_plan) for count_plan in plan.counts],
    }


def _buy_rent_data(row: BuyRentRow) -> dict[str, Any]:
    result: BuyVsRent | None = row.result
    return {
        "gpu": row.slug,
        "gpu_name": row.name,
        "gpus_needed": row.gpus_needed,
        "result": result.to_dict() if result else None,
        "notes": list(row.notes),
        "price": row.price.to_dict() if row.price else None,
    }


def _model_data(request: FitRequest) -> dict[str, Any]:
    spec = request.model.to_dict()
    keys = (
        "slug", "name", "kind", "params", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
        "max_context", "active_params", "experts", "experts_active", "native_precision", "hf_repo", "sources",
        "citations", "notes",
    )  # fmt: skip
    return {key: spec[key] for key in keys}


def fit_result_data(result: FitResult) -> dict[str, Any]:
    """The API's answer (FitResponseSerializer's shape) from a computed FitResult."""
    request = result.request
    return {
        "inputs": request.echo(),
        "model": _model_data(request),
        "memory": request.breakdown.to_dict(),
        "currency": result.currency,
        "exchange_rate": result.exchange_rate,
        "fitting_count": len(result.fitting),
        "plans": [_gpu_plan_data(plan, result.details[plan.gpu.slug]) for plan in result.plans],
        "buy_vs_rent": [_buy_rent_data(row) for row in result.buy_vs_rent],
        "buy_vs_rent_missing": [_buy_rent_data(row) for row in result.buy_vs_rent_missing],
        "assumptions": result.assumptions,
        "warnings": list(result.warnings),
        "workload": _workload_data(result),
        "training": None
        if result.training_days is None
        else {"days": result.training_days, "plans": [_training_plan_data(plan) for plan in result.training_plans]},
    }


def _training_plan_data(plan: TrainingPlan) -> dict[str, Any]:
    time = plan.time
    return {
        "gpu": plan.gpu_slug,
        "gpu_name": plan.gpu_name,
        "gpus": time.gpus,
        "nodes": plan.nodes,
        "gpus_per_node": plan.gpus_per_node,
        "model_parallel": plan.model_parallel,
        "zero3": plan.zero3,
        "precision": plan.precision,
        "peak_tflops": plan.peak_tflops,
        "mfu": plan.mfu,
        "mfu_basis": plan.mfu_basis,
        "mfu_runs": plan.mfu_runs,
        "days": time.days,
        "hours": time.seconds / 3600.0,
        "gpu_hours": time.gpu_hours,
        "compute_s": time.compute_s,
        "exposed_communication_s": time.exposed_communication_s,
        "price_per_gpu_hour": plan.price_per_gpu_hour,
        "cost": plan.cost,
    }


def _workload_data(result: FitResult) -> dict[str, Any] | None:
    """The serving question batched LLM figures answer, with its words; None for other jobs."""
    question = result.serving_question
    if question is None:
        return None
    return {**question.as_dict(), "label": question.label()}


class FitView(ApiMixin, APIView):
    """Memory, fit on 1/2/4/8 GPUs, time and cost to finish, and buy versus rent, for one model.

    Anonymous read: ApiMixin's AllowAny permission and the API's usual throttles."""

    query_parameters = frozenset(FitForm.base_fields)

    @extend_schema(
        summary="Will a model fit, on how many GPUs, how long and at what cost",
        description=__doc__,
        parameters=PARAMETERS,
        responses={
            200: FitResponseSerializer,
            400: OpenApiResponse(
                ErrorSerializer, description="An invalid parameter or combination; `errors` names it."
            ),
            429: ERROR_429,
        },
    )
    def get(self, request: Request) -> HttpResponse:
        def produce() -> Response:
            form = FitForm(data=request.query_params)
            fit_request = fit_request_from_form(form=form)
            if fit_request is None:
                raise ValidationError(form.errors_by_field())
            try:
                result = fit_compute(request=fit_request)
            except FitInputError as error:
                raise ValidationError({error.field: [error.message]}) from None
            return Response(fit_result_data(result))

        # The bytes sent, by the query and the data version; a Hugging Face import moves no data
        # version, so a question naming one has the newest import in its key (as the page has).
        imported = hf_models_newest_import() if "hf_model" in request.query_params else None
        return response_cached(self, request, produce, depends_on=imported)
