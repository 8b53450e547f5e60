"""Cloud offers and the price history behind them."""

from __future__ import annotations

from typing import ClassVar

from django.db.models import F, QuerySet
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema, extend_schema_view

from api.filters import OfferFilterSet, PriceFilterSet
from api.pagination import KeysetCursorPagination
from api.serializers import OfferSerializer, PriceObservationSerializer
from api.views.base import READ_ERRORS, CachedListMixin, ValuesListView
from catalog.models import Offer, PriceObservation


@extend_schema_view(
    get=extend_schema(
        summary=_("Cloud GPU offers with a per-GPU price"),
        description=_(
            "Every offer whose price can be attributed to its GPUs (not host-only VMs), current or "
            "withdrawn (`available`). Prices are the newest observation; `price_per_gpu_hour_usd` is "
            "converted at the exchange rate of the observation day."
        ),
        responses={200: OfferSerializer(many=True), **READ_ERRORS},
    )
)
class OfferListView(CachedListMixin, ValuesListView):
    serializer_class = OfferSerializer
    filterset_class = OfferFilterSet
    pagination_class = KeysetCursorPagination
    search_fields = ["instance_type", "gpu_name_raw"]
    ordering_map: ClassVar[dict[str, str]] = {
        "price_per_gpu_hour_usd": "current_price_per_gpu_hour_usd",
        "last_seen": "last_seen",
        "id": "id",
    }
    ordering: ClassVar[list[str]] = ["current_price_per_gpu_hour_usd"]

    def base_queryset(self) -> QuerySet:
        return Offer.objects.filter(
            price_separable=True,
            current_price_per_gpu_hour_usd__isnull=False,
            current_price_per_hour__isnull=False,
        ).annotate(per_gpu_vcpus=F("vcpus") / F("gpu_count"), per_gpu_ram_gib=F("ram_gib") / F("gpu_count"))


@extend_schema_view(
    get=extend_schema(
        summary=_("Price history: observations of offers over time"),
        description=_(
            "Filter by `gpu` for every offer of a GPU, or by `offer` for one series; `since`/`until` bound the dates."
        ),
        responses={200: PriceObservationSerializer(many=True), **READ_ERRORS},
    )
)
class PriceListView(ValuesListView):
    serializer_class = PriceObservationSerializer
    filterset_class = PriceFilterSet
    pagination_class = KeysetCursorPagination
    ordering_map: ClassVar[dict[str, str]] = {"observed_at": "observed_at"}
    ordering: ClassVar[list[str]] = ["observed_at"]

    def base_queryset(self) -> QuerySet:
        return PriceObservation.objects.all()
