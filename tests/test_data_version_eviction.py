"""The data version outlives its cache copy: a full in-process cache culls its oldest entries (the
version's copy among them, it is written once), and the version is read back from the database
instead of starting a new one that would make every cached page cold."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db.models import Sum
from django.test import override_settings

import gpuatlas.data_version as versions
from benchmarks_app.models import ResultAggregate
from catalog.models import DataVersion
from gpuatlas.data_version import CACHE_KEY, data_version, data_version_bump

pytestmark = pytest.mark.django_db

# The embedded default's backend at Django's own limit (300 entries): a page at scale used to
# write more than that, culling the version's copy in the middle of its render.
SMALL_LOCAL_CACHE = {
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "eviction-test",
        "OPTIONS": {"MAX_ENTRIES": 300},
    }
}


def _fill(entries: int, *, prefix: str) -> None:
    for index in range(entries):
        cache.set(f"{prefix}:{index}", index, 60)


@pytest.fixture
def small_cache(settings):  # type: ignore[no-untyped-def]
    settings.DATA_VERSION_CACHE_SECONDS = 60
    settings.DATA_VERSION_DEBOUNCE_S = 0
    with override_settings(CACHES=SMALL_LOCAL_CACHE):
        cache.clear()
        yield
        cache.clear()


@pytest.mark.usefixtures("small_cache")
def test_a_culled_copy_is_read_back_from_the_database():
    version = data_version()
    _fill(1000, prefix="other")  # the copy is among the oldest entries: culled
    assert cache.get(CACHE_KEY) is None
    assert data_version() == version
    assert DataVersion.objects.get().token == version


@pytest.mark.usefixtures("small_cache")
def test_a_bump_stores_the_new_version_and_its_copy(django_capture_on_commit_callbacks):
    before = data_version()
    with django_capture_on_commit_callbacks(execute=True):
        data_version_bump()
    after = data_version()
    assert after != before
    assert DataVersion.objects.get().token == after
    cache.delete(CACHE_KEY)
    assert data_version() == after


def _busiest_gpu_slug() -> str:
    row = ResultAggregate.objects.values("gpu__slug").annotate(results=Sum("n")).order_by("-results").first()
    assert row is not None
    return str(row["gpu__slug"])


@pytest.mark.usefixtures("demo", "small_cache")
def test_the_version_and_the_pages_survive_full_renders_under_the_embedded_cache(client, monkeypatch):
    """Each busy page rendered from a cache filled to its limit with other entries (its writes
    cull the oldest, the version's copy first) is warm at once after, under the same version."""
    slug = _busiest_gpu_slug()
    urls = [
        "/",
        f"/gpus/{slug}/",
        f"/compare/?gpus={slug},geforce-rtx-4090",
        "/tiers/",
        "/?use_case=llm-serving",
        "/api/v1/rankings/?use_case=llm-serving",
    ]
    version = data_version()
    computed: list[str] = []
    spend = versions.compute_spend
    for index, url in enumerate(urls):
        _fill(299, prefix=f"other-{index}")  # a full cache: the page's own writes cull
        assert client.get(url).status_code == 200, url
        monkeypatch.setattr(versions, "compute_spend", lambda url=url: computed.append(url))
        assert client.get(url).status_code == 200, url  # warm: nothing cached is computed again
        monkeypatch.setattr(versions, "compute_spend", spend)
    assert computed == []
    assert data_version() == version
