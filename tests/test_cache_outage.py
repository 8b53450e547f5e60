"""Every read path answers from the database when the cache's Redis does not answer.

Django's cache is an optimisation, never a dependency (gpuatlas/cache.py): with the cache URL
pointing at a closed port, or a Redis stopped mid-run, every page and API list answers 200 with
the same content as with the cache, the throttles let requests through, the outage is logged
once, and /readyz reports the cache as degraded.
"""

from __future__ import annotations

import logging

import pytest
from django.core.cache import cache
from django.test import override_settings

from gpuatlas import cache as degrading
from gpuatlas.cache import cache_settings
from gpuatlas.data_version import data_version
from tests.redis_server import free_port, needs_redis_server, private_redis  # noqa: F401 - fixture
from tests.world import DASHBOARD_WORLD

pytestmark = pytest.mark.django_db
WORLD = DASHBOARD_WORLD

# Every page a visitor reaches without signing in, and every API list, with what each must show.
PAGES = {
    "/": "H100 SXM5 80 GB",
    "/tiers/": "H100 SXM5 80 GB",
    "/compare/?gpus=h100-sxm5-80-gb,a100-sxm4-80-gb": "A100 SXM4 80 GB",
    "/architectures/": "Hopper",
    "/open-data/": "",
    "/llm-model/": "",
    "/gpus/": "RTX 4090",
    "/gpus/h100-sxm5-80-gb/": "H100 SXM5 80 GB",
    "/providers/": "Lambda",
    "/fit/": "",
    "/submit/": "",
    "/accounts/login/": "",
    "/accounts/signup/": "",
    "/api/v1/": "",
    "/api/v1/gpus/": "h100-sxm5-80-gb",
    "/api/v1/gpus/h100-sxm5-80-gb/": "h100-sxm5-80-gb",
    "/api/v1/architectures/": "hopper",
    "/api/v1/providers/": "lambda",
    "/api/v1/offers/": "lambda",
    "/api/v1/prices/": "lambda",
    "/api/v1/workloads/": "",
    "/api/v1/results/": "",
    "/api/v1/aggregates/": "",
    "/api/v1/rankings/": "h100-sxm5-80-gb",
    "/api/v1/tiers/": "h100-sxm5-80-gb",
    "/api/v1/ping/": "",
}


def redis_cache(url: str) -> dict:
    """CACHES as settings.py builds it for CACHE_URL=url."""
    return {"default": cache_settings(url, timeout_s=1)}


@pytest.fixture(autouse=True)
def _fresh_outage_state():
    degrading._down_until.clear()
    yield
    degrading._down_until.clear()


def fetch_all(client) -> dict[str, tuple[int, str]]:  # type: ignore[no-untyped-def]
    answers = {}
    for path, expected in PAGES.items():
        response = client.get(path)
        body = response.content.decode()
        answers[path] = (response.status_code, body)
        assert response.status_code == 200, (path, response.status_code, body[:500])
        assert expected in body, (path, expected)
    return answers


def test_every_page_and_api_list_answers_with_the_cache_url_on_a_closed_port(client, world, settings, caplog):
    settings.DATA_VERSION_CACHE_SECONDS = 60
    settings.CACHE_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    with override_settings(CACHES=redis_cache(settings.CACHE_URL)), caplog.at_level(logging.WARNING):
        assert cache.get("anything", "fallback") == "fallback"
        assert isinstance(data_version(), str)
        fetch_all(client)
        ready = client.get("/readyz")
    outage_lines = [r for r in caplog.records if r.name == "gpuatlas.cache"]
    assert len(outage_lines) == 1, [r.getMessage() for r in outage_lines]  # logged once, not per call
    assert "serving from the database" in outage_lines[0].getMessage()
    assert ready.status_code == 200
    assert ready.json()["status"] == "degraded" and "cache" in ready.json()["degraded"]


def test_the_anonymous_throttle_fails_open_on_a_dead_cache(client, world, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "anon": "2/min"}}  # fmt: skip
    with override_settings(CACHES=redis_cache(f"redis://127.0.0.1:{free_port()}/0")):
        statuses = [client.get("/api/v1/ping/").status_code for _ in range(5)]
    assert statuses == [200] * 5


@needs_redis_server
@pytest.mark.slow
def test_a_redis_stopped_mid_run_leaves_every_page_answering_the_same(client, world, settings, private_redis):  # noqa: F811
    settings.DATA_VERSION_CACHE_SECONDS = 60
    settings.CACHE_URL = private_redis.url
    with override_settings(CACHES=redis_cache(private_redis.url)):
        cached = fetch_all(client)
        assert any(key.startswith(b"gpuatlas:") or b":gpuatlas:" in key for key in _redis_keys(private_redis))
        private_redis.stop()
        without = fetch_all(client)
        assert client.get("/readyz").json()["status"] == "degraded"
        private_redis.start()
        degrading._down_until.clear()  # as RETRY_AFTER_S later
        again = fetch_all(client)
        assert client.get("/readyz").json()["status"] == "ok"
    for path in ("/api/v1/gpus/", "/api/v1/rankings/", "/api/v1/tiers/"):
        assert cached[path][1] == without[path][1] == again[path][1], path


def _redis_keys(server) -> list:  # type: ignore[no-untyped-def]
    import redis

    client = redis.Redis.from_url(server.url)
    try:
        return list(client.keys("*"))
    finally:
        client.close()


@needs_redis_server
def test_the_end_of_an_outage_starts_a_new_data_version(settings, private_redis):  # noqa: F811
    """A bump made while Redis was down may be lost: the first call that finds Redis back stores a
    new version, so that pages cached before the outage are never served again."""
    settings.DATA_VERSION_CACHE_SECONDS = 60
    with override_settings(CACHES=redis_cache(private_redis.url)):
        before = data_version()
        assert data_version() == before
        private_redis.stop()
        assert cache.get("anything") is None  # the outage is noticed
        private_redis.start()  # same port, a Redis that kept nothing: the new version is fresh
        # As a Redis that kept its data (written past the backend, which still counts it as down):
        _raw_set(private_redis, cache.make_key("gpuatlas:data-version"), cache._cache._serializer.dumps(before))
        degrading._down_until.update(dict.fromkeys(degrading._down_until, 0.0))  # RETRY_AFTER_S later
        assert cache.get("anything") is None  # answers again: the recovery stores a new version
        assert data_version() != before


def _raw_set(server, key: str, value: bytes) -> None:  # type: ignore[no-untyped-def]
    import redis

    client = redis.Redis.from_url(server.url)
    try:
        client.set(key, value)
    finally:
        client.close()


def test_one_redis_client_serves_every_operation_of_a_pool():
    """Django's Redis cache makes a client per operation; ours keeps one per connection pool (a
    client is thread-safe, and making one builds redis-py's callback table every time)."""
    from gpuatlas.cache import DegradingRedisCache

    backend = DegradingRedisCache(f"redis://127.0.0.1:{free_port()}/0", {})
    client = backend._cache.get_client()
    assert backend._cache.get_client(write=True) is client and backend._cache.get_client("any key") is client
    assert backend.get("nothing-listens", "fallback") == "fallback"  # the outage path reads through it too
    assert backend._cache.get_client() is client
