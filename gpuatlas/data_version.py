"""A version of the data behind rankings, tier lists and GPU pages, for cache keys.

Computed views (rankings, tiers, the GPU page's standings) depend on prices, results and the
catalogue. Instead of deleting every cached variant when one of them changes, the writers
(price import, ingest, lab import, moderation, catalogue import, rebuild, the serving fit) call
``data_version_bump()`` at the end of their transaction, and readers put ``data_version()`` into
their cache keys (``data_version_cached``, ``data_versioned``): entries of an older version are
never read again.

The version is stored in the database (``catalog.models.DataVersion``, one row) and copied into
the cache, where readers find it. An evicted copy (Redis's LRU under ``allkeys-lru``, a full
local-memory cache culling its oldest entries) is read back from the row: it costs one query,
never a new version that would make every cached page cold.

What a bump sets off, in order, once the writer's transaction commits (so that a reader who sees
the new version also sees the new data):

1. The debounce: at most one new version per ``DATA_VERSION_DEBOUNCE_S``. The live ingest
   commits several batches a second under load, and each new version would make every busy
   page cold again. A bump inside the period is not dropped but delayed: one bump is scheduled
   for the period's end, so every write shows within that period.
2. The new version.
3. The refresh of the rankings' stored submitter counts, then of the GPU pages' stored
   standings (``dashboard.tasks``), named like the warm-up, at most one of each waiting; in the
   web process itself when tasks are eager.
4. The warm-up of the busiest pages (``dashboard.tasks.pages_warm_task``, named, not imported:
   the pages sit above every writer), so that readers do not wait for them. Only with a shared
   cache (a worker's renders would stay in its own memory otherwise), at most one waiting, and
   started at most once per ``PAGES_WARM_INTERVAL_S`` (a warm-up renders every busy page).

The refreshes and the warm-up run once the writes have been quiet for a debounce period (one
interval at most: ``followup_put_off``), not during an ingest burst, whose bumps would make
their work stale within the period.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from celery import current_app, shared_task
from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from django.utils.translation import get_language

from gpuatlas.cache import DATA_VERSION_KEY, RECOVERY_HOOKS
from gpuatlas.db_router import PRIMARY
from gpuatlas.followups import followup_run

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# Deleted by the cache backend when Redis answers again after an outage (gpuatlas/cache.py).
CACHE_KEY = DATA_VERSION_KEY
# The primary key of the one stored row.
DATA_VERSION_ROW = 1
# Holds the Unix time at which the debounce period of the last bump ends.
BUMP_GATE_KEY = "gpuatlas:data-version:gate"
# Set while a bump held back by the debounce waits for its period's end: one is enough.
BUMP_SCHEDULED_KEY = "gpuatlas:data-version:scheduled"
# Set while a warm-up waits in the queue: bumps meanwhile need no other one (it renders the
# version current when it runs), so a stream of bumps keeps at most one run waiting.
WARM_QUEUED_KEY = "gpuatlas:pages-warm:queued"
# When the last warm-up started (a Unix time; the warm-up task sets it).
WARM_STARTED_KEY = "gpuatlas:pages-warm:started"
WARM_TASK = "dashboard.tasks.pages_warm_task"
# The rankings' stored submitter counts, recounted for the GPUs whose results changed.
SUBMITTERS_TASK = "dashboard.tasks.ranking_submitters_refresh_task"
# Set while a refresh of those counts waits in the queue: it reads the data current when it runs.
SUBMITTERS_QUEUED_KEY = "gpuatlas:ranking-submitters:queued"
STANDINGS_TASK = "dashboard.tasks.stored_standings_refresh_task"
STANDINGS_QUEUED_KEY = "gpuatlas:stored-standings:queued"
BUMP_TASK = "gpuatlas.data_version.data_version_bump_task"


def data_version() -> str:
    """The current data version (a short random token): the cache's copy, else the stored one
    (created on first use)."""
    version = cache.get(CACHE_KEY)
    if version is None:
        version = _stored_version()
        # add(), not set(): a bump that replaced the row and the copy since the row was read wins.
        if not cache.add(CACHE_KEY, version, timeout=None):
            version = cache.get(CACHE_KEY) or version
    return version


def _version_rows() -> Any:
    """The manager of the one-row table of the version (catalog.DataVersion), looked up in the app
    registry: the catalogue's models import this module to bump it."""
    return apps.get_model("catalog", "DataVersion").objects.using(PRIMARY)


