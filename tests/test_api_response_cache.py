"""Public API lists (rankings, tiers, GPUs, offers) are cached as the bytes sent, per data version.

A hit must be byte-for-byte what the view computes, a write through the services must show on
the next request, and bad parameters must be refused every time rather than cached.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from benchmarks_app.services.aggregates import aggregates_rebuild
from gpuatlas.data_version import data_version_bump
from tests.factories import BenchmarkResultFactory, GpuAliasFactory, cheap_offer_import
from tests.world import DASHBOARD_WORLD, world_build

# Bumps of the data version run when the writer's transaction commits.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("versioned_cache")]

URLS = [
    "/api/v1/rankings/",
    "/api/v1/rankings/?use_case=inference-8bit&sort=perf",
    "/api/v1/tiers/",
    "/api/v1/gpus/?limit=5",
    "/api/v1/gpus/?limit=5&offset=5",
    "/api/v1/offers/?page_size=3",
]


def _uncached(client, url: str, settings) -> bytes:  # type: ignore[no-untyped-def]
    settings.DATA_VERSION_CACHE_SECONDS = 0
    try:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
        return response.content
    finally:
        settings.DATA_VERSION_CACHE_SECONDS = 60


def _first_difference(a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"lengths {len(a)}/{len(b)}, first difference at {at}: {a[at - 80 : at + 80]!r} vs {b[at - 80 : at + 80]!r}"


def test_a_hit_is_the_computed_response_byte_for_byte_without_queries(client, settings):
    world_build(rows=DASHBOARD_WORLD)
    for url in URLS:
        first = client.get(url)
        assert first.status_code == 200 and first["Content-Type"] == "application/json", url
        with CaptureQueriesContext(connection) as queries:
            second = client.get(url)
        assert len(queries) == 0, (url, [q["sql"] for q in queries])
        assert second.status_code == 200 and second["Content-Type"] == "application/json"
        uncached = _uncached(client, url, settings)
        assert second.content == first.content, (url, _first_difference(second.content, first.content))
        assert first.content == uncached, (url, _first_difference(first.content, uncached))


def test_pagination_links_follow_the_host_they_were_asked_on(client, settings):
    settings.ALLOWED_HOSTS = ["one.example", "two.example"]
    world_build(rows=DASHBOARD_WORLD)
    one = json.loads(client.get("/api/v1/gpus/?limit=2", HTTP_HOST="one.example").content)
    two = json.loads(client.get("/api/v1/gpus/?limit=2", HTTP_HOST="two.example").content)
    assert one["next"].startswith("http://one.example/") and two["next"].startswith("http://two.example/")


def test_an_indented_response_is_cached_apart(client):
    world_build(rows=DASHBOARD_WORLD)
    plain = client.get("/api/v1/gpus/?limit=2").content
    indented = client.get("/api/v1/gpus/?limit=2", HTTP_ACCEPT="application/json; indent=2").content
    assert b"\n  " in indented and b"\n" not in plain
    assert json.loads(indented) == json.loads(plain)


def test_bad_parameters_are_refused_every_time(client):
    world_build(rows=DASHBOARD_WORLD)
    for _ in range(2):
        response = client.get("/api/v1/rankings/?use_case=mining")
        assert response.status_code == 400
        assert "use_case" in response.json()["errors"]
    assert client.get("/api/v1/gpus/?limit=0").status_code == 400
    assert client.get("/api/v1/gpus/?limit=0").status_code == 400


def test_a_price_import_shows_on_the_next_request(client, tmp_path, settings):
    world = world_build(rows=DASHBOARD_WORLD)
    GpuAliasFactory(gpu=world.gpus["rtx4090"], alias="RTX4090")
    url = "/api/v1/offers/?gpu=" + world.gpus["rtx4090"].slug
    before = {u: client.get(u).content for u in ("/api/v1/rankings/", url)}
    cheap_offer_import(tmp_path)
    for u, old in before.items():
        new = client.get(u).content
        assert new != old and new == _uncached(client, u, settings), u
    assert b"cheap.1x" in client.get(url).content


def test_new_results_show_on_the_next_request(client, settings):
    world = world_build(rows=DASHBOARD_WORLD)
    before = client.get("/api/v1/rankings/").content
    for i in range(6):
        BenchmarkResultFactory(
            gpu=world.gpus["rtx4090"], workload__slug="resnet50", value=130.0 + i, submitter_key=f"new-{i}"
        )
    with transaction.atomic():  # what every writer of results does (ingest, moderation, lab import, rebuild)
        aggregates_rebuild()
        data_version_bump()
    after = client.get("/api/v1/rankings/").content
    assert after != before and after == _uncached(client, "/api/v1/rankings/", settings)


def test_each_language_has_its_own_entry(client):
    world_build(rows=DASHBOARD_WORLD)
    english = client.get("/api/v1/rankings/", HTTP_ACCEPT_LANGUAGE="en").json()
    chinese = client.get("/api/v1/rankings/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert english["use_case"]["label"] != chinese["use_case"]["label"]
    assert client.get("/api/v1/rankings/", HTTP_ACCEPT_LANGUAGE="en").json() == english
