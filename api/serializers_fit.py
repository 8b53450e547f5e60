"""Serializers of the fit calculator's API: GET /api/v1/fit/ (api/views/fit.py), its inputs, answer
and parameters; POST /api/v1/fit/models/ (api/views/fit_models.py), the import of a Hugging Face model."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from fitcalc.forms import (
    CONDITIONS,
    CURRENCIES,
    PRICE_RULES,
    SERVING_MODES,
)
from fitcalc.hub import REPO_ID_PATTERN
from fitcalc.memory import LoraTargets, Mode
from fitcalc.models import MAX_HF_ID, HfModel
from fitcalc.plan import SCALINGS
from fitcalc.presets import MODEL_KINDS
from fitcalc.quant import KvPrecision, Precision
from fitcalc.throughput import TRAINING_PEAK_PRECISIONS

CROSS_FIELD_PARAMETERS = (
    "model", "params", "hf_model", "kind", "layers", "hidden", "heads", "kv_heads", "head_dim", "precision",
    "lora_rank", "tokens", "samples", "epochs", "dataset_size", "users", "batch",
)  # fmt: skip
BASES = ("measured", "measured-scaled", "estimated", "none")
# A plain string in responses: an enum named "precision" would clash with the catalogue's
# precision enum (a different set) in the schema's components.
PRECISION_HELP = "One of " + ", ".join(p.value for p in Precision) + "."

# --- response schema -------------------------------------------------------------------------


def _enum(values: list[str] | tuple[str, ...], **kwargs: Any) -> serializers.ChoiceField:
    return serializers.ChoiceField(choices=list(values), **kwargs)


def _float(**kwargs: Any) -> serializers.FloatField:
    return serializers.FloatField(**kwargs)


def _nullable_float(**kwargs: Any) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, **kwargs)


def _nullable_int(**kwargs: Any) -> serializers.IntegerField:
    return serializers.IntegerField(allow_null=True, **kwargs)


def _strings(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(child=serializers.CharField(allow_blank=True), **kwargs)


class FitWorkSerializer(serializers.Serializer):
    given_as = _enum(["tokens", "samples", "epochs"], help_text="Which parameter gave the work.")
    amount = _float(help_text="The amount as given.")
    unit = _enum(["tokens", "samples"], help_text="Unit of the throughput: tokens for transformers, samples else.")
    work_units = _float(help_text="The work in that unit (a transformer sample is one sequence of `context` tokens).")


class FitInputsSerializer(serializers.Serializer):
    model = serializers.CharField(help_text="Preset slug, or `custom`.")
    params = serializers.IntegerField()
    mode = _enum([m.value for m in Mode])
    precision = serializers.CharField(help_text=PRECISION_HELP)
    context = serializers.IntegerField()  # type: ignore[assignment]  # a field named like a DRF Field attribute
    batch = serializers.IntegerField()
    flash_attention = serializers.BooleanField()
    activation_checkpointing = serializers.BooleanField(help_text="As applied (false outside training modes).")
    lora_rank = serializers.IntegerField()
    lora_targets = _enum([t.value for t in LoraTargets])
    work = FitWorkSerializer(allow_null=True)
    hours_per_day = _float()
    electricity_price_per_kwh = _nullable_float(help_text="Null: electricity not counted.")
    condition = _enum(list(CONDITIONS))
    currency = _enum(list(CURRENCIES))
    serving = _enum(list(SERVING_MODES))
    users = _nullable_int(help_text="Inference: concurrent sequences; null for training and for batched full load.")
    kv_cache_precision = _enum([p.value for p in KvPrecision])
    hf_model = serializers.CharField(allow_null=True)
    price = _enum(list(PRICE_RULES))
    input_len = serializers.IntegerField(help_text="Batched LLM serving: prompt tokens per request.")
    output_len = serializers.IntegerField(help_text="Batched LLM serving: output tokens per request.")
    days = _float(help_text="Training: the deadline the plans past one node answer, in days.")


class FitWorkloadSerializer(serializers.Serializer):
    """The serving question batched LLM serving figures answer (llm.question.ServingQuestion)."""

    model = serializers.CharField(help_text="The serving model's key (the preset's, or the one of the same network).")
    input_len = serializers.IntegerField()
    output_len = serializers.IntegerField()
    precision = serializers.CharField(help_text="The weight format asked.")
    target_tokens_per_s_per_user = _nullable_float(help_text="Null: maximum throughput (the calculator's question).")
    engine = serializers.CharField(help_text="auto: TensorRT-LLM on NVIDIA GPUs, vLLM/SGLang elsewhere.")
    label = serializers.CharField(help_text="The workload in words, as the pages name it.")  # type: ignore[assignment]  # a field named like a DRF Field attribute


class FitCitationSerializer(serializers.Serializer):
    title = serializers.CharField()
    publisher = serializers.CharField(source="publisher_with_site")
    date = serializers.CharField(allow_blank=True)
    url = serializers.CharField()


class FitModelSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    kind = _enum(list(MODEL_KINDS))
    params = serializers.IntegerField()
    layers = _nullable_int()
    hidden = _nullable_int()
    heads = _nullable_int()
    kv_heads = _nullable_int()
    head_dim = _nullable_int()
    intermediate = _nullable_int()
    vocab = _nullable_int()
    max_context = _nullable_int()
    active_params = _nullable_int(help_text="Mixture of experts: parameters one token uses (compute); null if dense.")
    experts = _nullable_int()
    experts_active = _nullable_int()
    native_precision = serializers.CharField(allow_null=True, help_text="The format the publisher ships.")
    hf_repo = serializers.CharField(allow_null=True)
    sources = _strings(help_text="Where the preset's configuration figures come from.")
    citations = FitCitationSerializer(many=True)
    notes = _strings()


class FitMemorySerializer(serializers.Serializer):
    model = serializers.CharField()
    model_name = serializers.CharField()
    mode = _enum([m.value for m in Mode])
    precision = serializers.CharField(help_text=PRECISION_HELP)
    kv_cache_precision = serializers.CharField(help_text=PRECISION_HELP)
    context = serializers.IntegerField()  # type: ignore[assignment]  # a field named like a DRF Field attribute
    batch = serializers.IntegerField()
    params = serializers.IntegerField()
    trainable_params = serializers.IntegerField()
    activation_checkpointing = serializers.BooleanField()
    unit = _enum(["GiB"])
    weights = _float(help_text="GiB (2^30 bytes), as every memory figure here.")
    kv_cache = _float()
    activations = _float()
    gradients = _float()
    optimizer = _float()
    overhead = _float(help_text="cuda_context + fragmentation.")
    cuda_context = _float()
    fragmentation = _float()
    total = _float(help_text="On one GPU.")
    notes = _strings()


class FitPriceOriginSerializer(serializers.Serializer):
    # A plain string: an enum here would repeat `inputs.price`'s choice set under a second name.
    rule = serializers.CharField(help_text="The rule that picked the offer: " + ", ".join(PRICE_RULES) + ".")
    provider = serializers.CharField()
    provider_slug = serializers.CharField()
    instance_type = serializers.CharField(allow_blank=True)
    region = serializers.CharField(allow_blank=True)
    observed_at = serializers.DateTimeField(help_text="The newest snapshot that listed the offer at this price.")
    age_days = _nullable_float(help_text="Days since the observation; null where the date is an estimate.")
    date_basis = serializers.CharField(help_text="How the date is known: source, published, fetched or estimate.")
    date_is_estimate = serializers.BooleanField()
    date_note = serializers.CharField(allow_blank=True)
    source = serializers.CharField(allow_blank=True, help_text="The feed (file) the offer comes from.")  # type: ignore[assignment]  # a field named like a DRF Field attribute
    minimum = _nullable_float(help_text="Cheapest provider's price per GPU-hour, in `currency`.")
    maximum = _nullable_float(help_text="Dearest provider's cheapest offer per GPU-hour, in `currency`.")
    providers = serializers.IntegerField()
    offers = serializers.IntegerField()


class FitGpuSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    memory_gib = _float()
    throughput_per_s = _nullable_float(
        help_text="One GPU's rate in `throughput_unit` (LLM inference: one GPU's share at the fewest GPUs with a "
        "figure; one stream: the stream's rate). Each count's own rate is in `counts`."
    )
    throughput_unit = _enum(["tokens/s", "samples/s"])
    throughput_basis = _enum(list(BASES))
    throughput_is_estimate = serializers.BooleanField()
    throughput_note = serializers.CharField(allow_blank=True)
    throughput_typical_error = _nullable_float(
        help_text="Typical relative error of an estimate (0.25 = 25%); null where not measured."
    )
    price_per_gpu_hour = _nullable_float(help_text="Current on-demand price by `inputs.price`, in `currency`.")
    price = FitPriceOriginSerializer(allow_null=True, help_text="Where the rental price comes from; null: no price.")
    purchase_price = _nullable_float(help_text="In `currency`.")
    purchase_price_source = serializers.CharField(allow_blank=True)
    tdp_w = _nullable_float()
    measured_source = serializers.CharField(allow_blank=True, help_text="LLM inference: the measurement used.")
    measured_url = serializers.CharField(allow_blank=True)
    measured_n = _nullable_int(help_text="Results (or MLPerf systems) behind the measurement.")
    max_count_offered = _nullable_int(help_text="Most of these GPUs one current on-demand offer puts in one machine.")


class FitCountPlanSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    per_gpu_gib = _float()
    memory_gib = _float()
    fits = serializers.BooleanField()
    speedup = _float()
    hours = _nullable_float()
    cost = _nullable_float()
    over_max_hours = serializers.BooleanField(allow_null=True)
    throughput_is_estimate = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)
    throughput_per_s = _nullable_float(help_text="The rate of all `count` GPUs together (one stream: the stream's).")
    throughput_basis = _enum(list(BASES))
    scaling = _enum(
        list(SCALINGS),
        help_text="How the count's rate was reached: one GPU; training communication priced with the all-reduce "
        "bandwidth measured on this GPU, count and link; priced from the link's datasheet figures (modelled); the "
        "assumed 90% per doubling (link unknown); one stream split by layers (no speed-up); batched serving by the "
        "calibrated model.",
    )
    throughput_note = serializers.CharField(allow_blank=True)
    typical_error = _nullable_float(help_text="Typical relative error of an estimate (0.2 = 20%); null if unknown.")
    rentable = serializers.BooleanField(
        allow_null=True, help_text="Whether a current offer rents this many in one machine; null: no offer known."
    )
    outside = _strings(
        help_text="Why an LLM estimate lies outside the model's measured range: vendor, architecture, configuration, "
        "precision (empty: inside)."
    )
    configuration = serializers.CharField(
        allow_blank=True,
        help_text="LLM inference: single, layer (split by layers), or the link of a tensor-parallel group "
        "(fabric, pcie_p2p, pcie_host, unknown). Training: the split used, data (DDP), zero3 (fully sharded) or "
        "tensor.",
    )


class FitGpuPlanSerializer(serializers.Serializer):
    gpu = FitGpuSerializer()
    gpus_needed = _nullable_int(help_text="Fewest GPUs that hold the job; null: not even 8.")
    recommended = FitCountPlanSerializer(allow_null=True)
    reason = serializers.CharField()
    counts = FitCountPlanSerializer(many=True)


class FitBuyVsRentResultSerializer(serializers.Serializer):
    purchase_price = _float()
    resale_fraction = _float()
    amortisation_months = _float()
    rent_price_per_hour = _float()
    power_w = _float()
    electricity_price_per_kwh = _float()
    hours_per_day = _float()
    rent_cost_per_month = _float()
    electricity_cost_per_month = _float()
    depreciation_per_month = _float()
    own_cost_per_month = _float()
    break_even_days = _nullable_float()
    break_even_hours_per_day = _nullable_float()
    recommendation = _enum(["buy", "rent"])
    reason = serializers.CharField()


class FitBuyVsRentSerializer(serializers.Serializer):
    gpu = serializers.CharField()
    gpu_name = serializers.CharField()
    gpus_needed = _nullable_int()
    result = FitBuyVsRentResultSerializer(
        allow_null=True, help_text="Per GPU; null when a price is missing (see notes)."
    )
    notes = _strings()
    price = FitPriceOriginSerializer(allow_null=True, help_text="Where the rental price comes from.")


class FitExchangeRateSerializer(serializers.Serializer):
    units_per_usd = _float()
    date = serializers.DateField()
    source = serializers.CharField(allow_blank=True)  # type: ignore[assignment]  # a field named like a DRF Field attribute


class FitAssumptionsSerializer(serializers.Serializer):
    achievable_compute_fraction = _float(help_text="Training estimates: share of the dense tensor peak.")
    scaling_efficiency_per_doubling = _float(help_text="Training without measured scaling: kept per doubling.")
    max_hours = _float()
    llm_model_fitted = serializers.CharField(allow_null=True, help_text="LLM inference: when the model was fitted.")
    llm_typical_error = _nullable_float(help_text="LLM inference: the model's leave-one-GPU-out error (0.2 = 20%).")
    llm_outside_error = _nullable_float(
        help_text="LLM inference: its error for configurations outside the measured range (extrapolation)."
    )


class FitTrainingPlanSerializer(serializers.Serializer):
    """The fewest whole nodes of one GPU that finish the training within the deadline."""

    gpu = serializers.CharField(help_text="GPU slug.")
    gpu_name = serializers.CharField()
    gpus = serializers.IntegerField(help_text="GPUs in all: nodes x GPUs per node.")
    nodes = serializers.IntegerField()
    gpus_per_node = serializers.IntegerField(help_text="The GPU's scale-up domain, 8 where the catalogue has none.")
    model_parallel = serializers.IntegerField(help_text="GPUs one copy of the model is split over.")
    zero3 = serializers.BooleanField(help_text="The model state is sharded with ZeRO-3 (no fast link between GPUs).")
    precision = _enum(
        list(TRAINING_PEAK_PRECISIONS),
        help_text="Format of the dense peak: the job's (FP8 falls back to BF16, FP32 trains on TF32, 4-bit "
        "weights multiply in BF16).",
    )
    peak_tflops = _float(help_text="Dense peak per GPU in that format.")
    mfu = _float(help_text="Model FLOP utilisation fitted on MLPerf Training (see `mfu_basis`).")
    mfu_basis = _enum(
        ["gpu", "architecture", "pooled"],
        help_text="gpu: this GPU's own MLPerf Training runs; architecture: its architecture's runs; pooled: every run.",
    )
    mfu_runs = serializers.IntegerField(help_text="MLPerf Training runs behind the MFU.")
    days = _float(help_text="Time to finish on these GPUs.")
    hours = _float()
    gpu_hours = _float()
    compute_s = _float(help_text="Seconds of compute: model FLOPs / (GPUs x peak x MFU).")
    exposed_communication_s = _float(help_text="Seconds of gradient all-reduce the backward pass cannot hide.")
    price_per_gpu_hour = _nullable_float(help_text="Rental price per GPU-hour by `price`, in `currency`.")
    cost = _nullable_float(help_text="GPU-hours x price, in `currency`; null without a price.")


class FitTrainingSerializer(serializers.Serializer):
    days = _float(help_text="The deadline asked (`days`, default 30).")
    plans = FitTrainingPlanSerializer(
        many=True,
        help_text="Every GPU the time model can plan on that finishes in time: the cheapest first (unpriced last).",
    )


class FitResponseSerializer(serializers.Serializer):
    inputs = FitInputsSerializer()
    model = FitModelSerializer()
    memory = FitMemorySerializer()
    currency = _enum(list(CURRENCIES))
    exchange_rate = FitExchangeRateSerializer(allow_null=True)
    fitting_count = serializers.IntegerField(help_text="GPU models that hold the job on up to 8 cards.")
    plans = FitGpuPlanSerializer(
        many=True, help_text="Every curated GPU, ranked: fitting first, then by cost, time, count."
    )
    buy_vs_rent = FitBuyVsRentSerializer(
        many=True, help_text="Every GPU that fits with both a purchase and a rental price, in rank order."
    )
    buy_vs_rent_missing = FitBuyVsRentSerializer(
        many=True, help_text="GPUs that fit but lack a purchase or a rental price (notes say which)."
    )
    assumptions = FitAssumptionsSerializer()
    warnings = _strings()
    workload = FitWorkloadSerializer(
        allow_null=True,
        help_text="Batched LLM inference: the serving question the LLM figures answer (model, lengths, precision, "
        "target); null for other jobs and for those the serving model cannot answer (one stream, a fixed number of "
        "users, a model it has no shape of).",
    )
    training = FitTrainingSerializer(
        allow_null=True,
        help_text="LLM training with a work in tokens (not inference, not mixture-of-experts models): the fewest "
        "whole nodes of each GPU that finish within `days`, from the time model fitted on MLPerf Training (model "
        "FLOPs / (GPUs x dense peak x MFU) + exposed gradient all-reduce); null otherwise.",
    )


# --- parameters ------------------------------------------------------------------------------


# --- POST /api/v1/fit/models/ ----------------------------------------------------------------


class HfModelImportSerializer(serializers.Serializer):
    """The import's input: a Hugging Face model id."""

    hf_id = serializers.RegexField(
        REPO_ID_PATTERN,
        max_length=MAX_HF_ID,
        help_text="Hugging Face model id, owner/name (e.g. Qwen/Qwen3-8B).",
        error_messages={"invalid": "Write a Hugging Face model id as owner/name, e.g. Qwen/Qwen3-8B."},
    )


class HfModelSerializer(serializers.ModelSerializer):
    """A model imported from Hugging Face, as stored: the fit API reads it by ``hf_id``."""

    hf_id = serializers.CharField(source="repo_id")
    config = serializers.DictField(help_text="The config.json as the Hub served it.")
    revision = serializers.CharField(help_text="The commit the config was read at; empty if the Hub did not say.")

    class Meta:
        model = HfModel
        fields = ("hf_id", "revision", "source_url", "fetched_at", "config")


class HfModelListSerializer(serializers.ModelSerializer):
    """A row of the list of imported models: what was imported and when, without the config."""

    hf_id = serializers.CharField(source="repo_id")
    revision = serializers.CharField(help_text="The commit the config was read at; empty if the Hub did not say.")

    class Meta:
        model = HfModel
        fields = ("hf_id", "revision", "source_url", "fetched_at")
