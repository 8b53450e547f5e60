"""The data version behind cached rankings: a bump (at commit) makes cached reads recompute."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import transaction
from django.test import override_settings

from gpuatlas.data_version import data_version, data_version_bump, data_versioned

calls: list[int] = []


@data_versioned("test_square")
def square(*, x: int) -> int:
    calls.append(x)
    return x * x


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    calls.clear()
    yield
    cache.clear()


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
def test_cached_until_the_version_changes() -> None:
    assert square(x=3) == 9
    assert square(x=3) == 9
    assert calls == [3]
    assert square(x=4) == 16  # other arguments, other entry
    assert calls == [3, 4]
    data_version_bump()  # outside a transaction: at once
    assert square(x=3) == 9
    assert calls == [3, 4, 3]


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
def test_a_new_day_is_a_new_entry(monkeypatch) -> None:
    import datetime as dt

    from django.utils import timezone

    assert square(x=3) == 9 and square(x=3) == 9
    tomorrow = timezone.now() + dt.timedelta(days=1)
    monkeypatch.setattr(timezone, "now", lambda: tomorrow)  # pages say how many days old a price is
    assert square(x=3) == 9
    assert calls == [3, 3]


@override_settings(DATA_VERSION_CACHE_SECONDS=0)
def test_zero_seconds_turns_caching_off() -> None:
    square(x=2)
    square(x=2)
    assert calls == [2, 2]


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
def test_bump_waits_for_commit_and_is_dropped_on_rollback() -> None:
    before = data_version()
    with transaction.atomic():
        data_version_bump()
        assert data_version() == before  # readers keep the old version until the data is committed
    after_commit = data_version()
    assert after_commit != before
    with pytest.raises(RuntimeError), transaction.atomic():
        data_version_bump()
        raise RuntimeError("rolled back")
    assert data_version() == after_commit


def test_versioned_entries_live_a_day_with_redis_and_are_off_with_local_memory():
    import os
    import subprocess
    import sys

    script = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='gpuatlas.settings'; django.setup(); "
        "from django.conf import settings; print(settings.DATA_VERSION_CACHE_SECONDS)"
    )
    seconds = []
    for cache_url in ("redis://127.0.0.1:6379/0", ""):
        env = {"PATH": os.environ.get("PATH", ""), "CACHE_URL": cache_url, "DEBUG": "1"}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        seconds.append(int(result.stdout.strip().splitlines()[-1]))
    # A bump replaces an entry, not its age: the busiest page must not go cold after idle minutes.
    assert seconds == [86_400, 0]


@override_settings(DATA_VERSION_CACHE_SECONDS=0)
def test_bump_is_a_no_op_while_caching_is_off(django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        data_version_bump()
    assert callbacks == []


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60, DATA_VERSION_DEBOUNCE_S=0)  # two edits in a row, each shown
def test_a_curators_admin_edit_makes_cached_pages_recompute() -> None:
    """An admin fix of a spec must not wait for cached rankings to expire."""
    from django.test import Client

    from tests.factories import GpuFactory, UserFactory

    gpu = GpuFactory(name="Test GPU", memory_gib=24)
    admin_user = UserFactory(username="curator", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin_user)
    before = data_version()
    page = client.get(f"/admin/catalog/tensorpeak/add/?gpu={gpu.pk}")
    assert page.status_code == 200
    response = client.post(
        "/admin/catalog/tensorpeak/add/",
        {
            "gpu": gpu.pk,
            "precision": "bf16",
            "supported": "on",
            "dense_tflops": "123.5",
            "source": "https://example.org/datasheet.pdf",
            "as_of": "2026-11-01",
            "note": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert data_version() != before
    after_add = data_version()
    peak_id = gpu.tensor_peaks.get().pk
    response = client.post(f"/admin/catalog/tensorpeak/{peak_id}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert data_version() != after_add


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
def test_catalogue_import_bumps_the_version(tmp_path) -> None:
    from catalog.services.catalog_import import catalog_import

    before = data_version()
    (tmp_path / "architectures.toml").write_text("")
    (tmp_path / "gpus.toml").write_text("")
    catalog_import(curated_dir=tmp_path, progress=lambda items, total, label: items)
    assert data_version() != before


def _scheduled_bumps(monkeypatch) -> list[float]:  # type: ignore[no-untyped-def]
    """Capture what the debounce schedules for later (a worker would run it at the period's end)."""
    from gpuatlas import data_version as module
    from gpuatlas.celery import app

    scheduled: list[float] = []

    def followup_run(name: str, *, countdown: float = 0) -> bool:
        assert name in app.tasks  # a worker knows it by that name
        if name == module.BUMP_TASK:  # not the page warm-up a bump asks for with a shared cache
            scheduled.append(countdown)
        return True

    monkeypatch.setattr(module, "followup_run", followup_run)
    return scheduled


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60, DATA_VERSION_DEBOUNCE_S=30)
def test_bumps_inside_the_debounce_period_make_one_bump_at_its_end(monkeypatch) -> None:
    from gpuatlas.data_version import BUMP_GATE_KEY, data_version_bump_task

    scheduled = _scheduled_bumps(monkeypatch)
    start = data_version()
    data_version_bump()  # the first of a period: at once
    first = data_version()
    assert first != start and scheduled == []
    for _ in range(3):  # a stream of ingest batches
        with transaction.atomic():
            data_version_bump()
        assert data_version() == first
    assert len(scheduled) == 1 and 28 < scheduled[0] <= 30  # one bump, delayed to the period's end, not dropped
    cache.delete(BUMP_GATE_KEY)  # the period ends
    data_version_bump_task.apply()
    assert data_version() != first
    with transaction.atomic():
        data_version_bump()
    assert len(scheduled) == 2  # the delayed bump started a new period


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60, DATA_VERSION_DEBOUNCE_S=30)
def test_without_a_broker_a_held_back_bump_is_made_at_once(eager_tasks) -> None:  # type: ignore[no-untyped-def]
    data_version_bump()
    first = data_version()
    with transaction.atomic():
        data_version_bump()  # eager tasks: the delayed bump runs now
    assert data_version() != first


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60, DATA_VERSION_DEBOUNCE_S=30, INGEST_BATCH_SIZE=1)
def test_the_live_ingest_bumps_each_batch_and_the_debounce_delays_it(monkeypatch) -> None:
    from django.contrib.auth import get_user_model

    from benchmarks_app.services import intake as intake_module
    from benchmarks_app.services.ingest import submission_ingest
    from benchmarks_app.services.intake import submission_intake
    from benchmarks_app.services.peers import live_peers
    from benchmarks_app.services.snapshot import catalog_snapshot_clear
    from gpuatlas.data_version import BUMP_GATE_KEY, data_version_bump_task
    from tests.factories import body, submission_document
    from tests.world import INGEST_WORLD, world_build

    catalog_snapshot_clear()
    live_peers.clear()
    monkeypatch.setattr(intake_module, "submission_enqueue", lambda **_: True)  # ingested below, one by one
    world_build(rows=INGEST_WORLD)
    user = get_user_model().objects.create(username="debounce")
    stored = [submission_intake(body=body(submission_document()), submitter=user).submission for _ in range(2)]
    scheduled = _scheduled_bumps(monkeypatch)
    start = data_version()
    assert submission_ingest(submission_id=stored[0].pk) == "accepted"
    after_first = data_version()
    assert after_first != start
    submission_ingest(submission_id=stored[1].pk)
    assert data_version() == after_first and len(scheduled) == 1  # held back to the period's end
    cache.delete(BUMP_GATE_KEY)
    data_version_bump_task.apply()
    assert data_version() != after_first


@data_versioned("test_label")
def status_label() -> str:
    from django.utils.translation import gettext

    calls.append(0)
    return gettext("Accepted")


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
def test_each_language_has_its_own_entry() -> None:
    from django.utils import translation

    with translation.override("zh-hans"):
        assert status_label() == "已接受"
        assert status_label() == "已接受"
    with translation.override("en"):
        assert status_label() == "Accepted"
    assert calls == [0, 0]


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
def test_a_cached_none_is_not_computed_again() -> None:
    found: list[int] = []

    @data_versioned("test_nothing")
    def nothing() -> None:
        found.append(1)

    assert nothing() is None and nothing() is None
    assert found == [1]
