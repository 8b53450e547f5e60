"""A version of the data behind rankings, tier lists and GPU pages, for cache keys.

Computed views (rankings, tiers, the GPU page's standings) depend on prices, results and the
catalogue. Instead of deleting every cached variant when one of them changes, the writers
(price import, ingest, lab import, moderation, catalogue import, aggregate rebuild) call
``data_version_bump()`` and readers put ``data_version()`` into their cache keys
(``data_version_cached``, ``data_versioned``): entries of an older version are never read again.

The bump runs when the writer's transaction commits (``transaction.on_commit``), so a reader
that sees the new version also sees the new data. After a bump, ``data_version_bumped`` is sent:
the dashboard warms its busiest pages in a task, so that readers do not wait for them (and
again just after midnight, when the day in the key turns).
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone
from django.utils.translation import get_language

from gpuatlas.cache import DATA_VERSION_KEY

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# Deleted by the cache backend when Redis answers again after an outage (gpuatlas/cache.py).
CACHE_KEY = DATA_VERSION_KEY
# Sent (no arguments) once a bump is made, after the writer's commit.
data_version_bumped = Signal()


def data_version() -> str:
    """The current data version (a short random token); created on first use."""
    version = cache.get(CACHE_KEY)
    if version is None:
        version = uuid.uuid4().hex[:12]
        # add(): two first readers agree on one version instead of each writing its own.
        if not cache.add(CACHE_KEY, version, timeout=None):
            version = cache.get(CACHE_KEY) or version
    return version


def _bump() -> None:
    cache.set(CACHE_KEY, uuid.uuid4().hex[:12], timeout=None)
    data_version_bumped.send(sender=None)


def data_version_bump(*, debounce_seconds: float = 0) -> None:
    """Mark cached computations stale, once the current transaction (if any) commits.

    A no-op while versioned caching is off (DATA_VERSION_CACHE_SECONDS=0). With
    ``debounce_seconds`` (the live ingest) at most one bump per that period, the rest noted as
    pending for ``data_version_bump_pending``: the ingest commits several batches a second
    under load, and each bump would otherwise recompute every busy page.
    """
    if data_version_cache_seconds() <= 0:
        return
    if debounce_seconds > 0:
        transaction.on_commit(functools.partial(_bump_debounced, debounce_seconds))
    else:
        transaction.on_commit(_bump)


_BUMP_GATE_KEY = "gpuatlas:data-version:gate"
_BUMP_PENDING_KEY = "gpuatlas:data-version:pending"


def _bump_debounced(seconds: float) -> None:
    if cache.add(_BUMP_GATE_KEY, 1, timeout=max(1, round(seconds))):
        _bump()
    else:
        cache.set(_BUMP_PENDING_KEY, 1, timeout=None)


def data_version_bump_pending() -> bool:
    """Make a bump that debouncing held back (the ingest calls it once drained); True when there was one."""
    if data_version_cache_seconds() <= 0 or not cache.delete(_BUMP_PENDING_KEY):
        return False
    _bump()
    return True


def data_version_cache_seconds() -> int:
    """How long a versioned entry lives (setting DATA_VERSION_CACHE_SECONDS; 0 turns caching off).

    Long by default (a day, with a shared cache): an entry is replaced by a bump, not by time;
    the period only bounds staleness after writes that bypass the services (admin edits of
    models without a bump), and old versions' entries, never read again, go with it or with
    the cache's LRU eviction. Off with the per-process local-memory cache.
    """
    return int(settings.DATA_VERSION_CACHE_SECONDS)


def data_version_cached(name: str, identity: object, compute: Callable[[], T]) -> T:
    """``compute()``, cached under (name, identity, language, data version, day); computed every
    time while caching is off. ``identity`` is anything whose ``repr`` names the inputs. The
    day (UTC) is in the key because pages say how many days old a price is."""
    seconds = data_version_cache_seconds()
    if seconds <= 0:
        return compute()
    digest = hashlib.sha256(repr(identity).encode()).hexdigest()[:32]
    day = timezone.now().date().isoformat()
    key = f"gpuatlas:v{data_version()}:{day}:{name}:{get_language() or ''}:{digest}"
    return cache.get_or_set(key, compute, seconds)  # type: ignore[return-value]


def data_versioned(name: str, *, key: Callable[..., object] | None = None) -> Callable[[F], F]:
    """Cache a keyword-only pure read with ``data_version_cached``.

    ``key(**kwargs)`` returns what identifies the arguments (default: all of them, by repr);
    the language is part of the key because results carry translated labels. The undecorated
    function stays reachable as ``fn.uncached``.
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            identity = key(**kwargs) if key is not None else sorted(kwargs.items())
            return data_version_cached(name, identity, lambda: fn(**kwargs))

        wrapper.uncached = fn  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