def _stored_version() -> str:
    # The primary: a replica's older row copied into the cache would outlive the next reads.
    row, _created = _version_rows().get_or_create(pk=DATA_VERSION_ROW, defaults={"token": _new_token()})
    return row.token


def _new_token() -> str:
    return uuid.uuid4().hex[:12]


def data_version_renew() -> str:
    """Store a new version and copy it into the cache; returns it. Made by a bump, and when the
    cache answers again after an outage (gpuatlas/cache.py)."""
    version = _new_token()
    _version_rows().update_or_create(pk=DATA_VERSION_ROW, defaults={"token": version})
    cache.set(CACHE_KEY, version, timeout=None)
    return version


def data_version_bump() -> None:
    """Mark cached computations stale once the current transaction (if any) commits; then warm
    the busiest pages (module docstring). A no-op while versioned caching is off
    (DATA_VERSION_CACHE_SECONDS=0)."""
    if data_version_cache_seconds() <= 0:
        return
    transaction.on_commit(_bump_debounced)


@shared_task(name=BUMP_TASK, ignore_result=True)
def data_version_bump_task() -> None:
    """The bump the debounce held back, at the end of its period (at once when tasks are eager:
    without a broker nothing can wait); it starts a new period."""
    cache.delete(BUMP_SCHEDULED_KEY)
    if data_version_cache_seconds() <= 0:
        return
    period = int(settings.DATA_VERSION_DEBOUNCE_S)
    if period > 0:
        cache.set(BUMP_GATE_KEY, time.time() + period, timeout=period)
    _bump()


def _bump_debounced() -> None:
    period = int(settings.DATA_VERSION_DEBOUNCE_S)
    now = time.time()
    if period <= 0 or cache.add(BUMP_GATE_KEY, now + period, timeout=period):
        _bump()
        return
    if cache.add(BUMP_SCHEDULED_KEY, 1, timeout=period + 60):
        opens = cache.get(BUMP_GATE_KEY)
        if not followup_run(BUMP_TASK, countdown=max(0.0, (opens or now) - now)):
            cache.delete(BUMP_SCHEDULED_KEY)
            _bump()  # without a broker to delay it, a bump now rather than none


def _bump() -> None:
    data_version_renew()
    _submitters_refresh_request()
    _standings_refresh_request()
    _pages_warm_request()


def _submitters_refresh_request() -> None:
    # Before the warm-up: both go to the imports queue, and the warm-up's rankings read the counts.
    if cache.add(SUBMITTERS_QUEUED_KEY, time.time(), timeout=600) and not followup_run(SUBMITTERS_TASK):
        cache.delete(SUBMITTERS_QUEUED_KEY)  # the readers count the changed GPUs; the next bump asks again


def _standings_refresh_request() -> None:
    # After the submitter counts (the rankings behind the standings read them), before the warm-up.
    if cache.add(STANDINGS_QUEUED_KEY, time.time(), timeout=600) and not followup_run(STANDINGS_TASK):
        cache.delete(STANDINGS_QUEUED_KEY)  # the GPU pages compute their standings; the next bump asks again


def pages_warm_delay_seconds(*, started: float | None, now: float, interval: float) -> float:
    """How long a new warm-up waits: warm-ups start at most once per ``interval``."""
    return 0.0 if started is None else max(0.0, started + interval - now)


def _pages_warm_request() -> None:
    interval = settings.PAGES_WARM_INTERVAL_S
    # The value is when it was asked for (``followup_put_off``), as for the refreshes.
    if not settings.CACHE_URL or not cache.add(WARM_QUEUED_KEY, time.time(), timeout=interval + 600):
        return
    delay = pages_warm_delay_seconds(started=cache.get(WARM_STARTED_KEY), now=time.time(), interval=interval)
    if not followup_run(WARM_TASK, countdown=delay):
        cache.delete(WARM_QUEUED_KEY)  # the pages are rendered by their next visitors; the next bump asks again


