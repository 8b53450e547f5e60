"""Cached page bodies (dashboard/fragments.py): the rankings, tier list and GPU page are served
from the cache while the data is unchanged, show a price import or new results on the next
request, never share anything of one visitor with another, and keep their escaping."""

from __future__ import annotations

import re
import time

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmarks_app.services.aggregates import aggregates_rebuild
from dashboard import tasks
from dashboard.tasks import pages_warm_task
from gpuatlas.celery import app
from gpuatlas.data_version import BUMP_GATE_KEY, data_version_bump, pages_warm_delay_seconds
from tests.factories import BenchmarkResultFactory, GpuAliasFactory, OfferFactory, UserFactory, cheap_offer_import
from tests.world import DASHBOARD_WORLD, HOSTILE_GPU, HOSTILE_PROVIDER, world_build

# Bumps of the data version run when the writer's transaction commits.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("versioned_cache")]


def _urls(world) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        reverse("dashboard:rankings"),
        reverse("dashboard:tiers"),
        reverse("dashboard:gpu-detail", args=[world.gpus["rtx4090"].slug]),
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
    world = world_build(rows=DASHBOARD_WORLD)
    for url in _urls(world):
        first = _html(client.get(url))
        with CaptureQueriesContext(connection) as queries:
            second = _html(client.get(url))
        assert len(queries) == 0, (url, [q["sql"] for q in queries])
        assert second == first


def test_a_price_import_shows_on_the_next_request(client, tmp_path, settings):
    world = world_build(rows=DASHBOARD_WORLD)
    GpuAliasFactory(gpu=world.gpus["rtx4090"], alias="RTX4090")
    before = {url: _html(client.get(url)) for url in _urls(world)}

    # A write that bypasses the services does not bump the version: the cached bodies stay.
    # (This is what makes the next assertions a test of the bump, not of an empty cache.)
    OfferFactory(gpu=world.gpus["rtx4090"], provider=world.providers["lambda"], instance_type="sneaky.1x")
    assert {url: _html(client.get(url)) for url in _urls(world)} == before

    cheap_offer_import(tmp_path)
    for url in _urls(world):
        after = _html(client.get(url))
        assert after != before[url], url
        assert after == _uncached(client, url, settings), url
    # The default price is the typical one over providers; the cheap listing shows as the cheapest.
    assert "0.07" in _html(client.get(reverse("dashboard:rankings") + "?price=cheapest"))
    assert "cheap.1x" in _html(client.get(reverse("dashboard:gpu-detail", args=[world.gpus["rtx4090"].slug])))


def test_new_results_show_on_the_next_request(client, settings):
    world = world_build(rows=DASHBOARD_WORLD)
    before = {url: _html(client.get(url)) for url in _urls(world)}
    for i in range(6):
        BenchmarkResultFactory(
            gpu=world.gpus["rtx4090"], workload__slug="resnet50", value=130.0 + i, submitter_key=f"new-{i}"
        )
    with transaction.atomic():  # what every writer of results does (ingest, moderation, lab import, rebuild)
        aggregates_rebuild()
        data_version_bump()
    for url in _urls(world):
        after = _html(client.get(url))
        assert after != before[url], url
        assert after == _uncached(client, url, settings), url


def test_nothing_of_one_visitor_reaches_another(client):
    world = world_build(rows=DASHBOARD_WORLD)
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
    world_build(rows=DASHBOARD_WORLD)
    url = reverse("dashboard:rankings")
    assert "Which GPU gives the most for the money?" in _html(client.get(url, HTTP_ACCEPT_LANGUAGE="en"))
    chinese = _html(client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans"))
    assert "哪款 GPU 最物有所值？" in chinese
    assert "Which GPU gives the most for the money?" not in chinese


def test_cached_bodies_keep_user_supplied_names_escaped(client):
    world = world_build(rows=DASHBOARD_WORLD)
    urls = [*_urls(world), reverse("dashboard:gpu-detail", args=[world.gpus["hostile"].slug])]
    for url in urls:
        for _ in range(2):  # rendered, then from the cache
            html = client.get(url).content.decode()
            assert HOSTILE_GPU not in html and HOSTILE_PROVIDER not in html
    html = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["hostile"].slug])).content.decode()
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt; Card" in html


def test_query_parameters_are_part_of_the_key(client):
    world_build(rows=DASHBOARD_WORLD)
    url = reverse("dashboard:rankings")
    default = _html(client.get(url, {"show": "all"}))
    datacenter = _html(client.get(url, {"segment": "datacenter", "show": "all"}))
    assert datacenter != default
    row_link = 'href="/gpus/rtx-3060/"'  # a consumer card: not in the datacenter ranking
    assert row_link in default and row_link not in datacenter
    assert _html(client.get(url, {"show": "all"})) == default
    assert row_link not in _html(client.get(url))  # hidden by default: 12 GB cannot train


