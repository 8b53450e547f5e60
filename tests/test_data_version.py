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


def test_default_is_off_with_the_local_memory_cache() -> None:
    from gpuatlas.data_version import data_version_cache_seconds

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