def followup_put_off(*, task: str, queued_key: str) -> bool:
    """Whether a bump's follow-up about to run (``task``, waiting under ``queued_key``) waits
    instead; True: it is queued again, for the end of the debounce period. It waits while the
    period of the last bump runs or a bump is held back, that is until the writes have been quiet
    for a period: during an ingest burst what it would store or render is stale within the
    period, and doing it takes the CPU the writes need (the stored standings alone take seconds at
    a million results). A burst that never ends still gets it once ``PAGES_WARM_INTERVAL_S``
    after it was asked for; it runs at once with eager tasks (nothing can wait) or when it cannot
    be queued again."""
    asked = cache.get(queued_key)
    now = time.time()
    opens = cache.get(BUMP_GATE_KEY)
    opens = opens if isinstance(opens, float) and opens > now else None
    if (
        current_app.conf.task_always_eager
        or (opens is None and cache.get(BUMP_SCHEDULED_KEY) is None)
        or not isinstance(asked, float)
        or now - asked >= settings.PAGES_WARM_INTERVAL_S
    ):
        return False
    return followup_run(task, countdown=max(1.0, (opens or now) - now + 1.0))


def data_version_cache_seconds() -> int:
    """How long a versioned entry lives (setting DATA_VERSION_CACHE_SECONDS; 0 turns caching off).

    Long by default (a day, with a shared cache): an entry is replaced by a bump, not by time;
    the period only bounds staleness after writes that bypass the services (admin edits of
    models without a bump), and old versions' entries, never read again, go with it or with
    the cache's LRU eviction. Off with the per-process local-memory cache.
    """
    return int(settings.DATA_VERSION_CACHE_SECONDS)


# Called before a cached read is computed (a miss): the page render limit of the request being
# served (gpuatlas/render_limits.py), which raises to refuse it. None outside such a request.
_COMPUTE_GUARD: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "compute_guard", default=None
)
_MISSING = object()


@contextlib.contextmanager
def computes_guarded(guard: Callable[[], None]) -> Iterator[None]:
    """Within the block, ``guard()`` runs before each cached read that must be computed (and may
    raise to refuse it); hits cost nothing."""
    token = _COMPUTE_GUARD.set(guard)
    try:
        yield
    finally:
        _COMPUTE_GUARD.reset(token)


def compute_spend() -> None:
    """Tell the guard of ``computes_guarded`` that a computation starts (it may raise)."""
    guard = _COMPUTE_GUARD.get()
    if guard is not None:
        guard()


def data_version_cached(name: str, identity: object, compute: Callable[[], T], *, bounded: bool = False) -> T:
    """``compute()``, cached under (name, identity, language, data version, day); computed every
    time while caching is off. ``identity`` is anything whose ``repr`` names the inputs. The
    day (UTC) is in the key because pages say how many days old a price is.

    ``bounded``: the identity comes from a request's parameters, so at most
    DATA_VERSION_CACHE_VARIANTS identities of ``name`` are stored per data version and day; past
    that, others are computed and not stored (a flood of distinct queries adds no keys)."""
    seconds = data_version_cache_seconds()
    if seconds <= 0:
        compute_spend()
        return compute()
    digest = hashlib.sha256(repr(identity).encode()).hexdigest()[:32]
    day = timezone.now().date().isoformat()
    version = data_version()
    key = f"gpuatlas:v{version}:{day}:{name}:{get_language() or ''}:{digest}"
    found = cache.get(key, _MISSING)
    if found is not _MISSING:
        return found  # type: ignore[return-value]
    compute_spend()
    value = compute()
    counter = f"gpuatlas:v{version}:{day}:{name}:variants"
    if not bounded or variants_admitted(counter, settings.DATA_VERSION_CACHE_VARIANTS, seconds):
        cache.set(key, value, seconds)
    return value


def variants_admitted(counter_key: str, variants: int, seconds: int) -> bool:
    """Whether one more stored variant fits under ``variants`` (an atomic count per key space)."""
    try:
        cache.add(counter_key, 0, timeout=seconds)
        return cache.incr(counter_key) <= variants
    except ValueError:  # the cache does not answer: nothing is stored anyway
        return False


def data_versioned(name: str, *, key: Callable[..., object] | None = None, bounded: bool = False) -> Callable[[F], F]:
    """Cache a keyword-only pure read with ``data_version_cached`` (``bounded``: as there).

    ``key(**kwargs)`` returns what identifies the arguments (default: all of them, by repr);
    the language is part of the key because results carry translated labels. The undecorated
    function stays reachable as ``fn.uncached``.
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            identity = key(**kwargs) if key is not None else sorted(kwargs.items())
            return data_version_cached(name, identity, lambda: fn(**kwargs), bounded=bounded)

        wrapper.uncached = fn  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


# After a Redis outage the cache asks for a new version (gpuatlas/cache.py).
RECOVERY_HOOKS.append(data_version_renew)
