"""Cached page bodies (dashboard/fragments.py): the rankings, tier list and GPU page are served
from the cache while the data is unchanged, show a price import or new results on the next
request, never share anything of one visitor with another, and keep their escaping."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmarks_app.services.aggregates import aggregates_rebuild
from catalog.services.prices import price_import_file
from tests.dashboard_world import HOSTILE_GPU, HOSTILE_PROVIDER, build_world
from tests.factories import GpuAliasFactory, OfferFactory, UserFactory
from tests.factories_dashboard import BenchmarkResultFactory

# Bumps of the data version run when the writer's transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)

CSV_HEADER = (
    "provider,provider_name,instance_type,region,gpu_name,gpu_memory_gib,gpu_count,vcpus_per_gpu,ram_gib_per_gpu,"
    "price_per_hour,price_unit,spot_price_per_hour,currency,observed_at,source\n"
)


@pytest.fixture(autouse=True)
def versioned_cache(_no_data_version_cache, settings):  # type: ignore[no-untyped-def]
    settings.DATA_VERSION_CACHE_SECONDS = 60
    cache.clear()
    yield
    cache.clear()


def _urls(world) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        reverse("dashboard:rankings"),
        reverse("dashboard:tiers"),
        reverse("catalog:gpu-detail", args=[world.rtx4090.slug]),
    ]


def _html(response) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 200
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", response.content.decode())


def _uncached(client: Client, url: str, settings) -> str:  # type: ignore[no-untyped-def]
    settings.DATA_VERSION_CACHE_SECONDS = 0
    try:
        return _html(client.get(url))
    finally:
        settings.DATA_VERSION_CACHE_SECONDS = 60


def test_warm_pages_are_served_from_the_cache_without_queries(client):
    world = build_world()
    for url, warm_queries in zip(_urls(world), (0, 0, 1), strict=True):  # the GPU page looks the GPU up
        first = _html(client.get(url))
        with CaptureQueriesContext(connection) as queries:
            second = _html(client.get(url))
        assert len(queries) == warm_queries, (url, [q["sql"] for q in queries])
        assert second == first


def test_a_price_import_shows_on_the_next_request(client, tmp_path, settings):
    world = build_world()
    GpuAliasFactory(gpu=world.rtx4090, alias="RTX4090")
    before = {url: _html(client.get(url)) for url in _urls(world)}

    # A write that bypasses the services does not bump the version: the cached bodies stay.
    # (This is what makes the next assertions a test of the bump, not of an empty cache.)
    OfferFactory(gpu=world.rtx4090, provider=world.provider, instance_type="sneaky.1x")
    assert {url: _html(client.get(url)) for url in _urls(world)} == before

    path = tmp_path / "curated" / "cheapcloud.csv"
    path.parent.mkdir(parents=True)
    path.write_text(
        CSV_HEADER + "cheapcloud,Cheap Cloud,cheap.1x,Region A,RTX4090,24,1,8,32,0.07,gpu,,USD,2026-02-01,"
        "https://example.org/prices\n",
        encoding="utf-8",
    )
    assert price_import_file(path=path).ok
    for url in _urls(world):
        after = _html(client.get(url))
        assert after != before[url], url
        assert after == _uncached(client, url, settings), url
    assert "0.07" in _html(client.get(reverse("dashboard:rankings")))
    assert "cheap.1x" in _html(client.get(reverse("catalog:gpu-detail", args=[world.rtx4090.slug])))


def test_new_results_show_on_the_next_request(client, settings):
    world = build_world()
    before = {url: _html(client.get(url)) for url in _urls(world)}
    for i in range(6):
        BenchmarkResultFactory(gpu=world.rtx4090, workload__slug="resnet50", value=130.0 + i, submitter_key=f"new-{i}")
    aggregates_rebuild()  # through aggregates_write, the writer of every ingest verdict
    for url in _urls(world):
        after = _html(client.get(url))
        assert after != before[url], url
        assert after == _uncached(client, url, settings), url


def test_nothing_of_one_visitor_reaches_another(client):
    world = build_world()
    alice = Client()
    alice.force_login(UserFactory(username="alice-the-curator"))
    for url in _urls(world):
        seen_by_alice = alice.get(url).content.decode()
        assert "alice-the-curator" in seen_by_alice
        anonymous = client.get(url).content.decode()  # the body now comes from the cache
        assert "alice-the-curator" not in anonymous
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', seen_by_alice)
        assert token and token.group(1) not in anonymous


def test_each_language_has_its_own_body(client):
    build_world()
    url = reverse("dashboard:rankings")
    assert "Which GPU gives the most for the money?" in _html(client.get(url, HTTP_ACCEPT_LANGUAGE="en"))
    chinese = _html(client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "哪款 GPU 最物有所值？" in chinese
    assert "Which GPU gives the most for the money?" not in chinese


def test_cached_bodies_keep_user_supplied_names_escaped(client):
    world = build_world()
    urls = [*_urls(world), reverse("catalog:gpu-detail", args=[world.hostile.slug])]
    for url in urls:
        for _ in range(2):  # rendered, then from the cache
            html = client.get(url).content.decode()
            assert HOSTILE_GPU not in html and HOSTILE_PROVIDER not in html
    html = client.get(reverse("catalog:gpu-detail", args=[world.hostile.slug])).content.decode()
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt; Card" in html


def test_query_parameters_are_part_of_the_key(client):
    build_world()
    url = reverse("dashboard:rankings")
    default = _html(client.get(url))
    datacenter = _html(client.get(url, {"segment": "datacenter"}))
    assert datacenter != default
    row_link = 'href="/gpus/rtx-3060/"'  # a consumer card: not in the datacenter ranking
    assert row_link in default and row_link not in datacenter
    assert _html(client.get(url)) == default
