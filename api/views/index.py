"""/api/v1/: what the API offers, with links to its documentation and back to the site."""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema, inline_serializer
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.views.base import ApiMixin

# What each endpoint is for, by URL name; a new endpoint without a line here is listed with none.
ENDPOINT_PURPOSES = {
    "ping": _("Liveness of the API."),
    "gpu-list": _("GPUs in the catalogue, with filters."),
    "gpu-detail": _("One GPU with its figures and their sources."),
    "gpu-multi-gpu": _("One GPU's multi-GPU results: training scaling and all-reduce bandwidth by GPU count."),
    "architecture-list": _("GPU architectures and the tensor formats they support."),
    "provider-list": _("Cloud providers."),
    "offer-list": _("Current cloud offers with a per-GPU price."),
    "price-list": _("Price history: observations of offers over time."),
    "workload-list": _("Benchmark workloads."),
    "result-list": _("Individual benchmark results."),
    "aggregate-list": _("Per-GPU aggregates of trusted results."),
    "serving-point-list": _("Measured LLM serving points: tokens/s per GPU and per user, with their source."),
    "rankings": _("Rankings: performance, price and value per use case (the rankings page)."),
    "tiers": _("Tier list of a use case (the tiers page)."),
    "fit": _("Will a model fit, on how many GPUs, how long and at what cost."),
    "fit-serving": _(
        "What to serve a model on: the configuration with the lowest cost per million tokens at a speed per user."
    ),
    "fit-models": _("Hugging Face models imported into the fit calculator; POST an id to import one."),
    "submission-create": _("Submit a benchmark run (token required)."),
    "submission-detail": _("Status of a submission."),
    "submission-dry-run": _(
        "Check a benchmark run as a submission, storing nothing (token required); a CPU-only run is checked too."
    ),
    "watch-list": _("Your watches on a GPU price or a ranking figure; POST to add one (sign-in required)."),
    "watch-detail": _("One of your watches: read, change or delete it (sign-in required)."),
    "moderation-queue": _("Submissions awaiting a curator (staff)."),
    "moderation-approve": _("Approve flagged submissions (staff)."),
    "moderation-reject": _("Reject submissions (staff)."),
}
# Routes of the API that are not endpoints of data.
NOT_LISTED = frozenset({"index", "not-found", "schema", "docs", "redoc"})


def api_endpoints(patterns: list[URLPattern | URLResolver], *, prefix: str) -> list[dict[str, str]]:
    """Every named route of the API's URL patterns: name, path (with its parameters) and purpose."""
    out = []
    for pattern in patterns:
        name = getattr(pattern, "name", None)
        if not name or name in NOT_LISTED:
            continue
        out.append(
            {"name": name, "path": prefix + str(pattern.pattern), "purpose": str(ENDPOINT_PURPOSES.get(name, ""))}
        )
    return out


class ApiIndexView(ApiMixin, APIView):
    """The API's front page."""

    @extend_schema(
        summary=_("What the API offers"),
        tags=["index"],
        responses={
            200: inline_serializer(
                "ApiIndex",
                {
                    "name": serializers.CharField(),
                    "version": serializers.CharField(),
                    "site": serializers.CharField(),
                    "documentation": serializers.DictField(child=serializers.CharField()),
                    "endpoints": serializers.ListField(child=serializers.DictField(child=serializers.CharField())),
                },
            )
        },
    )
    def get(self, request: Request) -> Response:
        prefix = reverse("api:index")
        _namespace_prefix, resolver = get_resolver().namespace_dict["api"]
        data: dict[str, Any] = {
            "name": "GPU Atlas API",
            "version": "v1",
            "site": request.build_absolute_uri("/"),
            "documentation": {
                "swagger_ui": request.build_absolute_uri(reverse("api:docs")),
                "redoc": request.build_absolute_uri(reverse("api:redoc")),
                "openapi_schema": request.build_absolute_uri(reverse("api:schema")),
                "open_data": request.build_absolute_uri(reverse("dashboard:open-data")),
            },
            "endpoints": api_endpoints(resolver.url_patterns, prefix=prefix),
        }
        return Response(data)


class _InPageLanguage:
    """The documentation pages fetch the schema in the language the page is shown in."""

    def _get_schema_url(self, request: Any) -> str:
        url = super()._get_schema_url(request)  # type: ignore[misc]
        language = request.GET.get("lang") or get_language()
        if language and "lang=" not in url:
            url += ("&" if "?" in url else "?") + f"lang={language}"
        return url


class LocalisedSwaggerView(_InPageLanguage, SpectacularSwaggerSplitView):
    """Swagger UI with its start-up script served as a file of its own, so the CSP needs no inline script."""

    template_name = "api/swagger_ui.html"


class LocalisedRedocView(_InPageLanguage, SpectacularRedocView):
    """ReDoc with the system's fonts: the page loads nothing from another site."""

    template_name = "api/redoc.html"
