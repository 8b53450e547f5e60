"""The ingest: claim stored RawSubmissions and derive them, exactly once.

1. ``submissions_claim`` moves rows from received to processing with one conditional UPDATE
   (attempts + 1, claimed_at = the claim's token), committed at once: only one claimer can
   win a row. A task claims its own submission and, on PostgreSQL, up to ``batch_size - 1``
   other waiting ones (oldest first, skipping rows another worker is claiming), whose own
   tasks then find nothing to do.
2. The derivation (services.derive) runs in one transaction that first locks the claimed
   rows and checks the claim is still ours; results, aggregates and verdicts commit
   together or not at all. A worker killed in the middle leaves no result behind, only
   "processing" rows whose locks died with its connection.
3. ``submissions_sweep`` returns such rows to received once their claim is older than the
   grace period (skipping rows a live worker has locked) and queues every received row
   that has waited too long: a dead worker, a broker that was down at intake, a lost message.

Derived writes are committed with ``synchronous_commit = off`` on PostgreSQL: a database
crash may forget the last fraction of a second of verdicts, never half of one, and the
submissions concerned are simply received or processing again, which the sweeper redoes.
The raw submission itself (intake) is committed synchronously before the client hears 201.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.utils import timezone

from benchmarks_app.models import RawSubmission, SubmissionStatus
from benchmarks_app.services.derive import submission_derive, submissions_derive

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
# How long one draining task ingests before it hands over to a fresh task (time limit: 50 s).
DRAIN_SECONDS = 20.0
TERMINAL = (SubmissionStatus.ACCEPTED, SubmissionStatus.FLAGGED, SubmissionStatus.REJECTED, SubmissionStatus.ON_HOLD)

__all__ = [
    "MAX_ATTEMPTS",
    "TERMINAL",
    "submission_claim",
    "submission_derive",
    "submission_ingest",
    "submission_release",
    "submissions_claim",
    "submissions_claim_waiting",
    "submissions_drain",
    "submissions_reingest",
    "submissions_sweep",
]


def claim_grace() -> dt.timedelta:
    """How old a claim must be before the sweeper may take it back (a live ingest takes ms)."""
    return dt.timedelta(seconds=getattr(settings, "INGEST_CLAIM_GRACE_S", 120))


def received_grace() -> dt.timedelta:
    """How long a received row may wait for its queued task before the sweeper queues it again."""
    return dt.timedelta(seconds=getattr(settings, "INGEST_RECEIVED_GRACE_S", 300))


def ingest_bump_debounce_seconds() -> float:
    """At most one data-version bump per this period from the live ingest (DATA_VERSION_INGEST_DEBOUNCE_S)."""
    return float(getattr(settings, "DATA_VERSION_INGEST_DEBOUNCE_S", 0))


def ingest_gather_seconds() -> float:
    """How long a draining task lets a batch gather after a small one (setting INGEST_GATHER_MS)."""
    return max(0, int(getattr(settings, "INGEST_GATHER_MS", 0))) / 1000


def ingest_batch_size() -> int:
    return max(1, int(getattr(settings, "INGEST_BATCH_SIZE", 50)))


def _asynchronous_commit() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


# ---------------------------------------------------------------------------- claims


def submission_claim(*, submission_id: int) -> dt.datetime | None:
    """Claim one received submission; returns the claim time (the claim's token) or None."""
    claimed_at, ids = submissions_claim(submission_id=submission_id, batch_size=1)
    return claimed_at if ids else None


def submissions_claim(*, submission_id: int, batch_size: int = 1) -> tuple[dt.datetime, list[int]]:
    """Claim ``submission_id`` if still received, and up to ``batch_size - 1`` other received ones."""
    now = timezone.now()
    with transaction.atomic():
        _asynchronous_commit()
        won = RawSubmission.objects.filter(pk=submission_id, status=SubmissionStatus.RECEIVED).update(
            status=SubmissionStatus.PROCESSING, attempts=F("attempts") + 1, claimed_at=now
        )
        ids = [submission_id] if won else []
        if batch_size > 1 and connection.vendor == "postgresql":
            ids.extend(_claim_oldest(now=now, limit=batch_size - len(ids)))
    return now, sorted(ids)


def submissions_claim_waiting(*, batch_size: int) -> tuple[dt.datetime, list[int]]:
    """Claim up to ``batch_size`` of the oldest received submissions (a draining task)."""
    now = timezone.now()
    with transaction.atomic():
        _asynchronous_commit()
        return now, sorted(_claim_oldest(now=now, limit=batch_size))


def _claim_oldest(*, now: dt.datetime, limit: int) -> list[int]:
    """Move up to ``limit`` of the oldest received rows to processing, inside the caller's transaction."""
    if connection.vendor == "postgresql":
        table = RawSubmission._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET status = %s, attempts = attempts + 1, claimed_at = %s "  # noqa: S608 - table name from the model
                f"WHERE id IN (SELECT id FROM {table} WHERE status = %s ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) "
                "RETURNING id",
                [SubmissionStatus.PROCESSING, now, SubmissionStatus.RECEIVED, limit],
            )
            return [row[0] for row in cursor.fetchall()]
    # SQLite has no SKIP LOCKED; it runs one writer at a time, so claim row by row.
    waiting = RawSubmission.objects.filter(status=SubmissionStatus.RECEIVED).order_by("pk")
    return [
        pk
        for pk in waiting.values_list("pk", flat=True)[:limit]
        if RawSubmission.objects.filter(pk=pk, status=SubmissionStatus.RECEIVED).update(
            status=SubmissionStatus.PROCESSING, attempts=F("attempts") + 1, claimed_at=now
        )
    ]


