"""Rankings and tier lists: the same selectors, parameters and figures as the pages.

Parameters are first checked against the schema (unknown vendor/provider/baseline, values
outside the vocabularies: 400 naming the parameter), then parsed by
``dashboard.selectors.ranking_params.ranking_params_from_query`` exactly as the page parses them; its
cross-parameter rules (a precision the use case does not allow) are 400s too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.filters import ApiFilterBackend, RankingFilterSet
from api.serializers import RankingSerializer, TierListSerializer
from api.views.base import READ_ERRORS, ApiMixin, response_cached
from catalog.models import Gpu
from dashboard.ranking.maths import TIER_NAMES
from dashboard.ranking.use_cases import use_case_requirement
from dashboard.selectors.ranking_params import (
    GPU_PRICE_PREFIX,
    RankingParamError,
    RankingParams,
    ranking_params_from_query,
)
from dashboard.selectors.ranking_rows import Ranking, RankingRow
from dashboard.selectors.rankings import rankings_compute
from dashboard.selectors.tiers import tiers_compute

ROW_FIELDS = {
    "rank": "rank",
    "gpu": "gpu_slug",
    "gpu_name": "gpu_name",
    "vendor": "vendor_slug",
    "vendor_name": "vendor",
    "segment": "segment",
    "architecture_name": "architecture",
    "memory_gib": "memory_gib",
    "tdp_w": "tdp_w",
    "perf": "perf",
    "perf_basis": "perf_basis",
    "perf_measured": "perf_measured",
    "perf_estimated": "perf_estimated",
    "n": "n",
    "distinct_submitters": "distinct_submitters",
    "groups": "groups",
    "price": "price",
    "price_unit": "price_unit",
    "price_source": "price_source",
    "price_providers": "price_providers",
    "price_min": "price_min",
    "price_max": "price_max",
    "price_provider": "price_provider",
    "price_provider_slug": "price_provider_slug",
    "price_instance_type": "price_instance_type",
    "price_region": "price_region",
    "price_observed_at": "price_observed_at",
    "price_age_days": "price_age_days",
    "price_date_basis": "price_date_basis",
    "price_date_estimated": "price_date_estimated",
    "currency": "currency",
    "perf_per_dollar": "perf_per_dollar",
    "perf_per_dollar_unit": "perf_per_dollar_unit",
    "perf_per_kw": "perf_per_kw",
    "meets_memory_floor": "meets_memory_floor",
    "tier": "tier",
    "eligible": "eligible",
    "ineligible_reasons": "ineligible_reasons",
    "measured_via": "measured_via",
    "llm_gpu_count": "llm_gpu_count",
    "cost_per_million_tokens": "cost_per_million_tokens",
    "llm_source": "llm_source",
    "llm_source_url": "llm_source_url",
    "llm_precision": "llm_precision",
    "estimate_error_pct": "estimate_error_pct",
    "scaling_gpu_count": "scaling_gpu_count",
    "scaling_efficiency": "scaling_efficiency",
    "scaling_n": "scaling_n",
    "scaling_distinct_submitters": "scaling_distinct_submitters",
    "scaling_interconnect": "scaling_interconnect",
    "scaling_tokens_per_s_per_gpu": "scaling_tokens_per_s_per_gpu",
    "scaling_one_gpu_tokens_per_s": "scaling_one_gpu_tokens_per_s",
    "estimate_outside_range": "estimate_outside_range",
    "estimate_outside_reasons": "estimate_outside_reasons",
    "llm_configuration": "llm_configuration",
    "llm_target": "llm_target",
    "llm_rented_counts": "llm_rented_counts",
    "llm_target_unreached": "llm_target_unreached",
    "llm_price_basis": "llm_price_basis",
}


def row_data(row: RankingRow) -> dict[str, Any]:
    data = {name: getattr(row, attribute) for name, attribute in ROW_FIELDS.items()}
    data["measured"] = row.perf_basis == "measured"
    for name in ("price_unit", "price_source", "perf_per_dollar_unit"):
        data[name] = str(data[name])
    return data


def _params_data(params: RankingParams) -> dict[str, Any]:
    return {
        "use_case": params.use_case,
        "precision": params.precision,
        "min_vram": params.min_vram,
        "vendor": params.vendor,
        "segment": params.segment,
        "mode": params.mode,
        "price": params.price,
        "condition": params.condition,
        "provider": params.provider,
        "region": params.region,
        "currency": params.currency,
        "baseline": params.baseline,
        "basis": params.basis,
        "sort": params.sort,
        "show": params.show,
        "model_size": params.model_size,
        "mlperf": params.mlperf,
        "interactivity": params.interactivity,
        "gpu_prices": params.gpu_price_map,
    }


def ranking_header(ranking: Ranking) -> dict[str, Any]:
    uc = ranking.use_case
    exchange = ranking.exchange_rate
    estimate = ranking.estimate
    return {
        "params": _params_data(ranking.params),
        "use_case": {
            "slug": uc.slug,
            "label": str(uc.label),
            "memory_floor_gib": uc.memory_floor_gib,
            "memory_floor_source": str(uc.memory_floor_source),
            "required_tensor_formats": list(uc.required_precisions(ranking.params.precision)),
            "requirement": use_case_requirement(uc, family=ranking.params.precision),
        },
        "estimate": {
            "compute_weight": estimate.compute_weight,
            "scale": estimate.scale,
            "least_squares": estimate.least_squares,
            "checked_on": estimate.checked_on,
            "typical_error": estimate.typical_error,
            "worst_error": estimate.worst_error,
        },
        "hidden_ineligible": ranking.hidden_ineligible,
        "baseline": {
            "gpu": ranking.baseline_slug,
            "gpu_name": ranking.baseline_name,
            "measured": ranking.baseline_measured,
        },
        "currency": ranking.currency,
        "exchange_rate": None
        if exchange is None
        else {"usd_per_unit": exchange["usd_per_unit"], "date": exchange["date"], "source": exchange["source"]},
        "warnings": [str(warning) for warning in ranking.warnings],
        "skipped_without_data": ranking.skipped_without_data,
    }


def _computed(compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return compute()
    except RankingParamError as error:
        raise ValidationError({error.field: [str(error.message)]}) from None


class QueryParamsSchema(AutoSchema):
    """Document the filterset's parameters on a non-list endpoint too."""

    def get_filter_backends(self) -> list[Any]:
        return list(getattr(self.view, "filter_backends", []))


