"""Throttles hold under concurrency: of N requests that arrive together, exactly the limit pass.

DRF's throttle reads a list of timestamps and writes it back, so every request that read before
the first write passed: 776 of 1,200 concurrent anonymous requests passed a 600-per-minute limit
(gunicorn, Redis). The counters are now atomic (accounts.throttles.WindowRateThrottle, Redis
INCR). Here many threads call the anonymous throttle at once, on the local-memory cache and on
a real Redis (a private redis-server); perf/faults.py sends 1,200 concurrent HTTP requests.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.cache.backends.locmem import LocMemCache
from django.test import RequestFactory
from rest_framework import throttling

from accounts.throttles import windows_to_wait
from api.throttling import AnonThrottle
from gpuatlas.cache import DegradingRedisCache
from tests.redis_server import needs_redis_server, private_redis  # noqa: F401

LIMIT, THREADS, PER_THREAD = 100, 32, 15  # 480 requests against a limit of 100
NOW = 1_800_000_030.0  # half a minute into a minute: the limit must hold mid-window


def _hammer(cache, settings, monkeypatch) -> int:  # type: ignore[no-untyped-def]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"anon": f"{LIMIT}/min"}}
    monkeypatch.setattr(throttling.SimpleRateThrottle, "timer", staticmethod(lambda: NOW))
    request = RequestFactory().get("/api/v1/ping/", REMOTE_ADDR="203.0.113.9")
    request.user = type("Anonymous", (), {"is_authenticated": False})()
    start = threading.Barrier(THREADS)

    def client() -> int:
        start.wait()
        passed = 0
        for _attempt in range(PER_THREAD):
            throttle = AnonThrottle()
            throttle.cache = cache
            passed += throttle.allow_request(request, None)
        return passed

    with ThreadPoolExecutor(THREADS) as pool:
        return sum(pool.map(lambda _index: client(), range(THREADS)))


def test_exactly_the_limit_passes_on_the_local_memory_cache(settings, monkeypatch) -> None:
    assert _hammer(LocMemCache("throttle-concurrency", {}), settings, monkeypatch) == LIMIT


@needs_redis_server
def test_exactly_the_limit_passes_on_redis(settings, monkeypatch, private_redis) -> None:  # noqa: F811
    redis_cache = DegradingRedisCache(private_redis.url, {"OPTIONS": {"socket_timeout": 2}})
    assert _hammer(redis_cache, settings, monkeypatch) == LIMIT
    # Refused requests gave their count back: the next window starts from the limit, not 480.
    window = int(NOW // 60)
    keys = [key.decode() for key in redis_cache._cache.get_client().keys("*")]
    assert len(keys) == 1 and keys[0].endswith(f":{window}")
    assert redis_cache.get(keys[0].split(":", 2)[2]) == LIMIT


@pytest.mark.parametrize(
    ("before", "current", "limit", "position", "windows"),
    [
        (0, 3, 3, 0.0, 1 + 1 / 3),  # a full window: the next one, once a third of this has slid out
        (2, 0, 2, 0.0, 0.5),  # the previous window full: once half of it has slid out
        (2, 1, 2, 0.7, 0.3),  # this window needs all of the previous one gone: its end
        (0, 1, 1, 0.25, 1.75),  # one an hour: once this window has wholly slid out
        (10, 0, 10, 0.5, 0.0),  # half of ten slid out: one more passes now
    ],
)
def test_the_wait_is_when_one_more_request_passes(
    before: int, current: int, limit: int, position: float, windows: float
) -> None:
    assert windows_to_wait(before=before, current=current, limit=limit, position=position) == pytest.approx(windows)
