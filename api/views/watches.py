"""/api/v1/watches/: the caller's own price watches (token or session auth). POST creates one (the
same checks as the page: watches/validation.py), GET lists them, DELETE /api/v1/watches/<id>/
removes one. Another user's watch is a 404, never shown."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from api.parsers import BoundedJSONParser
from api.serializers import ErrorSerializer
from api.serializers_watches import WatchCreatedSerializer, WatchCreateSerializer, WatchSerializer
from api.throttling import DEFAULT_THROTTLES
from api.views.base import ERROR_404, ERROR_429, ApiMixin
from watches.selectors.lists import watch_of_user, watches_of_user
from watches.services.watches import watch_create, watch_delete
from watches.throttles import watch_create_throttles
from watches.validation import WatchInvalid

AUTH_ERRORS = {
    401: OpenApiResponse(ErrorSerializer, description="No or an invalid token."),
    403: OpenApiResponse(ErrorSerializer, description="Not signed in."),
    429: ERROR_429,
}


class WatchCreateThrottle(BaseThrottle):
    """Watches created per account and per client address (scope ``watch_create``), the page's
    throttles; reads are not counted."""

    def allow_request(self, request: Any, view: Any) -> bool:
        if request.method != "POST":
            return True
        waits = [t.wait() or 1.0 for t in watch_create_throttles(request) if not t.allow_request(request, view)]
        self._wait = max(waits, default=None)
        return not waits

    def wait(self) -> float | None:
        return getattr(self, "_wait", None)


class WatchListView(ApiMixin, APIView):
    """The caller's watches, and a new one."""

    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [*DEFAULT_THROTTLES, WatchCreateThrottle]
    parser_classes = [BoundedJSONParser]

    @extend_schema(summary="Your price watches", responses={200: WatchSerializer(many=True), **AUTH_ERRORS})
    def get(self, request: Request) -> Response:
        watches = watches_of_user(user=request.user)
        return Response(WatchSerializer(watches, many=True, context={"request": request}).data)

    @extend_schema(
        summary="Watch a price",
        description=(
            "A `price` watch follows the cheapest current offer of `gpu` (on-demand or `spot`, optionally "
            "`gpu_count`, `provider`, `region`) per GPU-hour; a `ranking` watch follows a ranking row's "
            "`cost_per_million_tokens` or `perf_per_dollar` for the question in `query` (the parameters of "
            "/api/v1/rankings/), for `gpu` or, without it, the best row. It alerts (email, webhook, Atom feed) "
            "each time the figure crosses `threshold`, and again only after it has gone back. The figure is "
            "read at creation: a watch already past its threshold alerts only after the next crossing. A "
            "webhook must resolve to public addresses only. `webhook_secret` is in this response only. At most "
            "WATCHES_PER_ACCOUNT_MAX (50) watches per account; creation is throttled (THROTTLE_WATCH_CREATE)."
        ),
        request=WatchCreateSerializer,
        responses={
            201: WatchCreatedSerializer,
            400: OpenApiResponse(ErrorSerializer, description="Invalid; `errors` names each field with its reason."),
            **AUTH_ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        given = WatchCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            watch, secret = watch_create(user=request.user, spec=given.spec())  # type: ignore[arg-type]
        except WatchInvalid as invalid:
            raise ValidationError({name: [reason] for name, reason in invalid.errors.items()}) from None
        shown = watch_of_user(user=request.user, watch_id=watch.pk)
        body = WatchCreatedSerializer(shown, context={"request": request}).data
        return Response({**body, "webhook_secret": secret}, status=status.HTTP_201_CREATED)


class WatchDetailView(ApiMixin, APIView):
    """One of the caller's watches."""

    permission_classes = [permissions.IsAuthenticated]

    def _own(self, request: Request, watch_id: int) -> Any:
        watch = watch_of_user(user=request.user, watch_id=watch_id)
        if watch is None:
            raise Http404("No such watch on your account.")
        return watch

    @extend_schema(summary="One of your watches", responses={200: WatchSerializer, 404: ERROR_404, **AUTH_ERRORS})
    def get(self, request: Request, watch_id: int) -> Response:
        return Response(WatchSerializer(self._own(request, watch_id), context={"request": request}).data)

    @extend_schema(summary="Delete one of your watches", responses={204: None, 404: ERROR_404, **AUTH_ERRORS})
    def delete(self, request: Request, watch_id: int) -> Response:
        if not watch_delete(user=request.user, watch_id=watch_id):  # type: ignore[arg-type]
            raise Http404("No such watch on your account.")
        return Response(status=status.HTTP_204_NO_CONTENT)
