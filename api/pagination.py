"""Pagination that refuses bad page sizes instead of silently clamping them.

Large, append-heavy lists (offers, prices, results) use keyset cursor pagination: O(page) per
request at any depth and stable under inserts. DRF's CursorPagination seeks on the first ordering
field only and falls back to an offset capped at 1,000 for ties, which breaks on price history
(one snapshot writes thousands of observations with the same timestamp); this one seeks on the
full ordering, always ending in the primary key. Cursors are signed, so a tampered one is refused
instead of reaching the database as a malformed value.

Small catalogue lists use limit/offset, so they can be sorted by nullable columns too.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from django.core import signing
from django.db.models import Q, QuerySet
from django.utils.translation import gettext_lazy as _
from rest_framework import pagination
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

_CURSOR_SALT = "api.cursor.v1"
# No timestamp in the token: a cursor for one position is the same string every time, so a cached
# page and a freshly computed one are byte-for-byte equal (signing.dumps would stamp the second).
_CURSOR_SIGNER = signing.Signer(salt=_CURSOR_SALT)


def bounded_int(request: Request, name: str, *, default: int, minimum: int, maximum: int) -> int:
    """An integer query parameter within [minimum, maximum]; anything else is a 400 naming it."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: [_("Must be an integer.")]}) from None
    if value < minimum or value > maximum:
        raise ValidationError(
            {name: [_("Must be between %(minimum)d and %(maximum)d.") % {"minimum": minimum, "maximum": maximum}]}
        )
    return value


def _keyset_filter(ordering: list[str], values: list[Any], *, after: bool) -> Q:
    """Rows strictly after (or before) ``values`` in ``ordering``: (a > x) | (a = x & b > y) | ..."""
    condition = Q()
    for index, term in enumerate(ordering):
        name, descending = term.lstrip("-"), term.startswith("-")
        lookup = "gt" if descending != after else "lt"
        clause = Q(**{f"{name}__{lookup}": values[index]})
        for previous, value in zip(ordering[:index], values[:index], strict=True):
            clause &= Q(**{previous.lstrip("-"): value})
        condition |= clause
    return condition


def _reverse(ordering: list[str]) -> list[str]:
    return [term[1:] if term.startswith("-") else f"-{term}" for term in ordering]


class KeysetCursorPagination(pagination.BasePagination):
    """Cursor pagination over the full ordering; rows must be dicts carrying every ordering field."""

    cursor_query_param = "cursor"
    page_size_query_param = "page_size"
    page_size = 50
    max_page_size = 500
    default_ordering = ("id",)

    def get_ordering(self, request: Request, view: Any) -> list[str]:
        ordering: list[str] = []
        for backend in getattr(view, "filter_backends", []):
            if hasattr(backend, "get_ordering"):
                ordering = list(backend().get_ordering(request, None, view) or [])
                break
        if not ordering:
            ordering = list(getattr(view, "ordering", None) or self.default_ordering)
        if ordering[-1].lstrip("-") != "id":
            ordering.append("-id" if ordering[0].startswith("-") else "id")
        return ordering

    def decode_cursor(self, request: Request, ordering: list[str]) -> tuple[list[Any], bool] | None:
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is None:
            return None
        try:
            data = _CURSOR_SIGNER.unsign_object(encoded)
            if data["o"] != ordering or len(data["p"]) != len(ordering):
                raise ValueError("cursor was made for another ordering")
            return list(data["p"]), bool(data["r"])
        except (signing.BadSignature, ValueError, KeyError, TypeError):
            raise NotFound(
                _(
                    "Invalid cursor: pass the 'cursor' parameter exactly as given in a previous response's "
                    "next/previous link, with the same ordering."
                )
            ) from None

    def encode_cursor(self, row: dict[str, Any], *, reverse: bool) -> str:
        position = [row[term.lstrip("-")] for term in self.ordering]
        position = [value if isinstance(value, int | bool) else str(value) for value in position]
        token = _CURSOR_SIGNER.sign_object({"o": self.ordering, "p": position, "r": int(reverse)})
        return replace_query_param(self.base_url, self.cursor_query_param, token)

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> list[dict[str, Any]]:  # type: ignore[override]
        self.page_size = bounded_int(
            request, self.page_size_query_param, default=self.page_size, minimum=1, maximum=self.max_page_size
        )
        self.base_url = request.build_absolute_uri()
        self.ordering = self.get_ordering(request, view)
        cursor = self.decode_cursor(request, self.ordering)
        position, reverse = cursor if cursor is not None else (None, False)

        queryset = queryset.order_by(*(_reverse(self.ordering) if reverse else self.ordering))
        if position is not None:
            queryset = queryset.filter(_keyset_filter(self.ordering, position, after=not reverse))
        rows = list(queryset[: self.page_size + 1])
        has_more = len(rows) > self.page_size
        page = rows[: self.page_size]
        if reverse:
            page.reverse()

        self.next_link: str | None = None
        self.previous_link: str | None = None
        if page:
            # Forward: more rows after this page if we fetched one extra; rows before exist if we
            # came here by a cursor. Backward: the mirror image.
            if (has_more and not reverse) or (reverse and position is not None):
                self.next_link = self.encode_cursor(page[-1], reverse=False)
            if (position is not None and not reverse) or (reverse and has_more):
                self.previous_link = self.encode_cursor(page[0], reverse=True)
        elif position is not None:
            first = remove_query_param(self.base_url, self.cursor_query_param)
            self.previous_link = first if not reverse else None
        return page

    def get_paginated_response(self, data: list[dict[str, Any]]) -> Response:
        return Response(OrderedDict([("next", self.next_link), ("previous", self.previous_link), ("results", data)]))

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        link = {"type": "string", "nullable": True, "format": "uri"}
        return {
            "type": "object",
            "required": ["next", "previous", "results"],
            "properties": {"next": link, "previous": link, "results": schema},
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "Opaque position, copied from a previous response's next/previous link.",
                "schema": {"type": "string"},
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "description": f"Rows per page (default {self.page_size}, at most {self.max_page_size}).",
                "schema": {"type": "integer", "minimum": 1, "maximum": self.max_page_size},
            },
        ]


class StrictLimitOffsetPagination(pagination.LimitOffsetPagination):
    default_limit = 50
    max_limit = 1000
    max_offset = 10_000_000

    def get_limit(self, request: Request) -> int:
        return bounded_int(
            request, self.limit_query_param, default=self.default_limit, minimum=1, maximum=self.max_limit
        )

    def get_offset(self, request: Request) -> int:
        return bounded_int(request, self.offset_query_param, default=0, minimum=0, maximum=self.max_offset)

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        link = {"type": "string", "nullable": True, "format": "uri"}
        return {
            "type": "object",
            "required": ["count", "next", "previous", "results"],
            "properties": {"count": {"type": "integer"}, "next": link, "previous": link, "results": schema},
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.limit_query_param,
                "required": False,
                "in": "query",
                "description": f"Rows per page (default {self.default_limit}, at most {self.max_limit}).",
                "schema": {"type": "integer", "minimum": 1, "maximum": self.max_limit},
            },
            {
                "name": self.offset_query_param,
                "required": False,
                "in": "query",
                "description": "Rows to skip.",
                "schema": {"type": "integer", "minimum": 0, "maximum": self.max_offset},
            },
        ]
