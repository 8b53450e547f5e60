"""Faults with real processes: PostgreSQL, a private redis-server and real Celery workers.

- SIGKILL the worker (its whole process group) twice during a batch of 1,000 ingests, restart it:
  every submission ends accepted/flagged/rejected exactly once (BenchmarkResult rows counted per
  submission);
- stop Redis during intake: submissions are still stored (503 "try again": the retry answers 200)
  and, once Redis is back, the periodic sweeper re-enqueues them and they are ingested once;
- a database error in the middle of an ingest (a PostgreSQL trigger that fails once) rolls the
  transaction back and the task retries.

The broker is a redis-server started here on a free port (tests/redis_server.py), never the
machine's shared Redis; the application side that enqueues runs as a subprocess pointed at it
(tests/reliability_support.py). Complements tests/test_ingest_celery_worker.py (one kill of a
worker blocked inside an ingest, 300 submissions, on the shared broker).
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from accounts.services import api_token_create
from benchmarks_app.models import BenchmarkResult, RawSubmission, SubmissionStatus
from benchmarks_app.services.ingest import TERMINAL
from tests.redis_server import needs_redis_server
from tests.reliability_support import celery_worker, helper, wait_until
from tests.world import INGEST_WORLD

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.celery_worker,
    needs_redis_server,
]
WORLD = INGEST_WORLD

DECIDED = (SubmissionStatus.ACCEPTED, SubmissionStatus.FLAGGED, SubmissionStatus.REJECTED)


@pytest.fixture
def token(world) -> str:
    _, key = api_token_create(user=get_user_model().objects.create(username="fault-tests"), name="t")
    return key


@pytest.fixture
def workers(private_redis, tmp_path):
    started = []

    def start():  # type: ignore[no-untyped-def]
        worker = celery_worker(private_redis.url, tmp_path / "worker.log")
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def assert_each_decided_exactly_once(run_uuids: list[str], *, results_per_submission: int = 2) -> Counter[str]:
    """Every run UUID has one submission, decided, with its results written once (none if rejected)."""
    rows = list(RawSubmission.objects.filter(run_uuid__in=run_uuids).values_list("pk", "run_uuid", "status"))
    assert len(rows) == len(set(run_uuids)), "a submission was lost or stored twice"
    statuses = Counter(status for _, _, status in rows)
    assert set(statuses) <= set(DECIDED), statuses
    per_submission = Counter(
        BenchmarkResult.objects.filter(submission_id__in=[pk for pk, _, _ in rows]).values_list(
            "submission_id", flat=True
        )
    )
    for pk, run_uuid, status in rows:
        expected = 0 if status == SubmissionStatus.REJECTED else results_per_submission
        assert per_submission.get(pk, 0) == expected, (run_uuid, status, per_submission.get(pk, 0))
    return statuses


def test_sigkill_twice_during_1000_ingests_loses_and_duplicates_nothing(world, token, private_redis, workers):
    batch = 1000
    # All 1,000 are stored and queued first, so that the kills land in the middle of the batch.
    sent = helper(["intake", "--count", str(batch), f"--token={token}"], private_redis.url)
    assert [r["status_code"] for r in sent] == [201] * batch
    run_uuids = [r["run_uuid"] for r in sent]
    ids = list(RawSubmission.objects.filter(run_uuid__in=run_uuids).values_list("pk", flat=True))

    def done() -> int:
        return RawSubmission.objects.filter(pk__in=ids, status__in=TERMINAL).count()

    assert done() == 0
    worker = workers()
    kills = []
    for threshold in (batch // 4, batch // 2):
        assert wait_until(lambda t=threshold: done() >= t, timeout=120, every=0.02), f"never reached {threshold}"
        worker.kill()
        in_flight = RawSubmission.objects.filter(pk__in=ids, status=SubmissionStatus.PROCESSING).count()
        kills.append((done(), in_flight))
        assert done() < batch, "the batch finished before the kill: nothing was tested"
        worker = workers()

    def sweep() -> None:
        helper(["sweep", "--ahead", "400"], private_redis.url)

    assert wait_until(lambda: done() == batch, timeout=300, every=0.5, sweep=sweep), (
        f"{batch - done()} submissions never finished"
    )
    statuses = assert_each_decided_exactly_once(run_uuids)
    assert BenchmarkResult.objects.count() == 2 * (batch - statuses[SubmissionStatus.REJECTED])
    reprocessed = RawSubmission.objects.filter(pk__in=ids, attempts__gt=1).count()
    print(
        f"\nfault test (SIGKILL): {batch} submissions; killed at {kills[0][0]} and {kills[1][0]} done "
        f"({kills[0][1]} and {kills[1][1]} claimed in flight); {reprocessed} processed again after the kills; "
        f"outcomes {dict(statuses)}; lost 0, duplicated 0"
    )


def test_redis_down_during_intake_stores_and_the_sweeper_ingests_once_back(world, token, private_redis, workers):
    workers()
    before = helper(["intake", "--count", "20", f"--token={token}"], private_redis.url)
    # Decided before the outage: an ingest still running would take rows stored while Redis is
    # down into its batch straight from the database (it needs no broker), which is right, but not this test.
    before_uuids = [r["run_uuid"] for r in before]
    assert wait_until(
        lambda: RawSubmission.objects.filter(run_uuid__in=before_uuids, status__in=DECIDED).count() == 20,
        timeout=120,
    ), "the worker never ingested the submissions sent before the outage"
    private_redis.stop()
    during = helper(["intake", "--count", "10", f"--token={token}"], private_redis.url)
    # Stored although the broker is down, and answered 503 "try again" (the enqueue failure is
    # logged, not raised): the client's retry of the same run answers 200 with it.
    assert [r["status_code"] for r in before] == [201] * 20
    assert [r["status_code"] for r in during] == [503] * 10
    slowest = max(r["seconds"] for r in during)
    assert slowest < 15, f"an intake waited {slowest:.1f}s for the missing broker"
    down_uuids = [r["run_uuid"] for r in during]
    assert RawSubmission.objects.filter(run_uuid__in=down_uuids, status=SubmissionStatus.RECEIVED).count() == 10
    time.sleep(2)
    assert RawSubmission.objects.filter(run_uuid__in=down_uuids, status=SubmissionStatus.RECEIVED).count() == 10

    private_redis.start()  # same port, empty: whatever was queued before the stop is gone too
    all_uuids = [r["run_uuid"] for r in before + during]

    def decided() -> int:
        return RawSubmission.objects.filter(run_uuid__in=all_uuids, status__in=DECIDED).count()

    sweeps = []

    def sweep() -> None:
        sweeps.extend(helper(["sweep", "--ahead", "400"], private_redis.url))

    sweep()
    assert sweeps[0]["requeued"] >= 10, sweeps
    assert wait_until(lambda: decided() == 30, timeout=120, sweep=sweep), f"{30 - decided()} never ingested"
    statuses = assert_each_decided_exactly_once(all_uuids)
    print(
        f"\nfault test (Redis down): 30 submissions (10 while Redis was down, slowest intake {slowest:.2f}s); "
        f"sweeper re-queued {sweeps[0]['requeued']}; outcomes {dict(statuses)}; lost 0, duplicated 0"
    )


TRIGGER_SQL = """
CREATE SEQUENCE rel_fault_once;
CREATE FUNCTION rel_fail_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- nextval is not rolled back with the failing transaction: this fires exactly once.
    IF nextval('rel_fault_once') = 1 THEN
        RAISE EXCEPTION 'injected fault: could not serialize access' USING ERRCODE = '40001';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER rel_fail_once BEFORE INSERT ON benchmarks_app_benchmarkresult
    FOR EACH ROW EXECUTE FUNCTION rel_fail_once();
