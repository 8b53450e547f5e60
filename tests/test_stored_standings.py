"""The GPU page's standings stored on write (dashboard.models.StoredStanding): equal to the
computed ones (the ranking pages' rows), refreshed by a data change, and read by a cold GPU page
instead of six rankings computed from every result."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
from django.core.cache import cache
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmarks_app.models import ResultAggregate
from catalog.models import Gpu
from dashboard.models import StoredStanding
from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors.compare import compare_compute
from dashboard.selectors.standings import gpu_standings_compute, gpu_standings_stored
from dashboard.services import ranking_submitters_refresh, stored_standings_refresh
from gpuatlas.data_version import data_version, data_version_bump
from tests.world import DASHBOARD_WORLD, world_build

pytestmark = pytest.mark.usefixtures("versioned_cache")


def _assert_stored_are_computed(gpus: list[Gpu]) -> int:
    """Every use case's stored standing of each GPU is its computed row; returns the rows compared."""
    compared = 0
    for gpu in gpus:
        stored = gpu_standings_stored(gpu=gpu)
        assert stored is not None, gpu.slug
        computed = gpu_standings_compute(gpus=[gpu], graded=True)
        for use_case in USE_CASES:
            assert stored[use_case].rows == computed[use_case].rows, (gpu.slug, use_case)
            assert stored[use_case].baseline_name == computed[use_case].baseline_name
            compared += len(computed[use_case].rows)
    return compared


@pytest.mark.django_db
def test_stored_standings_are_the_computed_ones_and_a_data_change_refreshes_them(
    django_capture_on_commit_callbacks,
    eager_tasks,
):
    # eager_tasks: the refresh the bump queues runs here, also in the pass with a real broker.
    world = world_build(rows=DASHBOARD_WORLD)
    ranking_submitters_refresh()
    stored_standings_refresh()
    assert StoredStanding.objects.count() == len(USE_CASES) * Gpu.objects.count()
    assert _assert_stored_are_computed(list(Gpu.objects.all())) > 0
    h100 = world.gpus["h100"]
    before = gpu_standings_stored(gpu=h100)
    assert before is not None
    version = data_version()

    # A data change: the H100's measured figures go. Its bump stores the standings again.
    ResultAggregate.objects.filter(gpu=h100).delete()
    with django_capture_on_commit_callbacks(execute=True):
        data_version_bump()
    assert data_version() != version
    assert set(StoredStanding.objects.values_list("data_version", flat=True)) == {data_version()}
    after = gpu_standings_stored(gpu=h100)
    assert after is not None and after != before
    _assert_stored_are_computed([h100, world.gpus["rtx4090"]])


@pytest.mark.django_db
def test_standings_of_another_version_or_without_versioning_are_not_read(settings):
    world = world_build(rows=DASHBOARD_WORLD)
    stored_standings_refresh()
    h100 = world.gpus["h100"]
    assert gpu_standings_stored(gpu=h100) is not None
    # Without versioned caching writes do not bump the version: a stored version says nothing.
    settings.DATA_VERSION_CACHE_SECONDS = 0
    assert gpu_standings_stored(gpu=h100) is None
    settings.DATA_VERSION_CACHE_SECONDS = 60
    StoredStanding.objects.update(data_version="older")
    assert gpu_standings_stored(gpu=h100) is None
    stored_standings_refresh(when_stale=True)
    assert gpu_standings_stored(gpu=h100) is not None
    assert stored_standings_refresh(when_stale=True) == 0  # current: nothing written


def _cold_gpu_page_queries(client, gpu: Gpu) -> list[str]:  # type: ignore[no-untyped-def]
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("dashboard:gpu-detail", args=[gpu.slug]))
    assert response.status_code == 200
    return [q["sql"] for q in queries]


