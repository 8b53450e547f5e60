"""Admin support for curators: mapping unmatched GPU names (UnmatchedGpuNameAdmin) and offers whose
form factor the source does not state (OfferAdmin)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from catalog.models import Gpu, Offer, UnmatchedGpuName
from catalog.services.prices import offer_gpu_map, unmatched_gpu_name_resolve


class MapToGpuForm(forms.Form):
    gpu = forms.ModelChoiceField(
        queryset=Gpu.objects.order_by("-is_curated", "name"),
        label=_("Catalogue GPU"),
        help_text=_("An alias is created for each selected name and its offers are linked to this GPU."),
    )


def map_unmatched_to_gpu(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[UnmatchedGpuName]
) -> HttpResponse | None:
    """Admin action: choose a GPU, then alias every selected name to it and relink their offers."""
    if "apply" in request.POST:
        form = MapToGpuForm(request.POST)
        if form.is_valid():
            gpu = form.cleaned_data["gpu"]
            relinked = 0
            for unmatched in queryset:
                relinked += unmatched_gpu_name_resolve(unmatched=unmatched, gpu=gpu)
            modeladmin.message_user(
                request,
                ngettext(
                    "%(names)d name mapped to %(gpu)s; %(offers)d offer relinked.",
                    "%(names)d names mapped to %(gpu)s; %(offers)d offers relinked.",
                    relinked,
                )
                % {"names": queryset.count(), "gpu": gpu.name, "offers": relinked},
                messages.SUCCESS,
            )
            return None
    else:
        form = MapToGpuForm()
    context: dict[str, Any] = {
        **modeladmin.admin_site.each_context(request),
        "title": _("Map GPU names to a catalogue GPU"),
        "names": queryset,
        "form": form,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "action_name": request.POST.get("action", "map_to_gpu"),
        "opts": modeladmin.model._meta,
    }
    return TemplateResponse(request, "admin/catalog/unmatchedgpuname/map_to_gpu.html", context)


map_unmatched_to_gpu.short_description = _("Map selected names to a catalogue GPU (alias + relink offers)")  # type: ignore[attr-defined]


class MapOfferToVariantForm(forms.Form):
    gpu = forms.ModelChoiceField(
        queryset=Gpu.objects.exclude(family="").order_by("family", "name"),
        label=_("GPU variant"),
        help_text=_("Every region of the selected listings, now and in later snapshots, takes this GPU."),
    )
    note = forms.CharField(
        label=_("Why"),
        help_text=_("Where the provider says the form factor (a page address or a message)."),
        max_length=500,
    )


def map_offers_to_variant(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Offer]
) -> HttpResponse | None:
    """Admin action: choose the GPU variant of offers whose source leaves it open."""
    if "apply" in request.POST:
        form = MapOfferToVariantForm(request.POST)
        if form.is_valid():
            relinked = offer_gpu_map(
                offers=queryset, gpu=form.cleaned_data["gpu"], user=request.user, note=form.cleaned_data["note"]
            )
            modeladmin.message_user(
                request,
                ngettext("%(n)d offer mapped to %(gpu)s.", "%(n)d offers mapped to %(gpu)s.", relinked)
                % {"n": relinked, "gpu": form.cleaned_data["gpu"].name},
                messages.SUCCESS,
            )
            return None
    else:
        first = queryset.select_related("gpu").first()
        form = MapOfferToVariantForm(initial={"gpu": first.gpu_id if first else None})
    context: dict[str, Any] = {
        **modeladmin.admin_site.each_context(request),
        "title": _("Map offers to a GPU variant"),
        "names": queryset,
        "form": form,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "action_name": request.POST.get("action", "map_to_variant"),
        "opts": modeladmin.model._meta,
    }
    return TemplateResponse(request, "admin/catalog/unmatchedgpuname/map_to_gpu.html", context)