def test_an_unknown_gpu_is_a_404_cold_and_warm(client):
    world_build(rows=DASHBOARD_WORLD)
    for _ in range(2):
        assert client.get(reverse("dashboard:gpu-detail", args=["no-such-gpu"])).status_code == 404


def test_a_catalogue_edit_shows_on_the_gpu_page(client):
    world = world_build(rows=DASHBOARD_WORLD)
    url = reverse("dashboard:gpu-detail", args=[world.gpus["rtx4090"].slug])
    assert "RTX 4090" in _html(client.get(url))
    world.gpus["rtx4090"].name = "RTX 4090 (renamed by a curator)"
    world.gpus["rtx4090"].save()
    assert "renamed by a curator" not in _html(client.get(url))  # cached: the GPU too, not just the body
    with transaction.atomic():  # what every catalogue writer does (the admin: BumpsDataVersion)
        world.gpus["rtx4090"].save()
        data_version_bump()
    assert "RTX 4090 (renamed by a curator)" in _html(client.get(url))


def test_the_page_around_a_cached_body_carries_this_visitors_path_escaped(client, settings):
    world_build(rows=DASHBOARD_WORLD)
    url = reverse("dashboard:rankings")
    client.get(url + "?segment=datacenter")  # caches the body
    hostile = url + '?segment=datacenter&utm="><b>x</b>'
    html = client.get(hostile).content.decode()
    assert '<input name="next" type="hidden" value="/?segment=datacenter&amp;utm=%22%3E%3Cb%3Ex%3C/b%3E">' in html
    assert "<b>x</b>" not in html
    assert _html(client.get(hostile)) == _uncached(client, hostile, settings)


def test_the_token_in_a_page_with_a_cached_body_is_accepted(settings):
    world_build(rows=DASHBOARD_WORLD)
    visitor = Client(enforce_csrf_checks=True)
    url = reverse("dashboard:rankings")
    Client().get(url)  # another visitor's request caches the body
    html = visitor.get(url).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token is not None
    response = visitor.post(
        reverse("set_language"), {"language": "zh-hans", "next": url, "csrfmiddlewaretoken": token.group(1)}
    )
    assert response.status_code == 302
    assert "哪款 GPU 最物有所值？" in visitor.get(url).content.decode()


def test_after_a_bump_the_warm_up_task_renders_the_busiest_pages(client):
    world = world_build(rows=DASHBOARD_WORLD)
    urls = [
        reverse("dashboard:rankings"),
        reverse("dashboard:rankings") + "?use_case=inference-8bit",
        reverse("dashboard:tiers"),
        reverse("dashboard:tiers") + "?use_case=inference-8bit",
        reverse("dashboard:gpu-detail", args=[world.gpus["rtx4090"].slug]),  # measured: among the busiest
    ]
    data_version_bump()  # outside a transaction: at once
    cache.delete(BUMP_GATE_KEY)  # its debounce period ends without another write: the warm-up runs
    assert pages_warm_task.apply().get() > len(urls)
    for language in ("en", "zh-hans"):
        for url in urls:
            with CaptureQueriesContext(connection) as queries:
                response = client.get(url, HTTP_ACCEPT_LANGUAGE=language)
            assert response.status_code == 200
            assert len(queries) == 0, (url, language, [q["sql"] for q in queries])


def test_a_bump_queues_the_warm_up_after_the_commit(settings, monkeypatch):
    from gpuatlas import data_version as module

    queued: list[float] = []
    refreshes: list[float] = []

    def followup_run(name: str, *, countdown: float = 0) -> bool:
        assert name in app.tasks
        if name in (module.SUBMITTERS_TASK, module.STANDINGS_TASK):
            refreshes.append(countdown)
            return True
        assert name == "dashboard.tasks.pages_warm_task"
        queued.append(countdown)
        return True

    monkeypatch.setattr(module, "followup_run", followup_run)
    settings.DATA_VERSION_DEBOUNCE_S = 0  # every bump at once: this test is about the warm-up's own rules
    settings.CACHE_URL = ""  # local memory
    data_version_bump()
    assert queued == []  # a worker's renders would stay in the worker
    # The rankings' submitter counts and the GPU pages' standings are stored in the database, which
    # every process reads: their refreshes are asked for whatever the cache, once while one waits.
    assert refreshes == [0.0, 0.0]
    settings.CACHE_URL = "redis://cache.example:6379/0"  # a shared cache (not contacted: CACHES stays)
    settings.PAGES_WARM_INTERVAL_S = 300
    with transaction.atomic():
        data_version_bump()
        assert queued == []  # not before the data is committed
    assert queued == [0.0]  # no warm-up ran yet: at once
    data_version_bump()
    data_version_bump()
    assert len(queued) == 1  # one warm-up waits: it renders the version current when it runs
    tasks.pages_warm_task.apply()
    data_version_bump()
    # Once it ran, the next bump queues another, started an interval after the last one.
    assert len(queued) == 2 and 295 < queued[1] <= 300


