"""Every write of published results asks for one evaluation of the ranking watches of their
workloads' use cases, through one rule (benchmarks_app.services.results_changed): the ingest, the
Lambda lab import, the MLPerf table import, approving and rejecting submissions."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from benchmarks_app.models import BenchmarkResult, RawSubmission, SubmissionStatus, Workload
from benchmarks_app.services.lab_import import BUNDLED_DIR, UPSTREAM_URL, lambda_import_directory
from benchmarks_app.services.mlperf_import import mlperf_import_file
from benchmarks_app.services.moderation import submissions_approve, submissions_reject
from benchmarks_app.services.results_changed import WATCHES_AFTER_RESULTS_TASK
from benchmarks_app.services.snapshot import catalog_snapshot_clear
from catalog.models import GpuAlias
from gpuatlas import followups
from tests.factories import UserFactory, document_ingest, make_result, submission_document
from tests.world import INGEST_WORLD, world_build
from watches.models import Watch
from watches.selectors.changes import use_cases_of_workloads, watch_ids_of_use_cases
from watches.services.watches import watch_create
from watches.validation import WatchSpec

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_tasks")]

MLPERF_EXCERPT = Path(__file__).resolve().parent / "fixtures" / "mlperf" / "summary_results_v5.1_excerpt.json"


@pytest.fixture
def asked(monkeypatch):
    """The watch evaluations asked for, each with its workload ids (recorded, not run)."""
    asked: list[list[int]] = []
    in_process = followups.followup_run

    def follow(name: str, **kwargs):
        if name == WATCHES_AFTER_RESULTS_TASK:
            asked.append(kwargs["workload_ids"])
            return True
        return in_process(name, **kwargs)

    monkeypatch.setattr(followups, "followup_run", follow)
    return asked


@pytest.fixture
def ingested():
    world = world_build(rows=INGEST_WORLD)
    GpuAlias.objects.create(gpu=world.gpus["h100"], alias="H100 80GB SXM5", normalised="h10080gbsxm5")
    catalog_snapshot_clear()
    return world


def _workloads_of(results) -> list[int]:
    return sorted(set(results.values_list("workload_id", flat=True)))


def test_the_ingest_and_moderation_ask_for_the_watches_of_their_workloads(ingested, asked):
    users = [get_user_model().objects.create(username=f"u{i}") for i in range(3)]
    ids = [
        document_ingest(submission_document(results=[make_result(median=median)]), submitter=users[i % 3]).pk
        for i, median in enumerate([690.0, 700.0, 705.0, 710.0, 698.0, 702.0, 300.0, 703.0])
    ]
    resnet = _workloads_of(BenchmarkResult.objects.filter(submission_id=ids[0]))
    assert len(resnet) == 1
    assert asked == [resnet] * len(ids)
    asked.clear()

    moderator = UserFactory(username="moderator", is_staff=True)
    flagged = list(
        RawSubmission.objects.filter(pk__in=ids, status=SubmissionStatus.FLAGGED).values_list("pk", flat=True)
    )
    assert flagged  # the 300 outlier
    submissions_approve(submission_ids=flagged, moderator=moderator)
    assert asked == [resnet]
    submissions_reject(submission_ids=[ids[1]], moderator=moderator)
    # The rejected submission's results are gone: its workloads were read before they went.
    assert not BenchmarkResult.objects.filter(submission_id=ids[1]).exists()
    assert asked == [resnet, resnet]


def test_the_lab_imports_ask_for_the_watches_of_their_workloads(ingested, asked):
    summary = lambda_import_directory(path=BUNDLED_DIR)
    assert summary.results_written > 0
    assert asked == [_workloads_of(BenchmarkResult.objects.filter(source__startswith=UPSTREAM_URL))]
    asked.clear()
    # Imported again: the same results replaced, the same watches asked for.
    lambda_import_directory(path=BUNDLED_DIR)
    assert asked == [_workloads_of(BenchmarkResult.objects.filter(source__startswith=UPSTREAM_URL))]
    asked.clear()
    mlperf_import_file(path=MLPERF_EXCERPT, published=dt.date(2025, 9, 9))
    written = _workloads_of(BenchmarkResult.objects.filter(source__startswith="MLPerf Inference"))
    assert written and asked == [written]


def test_the_evaluation_reads_the_watches_of_the_use_cases_of_the_workloads(ingested):
    user = UserFactory()
    training, _ = watch_create(
        user=user,
        spec=WatchSpec(
            kind="ranking", metric="perf_per_dollar", threshold=Decimal("5"), gpu="", query={"use_case": "training"}
        ),
    )
    serving, _ = watch_create(
        user=user,
        spec=WatchSpec(
            kind="ranking",
            metric="cost_per_million_tokens",
            threshold=Decimal("0.5"),
            gpu="",
            query={"use_case": "llm-serving", "model_size": "70b"},
        ),
    )
    resnet = Workload.objects.get_or_create(
        slug="resnet50", version="1.0", defaults={"name": "ResNet-50", "unit": "images/s", "category": "training"}
    )[0]
    assert "training" in use_cases_of_workloads(workload_ids=[resnet.pk])
    ids = watch_ids_of_use_cases(use_cases=use_cases_of_workloads(workload_ids=[resnet.pk]))
    assert training.pk in ids and serving.pk not in ids
    assert watch_ids_of_use_cases(use_cases=use_cases_of_workloads(workload_ids=[])) == []
    assert Watch.objects.count() == 2
