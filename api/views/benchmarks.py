"""Benchmark workloads, individual results and their per-GPU aggregates."""

from __future__ import annotations

from typing import ClassVar

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema, extend_schema_view

from api.filters import AggregateFilterSet, ResultFilterSet, WorkloadFilterSet
from api.pagination import KeysetCursorPagination, StrictLimitOffsetPagination
from api.serializers import AggregateSerializer, ResultSerializer, WorkloadSerializer
from api.views.base import READ_ERRORS, ValuesListView
from benchmarks_app.models import BenchmarkResult, ResultAggregate, Workload


@extend_schema_view(
    get=extend_schema(summary=_("Benchmark workloads"), responses={200: WorkloadSerializer(many=True), **READ_ERRORS})
)
class WorkloadListView(ValuesListView):
    serializer_class = WorkloadSerializer
    filterset_class = WorkloadFilterSet
    pagination_class = None
    filter_backends = ValuesListView.filter_backends[:1]

    def base_queryset(self) -> QuerySet:
        return Workload.objects.order_by("category", "slug", "version")


@extend_schema_view(
    get=extend_schema(
        summary=_("Individual benchmark results"),
        description=_(
            "Results derived from submissions and lab imports, newest first. `trust=flagged` rows are excluded from rankings."
        ),
        responses={200: ResultSerializer(many=True), **READ_ERRORS},
    )
)
class ResultListView(ValuesListView):
    serializer_class = ResultSerializer
    filterset_class = ResultFilterSet
    pagination_class = KeysetCursorPagination
    ordering_map: ClassVar[dict[str, str]] = {"measured_at": "measured_at", "value": "value"}
    ordering: ClassVar[list[str]] = ["-measured_at"]

    def base_queryset(self) -> QuerySet:
        return BenchmarkResult.objects.all()


@extend_schema_view(
    get=extend_schema(
        summary=_("Per-GPU aggregates of trusted results"),
        description=_("One row per GPU and comparison key: median, quartiles, n and distinct submitters."),
        responses={200: AggregateSerializer(many=True), **READ_ERRORS},
    )
)
class AggregateListView(ValuesListView):
    serializer_class = AggregateSerializer
    filterset_class = AggregateFilterSet
    pagination_class = StrictLimitOffsetPagination
    ordering_map: ClassVar[dict[str, str]] = {"gpu": "gpu__name", "median": "median", "n": "n"}
    ordering: ClassVar[list[str]] = ["gpu__name", "comparison_label"]

    def base_queryset(self) -> QuerySet:
        return ResultAggregate.objects.all()
