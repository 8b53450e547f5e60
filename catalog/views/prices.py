"""Price pages: providers with their offer counts and freshness; the data-health page for curators."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from catalog.selectors.price_health import price_data_health, price_fetches_latest
from catalog.selectors.prices import price_status
from catalog.selectors.providers import providers_with_stats
from gpuatlas.data_version import compute_spend
from gpuatlas.render_limits import page_renders_limited


@page_renders_limited
def provider_list_view(request: HttpRequest) -> HttpResponse:
    compute_spend()  # every provider's offer counts, read on every request
    return render(
        request,
        "catalog/provider_list.html",
        {
            "providers": providers_with_stats(),
            "status": price_status(),
            "fetches": price_fetches_latest(),
        },
    )


@staff_member_required
def price_health_view(request: HttpRequest) -> HttpResponse:
    return render(request, "catalog/price_health.html", {"health": price_data_health()})