def submission_release(*, submission_id: int, claimed_at: dt.datetime) -> bool:
    """Give a claim back (a transient error): the row is received again, for the retry."""
    return submissions_release(submission_ids=[submission_id], claimed_at=claimed_at) == 1


def submissions_release(*, submission_ids: Iterable[int], claimed_at: dt.datetime) -> int:
    return RawSubmission.objects.filter(
        pk__in=list(submission_ids), status=SubmissionStatus.PROCESSING, claimed_at=claimed_at
    ).update(status=SubmissionStatus.RECEIVED)


# ---------------------------------------------------------------------------- ingest


def _derive_claimed(ids: list[int], claimed_at: dt.datetime) -> dict[int, str]:
    with transaction.atomic():
        _asynchronous_commit()
        submissions = list(
            RawSubmission.objects.select_for_update()
            .filter(pk__in=ids, status=SubmissionStatus.PROCESSING, claimed_at=claimed_at)
            .order_by("pk")
        )  # a row missing here was taken back by the sweeper after a stall: not ours any more
        outcome = {s.pk: _give_up(s) for s in submissions if s.attempts > MAX_ATTEMPTS}
        live = [s for s in submissions if s.pk not in outcome]
        if live:
            outcome.update(submissions_derive(submissions=live, bump_debounce_seconds=ingest_bump_debounce_seconds()))
        return outcome


class _TakenInBatch:
    """Ids this process decided as part of another submission's batch, whose own task is still due.

    That task has nothing to do; knowing it here spares it a database round trip, which under
    load is most tasks. Each id is consumed by the first task that asks (a later one, such as a
    curator's re-ingest, goes to the database) and the memory is bounded. A stale entry can only
    make a task return early; the row then stays received and the sweeper queues it again.
    """

    def __init__(self, limit: int = 20_000) -> None:
        self.limit = limit
        self._ids: OrderedDict[int, None] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, ids: Iterable[int]) -> None:
        with self._lock:
            for pk in ids:
                self._ids[pk] = None
            while len(self._ids) > self.limit:
                self._ids.popitem(last=False)

    def consume(self, pk: int) -> bool:
        with self._lock:
            return self._ids.pop(pk, False) is None


taken_in_batch = _TakenInBatch()


def submission_ingest(
    *, submission_id: int, batch_size: int = 1, remember_batches: bool = False, drain: bool = False
) -> str | None:
    """Claim and ingest a submission (and, with ``batch_size`` > 1, other waiting ones).

    Returns the new status of ``submission_id``, or None when it was not ours to do.
    Transient database errors propagate (after the claims are given back) so the task
    retries; any other error in a batch is isolated by redoing its submissions one by one.
    ``remember_batches`` (worker processes, where each queued id has its own task): note the
    other ids of a batch so that their tasks return at once. ``drain`` (the task that
    coalesced intakes share): then ingest every waiting submission (``submissions_drain``).
    """
    status = _submission_ingest_own(
        submission_id=submission_id, batch_size=batch_size, remember_batches=remember_batches
    )
    if drain:
        submissions_drain(
            batch_size=batch_size, gather_seconds=ingest_gather_seconds(), remember_batches=remember_batches
        )
    return status


def _submission_ingest_own(*, submission_id: int, batch_size: int, remember_batches: bool) -> str | None:
    if remember_batches and taken_in_batch.consume(submission_id):
        return None
    if not RawSubmission.objects.filter(pk=submission_id, status=SubmissionStatus.RECEIVED).exists():
        # Most tasks under load: an earlier batch already took this one. One indexed read
        # instead of a claim transaction; the claim below still decides any race.
        return None
    claimed_at, ids = submissions_claim(submission_id=submission_id, batch_size=batch_size)
    if not ids:
        return None
    outcome = _ingest_claimed(ids, claimed_at, own=submission_id)
    if remember_batches:
        taken_in_batch.add(pk for pk in outcome if pk != submission_id)
    return outcome.get(submission_id)


