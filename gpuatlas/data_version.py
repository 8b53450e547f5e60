"""A version of the data behind rankings, tier lists and GPU pages, for cache keys.

Computed views (rankings, tiers, the GPU page's standings) depend on prices, results and the
catalogue. Instead of deleting every cached variant when one of them changes, the writers
(price import, ingest, lab import, moderation, catalogue import, aggregate rebuild) call
``data_version_bump()`` and readers put ``data_version()`` into their cache keys: entries of
an older version are simply never read again and expire on their own.

The bump runs when the writer's transaction commits (``transaction.on_commit``), so a reader
that sees the new version also sees the new data; a reader that computed from the old data
stores it under the old version, where nobody looks any more.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import queue
import threading
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import connections, transaction
from django.utils import translation
from django.utils.translation import get_language

logger = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])
_MISSING = object()

CACHE_KEY = "gpuatlas:data-version"
# A recomputation that takes longer (or a process that died in one) no longer holds readers off.
_COMPUTE_LOCK_SECONDS = 60


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


def data_version_bump(*, debounce_seconds: float = 0) -> None:
    """Mark cached computations stale, once the current transaction (if any) commits.

    A no-op while versioned caching is off (the local-memory cache of development and tests):
    a per-process cache cannot carry a worker's bump to the web processes anyway.

    With ``debounce_seconds`` (the ingest, whose batches commit several times a second under
    load) at most one bump happens per that period: the first at once, later ones only noted
    as pending, for ``data_version_bump_pending`` (when the ingest has drained, and from the
    periodic sweep) or the next period's first bump. Without this every batch would empty
    every cached page, and each page view would pay a cold render.
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
    """Make a bump that debouncing held back; True when there was one."""
    if data_version_cache_seconds() <= 0 or not cache.delete(_BUMP_PENDING_KEY):
        return False
    _bump()
    return True


def data_version_cache_key(*parts: object) -> str:
    """A cache key that includes the data version: ``gpuatlas:v<version>:part1:part2...``."""
    return ":".join(["gpuatlas", f"v{data_version()}", *(str(p) for p in parts)])


def data_version_cache_seconds() -> int:
    """How long a versioned entry lives (setting DATA_VERSION_CACHE_SECONDS; 0 turns caching off).

    Default: 600 s with a shared cache (Redis, CACHE_URL), off with the per-process local-memory
    cache of development and tests, where writes made outside the services (factories, the
    shell) would not bump the version. The period also bounds staleness after writes that
    bypass the services (admin edits).
    """
    configured = getattr(settings, "DATA_VERSION_CACHE_SECONDS", None)
    if configured is not None:
        return int(configured)
    return 600 if cache_is_shared() else 0


def cache_is_shared() -> bool:
    """Whether the default cache is one all processes see (Redis), not per-process memory."""
    return "redis" in settings.CACHES.get("default", {}).get("BACKEND", "").lower()


# Set when a data_versioned read answered with the previous version's value (another process
# was recomputing it): whatever is built from that answer must not be stored under the current
# version, where it would be served as fresh until the next bump.
_SERVED_STALE: ContextVar[bool] = ContextVar("gpuatlas_served_stale", default=False)


@dataclass
class StaleWatch:
    stale: bool = False


@contextlib.contextmanager
def stale_watch() -> Iterator[StaleWatch]:
    """Note whether any versioned read inside the block answered with a previous version's value.

    After the block, ``watch.stale`` says so, and an enclosing watch learns it too. A cache
    that stores what the block built under the current version must skip storing when stale.
    """
    watch = StaleWatch()
    token = _SERVED_STALE.set(False)
    try:
        yield watch
    finally:
        watch.stale = _SERVED_STALE.get()
        _SERVED_STALE.reset(token)
        if watch.stale:
            _SERVED_STALE.set(True)


