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


def test_default_is_off_with_the_local_memory_cache(settings) -> None:  # type: ignore[no-untyped-def]
    from gpuatlas.data_version import data_version_cache_seconds

    del settings.DATA_VERSION_CACHE_SECONDS  # the default, not the test suite's setting

    with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}):
        assert data_version_cache_seconds() == 0
    with override_settings(
        CACHES={"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x"}}
    ):
        assert data_version_cache_seconds() == 600


@override_settings(DATA_VERSION_CACHE_SECONDS=0)
def test_bump_is_a_no_op_while_caching_is_off(django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        data_version_bump()
    assert callbacks == []


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
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


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
def test_debounced_bumps_make_one_bump_then_one_pending() -> None:
    from gpuatlas.data_version import data_version_bump_pending

    start = data_version()
    data_version_bump(debounce_seconds=30)  # the first of a period: at once
    first = data_version()
    assert first != start
    for _ in range(3):  # a stream of ingest batches
        with transaction.atomic():
            data_version_bump(debounce_seconds=30)
        assert data_version() == first
    assert data_version_bump_pending() is True  # the drained ingest shows what was held back
    assert data_version() != first
    assert data_version_bump_pending() is False


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60, DATA_VERSION_INGEST_DEBOUNCE_S=30, INGEST_BATCH_SIZE=1)
def test_the_live_ingest_debounces_and_its_task_flushes(monkeypatch) -> None:
    from django.contrib.auth import get_user_model

    from benchmarks_app.services import intake as intake_module
    from benchmarks_app.services.ingest import submission_ingest
    from benchmarks_app.services.intake import submission_intake
    from benchmarks_app.services.peers import live_peers
    from benchmarks_app.services.snapshot import catalog_snapshot_clear
    from benchmarks_app.tasks import ingest_submission
    from tests.factories import body, submission_document
    from tests.world import INGEST_WORLD, world_build

    catalog_snapshot_clear()
    live_peers.clear()
    monkeypatch.setattr(intake_module, "submission_enqueue", lambda **_: True)  # ingested below, one by one
    world_build(rows=INGEST_WORLD)
    user = get_user_model().objects.create(username="debounce")
    stored = [submission_intake(body=body(submission_document()), submitter=user).submission for _ in range(3)]
    start = data_version()
    assert submission_ingest(submission_id=stored[0].pk) == "accepted"
    after_first = data_version()
    assert after_first != start
    submission_ingest(submission_id=stored[1].pk)
    assert data_version() == after_first  # held back: pending
    ingest_submission.apply(args=[stored[2].pk])  # the task that leaves nothing waiting makes the pending bump
    assert data_version() != after_first


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
def test_while_one_reader_recomputes_the_others_get_the_previous_value() -> None:
    assert square(x=5) == 25
    data_version_bump()
    calls.clear()
    _hold_recompute_lock("test_square", x=5)  # another process is recomputing this version
    assert square(x=5) == 25 and calls == []  # the previous version's value, no recomputation
    cache.clear()
    assert square(x=5) == 25 and calls == [5]  # nothing to fall back on: computed


outer_calls: list[int] = []


@data_versioned("test_outer")
def square_plus_one(*, x: int) -> int:
    outer_calls.append(x)
    return square(x=x) + 1


def _hold_recompute_lock(name: str, **kwargs: int) -> str:
    """Act as another process that is recomputing ``name`` for the current version."""
    import hashlib

    from django.utils.translation import get_language

    from gpuatlas.data_version import data_version_cache_key

    digest = hashlib.sha256(repr(sorted(kwargs.items())).encode()).hexdigest()[:32]
    key = f"{data_version_cache_key(name, get_language() or '', digest)}:computing"
    assert cache.add(key, 1, 60)
    return key


