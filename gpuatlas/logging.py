"""Structured logs: one JSON object per line, each carrying the request id of the work it belongs to.

The request id comes from the caller's ``X-Request-ID`` header when it is well formed (so a
load balancer's id follows the request through), is generated otherwise, is echoed in the
response, travels with Celery tasks enqueued during the request (see ``celery_signals``) and is
added to every log record by :class:`RequestContextFilter`.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from django.http import HttpRequest, HttpResponse

REQUEST_ID_HEADER = "X-Request-ID"
# Accept a caller's id only if it cannot smuggle anything into logs or headers.
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("gpuatlas_request_id", default=None)
_task_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "gpuatlas_task_context", default=None
)

request_logger = logging.getLogger("gpuatlas.request")
# Probes and scrapes arrive every few seconds; at INFO they would drown the real traffic.
_PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

# Attributes every LogRecord has; anything else was passed through ``extra=`` and is emitted.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def request_id_get() -> str | None:
    """The id of the request (or of the request that enqueued the running task), if any."""
    return _request_id.get()


def request_id_normalise(raw: str | None) -> str:
    """The caller's id if it is safe to log and echo, else a fresh one."""
    if raw and _VALID_REQUEST_ID.match(raw):
        return raw
    return uuid.uuid4().hex


@contextmanager
def log_context(*, request_id: str | None = None, **task_fields: Any) -> Iterator[None]:
    """Bind a request id and task fields (task name, submission id) to logs emitted inside."""
    rid_token = _request_id.set(request_id)
    task_token = _task_context.set({k: v for k, v in task_fields.items() if v is not None} or None)
    try:
        yield
    finally:
        _request_id.reset(rid_token)
        _task_context.reset(task_token)


def log_context_enter(*, request_id: str | None, **task_fields: Any) -> tuple[contextvars.Token, contextvars.Token]:
    """Non-``with`` form for signal handlers that start and end in different callbacks."""
    return (
        _request_id.set(request_id),
        _task_context.set({k: v for k, v in task_fields.items() if v is not None} or None),
    )


def log_context_exit(tokens: tuple[contextvars.Token, contextvars.Token]) -> None:
    rid_token, task_token = tokens
    try:
        _request_id.reset(rid_token)
        _task_context.reset(task_token)
    except ValueError:
        # Token from another context (a task ended in a different thread): clear instead.
        _request_id.set(None)
        _task_context.set(None)


class RequestContextFilter(logging.Filter):
    """Adds ``request_id`` (and the running task's fields) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _request_id.get()
        task_fields = _task_context.get()
        if task_fields:
            for key, value in task_fields.items():
                if not hasattr(record, key):
                    setattr(record, key, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request id, extras, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key in _RECORD_ATTRIBUTES or key.startswith("_"):
                continue
            # Django attaches the request object to some records; it is not JSON and says nothing new.
            if key == "request" or (key == "status_code" and "status" in entry):
                continue
            entry[key] = value
        if entry.get("request_id") is None:
            entry.pop("request_id", None)
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class RequestIdMiddleware:
    """Sets the request id for the duration of a request, echoes it and logs one line per request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_normalise(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id  # type: ignore[attr-defined]
        started = time.perf_counter()
        token = _request_id.set(request_id)
        try:
            response = self.get_response(request)
            response[REQUEST_ID_HEADER] = request_id
            request_logger.log(
                logging.DEBUG if request.path in _PROBE_PATHS else logging.INFO,
                "%s %s %s",
                request.method,
                request.path,
                response.status_code,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    # The peer's address: behind a proxy, the proxy's (forwarded headers are forgeable).
                    "remote_addr": request.META.get("REMOTE_ADDR", ""),
                },
            )
            return response
        finally:
            _request_id.reset(token)