def test_a_warm_up_the_broker_lost_is_asked_for_again_by_the_next_bump(settings, monkeypatch):
    from gpuatlas import data_version as module

    asked: list[str] = []

    def followup_run(name: str, *, countdown: float = 0) -> bool:
        asked.append(name)
        return False  # the broker did not take it

    monkeypatch.setattr(module, "followup_run", followup_run)
    settings.DATA_VERSION_DEBOUNCE_S = 0
    settings.CACHE_URL = "redis://cache.example:6379/0"
    data_version_bump()
    data_version_bump()
    # Neither the warm-up nor the refreshes were queued: nothing waits, so the
    # second bump asks for both again.
    assert sorted(asked) == sorted(
        2 * ["dashboard.tasks.pages_warm_task", module.SUBMITTERS_TASK, module.STANDINGS_TASK]
    )


FOLLOW_UPS = (  # a bump's follow-ups: the task, its name and queued key, what it calls to do its work
    ("pages_warm_task", "WARM_TASK", "WARM_QUEUED_KEY", "pages_warm"),
    ("ranking_submitters_refresh_task", "SUBMITTERS_TASK", "SUBMITTERS_QUEUED_KEY", "ranking_submitters_refresh"),
    ("stored_standings_refresh_task", "STANDINGS_TASK", "STANDINGS_QUEUED_KEY", "stored_standings_refresh"),
)


@pytest.mark.parametrize(("task", "name", "queued_key", "work"), FOLLOW_UPS, ids=[f[0] for f in FOLLOW_UPS])
def test_a_follow_up_waits_while_writes_go_on(settings, monkeypatch, task, name, queued_key, work):
    """During an ingest burst (a bump held back by the debounce, or the period of the last one) the
    refreshes and the warm-up are queued again for the period's end, not run: what they store or
    render would be stale within the period. A burst that never ends still gets them once per
    interval."""
    from gpuatlas import data_version as module

    queued: list[tuple[str, float]] = []
    monkeypatch.setattr(module, "followup_run", lambda name, *, countdown=0: queued.append((name, countdown)) or True)
    monkeypatch.setattr(tasks, work, lambda **_: 7)  # what it did, without doing it
    monkeypatch.setattr(tasks, "stored_standings_refresh", lambda **_: 7)
    settings.PAGES_WARM_INTERVAL_S = 300
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False  # a worker, with a broker to queue it on
    try:
        _put_off_then_run(getattr(tasks, task), getattr(module, name), getattr(module, queued_key), module, queued)
    finally:
        app.conf.task_always_eager = eager


def _put_off_then_run(task, name, queued_key, module, queued) -> None:  # type: ignore[no-untyped-def]
    now = time.time()
    cache.set(queued_key, now, timeout=900)
    cache.set(module.BUMP_GATE_KEY, now + 8, timeout=10)
    cache.set(module.BUMP_SCHEDULED_KEY, 1, timeout=70)

    assert task.apply().get() == 0
    assert len(queued) == 1 and queued[0][0] == name and 8 <= queued[0][1] <= 9.5
    assert cache.get(queued_key) == now  # still the one waiting: a bump queues no other

    cache.delete(module.BUMP_SCHEDULED_KEY)  # the held bump was made: a new period, writes may follow
    cache.set(module.BUMP_GATE_KEY, now + 5, timeout=10)
    assert task.apply().get() == 0 and len(queued) == 2 and 5 <= queued[1][1] <= 6.5
    cache.delete(module.BUMP_GATE_KEY)  # the period ended without a write
    assert task.apply().get() == 7 and len(queued) == 2
    assert cache.get(queued_key) is None

    cache.set(queued_key, now - 300, timeout=900)  # asked an interval ago, writes still going on
    cache.set(module.BUMP_SCHEDULED_KEY, 1, timeout=70)
    assert task.apply().get() == 7 and len(queued) == 2

    app.conf.task_always_eager = True  # no broker: nothing can wait
    cache.set(queued_key, now, timeout=900)
    assert task.apply().get() == 7 and len(queued) == 2


def test_warm_ups_start_at_most_once_per_interval():
    assert pages_warm_delay_seconds(started=None, now=1000.0, interval=300) == 0
    assert pages_warm_delay_seconds(started=900.0, now=1000.0, interval=300) == 200
    assert pages_warm_delay_seconds(started=500.0, now=1000.0, interval=300) == 0


def test_beat_warms_the_pages_when_the_day_in_their_keys_turns(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["pages-warm"]
    assert entry["task"] == "dashboard.tasks.pages_warm_task" and entry["task"] in app.tasks
    assert (entry["schedule"].hour, entry["schedule"].minute) == ({0}, {1})