@pytest.mark.django_db(transaction=True)
@override_settings(DATA_VERSION_CACHE_SECONDS=60)
def test_a_value_built_from_a_previous_versions_answer_is_not_kept_as_current() -> None:
    outer_calls.clear()
    assert square_plus_one(x=6) == 37
    data_version_bump()
    lock = _hold_recompute_lock("test_square", x=6)  # the inner read is being recomputed elsewhere
    calls.clear()
    assert square_plus_one(x=6) == 37  # answered, from the inner's previous value
    assert calls == [] and outer_calls == [6, 6]
    # The other process finished: the outer value is computed again, from the fresh inner one,
    # instead of the one built from stale data being served for this whole version.
    cache.delete(lock)
    assert square_plus_one(x=6) == 37
    assert calls == [6] and outer_calls == [6, 6, 6]
    assert square_plus_one(x=6) == 37 and outer_calls == [6, 6, 6]  # now kept


def test_a_watch_tells_its_enclosing_watch() -> None:
    from gpuatlas.data_version import _SERVED_STALE, stale_watch

    with stale_watch() as outer:
        with stale_watch() as clean:
            pass
        with stale_watch() as tainted:
            _SERVED_STALE.set(True)
        assert outer is not None
    assert (clean.stale, tainted.stale, outer.stale) == (False, True, True)
    with stale_watch() as later:
        pass
    assert later.stale is False


factor = {"value": 2}
scaled_calls: list[int] = []


@data_versioned("test_scaled")
def scaled(*, x: int) -> int:
    scaled_calls.append(x)
    if factor["value"] < 0:
        raise RuntimeError("the data cannot be read")
    return x * factor["value"]


@data_versioned("test_label")
def status_label() -> str:
    from django.utils.translation import gettext

    scaled_calls.append(0)
    return gettext("Accepted")


@pytest.fixture
def background(settings):  # type: ignore[no-untyped-def]
    from gpuatlas.data_version import data_version_refresh_wait

    settings.DATA_VERSION_CACHE_SECONDS = 60
    settings.DATA_VERSION_REFRESH_IN_BACKGROUND = True
    factor["value"] = 2
    scaled_calls.clear()
    yield data_version_refresh_wait
    data_version_refresh_wait()
    factor["value"] = 2


@pytest.mark.django_db(transaction=True)
def test_after_a_bump_the_first_reader_gets_the_previous_value_and_a_thread_recomputes(background) -> None:
    assert scaled(x=7) == 14  # nothing earlier to answer with: computed by the reader
    assert scaled_calls == [7]
    factor["value"] = 3
    data_version_bump()
    assert scaled(x=7) == 14  # at once, the previous version's value
    background()
    assert scaled_calls == [7, 7]  # recomputed once, by the thread
    assert scaled(x=7) == 21 and scaled_calls == [7, 7]  # and kept


@pytest.mark.django_db(transaction=True)
def test_the_thread_recomputes_in_the_readers_language(background) -> None:
    from django.utils import translation

    with translation.override("zh-hans"):
        chinese = status_label()
        data_version_bump()
        assert status_label() == chinese
    background()
    with translation.override("zh-hans"):
        assert status_label() == chinese == "已接受"
    with translation.override("en"):
        assert status_label() == "Accepted"
    assert scaled_calls == [0, 0, 0]  # zh, zh again in the thread, en


@pytest.mark.django_db(transaction=True)
def test_when_the_thread_is_busy_the_reader_computes(background, monkeypatch) -> None:
    from gpuatlas import data_version as module

    assert scaled(x=4) == 8
    factor["value"] = 5
    data_version_bump()

    class Full:
        def submit(self, job: object) -> bool:
            return False

    monkeypatch.setattr(module, "_refresher_get", lambda: Full())
    assert scaled(x=4) == 20  # fresh, computed by the reader
    assert scaled_calls == [4, 4]


@pytest.mark.django_db(transaction=True)
def test_a_failed_background_recomputation_lets_the_next_reader_try_again(background, caplog) -> None:
    assert scaled(x=9) == 18
    factor["value"] = -1
    data_version_bump()
    assert scaled(x=9) == 18
    background()
    assert "recomputing a cached value in the background failed" in caplog.text
    factor["value"] = 4
    assert scaled(x=9) == 18  # the lock was released: this reader queues a new recomputation
    background()
    assert scaled(x=9) == 36
    assert scaled_calls == [9, 9, 9]
