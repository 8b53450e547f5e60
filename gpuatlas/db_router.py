"""Read-replica routing: reads go to the ``replica`` alias, writes to ``default`` (the primary).

Active only when ``DATABASE_REPLICA_URL`` is set (settings then add the alias and this router).

Replication lag: a streaming replica applies the primary's changes a few milliseconds to
seconds later (more under heavy writes, a long query on the replica, or a network hiccup).
A read sent there may not see a write that just committed. So reads stay on the primary when
their freshness matters:

- inside a transaction on the primary (``transaction.atomic()``): reads in it see its own
  writes and take the locks they ask for (``select_for_update`` is always a write query);
- for the rest of a web request after it wrote anything (``PrimaryPinMiddleware`` resets the
  pin per request), so "submit, then show my submission" reads what was just written;
- for the whole of a Celery task (``celery_signals`` pins it): tasks are enqueued on commit and
  read the row their producer has just written;
- inside ``with primary_pinned():`` wherever else code needs it.

What stays on the replica and may be a little stale: anonymous page views and API reads
(rankings, catalogue, charts), the metrics collector. Those tolerate seconds of lag. Monitor the
lag with ``SELECT now() - pg_last_xact_replay_timestamp()`` on the replica (docs/scaling.md).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections
from django.http import HttpRequest, HttpResponse

PRIMARY = "default"
REPLICA = "replica"

_pinned: contextvars.ContextVar[bool] = contextvars.ContextVar("gpuatlas_primary_pinned", default=False)


def primary_pin_enter() -> contextvars.Token:
    """Send every query to the primary until :func:`primary_pin_exit` with the returned token."""
    return _pinned.set(True)


def primary_pin_exit(token: contextvars.Token) -> None:
    try:
        _pinned.reset(token)
    except ValueError:  # token from another context (e.g. a task finished in another thread)
        _pinned.set(False)


@contextmanager
def primary_pinned() -> Iterator[None]:
    token = primary_pin_enter()
    try:
        yield
    finally:
        primary_pin_exit(token)


def primary_is_pinned() -> bool:
    return _pinned.get()


class PrimaryReplicaRouter:
    """Django database router: see the module docstring for which reads stay on the primary."""

    def db_for_read(self, model: type, **hints: Any) -> str:
        if REPLICA not in connections.settings or _pinned.get():
            return PRIMARY
        if connections[PRIMARY].in_atomic_block:
            return PRIMARY
        return REPLICA

    def db_for_write(self, model: type, **hints: Any) -> str:
        # Read-your-writes for the rest of the request or task.
        _pinned.set(True)
        return PRIMARY

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        # Both aliases hold the same data (physical replication).
        return True

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool:
        # The replica receives the schema through replication; never migrate it directly.
        return db == PRIMARY


class PrimaryPinMiddleware:
    """Starts each request unpinned so one request's write does not pin the next one's reads."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # Unsafe methods write: pin up front so even their reads before the first write are fresh.
        token = _pinned.set(request.method not in ("GET", "HEAD", "OPTIONS"))
        try:
            return self.get_response(request)
        finally:
            _pinned.reset(token)
