from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from llm.models import ServingModelFit, ServingPoint


@admin.register(ServingPoint)
class ServingPointAdmin(admin.ModelAdmin):
    """Measured LLM serving points, derived from stored results by the imports and the ingest
    (llm.services.serving_points): read-only, rebuilt, never edited."""

    list_display = (
        "gpu", "gpu_count", "model", "weight_precision", "precision_status", "engine_class", "scenario",
        "tokens_per_s_per_gpu", "tokens_per_s_per_user", "per_user_basis", "measured_on", "source_kind",
    )  # fmt: skip
    list_filter = ("source_kind", "precision_status", "scenario", "engine_class", "weight_precision", "model")
    search_fields = ("gpu__name", "model", "source_title", "source", "precision_note")
    list_select_related = ("gpu",)
    readonly_fields = [f.name for f in ServingPoint._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ServingModelFit)
class ServingModelFitAdmin(admin.ModelAdmin):
    list_display = ("fitted_at", "points", "inputs_digest")
    readonly_fields = [f.name for f in ServingModelFit._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
