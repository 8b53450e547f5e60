"""Celery tasks of the benchmark pipeline: they take ids and call services.

Queue "ingest" (settings.CELERY_TASK_ROUTES). Delivery is at least once (acks_late, reject
on worker lost); exactly-once processing comes from the claim in services.ingest.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import InterfaceError, OperationalError

from benchmarks_app.services.ingest import ingest_batch_size, submission_ingest, submissions_sweep
from benchmarks_app.services.intake import ingest_coalescing, ingest_queued_clear
from gpuatlas.data_version import data_version_bump_pending

logger = logging.getLogger(__name__)

INGEST_MAX_RETRIES = 5
# A live ingest takes milliseconds; these bound a stuck one well below the claim grace
# (INGEST_CLAIM_GRACE_S, 120 s), after which the sweeper may hand the submission to another worker.
INGEST_SOFT_TIME_LIMIT_S = 50
INGEST_TIME_LIMIT_S = 60


def retry_countdown(retries: int) -> int:
    """Exponential backoff for transient database errors: 2, 4, 8, 16, 32 s (capped at 60)."""
    return int(min(60, 2 ** (retries + 1)))


@shared_task(
    bind=True,
    name="benchmarks_app.tasks.ingest_submission",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=INGEST_SOFT_TIME_LIMIT_S,
    time_limit=INGEST_TIME_LIMIT_S,
    max_retries=INGEST_MAX_RETRIES,
)
def ingest_submission(self, submission_id: int) -> str | None:  # type: ignore[no-untyped-def]
    """Ingest one RawSubmission, then (with a real worker) every other waiting one.

    Retries on database errors only; a bad payload is a verdict, not an error.
    """
    drain = ingest_coalescing() and not self.request.is_eager
    if drain:
        ingest_queued_clear()  # before draining: an intake committed after this queues a new task
    try:
        return submission_ingest(
            submission_id=submission_id,
            batch_size=ingest_batch_size(),
            remember_batches=not self.request.is_eager,  # an eager task has no queued siblings
            drain=drain,
        )
    except (OperationalError, InterfaceError) as exc:
        raise self.retry(exc=exc, countdown=retry_countdown(self.request.retries)) from exc
    finally:
        _bump_pending()  # what debouncing held back shows now that this ingest is done


def _bump_pending() -> None:
    try:
        data_version_bump_pending()
    except Exception:  # the cache is down: the pending bump waits for the next ingest or sweep
        logger.warning("could not make the pending data-version bump", exc_info=True)


@shared_task(name="benchmarks_app.tasks.sweep_stuck_submissions", acks_late=True, time_limit=300)
def sweep_stuck_submissions() -> dict[str, int]:
    """Periodic: re-queue submissions stuck in received or in a dead worker's claim."""
    summary = submissions_sweep()
    _bump_pending()
    return {"requeued": len(summary.requeued), "reclaimed": summary.reclaimed, "given_up": len(summary.given_up)}