def submissions_drain(
    *, batch_size: int, seconds: float = DRAIN_SECONDS, gather_seconds: float = 0.0, remember_batches: bool = False
) -> int:
    """Ingest waiting submissions, oldest first, a batch at a time, until none wait.

    Returns how many were decided. After a batch smaller than ``batch_size`` it waits
    ``gather_seconds`` for more to arrive. After ``seconds`` (well inside the task's time
    limit) it stops and queues a task for the oldest submission still waiting, which drains on.
    """
    from benchmarks_app.services.intake import submission_enqueue

    deadline = time.monotonic() + seconds
    decided = 0
    while time.monotonic() < deadline:
        claimed_at, ids = submissions_claim_waiting(batch_size=batch_size)
        if not ids:
            return decided
        outcome = _ingest_claimed(ids, claimed_at, own=None)
        decided += len(outcome)
        if remember_batches:
            taken_in_batch.add(outcome)
        if len(ids) < batch_size:
            # Submissions are arriving, but slower than we ingest: let a batch gather. Each
            # batch costs a claim, locks, peer-set checks and one aggregate write per pair it
            # touches, whether it holds 2 submissions or 50; the wait costs the submitters
            # that much delay before their verdicts and saves the CPU the web side needs.
            time.sleep(gather_seconds)
    waiting = (
        RawSubmission.objects.filter(status=SubmissionStatus.RECEIVED)
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
    if waiting is not None:
        submission_enqueue(submission_id=waiting)
    return decided


def _ingest_claimed(ids: list[int], claimed_at: dt.datetime, *, own: int | None) -> dict[int, str]:
    """Derive claimed submissions; on failure give the claims back (``own`` is retried by its task)."""
    try:
        return _derive_claimed(ids, claimed_at)
    except DatabaseError:
        _release_and_requeue(ids, claimed_at, keep=own)
        raise
    except Exception:
        if len(ids) == 1:
            _release_and_requeue(ids, claimed_at, keep=own)
            raise
        logger.exception("a batch of %d submissions failed; deriving them one by one", len(ids))
        outcome: dict[int, str] = {}
        for pk in ids:
            try:
                outcome.update(_derive_claimed([pk], claimed_at))
            except Exception:
                logger.exception("submission %s failed to ingest", pk)
                _release_and_requeue([pk], claimed_at, keep=None)
        return outcome


def _release_and_requeue(ids: list[int], claimed_at: dt.datetime, *, keep: int | None) -> None:
    """Return claims after a failure; other submissions of the batch are queued again at once."""
    from benchmarks_app.services.intake import submission_enqueue

    try:
        submissions_release(submission_ids=ids, claimed_at=claimed_at)
    except Exception:  # the database is gone: the sweeper returns the rows later
        logger.warning("could not release the claims on %s", ids, exc_info=True)
        return
    for pk in ids:
        if pk != keep:
            transaction.on_commit(functools.partial(submission_enqueue, submission_id=pk))


def _give_up(submission: RawSubmission) -> str:
    reason = {
        "field": "$",
        "reason": f"the ingest failed {MAX_ATTEMPTS} times; held for a curator to re-ingest",
        "verdict": "on_hold",
    }
    RawSubmission.objects.filter(pk=submission.pk).update(status=SubmissionStatus.ON_HOLD, reasons=[reason])
    return SubmissionStatus.ON_HOLD


# ---------------------------------------------------------------------------- sweeping


@dataclass
class SweepSummary:
    requeued: list[int] = field(default_factory=list)
    reclaimed: int = 0
    given_up: list[int] = field(default_factory=list)


def submissions_sweep(*, now: dt.datetime | None = None, limit: int = 1000) -> SweepSummary:
    """Return dead claims to received, hold poison submissions, and queue what waits too long."""
    from benchmarks_app.services.intake import submission_enqueue

    now = now or timezone.now()
    summary = SweepSummary()
    with transaction.atomic():
        stale = list(
            RawSubmission.objects.select_for_update(skip_locked=True)
            .filter(status=SubmissionStatus.PROCESSING, claimed_at__lt=now - claim_grace())
            .values_list("pk", "attempts")[:limit]
        )
        poison = [pk for pk, attempts in stale if attempts >= MAX_ATTEMPTS]
        retry = [pk for pk, attempts in stale if attempts < MAX_ATTEMPTS]
        if retry:
            summary.reclaimed = RawSubmission.objects.filter(pk__in=retry).update(status=SubmissionStatus.RECEIVED)
        for submission in RawSubmission.objects.filter(pk__in=poison):
            _give_up(submission)
        summary.given_up = poison
    waiting = RawSubmission.objects.filter(status=SubmissionStatus.RECEIVED).filter(
        received_at__lt=now - received_grace()
    ) | RawSubmission.objects.filter(pk__in=retry)
    for pk in waiting.values_list("pk", flat=True).order_by("pk")[:limit]:
        if submission_enqueue(submission_id=pk):
            summary.requeued.append(pk)
    return summary


def submissions_reingest(*, submission_ids: Iterable[int]) -> int:
    """Put submissions back to received (moderator decisions cleared) and queue their ingest."""
    from benchmarks_app.services.intake import submission_enqueue

    ids = list(submission_ids)
    with transaction.atomic():
        count = (
            RawSubmission.objects.filter(pk__in=ids)
            .exclude(status=SubmissionStatus.PROCESSING)
            .update(status=SubmissionStatus.RECEIVED, moderated_by=None, claimed_at=None)
        )
        for pk in ids:
            transaction.on_commit(functools.partial(submission_enqueue, submission_id=pk))
    return count
