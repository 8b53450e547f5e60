"""Catalogue endpoints: GPUs, architectures, providers."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import Count, F, Q, QuerySet
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.filters import GpuFilterSet
from api.pagination import StrictLimitOffsetPagination
from api.serializers import ArchitectureSerializer, GpuDetailSerializer, GpuRowSerializer, ProviderSerializer
from api.views.base import (
    ERROR_404,
    ERROR_429,
    READ_ERRORS,
    ApiMixin,
    CachedListMixin,
    ValuesListView,
    serializer_columns,
)
from catalog.models import Architecture, Gpu, Provider, SpecCitation, TensorPeak
from catalog.models.gpus import GpuAlias
from catalog.models.prices import PurchasePrice
from catalog.selectors.prices import gpu_rent_prices

# The GPU's own columns (its aliases, like the nested lists and current prices, are read apart).
GPU_DETAIL_FIELDS = {name: path for name, path in serializer_columns(GpuDetailSerializer).items() if name != "aliases"}


@extend_schema_view(
    get=extend_schema(summary=_("GPUs in the catalogue"), responses={200: GpuRowSerializer(many=True), **READ_ERRORS})
)
class GpuListView(CachedListMixin, ValuesListView):
    serializer_class = GpuRowSerializer
    filterset_class = GpuFilterSet
    pagination_class = StrictLimitOffsetPagination
    search_fields = ["name", "slug", "family"]
    ordering_map: ClassVar[dict[str, str]] = {
        "name": "name",
        "release_date": "release_date",
        "memory_gib": "memory_gib",
        "memory_bandwidth_gbs": "memory_bandwidth_gbs",
        "fp32_tflops": "fp32_tflops",
        "tdp_w": "tdp_w",
    }
    ordering: ClassVar[list[str]] = ["-is_curated", "-release_date", "name"]

    def base_queryset(self) -> QuerySet:
        return Gpu.objects.all()


class GpuDetailView(ApiMixin, APIView):
    """One GPU with its sourced tensor peaks, citations, aliases, purchase prices and current prices."""

    @extend_schema(
        summary=_("One GPU"),
        parameters=[OpenApiParameter("slug", str, OpenApiParameter.PATH, description="GPU slug (see gpus/).")],
        responses={200: GpuDetailSerializer, 404: ERROR_404, 429: ERROR_429},
    )
    def get(self, request: Request, slug: str) -> Response:
        # A NUL byte cannot be in a slug, and PostgreSQL refuses to compare one.
        row = (
            None if "\x00" in slug else Gpu.objects.filter(slug=slug).values("id", *GPU_DETAIL_FIELDS.values()).first()
        )
        if row is None:
            raise NotFound(f"No GPU with slug {slug!r}.")
        gpu_id = row["id"]
        data: dict[str, Any] = {name: row[path] for name, path in GPU_DETAIL_FIELDS.items()}
        data["tensor_peaks"] = list(
            TensorPeak.objects.filter(gpu_id=gpu_id)
            .order_by("precision")
            .values("precision", "supported", "dense_tflops", "source", "as_of", "note")
        )
        data["citations"] = list(
            SpecCitation.objects.filter(gpu_id=gpu_id)
            .order_by("field")
            .values("field", "value", "source", "as_of", "note")
        )
        data["aliases"] = list(GpuAlias.objects.filter(gpu_id=gpu_id).order_by("alias").values_list("alias", flat=True))
        data["purchase_prices"] = list(
            PurchasePrice.objects.filter(gpu_id=gpu_id)
            .order_by("condition", "-observed_on")
            .values("condition", "price", "currency", "observed_on", "source")
        )
        on_demand = gpu_rent_prices(gpu_ids=[gpu_id]).get(gpu_id)
        spot = gpu_rent_prices(gpu_ids=[gpu_id], rule="spot").get(gpu_id)
        data["current_prices"] = {
            "offers": (on_demand.offers if on_demand else 0) + (spot.offers if spot else 0),
            "providers": on_demand.providers if on_demand else 0,
            "typical_usd_per_gpu_hour": on_demand.typical_usd if on_demand else None,
            "on_demand_min_usd_per_gpu_hour": on_demand.minimum_usd if on_demand else None,
            "spot_min_usd_per_gpu_hour": spot.minimum_usd if spot else None,
            "typical_observed_at": on_demand.provenance.observed_at if on_demand else None,
            "typical_observed_date_estimated": on_demand.provenance.date_is_estimate if on_demand else None,
            "typical_provider": on_demand.provenance.provider if on_demand else None,
        }
        return Response(data)


@extend_schema_view(
    get=extend_schema(summary=_("GPU architectures"), responses={200: ArchitectureSerializer(many=True), **READ_ERRORS})
)
class ArchitectureListView(ValuesListView):
    serializer_class = ArchitectureSerializer
    pagination_class = None
    filter_backends = []

    def base_queryset(self) -> QuerySet:
        return Architecture.objects.annotate(gpu_count=Count("gpus")).order_by(
            F("release_month").asc(nulls_last=True), "name"
        )


@extend_schema_view(
    get=extend_schema(summary=_("Cloud providers"), responses={200: ProviderSerializer(many=True), **READ_ERRORS})
)
class ProviderListView(ValuesListView):
    serializer_class = ProviderSerializer
    pagination_class = None
    filter_backends = []

    def base_queryset(self) -> QuerySet:
        current = Q(
            offers__available=True,
            offers__price_separable=True,
            offers__gpu__isnull=False,
            offers__current_price_per_gpu_hour_usd__isnull=False,
        )
        return Provider.objects.annotate(current_offers=Count("offers", filter=current)).order_by("name")
