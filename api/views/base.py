"""Base classes of API v1 views: strict errors, throttles, the fast renderer, values() rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, permissions
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.exceptions import api_exception_handler
from api.filters import ApiFilterBackend, StrictOrderingFilter, StrictSearchFilter
from api.renderers import OrjsonRenderer
from api.serializers import ErrorSerializer, PingSerializer
from api.throttling import DEFAULT_THROTTLES

ERROR_400 = OpenApiResponse(ErrorSerializer, description="An invalid parameter; `errors` names it.")
ERROR_404 = OpenApiResponse(ErrorSerializer, description="Not found, or an invalid cursor.")
ERROR_429 = OpenApiResponse(ErrorSerializer, description="Throttled; see the Retry-After header.")
READ_ERRORS = {
    400: ERROR_400,
    401: OpenApiResponse(ErrorSerializer, description="Invalid token."),
    404: ERROR_404,
    429: ERROR_429,
}


class ApiMixin:
    """Everything every v1 endpoint shares, set per class so settings.py stays untouched."""

    permission_classes: Any = [permissions.AllowAny]
    throttle_classes: Any = list(DEFAULT_THROTTLES)
    renderer_classes: Any = [OrjsonRenderer]

    def get_exception_handler(self) -> Callable[..., Response | None]:
        return api_exception_handler


class ValuesListView(ApiMixin, generics.ListAPIView):
    """A list served from ``values()``: one query per page, rows renamed to public names.

    ``fields`` maps public names to ORM paths (or annotations of ``base_queryset``).
    ``ordering_map`` maps public sort keys to ORM paths; ``ordering`` is the default.
    """

    fields: ClassVar[dict[str, str]] = {}
    ordering_map: ClassVar[dict[str, str]] = {}
    ordering: ClassVar[list[str]] = ["id"]
    filter_backends = [ApiFilterBackend, StrictSearchFilter, StrictOrderingFilter]

    def base_queryset(self) -> QuerySet:
        raise NotImplementedError

    def get_queryset(self) -> QuerySet:
        return self.base_queryset()

    def shape(self, row: dict[str, Any]) -> dict[str, Any]:
        return {name: row[path] for name, path in self.fields.items()}

    def _value_paths(self) -> list[str]:
        paths = dict.fromkeys(self.fields.values())
        paths.update(dict.fromkeys(path for path in self.ordering_map.values()))
        paths["id"] = None
        return list(paths)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        queryset = self.filter_queryset(self.get_queryset()).values(*self._value_paths())
        if self.pagination_class is None:
            return Response([self.shape(row) for row in queryset])
        page = self.paginate_queryset(queryset) or []
        return self.get_paginated_response([self.shape(row) for row in page])


class PingView(ApiMixin, APIView):
    """The smallest DRF endpoint, with the same authentication, throttles and renderer as the rest.

    perf/bench_api.py reports each endpoint's latency as a ratio to this one.
    """

    @extend_schema(responses={200: PingSerializer, 429: ERROR_429}, summary="Liveness of the API")
    def get(self, request: Request) -> Response:
        return Response({"ok": True})


class ApiNotFoundView(ApiMixin, APIView):
    """Any other path under /api/v1/: a JSON 404 instead of the site's HTML page."""

    throttle_classes = []

    def _not_found(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound(f"No API endpoint at {request.path}.")

    get = post = put = patch = delete = head = options = trace = _not_found