class _Refresher:
    """One thread per process that recomputes versioned values after a bump, off the request.

    Bounded: when ``QUEUE_SIZE`` recomputations already wait, a reader computes as before.
    Started on first use in each process (after a fork, the parent's thread does not exist).
    """

    QUEUE_SIZE = 16

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.jobs: queue.Queue[Callable[[], None]] = queue.Queue(maxsize=self.QUEUE_SIZE)
        threading.Thread(target=self._run, name="data-version-refresh", daemon=True).start()

    def submit(self, job: Callable[[], None]) -> bool:
        try:
            self.jobs.put_nowait(job)
        except queue.Full:
            return False
        return True

    def _run(self) -> None:
        _IN_REFRESHER.set(True)  # nested versioned reads compute here rather than queue again
        while True:
            job = self.jobs.get()
            try:
                job()
            except Exception:  # the lock is released by the job; the next reader retries
                logger.exception("recomputing a cached value in the background failed")
            finally:
                connections.close_all()  # this thread's own connections
                self.jobs.task_done()


_refresher: _Refresher | None = None
_refresher_lock = threading.Lock()


def _refresher_get() -> _Refresher:
    global _refresher
    with _refresher_lock:
        if _refresher is None or _refresher.pid != os.getpid():
            _refresher = _Refresher()
        return _refresher


def data_version_refresh_wait() -> None:
    """Block until this process's background recomputations are done (tests, shutdown)."""
    if _refresher is not None and _refresher.pid == os.getpid():
        _refresher.jobs.join()


_IN_REFRESHER: ContextVar[bool] = ContextVar("gpuatlas_in_refresher", default=False)


def _refresh_in_background() -> bool:
    return settings.DATA_VERSION_REFRESH_IN_BACKGROUND and not _IN_REFRESHER.get()


def data_versioned(name: str, *, key: Callable[..., object] | None = None) -> Callable[[F], F]:
    """Cache a keyword-only pure read under (name, language, arguments, data version).

    While one process recomputes a value for a new version, others are served the value of
    the version before (stale by at most that computation), so a bump under traffic costs one
    computation, not one per concurrent reader. A value computed from such a stale answer
    (an outer versioned read over an inner one) is returned but not stored: see ``stale_watch``.

    With DATA_VERSION_REFRESH_IN_BACKGROUND, the first reader after a bump is answered with
    the previous version's value too, and the new one is computed by a thread of its process:
    no reader waits for a recomputation (unless there is no previous value, or too many wait).

    ``key(**kwargs)`` returns what identifies the arguments (default: all of them, by repr);
    the language is part of the key because results carry translated labels. The undecorated
    function stays reachable as ``fn.uncached``.
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            seconds = data_version_cache_seconds()
            if seconds <= 0:
                return fn(**kwargs)
            identity = key(**kwargs) if key is not None else sorted(kwargs.items())
            digest = hashlib.sha256(repr(identity).encode()).hexdigest()[:32]
            cache_key = data_version_cache_key(name, get_language() or "", digest)
            found = cache.get(cache_key, _MISSING)
            if found is not _MISSING:
                return found
            # After a bump, one reader recomputes (a second or more at scale: in the background
            # when allowed) and readers arriving meanwhile get the previous version's value
            # instead of each recomputing.
            latest_key = f"gpuatlas:latest:{name}:{get_language() or ''}:{digest}"
            computing_key = f"{cache_key}:computing"
            computing = cache.add(computing_key, 1, timeout=_COMPUTE_LOCK_SECONDS)

            def compute_and_store() -> Any:
                try:
                    with stale_watch() as watch:
                        value = fn(**kwargs)
                    # Built from a previous version's value: good enough to answer with, not
                    # to keep under the current version.
                    if not watch.stale:
                        cache.set_many({cache_key: value, latest_key: value}, seconds)
                finally:
                    if computing:  # another process's lock is its own to release
                        cache.delete(computing_key)
                return value

            if not computing or _refresh_in_background():
                stale = cache.get(latest_key, _MISSING)
                if stale is not _MISSING:
                    language = get_language()

                    def recompute() -> None:
                        with translation.override(language):
                            compute_and_store()

                    if not computing or _refresher_get().submit(recompute):
                        _SERVED_STALE.set(True)
                        return stale

            return compute_and_store()

        wrapper.uncached = fn  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
