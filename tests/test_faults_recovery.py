"""Recovery without a hand on the keyboard:

- the periodic sweeper, run by beat through the real Celery configuration, takes back what a
  killed worker held: a worker SIGKILLed mid-batch (its claims and its reserved messages gone
  with it) and every submission still reaches a final state within the sweep interval after the
  claim grace, without anyone calling the sweeper by hand;
- an imports worker (heartbeats on, as in the compose file) under a Redis stopped for 20 s
  reconnects by itself and runs the next task.

PostgreSQL, a private redis-server (tests/redis_server.py), real Celery workers and beat.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from accounts.services import api_token_create
from benchmarks_app.models import BenchmarkResult, RawSubmission, SubmissionStatus
from benchmarks_app.services.ingest import TERMINAL
from gpuatlas.celery import app
from tests.redis_server import needs_redis_server
from tests.reliability_support import celery_beat, celery_worker, helper
from tests.world import INGEST_WORLD

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.celery_worker,
    needs_redis_server,
]
WORLD = INGEST_WORLD

# Short periods so that the sweeper acts within the test (production uses the settings' defaults).
FAST_SWEEP = {"INGEST_CLAIM_GRACE_S": "4", "INGEST_RECEIVED_GRACE_S": "4", "SUBMISSION_SWEEP_EVERY_S": "2"}
BATCH = 300


def test_beat_sweeps_a_killed_workers_batch_to_a_final_state_within_the_interval(world, private_redis, tmp_path):
    _, key = api_token_create(user=get_user_model().objects.create(username="sweeper-fault"), name="t")
    sent = helper(["intake", "--count", str(BATCH), f"--token={key}"], private_redis.url)
    accepted = [r["run_uuid"] for r in sent if r["status_code"] == 201]
    ids = list(RawSubmission.objects.filter(run_uuid__in=accepted).values_list("pk", flat=True))

    def final() -> int:
        return RawSubmission.objects.filter(pk__in=ids, status__in=TERMINAL).count()

    processes = []
    try:
        worker = celery_worker(private_redis.url, tmp_path / "worker.log", env=FAST_SWEEP)
        processes.append(worker)
        deadline = time.monotonic() + 120
        while final() < BATCH // 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        worker.kill()  # SIGKILL: its claims stay "processing", its reserved messages unacked
        killed_at = time.monotonic()
        at_kill = final()
        in_flight = RawSubmission.objects.filter(pk__in=ids, status=SubmissionStatus.PROCESSING).count()
        assert at_kill < BATCH, "the batch finished before the kill: nothing was tested"
        beat_env = {**FAST_SWEEP, "LOG_LEVEL": "INFO"}  # beat logs each task it sends at INFO
        processes.append(
            celery_beat(private_redis.url, tmp_path / "beat.log", tmp_path / "beat-schedule", env=beat_env)
        )
        processes.append(celery_worker(private_redis.url, tmp_path / "worker2.log", env=FAST_SWEEP))
        # Within the claim grace plus a sweep interval, plus the time to ingest what is left.
        bound = int(FAST_SWEEP["INGEST_CLAIM_GRACE_S"]) + int(FAST_SWEEP["SUBMISSION_SWEEP_EVERY_S"]) + 60
        while final() < len(ids) and time.monotonic() - killed_at < bound:
            time.sleep(0.2)
        took = time.monotonic() - killed_at
        # The new worker may finish the rest before beat's first tick: beat must still send the
        # sweeper on its interval (it could not, with limits Celery refuses), so give it a few ticks.
        beat_deadline = time.monotonic() + 5 * int(FAST_SWEEP["SUBMISSION_SWEEP_EVERY_S"]) + 10
        while time.monotonic() < beat_deadline and "sweep_stuck_submissions" not in (
            (tmp_path / "beat.log").read_text(errors="replace") if (tmp_path / "beat.log").exists() else ""
        ):
            time.sleep(0.2)
    finally:
        for process in processes:
            process.stop()
    beat_log = (tmp_path / "beat.log").read_text(errors="replace")
    assert "Couldn't apply scheduled task" not in beat_log, beat_log[-2000:]
    assert "benchmarks_app.tasks.sweep_stuck_submissions" in beat_log

    rows = list(RawSubmission.objects.filter(run_uuid__in=accepted).values_list("pk", "status"))
    statuses = Counter(status for _, status in rows)
    results = Counter(BenchmarkResult.objects.filter(submission_id__in=ids).values_list("submission_id", flat=True))
    derived = sum(1 for pk, status in rows if status != SubmissionStatus.REJECTED and results.get(pk) == 2)
    duplicated = sum(1 for count in results.values() if count > 2) + (len(rows) - len(set(accepted)))
    stuck = sum(count for status, count in statuses.items() if status not in TERMINAL)
    expected_derived = len(rows) - statuses[SubmissionStatus.REJECTED]
    counts = {
        "posted": BATCH, "accepted": len(accepted), "stored": len(rows), "derived": derived,
        "lost": BATCH - len(rows), "duplicated": duplicated, "stuck": stuck,
    }  # fmt: skip
    print(
        f"\nfault test (worker SIGKILL mid-batch, beat sweeping every {FAST_SWEEP['SUBMISSION_SWEEP_EVERY_S']} s, "
        f"claim grace {FAST_SWEEP['INGEST_CLAIM_GRACE_S']} s): killed at {at_kill} final, {in_flight} claimed in "
        f"flight; all final {took:.1f} s after the kill; {counts}; outcomes {dict(statuses)}"
    )
    assert counts["accepted"] == counts["stored"] == BATCH
    assert counts["lost"] == counts["duplicated"] == counts["stuck"] == 0, counts
    assert derived == expected_derived, counts
    assert took < bound


def _send_marker(broker_url: str, tmp_path: Path) -> str:
    """Queue a task on "imports" whose only effect is a log line naming a unique directory."""
    marker = str(tmp_path / f"no-such-directory-{uuid.uuid4().hex}")
    deadline = time.monotonic() + 30
    while True:
        try:
            with app.connection_for_write(broker_url) as connection:
                app.send_task("catalog.tasks.prices_import_directory_task", args=[marker], connection=connection)
            return marker
        except Exception:  # the broker is still coming back
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _wait_for_line(log: Path, text: str, *, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return True
        time.sleep(0.2)
    return False


OUTAGE_S = 20


def test_an_imports_worker_survives_a_20_s_redis_outage_and_works_afterwards(private_redis, tmp_path):
    log = tmp_path / "imports.log"
    worker = celery_worker(private_redis.url, log, queue="imports", concurrency=1, heartbeat=True)
    try:
        before = _send_marker(private_redis.url, tmp_path)
        assert _wait_for_line(log, before, timeout=60), "the imports worker never ran a task"
        private_redis.stop()
        time.sleep(OUTAGE_S)
        assert worker.alive(), "the worker exited while Redis was down:\n" + log.read_text(errors="replace")[-3000:]
        private_redis.start()  # same port, empty
        after = _send_marker(private_redis.url, tmp_path)
        recovered = _wait_for_line(log, after, timeout=90)
        text = log.read_text(errors="replace")
        assert "Unrecoverable error" not in text, text[-3000:]
        assert recovered and worker.alive(), "the worker did not run a task after the outage:\n" + text[-3000:]
    finally:
        worker.stop()
