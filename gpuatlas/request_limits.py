"""Request bodies over the size limit: a 413 that says so, logged as a warning; query strings
with a NUL byte in the admin (its changelist filters): a 400 that says so.

Django refuses a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` only when something reads it (the
CSRF check reads every form POST) and then answers a bare 400 and logs ``RequestDataTooBig``
at ERROR with a traceback: an oversized upload is the client's mistake, not the server's. This
middleware refuses such a request from its Content-Length, before anything reads the body,
with JSON in the API's error shape under /api/ and a page elsewhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
ADMIN_PREFIX = "/admin/"


def body_too_large_response(request: HttpRequest, *, size: int | None) -> HttpResponse:
    """413: JSON (``detail`` and ``errors``, as api.exceptions) for the API, a page for the site."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    logger.warning(
        "request body of %s bytes refused: the limit is %s bytes",
        size if size is not None else "more than the limit of",
        limit,
        extra={"method": request.method, "path": request.path, "content_length": size},
    )
    if size is not None:
        reason = _("the request body is %(size)d bytes; the limit is %(limit)d bytes") % {"size": size, "limit": limit}
    else:
        reason = _("the request body is over the limit of %(limit)d bytes") % {"limit": limit}
    if request.path.startswith(API_PREFIX):
        return JsonResponse(
            {"detail": _("Request body too large: %(reason)s.") % {"reason": reason}, "errors": {"$": [reason]}},
            status=413,
        )
    context = {"reason": reason, "submission_limit": settings.SUBMISSION_MAX_BYTES}
    return render(request, "413.html", context, status=413)


class RequestBodyLimitMiddleware:
    """413 for a body over DATA_UPLOAD_MAX_MEMORY_SIZE, decided from Content-Length before it is read.

    Listed after the session, locale, authentication and message middleware (the page needs
    them) and before any view reads the body: the CSRF check does so in ``process_view``,
    which runs only after every middleware's ``__call__``.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        length = request.META.get("CONTENT_LENGTH") or ""
        if limit is not None and length.isdigit() and int(length) > limit:
            return body_too_large_response(request, size=int(length))
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        # A body whose announced length was within the limit but that still read as too large.
        if isinstance(exception, RequestDataTooBig):
            return body_too_large_response(request, size=None)
        return None


def query_with_nul_response(request: HttpRequest, *, name: str) -> HttpResponse:
    """400 page: PostgreSQL cannot compare a string holding NUL, so no filter may receive one."""
    shown = name.replace("\x00", "\\0")
    reason = _("the query parameter “%(name)s” holds a NUL byte") % {"name": shown}
    logger.warning("query with a NUL byte refused", extra={"path": request.path, "parameter": shown})
    return render(request, "400.html", {"reason": reason}, status=400)


class QueryNulMiddleware:
    """400 for an admin request whose query string holds a NUL byte (in a name or a value).

    The admin's changelist filters and search would pass it to PostgreSQL, which refuses it (a
    500). The API's filters and the site's forms name such a parameter in their own answer
    (api/filters/base.py, the form errors), so they are left to do so.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "%00" in request.META.get("QUERY_STRING", "") and request.path.startswith(ADMIN_PREFIX):
            for name, values in request.GET.lists():
                if "\x00" in name or any("\x00" in value for value in values):
                    return query_with_nul_response(request, name=name)
        return self.get_response(request)
