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
from dashboard.selectors.ranking_params import (
    GPU_PRICE_PREFIX,
    RankingParamError,
    RankingParams,
    ranking_params_from_query,
)
from dashboard.selectors.rankings import rankings_compute
from dashboard.selectors.tiers import tiers_compute


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
            "any offer's price. `input_len` and `output_len` set the request shape every row answers (the header's "
            "`serving_question` and each row's `llm_workload` name it); an estimated row carries its 80 % interval "
            "(`perf_low`..`perf_high`, the cost per million tokens at each end) and `uncertain_order` lists the "
            "adjacent ranks whose intervals overlap. In buy mode `kwh_price` adds each row's energy per output token "
            "(`joules_per_token`, measured or estimated) and `electricity_per_million_tokens`."
        ),
        responses={200: RankingSerializer, **READ_ERRORS},
    )
    def get(self, request: Request) -> HttpResponse:
        def compute() -> dict[str, Any]:
            return RankingSerializer(rankings_compute(params=self.ranking_params(request))).data

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
        def compute() -> dict[str, Any]:
            return TierListSerializer(tiers_compute(params=self.ranking_params(request))).data

        return response_cached(self, request, lambda: Response(_computed(compute)))
