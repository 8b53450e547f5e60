"""Base classes of API v1 views: strict errors, throttles, the fast renderer, values() rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import filters as drf_filters
from rest_framework import generics, permissions, serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.exceptions import api_exception_handler
from api.filters import ApiFilterBackend, StrictOrderingFilter, StrictSearchFilter
from api.renderers import OrjsonRenderer
from api.serializers import ErrorSerializer, PingSerializer
from api.throttling import DEFAULT_THROTTLES
from gpuatlas.data_version import data_version_cache_seconds, data_version_cached

ERROR_400 = OpenApiResponse(ErrorSerializer, description="An invalid parameter; `errors` names it.")
ERROR_404 = OpenApiResponse(ErrorSerializer, description="Not found, or an invalid cursor.")
ERROR_429 = OpenApiResponse(ErrorSerializer, description="Throttled; see the Retry-After header.")
READ_ERRORS = {
    400: ERROR_400,
    401: OpenApiResponse(ErrorSerializer, description="Invalid token."),
    404: ERROR_404,
    429: ERROR_429,
}


def query_parameters_known(view: Any) -> frozenset[str]:
    """The query parameters a view reads: its filterset's, search, ordering, pagination, and its own.

    The same sources the OpenAPI document lists them from, so the two agree.
    """
    names = set(view.query_parameters or ())
    backends = list(getattr(view, "filter_backends", None) or [])
    filterset_class = getattr(view, "filterset_class", None)
    if filterset_class is not None and ApiFilterBackend in backends:
        names.update(filterset_class.base_filters)
    for backend in backends:
        if issubclass(backend, drf_filters.SearchFilter | drf_filters.OrderingFilter):
            names.update(parameter["name"] for parameter in backend().get_schema_operation_parameters(view))
    pagination_class = getattr(view, "pagination_class", None)
    if pagination_class is not None:
        names.update(parameter["name"] for parameter in pagination_class().get_schema_operation_parameters(view))
    return frozenset(names)


class ApiMixin:
    """Everything every v1 endpoint shares, set per class so settings.py stays untouched."""

    permission_classes: Any = [permissions.AllowAny]
    throttle_classes: Any = list(DEFAULT_THROTTLES)
    renderer_classes: Any = [OrjsonRenderer]
    # Query parameters the view reads itself, beyond its filterset, search, ordering and
    # pagination. Any other is a 400 naming it: a misspelt filter (``?max_price=-1``) must not
    # silently answer the unfiltered list. None: not checked.
    query_parameters: ClassVar[frozenset[str] | None] = frozenset()
    # Families of parameters named by a prefix (``gpu_price[<gpu slug>]``), validated by the view.
    query_parameter_prefixes: ClassVar[tuple[str, ...]] = ()

    def get_exception_handler(self) -> Callable[..., Response | None]:
        return api_exception_handler

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]  # APIView.initial: auth, permissions, throttles
        if self.query_parameters is None:
            return
        known = query_parameters_known(self)
        prefixes = self.query_parameter_prefixes
        unknown = sorted(
            name for name in request.query_params if name not in known and not (prefixes and name.startswith(prefixes))
        )
        if unknown:
            if known:
                message = str(_("Unknown parameter; this endpoint takes: %(names)s.")) % {
                    "names": ", ".join(sorted(known))
                }
            else:
                message = str(_("Unknown parameter; this endpoint takes no query parameters."))
            raise ValidationError({name[:100]: [message] for name in unknown})


class _NotStored(Exception):
    """A response that is sent but not cached (anything but a 200 DRF response)."""

    def __init__(self, response: HttpResponse) -> None:
        self.response = response


def response_cached(
    view: APIView, request: Request, produce: Callable[[], Response], *, depends_on: object = None
) -> HttpResponse:
    """The response of a public, user-independent GET, cached as the bytes sent.

    Cached with ``data_version_cached`` under the view, the full URL (scheme, host, path and
    query string: pagination links repeat them) and the negotiated media type (an ``indent``
    parameter changes the bytes); the language and the data version are in the key too, and
    ``depends_on``: what else the answer reads that moves no data version (its repr). A hit
    skips parameter checks, queries, serializers and rendering; only a 200 is stored, so a bad
    parameter is refused on every request. Authentication and throttles have run before the handler.
    """
    if data_version_cache_seconds() <= 0:
        return produce()  # DRF renders it

    def render() -> tuple[bytes, dict[str, str]]:
        response = produce()
        if response.status_code != 200 or not isinstance(response, Response):
            raise _NotStored(response)
        context = {"request": request, "response": response, "view": view}
        body = OrjsonRenderer().render(response.data, request.accepted_media_type, context)
        return body, {name: value for name, value in response.items() if name.lower() != "content-type"}

    # The query in one order (a reordered or repeated parameter is the same list): unknown
    # parameters were refused before (ApiMixin.initial), and at most DATA_VERSION_CACHE_VARIANTS
    # queries of a view are stored per data version.
    query = sorted((name, tuple(values)) for name, values in request.query_params.lists())
    identity = (
        type(view).__name__,
        request.build_absolute_uri(request.path),
        query,
        request.accepted_media_type,
        depends_on,
    )
    try:
        body, headers = data_version_cached(f"api-body:{type(view).__name__}", identity, render, bounded=True)
    except _NotStored as refused:
        return refused.response
    return _bytes_response(body, headers)


def _bytes_response(body: bytes, headers: dict[str, str]) -> HttpResponse:
    response = HttpResponse(body, content_type=OrjsonRenderer.media_type)
    for name, value in headers.items():
        response[name] = value
    return response


class CachedListMixin:
    """A list endpoint whose GET responses are cached by ``response_cached``."""

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Any:  # an HttpResponse (ListAPIView says Response)
        return response_cached(
            self,  # type: ignore[arg-type]
            request,
            lambda: super(CachedListMixin, self).get(request, *args, **kwargs),  # type: ignore[misc]
        )


_COLUMNS: dict[type, dict[str, str]] = {}


def serializer_columns(serializer_class: type[serializers.BaseSerializer]) -> dict[str, str]:
    """A serializer's fields: public name -> the ORM path of ``values()`` it is read from (the
    field's ``source``). Nested serializers are left out: they are not columns."""
    columns = _COLUMNS.get(serializer_class)
    if columns is None:
        fields = serializer_class().fields  # type: ignore[attr-defined]  # a Serializer: its bound fields
        columns = _COLUMNS[serializer_class] = {
            name: str(field.source)
            for name, field in fields.items()
            if not isinstance(field, serializers.BaseSerializer)
        }
    return columns


