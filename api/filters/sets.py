"""The filtersets of API v1 and the vocabularies they validate against (see api.filters.base)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet
from django.utils.translation import gettext_lazy as _

from api.filters.base import (
    ApiFilterSet,
    BooleanFilter,
    DateFilter,
    EntityFilter,
    FloatFilter,
    IntFilter,
    KeyFilter,
    TextFilter,
)
from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from benchmarks_app.models import BenchmarkResult, ResultAggregate, SourceKind, TrustLabel, Workload
from catalog.models import Architecture, Gpu, Offer, PriceObservation, Provider, Segment, TensorPeak, Vendor
from catalog.models.gpus import Precision
from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors import ranking_params as ranking_selectors
from gpuatlas.query_numbers import ELECTRICITY_PER_KWH
from llm.models import EngineClass, PrecisionStatus, Scenario, ServingPoint
from llm.question import MAX_SEQUENCE_TOKENS, MIN_SEQUENCE_TOKENS, TARGETS
from llm.serving.shapes import MODEL_SHAPES

# --- vocabularies ----------------------------------------------------------------------------


def _slugs(model: Any) -> Callable[[], list[str]]:
    return lambda: list(model.objects.values_list("slug", flat=True))


def _slug_exists(model: Any) -> Callable[[str], bool]:
    return lambda value: model.objects.filter(slug=value).exists()


def _region_exists(value: str) -> bool:
    return value != "" and Offer.objects.filter(region=value).exists()


def _workload_exists(value: str) -> bool:
    return Workload.objects.filter(slug=value).exists()


def _regions() -> list[str]:
    return list(Offer.objects.exclude(region="").values_list("region", flat=True).distinct())


def _workload_slugs() -> list[str]:
    return list(Workload.objects.values_list("slug", flat=True).distinct())


def fixed_values(values: Iterable[str]) -> Callable[[], list[str]]:
    frozen = list(values)
    return lambda: frozen


def gpu_filter(field_name: str = "gpu__slug") -> EntityFilter:
    return EntityFilter(
        field_name=field_name,
        values=_slugs(Gpu),
        contains=_slug_exists(Gpu),
        component="GpuSlug",
        description=_("GPU slug (see gpus/)."),
    )


SHA256_PATTERN = r"^[0-9a-f]{64}$"
MAX_PRICE_USD = 1_000_000.0
MAX_MEMORY_GIB = 1_048_576.0


# --- filtersets ------------------------------------------------------------------------------


class GpuFilterSet(ApiFilterSet):
    vendor = EntityFilter(
        field_name="vendor__slug", values=_slugs(Vendor), contains=_slug_exists(Vendor), description=_("Vendor slug.")
    )
    architecture = EntityFilter(
        field_name="architecture__slug",
        values=_slugs(Architecture),
        contains=_slug_exists(Architecture),
        description=_("Architecture slug."),
    )
    segment = EntityFilter(field_name="segment", values=fixed_values(Segment.values), description=_("Market segment."))
    min_memory_gib = FloatFilter(
        field_name="memory_gib", lookup_expr="gte", minimum=0, maximum=MAX_MEMORY_GIB, description=_("GiB, inclusive.")
    )
    max_memory_gib = FloatFilter(
        field_name="memory_gib", lookup_expr="lte", minimum=0, maximum=MAX_MEMORY_GIB, description=_("GiB, inclusive.")
    )
    released_after = DateFilter(field_name="release_date", lookup_expr="gte", description=_("Inclusive."))
    released_before = DateFilter(field_name="release_date", lookup_expr="lte", description=_("Inclusive."))
    supports_precision = EntityFilter(
        values=fixed_values(Precision.values),
        method="filter_supports_precision",
        description=_("Only GPUs with a sourced dense tensor peak at this precision."),
    )
    curated = BooleanFilter(field_name="is_curated", description=_("Only curated (ranked) GPUs, or only others."))

    class Meta:
        model = Gpu
        fields: list[str] = []

    def filter_supports_precision(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        peaks = TensorPeak.objects.filter(
            gpu=OuterRef("pk"), precision=value, supported=True, dense_tflops__isnull=False
        )
        return queryset.filter(Exists(peaks))


class OfferFilterSet(ApiFilterSet):
    gpu = gpu_filter()
    provider = EntityFilter(
        field_name="provider__slug",
        values=_slugs(Provider),
        contains=_slug_exists(Provider),
        description=_("Provider slug."),
    )
    region = EntityFilter(
        field_name="region",
        values=_regions,
        contains=_region_exists,
        component="Region",
        description=_("Provider region."),
    )
    spot = BooleanFilter(field_name="is_spot", description=_("Spot/interruptible (true) or on-demand (false)."))
    max_price_per_gpu_hour = FloatFilter(
        field_name="current_price_per_gpu_hour_usd",
        lookup_expr="lte",
        minimum=0,
        maximum=MAX_PRICE_USD,
        description=_("USD per GPU-hour, inclusive."),
    )
    min_vcpus_per_gpu = FloatFilter(
        field_name="per_gpu_vcpus", lookup_expr="gte", minimum=0, maximum=100_000, description=_("Inclusive.")
    )
    available = BooleanFilter(
        field_name="available", description=_("Seen in the provider's newest snapshot (true) or withdrawn (false).")
    )

    class Meta:
        model = Offer
        fields: list[str] = []


class PriceFilterSet(ApiFilterSet):
    gpu = gpu_filter("offer__gpu__slug")
    offer = IntFilter(field_name="offer_id", minimum=1, maximum=2**53, description=_("Offer id (see offers/)."))
    provider = EntityFilter(
        field_name="offer__provider__slug",
        values=_slugs(Provider),
        contains=_slug_exists(Provider),
        description=_("Provider slug."),
    )
    spot = BooleanFilter(field_name="offer__is_spot", description=_("Spot (true) or on-demand (false) offers."))
    since = DateFilter(field_name="observed_at__date", lookup_expr="gte", description=_("Observed on or after (UTC)."))
    until = DateFilter(field_name="observed_at__date", lookup_expr="lte", description=_("Observed on or before (UTC)."))

    class Meta:
        model = PriceObservation
        fields: list[str] = []


class ResultFilterSet(ApiFilterSet):
    gpu = gpu_filter()
    workload = EntityFilter(
        field_name="workload__slug", values=_workload_slugs, contains=_workload_exists, description=_("Workload slug.")
    )
    precision = EntityFilter(field_name="precision", values=fixed_values(Precision.values), description=_("Precision."))
    comparison_key = KeyFilter(field_name="comparison_key", pattern=SHA256_PATTERN, description=_("sha256 key."))
    trust = EntityFilter(field_name="trust", values=fixed_values(TrustLabel.values), description=_("Trust label."))

    class Meta:
        model = BenchmarkResult
        fields: list[str] = []


class AggregateFilterSet(ApiFilterSet):
    gpu = gpu_filter()
    workload = EntityFilter(
        field_name="workload__slug", values=_workload_slugs, contains=_workload_exists, description=_("Workload slug.")
    )
    precision = EntityFilter(field_name="precision", values=fixed_values(Precision.values), description=_("Precision."))
    comparison_key = KeyFilter(field_name="comparison_key", pattern=SHA256_PATTERN, description=_("sha256 key."))

    class Meta:
        model = ResultAggregate
        fields: list[str] = []


class ServingPointFilterSet(ApiFilterSet):
    gpu = gpu_filter()
    model = EntityFilter(
        field_name="model", values=fixed_values(MODEL_SHAPES), description=_("Model key, e.g. llama-3.1-70b.")
    )
    precision = EntityFilter(
        field_name="weight_precision",
        values=fixed_values(Precision.values),
        description=_("Weight precision as run (after any correction)."),
    )
    precision_status = EntityFilter(
        field_name="precision_status",
        values=fixed_values(PrecisionStatus.values),
        description=_("Whether the precision is as stated, corrected from a cited source, or unknown."),
    )
    scenario = EntityFilter(field_name="scenario", values=fixed_values(Scenario.values), description=_("Scenario."))
    engine_class = EntityFilter(
        field_name="engine_class", values=fixed_values(EngineClass.values), description=_("Engine class.")
    )
    source = EntityFilter(
        field_name="source_kind", values=fixed_values(SourceKind.values), description=_("Where the point comes from.")
    )
    measured_energy = BooleanFilter(
        field_name="joules_per_token",
        lookup_expr="isnull",
        exclude=True,
        description=_("Only points with a measured energy per token (true), or only points without (false)."),
    )

    class Meta:
        model = ServingPoint
        fields: list[str] = []


class WorkloadFilterSet(ApiFilterSet):
    category = EntityFilter(
        field_name="category", values=fixed_values(Workload.Category.values), description=_("Workload category.")
    )

    class Meta:
        model = Workload
        fields: list[str] = []


# --- rankings and tiers: the dashboard's parameters, validated before the dashboard parses them ---


_USE_CASE_SIZES = "; ".join(f"{slug}: {', '.join(uc.model_sizes)}" for slug, uc in USE_CASES.items() if uc.model_sizes)
_USE_CASE_PRECISIONS = "; ".join(f"{slug}: {', '.join(uc.precision_families)}" for slug, uc in USE_CASES.items())


class RankingFilterSet(ApiFilterSet):
    """The rankings page's parameters (dashboard.selectors.ranking_params), checked against the schema only.

    Filtering is the selectors' job: every filter here validates and returns the queryset as is.
    """

    use_case = EntityFilter(
        method="validate_only", values=fixed_values(USE_CASES), description=_("Use case (default training).")
    )
    precision = EntityFilter(
        method="validate_only",
        values=fixed_values(PRECISION_FAMILIES),
        description=_("Precision family; each use case allows only some (%(allowed)s). Default: its first.")
        % {"allowed": _USE_CASE_PRECISIONS},
    )
    min_vram = FloatFilter(
        method="validate_only", minimum=0, maximum=100_000, description=_("Minimum GPU memory, GiB.")
    )
    vendor = EntityFilter(
        method="validate_only", values=_slugs(Vendor), contains=_slug_exists(Vendor), description=_("Vendor slug.")
    )
    segment = EntityFilter(
        method="validate_only", values=fixed_values(Segment.values), description=_("Market segment.")
    )
    mode = EntityFilter(
        method="validate_only",
        values=fixed_values(ranking_selectors.MODES),
        description=_("Rent (per GPU-hour) or buy (per GPU)."),
    )
    price = EntityFilter(
        method="validate_only",
        values=fixed_values(ranking_selectors.PRICE_HOW),
        description=_("Rent price rule: cheapest on-demand, median across providers, or cheapest spot."),
    )
    condition = EntityFilter(
        method="validate_only", values=fixed_values(ranking_selectors.CONDITIONS), description=_("Buy: new or used.")
    )
    provider = EntityFilter(
        method="validate_only",
        values=_slugs(Provider),
        contains=_slug_exists(Provider),
        description=_("Rent: only this provider's offers."),
    )
    region = TextFilter(method="validate_only", max_length=64, description=_("Rent: substring of the offer region."))
    currency = EntityFilter(
        method="validate_only", values=fixed_values(ranking_selectors.CURRENCIES), description=_("Price currency.")
    )
    baseline = EntityFilter(
        method="validate_only",
        values=_slugs(Gpu),
        contains=_slug_exists(Gpu),
        component="GpuSlug",
        description=_("GPU whose performance is 1.0."),
    )
    basis = EntityFilter(
        method="validate_only",
        values=fixed_values(ranking_selectors.BASES),
        description=_("all, or only GPUs with measured performance."),
    )
    sort = EntityFilter(
        method="validate_only", values=fixed_values(ranking_selectors.SORTS), description=_("Sort key.")
    )
    show = EntityFilter(
        method="validate_only",
        values=fixed_values(ranking_selectors.SHOWS),
        description=_(
            "eligible (default): only GPUs with the use case's memory and tensor format; all: every GPU, "
            "those that cannot do it marked (eligible=false, ineligible_reasons)."
        ),
    )
    model_size = EntityFilter(
        method="validate_only",
        values=fixed_values(sorted({size for uc in USE_CASES.values() for size in uc.model_sizes})),
        description=_("LLM use cases: model size (%(allowed)s). Default: its first.") % {"allowed": _USE_CASE_SIZES},
    )
    kwh_price = FloatFilter(
        method="validate_only",
        minimum=ELECTRICITY_PER_KWH.low,
        maximum=ELECTRICITY_PER_KWH.high,
        description=_(
            "Buy mode, LLM serving: your electricity price per kWh in the page currency; each row then carries its "
            "energy per output token and the electricity of a million output tokens."
        ),
    )
    mlperf = EntityFilter(
        method="validate_only",
        values=fixed_values(ranking_selectors.MLPERF_ROWS),
        description=_("LLM serving: MLPerf closed-division rows of available systems only (default), or all."),
    )

    interactivity = EntityFilter(
        method="validate_only",
        values=fixed_values(TARGETS),
        description=_(
            "LLM serving: output tokens/s per user the cost per million tokens is taken at (10, 20, 50, 100), or max "
            "for the highest throughput per GPU. Default 20."
        ),
    )
    input_len = IntFilter(
        method="validate_only",
        minimum=MIN_SEQUENCE_TOKENS,
        maximum=MAX_SEQUENCE_TOKENS,
        description=_("LLM serving: prompt tokens per request the ranking answers. Default 1000."),
    )
    output_len = IntFilter(
        method="validate_only",
        minimum=MIN_SEQUENCE_TOKENS,
        maximum=MAX_SEQUENCE_TOKENS,
        description=_("LLM serving: output tokens per request the ranking answers. Default 1000."),
    )

    class Meta:
        model = Gpu
        fields: list[str] = []

    def validate_only(self, queryset: QuerySet, name: str, value: Any) -> QuerySet:
        return queryset