@pytest.mark.django_db
def test_a_cold_gpu_page_reads_its_stored_standings_not_the_rankings(client):
    world = world_build(rows=DASHBOARD_WORLD)
    ranking_submitters_refresh()
    h100 = world.gpus["h100"]
    computed = _cold_gpu_page_queries(client, h100)
    stored_standings_refresh()
    read = _cold_gpu_page_queries(client, h100)
    standings_reads = [sql for sql in read if "dashboard_storedstanding" in sql]
    assert len(standings_reads) == 1
    # Other GPUs' aggregates and prices (what the six rankings read) are not read.
    assert not [sql for sql in read if "benchmarks_app_scopesubmitters" in sql]
    assert len(read) < len(computed) - 10, (len(read), len(computed))


def _cells_untiered(comparison) -> list:  # type: ignore[no-untyped-def]
    # The stored rows carry the full ranking's tier and rank, which the comparison does not show.
    return [
        (column.gpu.slug, use_case, cell.relative, cell.relative_basis, cell.per_price)
        + ((None,) if cell.row is None else (dataclasses.replace(cell.row, tier=None, rank=None),))
        for column in comparison.columns
        for use_case, cell in sorted(column.cells.items())
    ]


@pytest.mark.django_db
def test_a_comparison_in_usd_reads_the_stored_standings_and_shows_the_computed_figures():
    world = world_build(rows=DASHBOARD_WORLD)
    ranking_submitters_refresh()
    gpus = [world.gpus["rtx4090"], world.gpus["h100"], world.gpus["baseline"]]
    computed = compare_compute(gpus=gpus)
    stored_standings_refresh()
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        read = compare_compute(gpus=gpus)
    assert _cells_untiered(read) == _cells_untiered(computed)
    assert any(cell.relative for column in read.columns for cell in column.cells.values())
    sql = [q["sql"] for q in queries]
    assert len([q for q in sql if "dashboard_storedstanding" in q]) == 1
    # Every GPU's aggregates (what the rankings' measured figures and estimates are made from) are not read.
    assert not [q for q in sql if "benchmarks_app_resultaggregate" in q]
    # Another currency has no stored rows: computed, with the same relative figures.
    cache.clear()
    in_euros = compare_compute(gpus=gpus, currency="EUR")
    assert [c.relative for col in in_euros.columns for _, c in sorted(col.cells.items())] == [
        c.relative for col in read.columns for _, c in sorted(col.cells.items())
    ]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_refreshes_at_once_both_land():
    """The warm-up's refresh and the bump's can run at once on two workers: the later one waits for
    the earlier one's rows and replaces them, instead of failing on them."""
    world_build(rows=DASHBOARD_WORLD)
    stored_standings_refresh()
    first_written, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():  # its rows stay locked until the second refresh waits on them
                stored_standings_refresh()
                first_written.set()
                release.wait(30)
        finally:
            connections.close_all()

    def second() -> None:
        try:
            first_written.wait(30)
            stored_standings_refresh()
        except BaseException as error:  # noqa: BLE001  # reported by the test thread
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    try:
        _until_a_backend_waits_on_a_lock()
    finally:
        release.set()
        for thread in threads:
            thread.join(60)
    assert errors == []
    assert StoredStanding.objects.count() == len(USE_CASES) * Gpu.objects.count()


def _until_a_backend_waits_on_a_lock() -> None:
    with connection.cursor() as cursor:
        for _poll in range(300):
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.05)
    raise AssertionError("the second refresh never waited for the first one's rows")


@pytest.mark.slow  # the whole demo
@pytest.mark.django_db
def test_on_the_demo_the_stored_standings_are_the_computed_ones(demo):
    stored_standings_refresh()  # the demo was loaded before versioned caching was on: another version
    busiest = ["h100-sxm5-80-gb", "a100-sxm4-80-gb", "geforce-rtx-4090", "h200-141-gb", "l40s"]
    gpus = list(Gpu.objects.filter(slug__in=busiest))
    assert len(gpus) >= 3
    assert _assert_stored_are_computed(gpus) >= 3 * len(USE_CASES) - 6
