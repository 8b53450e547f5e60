"""Measured LLM serving points (llm.models.ServingPoint): throughput per GPU against tokens/s per user."""

from __future__ import annotations

from typing import ClassVar

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema, extend_schema_view

from api.filters import ServingPointFilterSet
from api.pagination import StrictLimitOffsetPagination
from api.serializers import ServingPointSerializer
from api.views.base import READ_ERRORS, ValuesListView
from llm.models import ServingPoint

_PLAIN = (
    "gpu_count", "interconnect", "model", "weight_precision", "weight_precision_stated", "quant", "kv_cache_precision",
    "precision_status", "precision_note", "precision_source_url", "engine", "engine_class", "engine_version",
    "input_tokens", "output_tokens", "lengths_note", "scenario", "concurrency", "ttft_limit_ms", "tpot_limit_ms",
    "limits_note", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "per_user_basis", "ttft_ms", "measured_on",
    "date_estimated", "source_kind", "source", "source_title", "source_url", "joules_per_token", "power_w",
    "power_limit_w", "energy_window_s", "energy_samples", "energy_source",
)  # fmt: skip


@extend_schema_view(
    get=extend_schema(
        summary=_("Measured LLM serving points"),
        description=_(
            "Every measured LLM throughput (MLPerf Inference, TensorRT-LLM's performance overview, llama.cpp and "
            "Ollama tables, our client's llm-decode), derived from its source result: GPU count and link, model, "
            "precision as run (checked for plausibility), engine, lengths, scenario and latency limits, output "
            "tokens/s per GPU and per user. Points whose precision is unknown or whose result is flagged are listed "
            "but never ranked. Measured energy (joules per output token, average power per GPU, the window and its "
            "samples) is given where the source measured it over at least 5 s with every GPU's average power within "
            "its board limit; elsewhere those fields are null (measured_energy=true lists only such points)."
        ),
        responses={200: ServingPointSerializer(many=True), **READ_ERRORS},
    )
)
class ServingPointListView(ValuesListView):
    serializer_class = ServingPointSerializer
    filterset_class = ServingPointFilterSet
    pagination_class = StrictLimitOffsetPagination
    ordering_map: ClassVar[dict[str, str]] = {
        "tokens_per_s_per_gpu": "tokens_per_s_per_gpu",
        "tokens_per_s_per_user": "tokens_per_s_per_user",
        "joules_per_token": "joules_per_token",
        "measured_on": "measured_on",
    }
    ordering: ClassVar[list[str]] = ["model", "gpu__name", "gpu_count", "scenario", "id"]

    def base_queryset(self) -> QuerySet:
        return ServingPoint.objects.all()
