"""The ingest: claim stored RawSubmissions and derive them, exactly once.

1. ``submissions_claim`` moves the task's own submission, and up to ``INGEST_BATCH_SIZE - 1``
   other waiting ones (oldest first), from received to processing (attempts + 1, claimed_at =
   the claim's token), committed at once. Rows another claimer holds are skipped, so each row
   has one claimer; a task whose submission an earlier batch took has nothing to do.
2. The derivation (services.derive) runs in one transaction that first locks the claimed
   rows and checks the claim is still ours; results, aggregates and verdicts commit together.
3. A database error gives the claims back (received) and propagates, so that the task retries.
   Any other error in a batch: its submissions are derived one by one, so that one bad
   submission does not hold back the others; one that fails alone is given back.
4. ``submissions_sweep`` (periodic) returns claims older than ``INGEST_CLAIM_GRACE_S`` to
   received, holds submissions that were claimed ``MAX_ATTEMPTS`` times, and lists those
   received longer than ``INGEST_RECEIVED_GRACE_S`` ago (their message was lost) to queue again.

Delivery is at least once (the task is acknowledged late); the claim makes processing exactly once.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, RawSubmission, SubmissionStatus
from benchmarks_app.services.derive import submissions_derive
from benchmarks_app.services.results_changed import results_changed
from benchmarks_app.services.workloads import LLM_DECODE, LLM_DECODE_TP
from gpuatlas.followups import followup_after_commit

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
TERMINAL = (SubmissionStatus.ACCEPTED, SubmissionStatus.FLAGGED, SubmissionStatus.REJECTED, SubmissionStatus.ON_HOLD)


def submissions_claim(*, submission_id: int, batch_size: int) -> tuple[dt.datetime, list[int]]:
    """Claim ``submission_id`` if it is still received, with up to ``batch_size - 1`` other received ones.

    Returns the claim's time (its token) and the claimed ids; none when the submission was not ours.
    """
    now = timezone.now()
    with transaction.atomic():
        waiting = RawSubmission.objects.select_for_update(skip_locked=True).filter(status=SubmissionStatus.RECEIVED)
        if not list(waiting.filter(pk=submission_id).values_list("pk", flat=True)):
            return now, []
        others = waiting.exclude(pk=submission_id).order_by("pk").values_list("pk", flat=True)[: batch_size - 1]
        ids = sorted([submission_id, *others])
        RawSubmission.objects.filter(pk__in=ids, status=SubmissionStatus.RECEIVED).update(
            status=SubmissionStatus.PROCESSING, attempts=F("attempts") + 1, claimed_at=now
        )
    return now, ids


def submission_ingest(*, submission_id: int) -> str | None:
    """Claim and ingest a submission, with other waiting ones in the same batch.

    Returns the new status of ``submission_id``, or None when it was not ours to do (an
    earlier batch took it). Database errors propagate after the claims are given back.
    """
    if not RawSubmission.objects.filter(pk=submission_id, status=SubmissionStatus.RECEIVED).exists():
        return None  # an earlier batch took it: most tasks under load, answered without a transaction
    claimed_at, ids = submissions_claim(submission_id=submission_id, batch_size=settings.INGEST_BATCH_SIZE)
    if not ids:
        return None
    outcome = _ingest_claimed(ids, claimed_at)
    return outcome.get(submission_id)


def _derive_claimed(ids: list[int], claimed_at: dt.datetime) -> dict[int, str]:
    with transaction.atomic():
        submissions = list(
            RawSubmission.objects.select_for_update()
            .filter(pk__in=ids, status=SubmissionStatus.PROCESSING, claimed_at=claimed_at)
            .order_by("pk")
        )  # a row missing here was taken back by the sweeper after a stall: not ours any more
        outcome = {s.pk: _give_up(s) for s in submissions if s.attempts > MAX_ATTEMPTS}
        live = [s for s in submissions if s.pk not in outcome]
        if live:
            outcome.update(submissions_derive(submissions=live))
            live_ids = [s.pk for s in live]
            # Their LLM serving points, and the serving model refitted on them (llm, above this
            # app); asked for only when they hold serving results, as most batches do not.
            serving = BenchmarkResult.objects.filter(
                submission_id__in=live_ids, workload__slug__in=(LLM_DECODE, LLM_DECODE_TP)
            )
            if serving.exists():
                followup_after_commit("llm.tasks.serving_points_refresh", submission_ids=live_ids)
            results_changed(
                workload_ids=BenchmarkResult.objects.filter(submission_id__in=live_ids)
                .values_list("workload_id", flat=True)
                .distinct()
            )
        return outcome


def _ingest_claimed(ids: list[int], claimed_at: dt.datetime) -> dict[int, str]:
    """Derive claimed submissions; on failure give the claims back."""
    try:
        return _derive_claimed(ids, claimed_at)
    except DatabaseError:
        _release(ids, claimed_at)
        raise
    except Exception:
        if len(ids) == 1:
            _release(ids, claimed_at)
            raise
        logger.exception("a batch of %d submissions failed; deriving them one by one", len(ids))
    outcome: dict[int, str] = {}
    for pk in ids:
        try:
            outcome.update(_derive_claimed([pk], claimed_at))
        except Exception:
            logger.exception("submission %s failed to ingest", pk)
            _release([pk], claimed_at)
    return outcome


def _release(ids: list[int], claimed_at: dt.datetime) -> None:
    """Give claims back after a failure: the rows are received again."""
    try:
        RawSubmission.objects.filter(pk__in=ids, status=SubmissionStatus.PROCESSING, claimed_at=claimed_at).update(
            status=SubmissionStatus.RECEIVED
        )
    except DatabaseError:  # the database is gone: the sweeper returns the rows later
        logger.warning("could not release the claims on %s", ids, exc_info=True)


def _give_up(submission: RawSubmission) -> str:
    reason = {
        "field": "$",
        "reason": f"the ingest failed {MAX_ATTEMPTS} times; held for a curator to re-ingest",
        "verdict": "on_hold",
    }
    RawSubmission.objects.filter(pk=submission.pk).update(status=SubmissionStatus.ON_HOLD, reasons=[reason])
    return SubmissionStatus.ON_HOLD


@dataclass
class SweepSummary:
    waiting: list[int] = field(default_factory=list)  # to queue again
    reclaimed: int = 0
    given_up: list[int] = field(default_factory=list)


def submissions_sweep(*, now: dt.datetime | None = None, limit: int = 1000) -> SweepSummary:
    """Return dead claims to received, hold poison submissions, and list what waits too long."""
    now = now or timezone.now()
    summary = SweepSummary()
    with transaction.atomic():
        stale = list(
            RawSubmission.objects.select_for_update(skip_locked=True)
            .filter(
                status=SubmissionStatus.PROCESSING,
                claimed_at__lt=now - dt.timedelta(seconds=settings.INGEST_CLAIM_GRACE_S),
            )
            .values_list("pk", "attempts")[:limit]
        )
        summary.given_up = [pk for pk, attempts in stale if attempts >= MAX_ATTEMPTS]
        retry = [pk for pk, attempts in stale if attempts < MAX_ATTEMPTS]
        summary.reclaimed = RawSubmission.objects.filter(pk__in=retry).update(status=SubmissionStatus.RECEIVED)
        for submission in RawSubmission.objects.filter(pk__in=summary.given_up):
            _give_up(submission)
    waiting = RawSubmission.objects.stuck(
        older_than=now - dt.timedelta(seconds=settings.INGEST_RECEIVED_GRACE_S)
    ) | RawSubmission.objects.filter(pk__in=retry)
    summary.waiting = list(waiting.order_by("pk").values_list("pk", flat=True)[:limit])
    return summary
