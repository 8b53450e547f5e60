"""Curators' admin: the moderation queue (flagged and on-hold submissions) and read-only results.

Raw submissions are immutable: every field is read-only and they cannot be added or deleted
here. Curators act through the bulk actions (approve, reject, re-ingest) and the form that
maps an unknown GPU name to a catalogue GPU, which creates the alias and re-ingests.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from simple_history.admin import SimpleHistoryAdmin

from benchmarks_app.models import (
    BenchmarkResult,
    LabImportRow,
    RawSubmission,
    ResultAggregate,
    SubmissionStatus,
    TrainingMfuFit,
    TrainingRun,
    Workload,
)
from benchmarks_app.services.moderation import (
    gpu_name_map,
    submissions_approve,
    submissions_reingest,
    submissions_reject,
)
from catalog.models import Gpu


class ModerationQueueFilter(admin.SimpleListFilter):
    title = _("moderation queue")
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("needs", _("Flagged or on hold")), ("flagged", _("Flagged")), ("on_hold", _("On hold"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[RawSubmission]) -> QuerySet[RawSubmission]:
        if self.value() == "needs":
            return queryset.needing_moderation()  # type: ignore[attr-defined]
        if self.value() in (SubmissionStatus.FLAGGED, SubmissionStatus.ON_HOLD):
            return queryset.filter(status=self.value())
        return queryset


class GpuMapForm(forms.Form):
    name = forms.CharField(label=_("GPU name as reported"), max_length=200)
    gpu = forms.ModelChoiceField(
        label=_("Catalogue GPU"),
        queryset=Gpu.objects.order_by("-is_curated", "name"),
        help_text=_("Curated (deep-learning) GPUs are listed first."),
    )


class BenchmarkResultInline(admin.TabularInline):
    model = BenchmarkResult
    extra = 0
    can_delete = False
    fields = ("comparison_label", "value", "spread_pct", "trust")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(RawSubmission)
class RawSubmissionAdmin(admin.ModelAdmin):
    list_display = (
        "run_uuid",
        "status_badge",
        "gpu_name_reported",
        "gpu",
        "submitter",
        "channel",
        "received_at",
        "attempts",
    )
    list_filter = (ModerationQueueFilter, "status", "channel")
    search_fields = ("run_uuid", "gpu_name_reported", "submitter__username", "sha256")
    date_hierarchy = "received_at"
    list_select_related = ("gpu", "submitter")
    readonly_fields = [f.name for f in RawSubmission._meta.fields]
    inlines = [BenchmarkResultInline]
    actions = ["approve_selected", "reject_selected", "reingest_selected", "map_gpu_name"]

    @admin.display(description=_("status"), ordering="status")
    def status_badge(self, obj: RawSubmission) -> str:
        return format_html(
            '<span title="{}">{}</span>', "; ".join(r.get("reason", "") for r in obj.reasons), obj.get_status_display()
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description=_("Approve the selected flagged submissions"), permissions=["change"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[RawSubmission]) -> None:
        summary = submissions_approve(submission_ids=queryset.values_list("pk", flat=True), moderator=request.user)  # type: ignore[arg-type]
        self._report(request, _("approved"), summary.changed, summary.skipped)

    @admin.action(description=_("Reject the selected submissions"), permissions=["change"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[RawSubmission]) -> None:
        summary = submissions_reject(submission_ids=queryset.values_list("pk", flat=True), moderator=request.user)  # type: ignore[arg-type]
        self._report(request, _("rejected"), summary.changed, summary.skipped)

    @admin.action(description=_("Re-ingest the selected submissions"), permissions=["change"])
    def reingest_selected(self, request: HttpRequest, queryset: QuerySet[RawSubmission]) -> None:
        count = submissions_reingest(submission_ids=queryset.values_list("pk", flat=True))
        self.message_user(request, _("%(count)d submission(s) queued for ingest.") % {"count": count}, messages.SUCCESS)

    @admin.action(
        description=_("Map the GPU name of the selected submission to a catalogue GPU…"), permissions=["change"]
    )
    def map_gpu_name(self, request: HttpRequest, queryset: QuerySet[RawSubmission]) -> HttpResponse:
        first = queryset.exclude(gpu_name_reported="").first()
        url = reverse("admin:benchmarks_app_rawsubmission_map_gpu")
        name = first.gpu_name_reported if first else ""
        return HttpResponseRedirect(f"{url}?{urlencode({'name': name})}")

    def _report(self, request: HttpRequest, verb: Any, changed: list[str], skipped: dict[str, str]) -> None:
        if changed:
            self.message_user(
                request,
                _("%(count)d submission(s) %(verb)s.") % {"count": len(changed), "verb": verb},
                messages.SUCCESS,
            )
        for run_uuid, why in skipped.items():
            self.message_user(request, f"{run_uuid}: {why}", messages.WARNING)

    def get_urls(self) -> list[Any]:
        extra = [
            path(
                "map-gpu/",
                self.admin_site.admin_view(self.map_gpu_view),
                name="benchmarks_app_rawsubmission_map_gpu",
            )
        ]
        return extra + super().get_urls()

    def map_gpu_view(self, request: HttpRequest) -> HttpResponse:
        """Map an unknown GPU name: creates the alias (origin curator) and re-ingests held submissions."""
        if not self.has_change_permission(request):
            return HttpResponse(status=403)
        form = GpuMapForm(request.POST or None, initial={"name": request.GET.get("name", "")})
        if request.method == "POST" and form.is_valid():
            summary = gpu_name_map(name=form.cleaned_data["name"], gpu=form.cleaned_data["gpu"], moderator=request.user)  # type: ignore[arg-type]
            self.message_user(
                request,
                _("%(name)s now maps to %(gpu)s; %(count)d held submission(s) queued for ingest.")
                % {"name": summary.alias, "gpu": summary.gpu_slug, "count": summary.reingested},
                messages.SUCCESS,
            )
            return HttpResponseRedirect(reverse("admin:benchmarks_app_rawsubmission_changelist") + "?queue=on_hold")
        held = RawSubmission.objects.filter(status=SubmissionStatus.ON_HOLD).exclude(gpu_name_reported="")
        names = sorted(set(held.values_list("gpu_name_reported", flat=True)))
        context = {
            **self.admin_site.each_context(request),
            "title": _("Map a GPU name to a catalogue GPU"),
            "form": form,
            "held_names": names,
            "opts": self.model._meta,
        }
        return render(request, "benchmarks_app/admin_map_gpu.html", context)


@admin.register(Workload)
class WorkloadAdmin(SimpleHistoryAdmin):
    list_display = ("slug", "version", "name", "unit", "higher_is_better", "category")
    list_filter = ("category",)
    search_fields = ("slug", "name")
    # From the client's workloads.json (seed_workloads), which the client's code must match.
    readonly_fields = ("submission_rules",)


@admin.register(BenchmarkResult)
class BenchmarkResultAdmin(admin.ModelAdmin):
    list_display = ("gpu", "comparison_label", "value", "spread_pct", "trust", "measured_at", "submission")
    list_filter = ("trust", "precision", "workload")
    search_fields = ("gpu__name", "comparison_label", "source")
    list_select_related = ("gpu", "submission")
    readonly_fields = [f.name for f in BenchmarkResult._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ResultAggregate)
class ResultAggregateAdmin(admin.ModelAdmin):
    list_display = (
        "gpu",
        "comparison_label",
        "median",
        "n",
        "distinct_submitters",
        "q1",
        "q3",
        "has_lab",
        "updated_at",
    )
    list_filter = ("has_lab", "precision", "workload")
    search_fields = ("gpu__name", "comparison_label")
    list_select_related = ("gpu",)
    readonly_fields = [f.name for f in ResultAggregate._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(LabImportRow)
class LabImportRowAdmin(admin.ModelAdmin):
    """Rows of the lab tables that are not results: unmatched names to map, heterogeneous systems,
    out-of-memory configurations. Written by the importers only."""

    list_display = ("dataset", "outcome", "name_reported", "gpu", "gpu_count", "workload_slug", "reason")
    list_filter = ("outcome", "dataset")
    search_fields = ("name_reported", "reason", "source")
    readonly_fields = [f.name for f in LabImportRow._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    """MLPerf Training results as imported (import_mlperf_training); unmatched accelerators have no GPU."""

    list_display = ("round", "benchmark", "submitter", "system_name", "accelerator_name", "gpu", "gpus",
                    "time_to_train_min", "mfu")  # fmt: skip
    list_filter = ("round", "benchmark", "division")
    search_fields = ("submitter", "system_name", "accelerator_name")
    readonly_fields = [f.name for f in TrainingRun._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(TrainingMfuFit)
class TrainingMfuFitAdmin(admin.ModelAdmin):
    """The training MFU per architecture, fitted when the MLPerf Training runs are imported."""

    list_display = ("architecture", "mfu", "runs", "low", "high", "fitted_at")
    readonly_fields = [f.name for f in TrainingMfuFit._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
