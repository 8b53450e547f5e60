"""Distinct submitters per GPU: cached with its aggregates' fingerprint (one entry per scope), recounted
only for the GPUs whose results changed, and always what the plain count says."""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from benchmarks_app.models import BenchmarkResult, ResultAggregate
from benchmarks_app.services.aggregates import aggregates_rebuild, aggregates_refresh_pairs
from dashboard.selectors.submitters import aggregate_fingerprints, distinct_submitters_by_gpu
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
    rows = (
        BenchmarkResult.objects.trusted()
        .filter(workload_id__in=workloads, precision__in=precisions)
        .order_by()
        .values("gpu_id")
        .annotate(n=Count("submitter_key", distinct=True))
    )
    return {row["gpu_id"]: row["n"] for row in rows}


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
