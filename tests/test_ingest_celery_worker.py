"""The ingest with a real Redis broker and real Celery worker processes (PostgreSQL/Redis pass).

The worker runs `celery -A gpuatlas worker -Q ingest,imports -P prefork -c 1` against the
test database; the test enqueues through the application's normal path (intake, on_commit).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, RawSubmission, ResultAggregate, SubmissionStatus
from benchmarks_app.services.ingest import TERMINAL, submissions_sweep
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.tasks import submissions_enqueue
from tests.factories import UserFactory, body, make_result, submission_document, token_client
from tests.reliability_support import Process, database_url_of_tests, wait_until
from tests.world import INGEST_WORLD

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.celery_worker,
    pytest.mark.slow,
]
WORLD = INGEST_WORLD


class Worker(Process):
    """One `celery worker` process group on the configured broker; kill() is SIGKILL to the parent
    and its pool child."""

    def __init__(self, log_path: Path) -> None:
        env = {**os.environ, "DATABASE_URL": database_url_of_tests(), "DJANGO_SETTINGS_MODULE": "gpuatlas.settings"}
        super().__init__(
            [
                sys.executable, "-m", "celery", "-A", "gpuatlas", "worker",
                "-Q", "ingest,imports", "-P", "prefork", "-c", "1",
                "-n", f"ingest-test-{uuid.uuid4().hex[:8]}@%h",
                "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING",
            ],
            env,
            log_path,
        )  # fmt: skip


def purge_queues() -> None:
    """Messages left by earlier tests would only be claimed in vain; start from empty queues."""
    from gpuatlas.celery import app

    with app.connection_for_write() as broker:
        for queue in ("ingest", "imports"):
            broker.default_channel.queue_purge(queue)


@pytest.fixture
def workers(transactional_db, tmp_path):
    purge_queues()
    started: list[Worker] = []

    def start() -> Worker:
        worker = Worker(tmp_path / "worker.log")
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def sweep_with_short_graces() -> None:
    """The periodic sweeper, with graces short enough for a test."""
    with override_settings(INGEST_CLAIM_GRACE_S=3, INGEST_RECEIVED_GRACE_S=10):
        submissions_enqueue(submission_ids=submissions_sweep().waiting)


def test_post_to_accepted_through_redis_and_a_worker(world, workers):
    workers()
    document = submission_document()
    response = token_client(UserFactory(username="worker-test")).post(
        "/api/v1/submissions/", data=body(document), content_type="application/json"
    )
    assert response.status_code == 201
    submission = RawSubmission.objects.get(run_uuid=document["run_uuid"])
    assert wait_until(lambda: RawSubmission.objects.get(pk=submission.pk).status in TERMINAL, timeout=60)
    submission.refresh_from_db()
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    assert (submission.attempts, submission.gpu_id) == (1, world.gpus["h100"].pk)
    assert BenchmarkResult.objects.filter(submission=submission).count() == 2


def test_sigkill_mid_batch_loses_nothing_and_ingests_nothing_twice(world, workers):
    """Kill -9 a worker while it is inside an ingest transaction, then let another finish the batch.

    To be sure the kill lands mid-ingest, the test holds the lock of the GPU's row (another
    connection, in a transaction): the worker's next ingest claims its submission, opens its
    transaction, locks the row and then waits for that lock; that is when it is killed.
    """
    batch = 300
    user = get_user_model().objects.create(username="batch")
    first = workers()
    ids: list[int] = []

    def store(count: int) -> None:
        for index in range(len(ids), len(ids) + count):
            results = [make_result(median=650.0 + index % 50), make_result(precision="fp16", median=640.0)]
            document = submission_document(results=results)
            ids.append(submission_intake(body=body(document), submitter=user).submission.pk)

    def done() -> int:
        return RawSubmission.objects.filter(pk__in=ids, status__in=TERMINAL).count()

    # A fifth first, to see the worker going; the rest once the lock is held, so that the
    # worker's next batch is inside its transaction, waiting, however fast it ingests.
    store(batch // 5)
    assert wait_until(lambda: done() >= batch // 5, timeout=60), "the first worker never got going"
    holder = psycopg.connect(database_url_of_tests())  # not autocommit: the lock lasts until the rollback
    holder.execute("SELECT id FROM catalog_gpu WHERE id = %s FOR NO KEY UPDATE", [world.gpus["h100"].pk])
    store(batch - batch // 5)
    try:
        stuck = lambda: RawSubmission.objects.filter(  # noqa: E731
            pk__in=ids, status=SubmissionStatus.PROCESSING, claimed_at__lt=timezone.now() - dt.timedelta(seconds=1)
        ).first()
        assert wait_until(lambda: stuck() is not None, timeout=30), "no ingest blocked on the held lock"
        victim = stuck()
        first.kill()
    finally:
        holder.rollback()
        holder.close()
    at_kill = done()
    assert at_kill < batch
    assert BenchmarkResult.objects.filter(submission=victim).count() == 0  # the killed transaction left nothing
    workers()
    assert wait_until(lambda: done() == batch, timeout=180, sweep=sweep_with_short_graces, sweep_every=3), (
        f"{batch - done()} submissions never finished"
    )

    assert set(RawSubmission.objects.filter(pk__in=ids).values_list("status", flat=True)) <= {"accepted", "flagged"}
    per_submission = dict.fromkeys(ids, 0)
    for submission_id in BenchmarkResult.objects.filter(submission_id__in=ids).values_list("submission_id", flat=True):
        per_submission[submission_id] += 1
    assert set(per_submission.values()) == {2}, "a submission lost or duplicated results"
    assert BenchmarkResult.objects.count() == 2 * batch
    victim.refresh_from_db()
    assert victim.attempts == 2 and victim.status in ("accepted", "flagged")
    trusted = list(BenchmarkResult.objects.filter(trust="community").values_list("comparison_key", flat=True))
    for aggregate in ResultAggregate.objects.all():
        assert aggregate.n == trusted.count(aggregate.comparison_key)
    reclaimed = RawSubmission.objects.filter(pk__in=ids, attempts__gt=1).count()
    print(
        f"\nSIGKILL test: {batch} submissions, {at_kill} done at the kill, 1 killed mid-ingest, "
        f"{reclaimed} processed again after a reclaim; lost 0, duplicated 0"
    )
