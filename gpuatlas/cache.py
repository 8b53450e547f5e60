"""The shared cache on Redis, as an optimisation only: when Redis does not answer, every cache call
behaves as a miss (reads return the default, writes do nothing, ``add`` and ``delete`` say
nothing happened) and the caller computes from the database.

Pages, API lists, the data version (gpuatlas/data_version.py) and DRF's throttles all go through
Django's cache; with this backend none of them can fail a request because Redis is down, and the
throttles let requests through (they fail open) until it is back. After a failure the process
stops asking Redis for ``RETRY_AFTER_S`` seconds, so that a Redis that hangs costs one connect
timeout per period, not one per cache call. The outage is logged once when it starts and once when
Redis answers again; ``/readyz`` reports it (gpuatlas/health.py).

A data-version bump (gpuatlas/data_version.py) made while Redis was down may be lost (its debounce
lives in the cache), and a Redis that kept its data would then serve pages cached before that
write. So the first process to see Redis answer again after an outage stores a new data version
and copies it into the cache: every entry cached before the outage is never read again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.utils.functional import cached_property
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# How long a process serves without the cache after Redis failed, before it tries again.
RETRY_AFTER_S = 5.0
# The cache key of the data version (gpuatlas/data_version.py reads and bumps it).
DATA_VERSION_KEY = "gpuatlas:data-version"
# Called when the cache answers again after an outage: gpuatlas.data_version registers the
# storing of a new version (it imports this module, so the call goes this way round).
RECOVERY_HOOKS: list[Callable[[], object]] = []

_lock = threading.Lock()
# Per Redis location (shared by the threads of this process, each of which has its own backend).
_down_until: dict[str, float] = {}


def cache_outage(location: str) -> bool:
    """Whether this process currently treats the cache at ``location`` as down."""
    return _down_until.get(location, 0.0) > time.monotonic()


def _mark_down(location: str, exc: Exception) -> None:
    with _lock:
        first = location not in _down_until
        _down_until[location] = time.monotonic() + RETRY_AFTER_S
    if first:
        logger.warning(
            "the cache does not answer (%s: %s): serving from the database until it is back",
            exc.__class__.__name__,
            exc,
        )


def _mark_up(location: str) -> bool:
    """Note that Redis answered; True for the one call that ends an outage in this process."""
    if location not in _down_until:
        return False
    with _lock:
        was_down = _down_until.pop(location, None) is not None
    if was_down:
        logger.warning("the cache answers again")
    return was_down


class DegradingRedisCacheClient(RedisCacheClient):
    """Django's Redis client with every operation falling back to "a miss" when Redis fails."""

    def __init__(self, servers: list[str], **options: Any) -> None:
        super().__init__(servers, **options)
        self._location = ",".join(servers)
        # Called once when Redis answers again after an outage (set by the backend).
        self.on_recovery: Callable[[], None] | None = None
        self._clients: dict[Any, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        # One client per connection pool, shared (redis-py's clients are thread-safe): Django makes
        # a new one per operation, and its constructor builds a table of about 170 response
        # callbacks each time, a fifth of a millisecond several times per request.
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = self._clients.get(pool)
        if client is None:
            client = self._clients.setdefault(pool, self._client(connection_pool=pool))  # type: ignore[attr-defined]
        return client

    def _guard(self, operation: Callable[[], Any], fallback: Any) -> Any:
        if cache_outage(self._location):
            return fallback
        try:
            result = operation()
        except RedisError as exc:
            _mark_down(self._location, exc)
            return fallback
        if _mark_up(self._location) and self.on_recovery is not None:
            self.on_recovery()
        return result

    def add(self, key: Any, value: Any, timeout: Any) -> bool:
        return self._guard(lambda: super(DegradingRedisCacheClient, self).add(key, value, timeout), False)

    def get(self, key: Any, default: Any) -> Any:
        return self._guard(lambda: super(DegradingRedisCacheClient, self).get(key, default), default)

    def set(self, key: Any, value: Any, timeout: Any) -> None:
        self._guard(lambda: super(DegradingRedisCacheClient, self).set(key, value, timeout), None)

    def touch(self, key: Any, timeout: Any) -> bool:
        return self._guard(lambda: super(DegradingRedisCacheClient, self).touch(key, timeout), False)

    def delete(self, key: Any) -> bool:
        return self._guard(lambda: super(DegradingRedisCacheClient, self).delete(key), False)

    def get_many(self, keys: Any) -> dict:
        return self._guard(lambda: super(DegradingRedisCacheClient, self).get_many(keys), {})

    def has_key(self, key: Any) -> bool:
        return self._guard(lambda: super(DegradingRedisCacheClient, self).has_key(key), False)

    def incr(self, key: Any, delta: int) -> Any:
        missing = object()
        result = self._guard(lambda: super(DegradingRedisCacheClient, self).incr(key, delta), missing)
        if result is missing:
            # Django's contract for a key that is not there; callers handle it.
            raise ValueError("Key not found: the cache is unavailable")
        return result

    def set_many(self, data: Any, timeout: Any) -> None:
        self._guard(lambda: super(DegradingRedisCacheClient, self).set_many(data, timeout), None)

    def delete_many(self, keys: Any) -> None:
        self._guard(lambda: super(DegradingRedisCacheClient, self).delete_many(keys), None)

    def clear(self) -> bool:
        return self._guard(lambda: super(DegradingRedisCacheClient, self).clear(), False)


def cache_settings(url: str, *, timeout_s: float) -> dict[str, Any]:
    """The ``CACHES["default"]`` entry for the shared cache at ``url`` (settings.CACHE_URL)."""
    return {
        "BACKEND": "gpuatlas.cache.DegradingRedisCache",
        "LOCATION": url,
        # Bounded: a Redis that hangs costs at most this per call, then RETRY_AFTER_S without it.
        "OPTIONS": {"socket_connect_timeout": timeout_s, "socket_timeout": timeout_s},
    }


class DegradingRedisCache(RedisCache):
    """``django.core.cache.backends.redis.RedisCache`` that degrades to no cache (module docstring)."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = DegradingRedisCacheClient

    @cached_property
    def _cache(self) -> DegradingRedisCacheClient:
        client = DegradingRedisCacheClient(self._servers, **self._options)  # type: ignore[attr-defined]
        client.on_recovery = self._forget_data_version
        return client

    def _forget_data_version(self) -> None:
        # Bumps made during the outage may be lost: start a new version (module docstring).
        try:
            for hook in RECOVERY_HOOKS:
                hook()
        except Exception:  # the database does not answer either: the next reader reads its row
            logger.warning("a new data version could not be stored after the outage", exc_info=True)
            self.delete(DATA_VERSION_KEY)
