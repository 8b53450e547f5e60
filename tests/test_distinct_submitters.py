"""Distinct submitters per GPU: stored per ranking scope after writes and cached with the aggregates'
fingerprint (one entry per scope), recounted only for the GPUs whose results changed, and always what
the plain count says."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count
from django.test import Client
from django.test.utils import CaptureQueriesContext

from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from benchmarks_app.models import BenchmarkResult, ResultAggregate, ScopeSubmitters
from benchmarks_app.services.aggregates import aggregates_rebuild, aggregates_refresh_pairs
from benchmarks_app.services.scope_submitters import scope_digest, scope_submitters_refresh
from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import ranking_submitter_scopes, rankings_compute
from dashboard.selectors.submitters import aggregate_fingerprints, distinct_submitters_by_gpu
from dashboard.services import ranking_submitters_refresh
from gpuatlas.data_version import data_version_bump
from tests.factories import BenchmarkResultFactory
from tests.world import DASHBOARD_WORLD, world_build

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("versioned_cache")]


def _scope() -> tuple[list[int], list[str]]:
    workloads = sorted(set(ResultAggregate.objects.values_list("workload_id", flat=True)))
    precisions = sorted(set(ResultAggregate.objects.values_list("precision", flat=True)))
    return workloads, precisions


def _counts() -> dict[int, int]:
    workloads, precisions = _scope()
    aggregates = ResultAggregate.objects.filter(workload_id__in=workloads, precision__in=precisions).values(
        "gpu_id", "comparison_key", "n", "updated_at"
    )
    return distinct_submitters_by_gpu(
        fingerprints=aggregate_fingerprints(aggregates), workload_ids=workloads, precisions=precisions
    )


def _plain() -> dict[int, int]:
    workloads, precisions = _scope()
    return _plain_in(list(workloads), tuple(precisions))


def _count_queries(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries if "COUNT(DISTINCT" in q["sql"].upper()]


def test_counts_are_the_plain_distinct_count_and_cached():
    world_build(rows=DASHBOARD_WORLD)
    aggregates_rebuild()
    assert _counts() == _plain() and _plain()
    with CaptureQueriesContext(connection) as queries:
        assert _counts() == _plain()
    assert len(_count_queries(queries)) == 1  # the plain count of this test; none from the cache


def test_new_results_recount_only_their_gpu():
    world = world_build(rows=DASHBOARD_WORLD)
    aggregates_rebuild()
    before = _counts()
    added = [
        BenchmarkResultFactory(
            gpu=world.gpus["rtx4090"],
            workload__slug="resnet50",
            value=131.0 + index,
            submitter_key=f"fresh-{index}",
            comparison_key="f" * 64,  # a sha256 like the ingest's (PostgreSQL locks on its prefix)
        )
        for index in range(3)
    ]
    # As the ingest does: the aggregates of the pairs that got results are rewritten, no others.
    with transaction.atomic():
        aggregates_refresh_pairs(pairs={(r.gpu_id, r.comparison_key) for r in added})
    with CaptureQueriesContext(connection) as queries:
        after = _counts()
    recounts = _count_queries(queries)
    assert len(recounts) == 1
    recounted = re.search(r'"gpu_id" IN \(([^)]*)\)', recounts[0])
    assert recounted is not None and recounted.group(1) == str(world.gpus["rtx4090"].pk)  # that GPU alone
    assert after == _plain()
    assert after[world.gpus["rtx4090"].pk] == before[world.gpus["rtx4090"].pk] + 3
    assert {g: c for g, c in after.items() if g != world.gpus["rtx4090"].pk} == {
        g: c for g, c in before.items() if g != world.gpus["rtx4090"].pk
    }


def _plain_in(workloads: list[int], precisions: tuple[str, ...]) -> dict[int, int]:
    rows = (
        BenchmarkResult.objects.trusted()
        .filter(workload_id__in=workloads, precision__in=precisions)
        .order_by()
        .values("gpu_id")
        .annotate(n=Count("submitter_key", distinct=True))
    )
    return {row["gpu_id"]: row["n"] for row in rows}


def _stored_in(workloads: list[int], precisions: tuple[str, ...]) -> dict[int, int]:
    scope = scope_digest(workload_ids=workloads, precisions=precisions)
    return dict(ScopeSubmitters.objects.filter(scope=scope).values_list("gpu_id", "submitters"))


def _add_results(world, *, count: int) -> list[Any]:  # type: ignore[no-untyped-def]
    added = [
        BenchmarkResultFactory(
            gpu=world.gpus["rtx4090"],
            workload__slug="resnet50",
            value=131.0 + index,
            submitter_key=f"fresh-{index}",
            comparison_key="f" * 64,
        )
        for index in range(count)
    ]
    with transaction.atomic():
        aggregates_refresh_pairs(pairs={(r.gpu_id, r.comparison_key) for r in added})
    return added


def test_stored_counts_are_the_plain_count_in_every_ranking_scope():
    world_build(rows=DASHBOARD_WORLD)
    aggregates_rebuild()
    assert ranking_submitters_refresh() > 0
    scopes = ranking_submitter_scopes()
    # Every measured use case at each of its precision families, and nothing else stored.
    assert len(scopes) == sum(len(uc.precision_families) for uc in USE_CASES.values() if not uc.is_llm)
    assert any(_plain_in(*scope) for scope in scopes)
    for workloads, precisions in scopes:
        assert _stored_in(workloads, precisions) == _plain_in(workloads, precisions)
    assert set(ScopeSubmitters.objects.values_list("scope", flat=True)) <= {
        scope_digest(workload_ids=w, precisions=p) for w, p in scopes
    }
    assert ranking_submitters_refresh() == 0  # nothing changed: nothing recounted


def test_a_ranking_with_current_stored_counts_reads_no_result():
    world_build(rows=DASHBOARD_WORLD)
    aggregates_rebuild()
    ranking_submitters_refresh()
    cache.clear()  # nothing cached: the counts come from the table alone
    params = RankingParams(use_case="training", precision="16bit", show="all")
    with CaptureQueriesContext(connection) as queries:
        ranking = rankings_compute(params=params)
    assert not [q["sql"] for q in queries if "benchmarks_app_benchmarkresult" in q["sql"]]
    workloads, precisions = next((w, p) for w, p in ranking_submitter_scopes() if p == PRECISION_FAMILIES["16bit"][0])
    plain = _plain_in(workloads, precisions)
    measured = [row for row in ranking.rows + ranking.ineligible_rows if row.gpu_id in plain]
    assert measured and all(row.distinct_submitters == plain[row.gpu_id] for row in measured)


def test_the_home_page_cold_reads_no_result_once_counts_are_stored():
    world_build(rows=DASHBOARD_WORLD)
    aggregates_rebuild()
    ranking_submitters_refresh()
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        assert Client().get("/").status_code == 200
    assert not [q["sql"] for q in queries if "benchmarks_app_benchmarkresult" in q["sql"]]


def _counts_in(workloads: list[int], precisions: tuple[str, ...]) -> dict[int, int]:
    aggregates = ResultAggregate.objects.filter(workload_id__in=workloads, precision__in=precisions).values(
        "gpu_id", "comparison_key", "n", "updated_at"
    )
    return distinct_submitters_by_gpu(
        fingerprints=aggregate_fingerprints(aggregates), workload_ids=workloads, precisions=precisions
    )


def test_a_data_change_is_counted_for_its_gpu_until_the_refresh_stores_it():
    world = world_build(rows=DASHBOARD_WORLD)
    aggregates_rebuild()
    ranking_submitters_refresh()
    added = _add_results(world, count=3)
    gpu = world.gpus["rtx4090"].pk
    workloads, precisions = next(
        (w, p) for w, p in ranking_submitter_scopes() if added[0].workload_id in w and added[0].precision in p
    )
    before = _stored_in(workloads, precisions)
    cache.clear()
    # Before the refresh: the stored count is stale for that GPU alone, which is counted.
    with CaptureQueriesContext(connection) as queries:
        after = _counts_in(workloads, precisions)
    recounts = _count_queries(queries)
    assert len(recounts) == 1 and re.search(rf'"gpu_id" IN \({gpu}\)', recounts[0])
    assert after == _plain_in(workloads, precisions) and after[gpu] == before[gpu] + 3
    # The refresh recounts that GPU (in the scopes holding the new results) and stores the plain count.
    assert ranking_submitters_refresh() >= 1
    for scope in ranking_submitter_scopes():
        assert _stored_in(*scope) == _plain_in(*scope)
    assert ranking_submitters_refresh() == 0
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        assert _counts_in(workloads, precisions) == after
    assert not _count_queries(queries)


def test_a_bump_refreshes_the_stored_counts(eager_tasks):  # type: ignore[no-untyped-def]
    # eager_tasks: the refresh the bump queues runs here, also in the pass with a real broker.
    world = world_build(rows=DASHBOARD_WORLD)
    aggregates_rebuild()
    ranking_submitters_refresh()
    _add_results(world, count=2)
    gpu = world.gpus["rtx4090"].pk
    stale = dict(ScopeSubmitters.objects.filter(gpu_id=gpu).values_list("scope", "submitters"))
    with transaction.atomic():
        data_version_bump()  # as every writer does; the refresh follows once it commits
    for workloads, precisions in ranking_submitter_scopes():
        assert _stored_in(workloads, precisions) == _plain_in(workloads, precisions)
    fresh = dict(ScopeSubmitters.objects.filter(gpu_id=gpu).values_list("scope", "submitters"))
    assert any(fresh[s] == stale[s] + 2 for s in stale)


def test_a_gpu_whose_results_are_gone_loses_its_stored_counts():
    world = world_build(rows=DASHBOARD_WORLD)
    aggregates_rebuild()
    ranking_submitters_refresh()
    gpu = world.gpus["rtx4090"].pk
    assert ScopeSubmitters.objects.filter(gpu_id=gpu).exists()
    BenchmarkResult.objects.filter(gpu_id=gpu).delete()
    ResultAggregate.objects.filter(gpu_id=gpu).delete()
    scope_submitters_refresh(scopes=ranking_submitter_scopes())
    assert not ScopeSubmitters.objects.filter(gpu_id=gpu).exists()
    assert ScopeSubmitters.objects.exists()


def test_a_cold_gpu_page_counts_no_submitter_and_its_queries_do_not_grow_with_the_results():
    world = world_build(rows=DASHBOARD_WORLD)
    aggregates_rebuild()
    ranking_submitters_refresh()
    url = f"/gpus/{world.gpus['baseline'].slug}/"

    def cold_queries() -> CaptureQueriesContext:
        cache.clear()
        with CaptureQueriesContext(connection) as queries:
            assert Client().get(url).status_code == 200
        return queries

    cold_queries()  # the data version's row is created on the first read
    before = cold_queries()
    assert not _count_queries(before)
    _add_results(world, count=40)  # as the ingest writes them: results, then their aggregates
    ranking_submitters_refresh()  # and the refresh that follows the bump
    after = cold_queries()
    assert not _count_queries(after) and len(after) == len(before)