"""
TRIGGER_DROP_SQL = """
DROP TRIGGER IF EXISTS rel_fail_once ON benchmarks_app_benchmarkresult;
DROP FUNCTION IF EXISTS rel_fail_once();
DROP SEQUENCE IF EXISTS rel_fault_once;
"""


def test_a_database_error_mid_ingest_rolls_back_and_the_task_retries(world, token, private_redis, workers):
    with connection.cursor() as cursor:
        cursor.execute(TRIGGER_SQL)
    try:
        workers()
        sent = helper(["intake", "--count", "1", f"--token={token}"], private_redis.url)
        run_uuid = sent[0]["run_uuid"]
        submission = RawSubmission.objects.get(run_uuid=run_uuid)
        assert wait_until(lambda: RawSubmission.objects.get(pk=submission.pk).status in DECIDED, timeout=60), (
            "the retry never came"
        )
        submission.refresh_from_db()
        with connection.cursor() as cursor:
            cursor.execute("SELECT last_value FROM rel_fault_once")
            fired = cursor.fetchone()[0]
    finally:
        with connection.cursor() as cursor:
            cursor.execute(TRIGGER_DROP_SQL)
    # The first attempt failed inside its transaction (after the claim) and wrote nothing; the retry
    # claimed the submission again and wrote its two results once.
    assert fired >= 2  # one failed insert, then the retried ones
    assert submission.status == SubmissionStatus.ACCEPTED and submission.attempts == 2
    assert BenchmarkResult.objects.filter(submission=submission).count() == 2
    assert_each_decided_exactly_once([run_uuid])
