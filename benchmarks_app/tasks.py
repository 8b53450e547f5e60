"""Celery tasks of the benchmark pipeline: they take ids and call services.

Queue "ingest" (settings.CELERY_TASK_ROUTES). Delivery is at least once (acks_late, reject
on worker lost); exactly-once processing comes from the claim in services.ingest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from celery import shared_task
from django.db import InterfaceError, OperationalError

from benchmarks_app.services.ingest import submission_ingest, submissions_sweep
from gpuatlas.broker import BrokerSkipped, publish_guarded

logger = logging.getLogger(__name__)


# A live ingest is short (a batch of 50 in well under a second); the limits stop a stuck one
# before the claim grace (settings.INGEST_CLAIM_GRACE_S), after which the sweeper may hand the
# submission to another worker.
INGEST_TIME_LIMIT_S = 25


@shared_task(
    name="benchmarks_app.tasks.ingest_submission",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=INGEST_TIME_LIMIT_S - 5,
    time_limit=INGEST_TIME_LIMIT_S,
    # A bad payload is a verdict, not an error: only a database that failed is retried, with a doubling wait.
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=False,
    max_retries=5,
)
def ingest_submission(submission_id: int) -> str | None:
    """Ingest one stored submission, and other waiting ones with it (services.ingest)."""
    return submission_ingest(submission_id=submission_id)


# Both limits set: Celery refuses to send a task whose soft limit (here or the global
# CELERY_TASK_SOFT_TIME_LIMIT) exceeds its hard limit.
@shared_task(name="benchmarks_app.tasks.sweep_stuck_submissions", acks_late=True, soft_time_limit=240, time_limit=300)
def sweep_stuck_submissions() -> dict[str, int]:
    """Periodic: re-queue submissions stuck in received or in a dead worker's claim."""
    summary = submissions_sweep()
    requeued = submissions_enqueue(submission_ids=summary.waiting)
    return {"requeued": len(requeued), "reclaimed": summary.reclaimed, "given_up": len(summary.given_up)}


def submission_enqueue(*, submission_id: int) -> bool:
    """Queue the ingest of one stored submission; False when the broker is unreachable.

    The submission is already committed: if the broker is down it stays received and the
    sweeper queues it again once the broker is back.
    """
    try:
        publish_guarded(lambda: ingest_submission.delay(submission_id))
    except BrokerSkipped:
        logger.warning("the ingest of submission %s was not queued: the broker failed just now", submission_id)
        return False
    except Exception:  # kombu raises several types when Redis is down; none may fail the request
        logger.warning(
            "could not queue the ingest of submission %s; the sweeper will retry", submission_id, exc_info=True
        )
        return False
    return True


def submissions_enqueue(*, submission_ids: Iterable[int]) -> list[int]:
    """Queue the ingest of these stored submissions; returns those queued."""
    return [pk for pk in submission_ids if submission_enqueue(submission_id=pk)]