class ValuesListView(ApiMixin, generics.ListAPIView):
    """A list served from ``values()``: one query per page, rendered by ``serializer_class``.

    The serializer declares the columns: each field's ``source`` is the ORM path (or an
    annotation of ``base_queryset``) its value is read from, so the rows hold exactly what it sends.
    ``ordering_map`` maps public sort keys to ORM paths; ``ordering`` is the default.
    """

    ordering_map: ClassVar[dict[str, str]] = {}
    ordering: ClassVar[list[str]] = ["id"]
    filter_backends = [ApiFilterBackend, StrictSearchFilter, StrictOrderingFilter]

    def base_queryset(self) -> QuerySet:
        raise NotImplementedError

    def get_queryset(self) -> QuerySet:
        return self.base_queryset()

    def _value_paths(self) -> list[str]:
        paths = dict.fromkeys(serializer_columns(self.get_serializer_class()).values())
        paths.update(dict.fromkeys(path for path in self.ordering_map.values()))
        paths["id"] = None
        return list(paths)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        queryset = self.filter_queryset(self.get_queryset()).values(*self._value_paths())
        if self.pagination_class is None:
            return Response(self.get_serializer(queryset, many=True).data)
        page = self.paginate_queryset(queryset) or []
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class PingView(ApiMixin, APIView):
    """The smallest DRF endpoint, with the same authentication, throttles and renderer as the rest.

    perf/bench_api.py reports each endpoint's latency as a ratio to this one.
    """

    @extend_schema(responses={200: PingSerializer, 429: ERROR_429}, summary=_("Liveness of the API"))
    def get(self, request: Request) -> Response:
        return Response({"ok": True})


class ApiNotFoundView(ApiMixin, APIView):
    """Any other path under /api/v1/: a JSON 404 instead of the site's HTML page."""

    throttle_classes = []
    query_parameters = None  # no endpoint here: a 404 whatever the query

    def _not_found(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound(f"No API endpoint at {request.path}.")

    get = post = put = patch = delete = head = options = trace = _not_found
