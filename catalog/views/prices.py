"""Price pages: providers with their offer counts and freshness; the data-health page for curators."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from catalog.selectors.price_health import price_data_health, price_fetches_latest
from catalog.selectors.prices import price_status
from catalog.selectors.providers import providers_with_stats
from gpuatlas.data_version import data_version_cached
from gpuatlas.page_bodies import body_render, page_response
from gpuatlas.render_limits import page_renders_limited


@page_renders_limited
def provider_list_view(request: HttpRequest) -> HttpResponse:
    # The providers' table scans the offers, so it is rendered once per data version (price
    # imports and mapping changes move it); the fetch log below it is read fresh, as a failed
    # fetch changes no data.
    body = data_version_cached("page:providers", (), _providers_body)
    return page_response(
        request, template="catalog/provider_list.html", body=body, context={"fetches": price_fetches_latest()}
    )


def _providers_body() -> str:
    context = {"providers": providers_with_stats(), "status": price_status()}
    return body_render(template="catalog/provider_list.html", context=context)


@staff_member_required
def price_health_view(request: HttpRequest) -> HttpResponse:
    return render(request, "catalog/price_health.html", {"health": price_data_health()})
