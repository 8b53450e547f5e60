"""Price pages: providers with their offer counts and the freshness of their prices."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from catalog.selectors_prices import price_freshness, providers_with_stats


def provider_list_view(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "catalog/provider_list.html",
        {"providers": providers_with_stats(), "freshness": price_freshness()},
    )