class _RankingBase(ApiMixin, APIView):
    schema = QueryParamsSchema()
    filter_backends = [ApiFilterBackend]
    filterset_class = RankingFilterSet
    query_parameter_prefixes = (GPU_PRICE_PREFIX,)

    def ranking_params(self, request: Request) -> RankingParams:
        filterset = RankingFilterSet(data=request.query_params, queryset=Gpu.objects.none())
        if not filterset.is_valid():
            raise ValidationError(filterset.errors)
        query = {
            name: request.query_params[name]
            for name in request.query_params
            if name in RankingFilterSet.base_filters or name.startswith(GPU_PRICE_PREFIX)
        }
        try:
            return ranking_params_from_query(query)
        except RankingParamError as error:
            raise ValidationError({error.field: [str(error.message)]}) from None

    def get_queryset(self) -> QuerySet:  # for the schema generator's model lookup
        return Gpu.objects.none()


class RankingView(_RankingBase):
    @extend_schema(
        summary=_("GPU rankings: performance, price and value"),
        description=_(
            "The rows of the rankings page (/) for the same parameters. `perf` is relative to the baseline "
            "GPU (1.0); `perf_basis`/`measured` say whether it is measured (then `n` results back it) or "
            "estimated from specs (`n` = 0). LLM serving: `interactivity` (10, 20, 50, 100 tokens/s per user, "
            "or max; default 20) sets the point of each GPU's throughput curve the ranking is priced at, and "
            "`gpu_price[<gpu slug>]=<price per GPU-hour>` (repeatable) prices a GPU at your own rate, replacing "
            "any offer's price."
        ),
        responses={200: RankingSerializer, **READ_ERRORS},
    )
    def get(self, request: Request) -> HttpResponse:
        def compute() -> dict[str, Any]:
            ranking = rankings_compute(params=self.ranking_params(request))
            rows = [row_data(row) for row in ranking.rows]
            return {**ranking_header(ranking), "count": len(rows), "results": rows}

        return response_cached(self, request, lambda: Response(_computed(compute)))


class TierListView(_RankingBase):
    @extend_schema(
        summary=_("Tier list of a use case"),
        description=_(
            "S..D by performance per price relative to the best GPU eligible for the use case (its memory "
            "floor and tensor format) that has a price (the tiers page, /tiers/). `below_floor` and "
            "`lacking_precision` list the GPUs that cannot do the work."
        ),
        responses={200: TierListSerializer, **READ_ERRORS},
    )
    def get(self, request: Request) -> HttpResponse:
        return response_cached(
            self, request, lambda: Response(_computed(lambda: self.compute(self.ranking_params(request))))
        )

    def compute(self, params: RankingParams) -> dict[str, Any]:
        tier_list = tiers_compute(params=params)
        tiers = [
            {
                "tier": name,
                "min_relative_value": tier_list.thresholds.get(name),
                "results": [row_data(row) for row in tier_list.tiers[name]],
            }
            for name in TIER_NAMES
        ]
        return {
            **ranking_header(tier_list.ranking),
            "memory_floor_gib": tier_list.memory_floor_gib,
            "tiers": tiers,
            "below_floor": [row_data(row) for row in tier_list.below_floor],
            "lacking_precision": [row_data(row) for row in tier_list.lacking_precision],
            "without_price": [row_data(row) for row in tier_list.without_price],
        }
