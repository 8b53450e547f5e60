"""Intake: check a submission body, store it as received, and enqueue its ingest.

Everything that can be decided from the body alone is decided here, so that a bad
submission gets a 400 naming the field and nothing is stored. The body is stored
byte-for-byte (as UTF-8 text) with its sha256; the ingest derives everything else later.
"""

from __future__ import annotations

import functools
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.cache import cache
from django.db import IntegrityError, connections, router, transaction
from django.db.models import Field

from benchmarks_app.models import RawSubmission
from benchmarks_app.services.errors import FieldError, SubmissionConflict, SubmissionInvalid
from benchmarks_app.services.payload import body_decode, json_parse_strict, payload_sha256
from benchmarks_app.services.plausibility import intake_impossible
from benchmarks_app.services.report import RunReport, report_from_document
from benchmarks_app.services.snapshot import catalog_snapshot
from gpuatlas.data_version import cache_is_shared

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IntakeOutcome:
    submission: RawSubmission
    created: bool


def _run_uuid(document: Any) -> uuid.UUID | None:
    if not isinstance(document, dict) or not isinstance(document.get("run_uuid"), str):
        return None
    try:
        return uuid.UUID(document["run_uuid"])
    except ValueError:
        return None


def document_check(document: Any) -> tuple[RunReport | None, list[FieldError]]:
    """The rules every submission passes (report_from_document), then impossible results for GPUs we recognise."""
    if not isinstance(document, dict):
        return None, [FieldError("$", "the submission must be a JSON object")]
    report, errors = report_from_document(document, catalog_snapshot())
    if errors or report is None:
        return report, errors
    snapshot = catalog_snapshot()  # reloaded by the rules' check if a workload was missing
    match = snapshot.match(name=report.gpu_name, memory_gib=report.memory_gib)
    if match.matched and match.gpu_id in snapshot.peaks:
        peaks = snapshot.peaks[match.gpu_id]
        for result in report.results:
            reason = intake_impossible(
                value=result.median,
                unit=result.unit,
                precision=result.precision,
                gpu_count=result.gpu_count,
                peaks=peaks,
                workload=result.workload,
            )
            if reason:
                errors.append(FieldError(f"{result.path}.median", reason))
    return report, errors


@functools.cache
def _insert_plan(alias: str) -> tuple[str, list[Field]] | None:
    """The INSERT of a submission and the fields it writes, built once per database.

    Every intake runs it. Through ``objects.create`` compiling the statement cost twice the
    CPU of executing it (0.35-0.46 ms against 0.16-0.20 ms for a 14 KB body); the statement
    never changes. None where the database cannot return the new id from the INSERT.
    """
    connection = connections[alias]
    if not connection.features.can_return_columns_from_insert:
        return None
    quote = connection.ops.quote_name
    meta = RawSubmission._meta
    fields = [field for field in meta.concrete_fields if not field.primary_key]
    columns = ", ".join(quote(field.column) for field in fields)  # type: ignore[arg-type]
    placeholders = ", ".join(["%s"] * len(fields))
    pk_column = quote(meta.pk.column)  # type: ignore[union-attr, arg-type]
    # Identifiers only, quoted, from the model's metadata; every value is a query parameter.
    sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({placeholders}) RETURNING {pk_column}"  # noqa: S608
    return sql, fields


def _raw_submission_insert(fields: dict[str, Any]) -> RawSubmission:
    """INSERT one submission as ``objects.create(**fields)`` would: defaults, auto_now_add, conversions."""
    alias = router.db_for_write(RawSubmission)
    plan = _insert_plan(alias)
    if plan is None:
        return RawSubmission.objects.using(alias).create(**fields)
    sql, columns = plan
    connection = connections[alias]
    submission = RawSubmission(**fields)
    # What the ORM's insert compiler does per field: pre_save (auto_now_add) and the
    # conversion to the database's type (JSON, UUID, datetimes).
    params = [field.get_db_prep_save(field.pre_save(submission, True), connection) for field in columns]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        submission.pk = cursor.fetchone()[0]
    submission._state.adding = False
    submission._state.db = alias
    return submission


def _stored_same_run(run_uuid: uuid.UUID, *, sha256: str, submitter: AbstractBaseUser | None) -> RawSubmission | None:
    """This submitter's stored submission of this very body, or None; never says whose a UUID is."""
    return (
        RawSubmission.objects.defer("payload")
        .filter(run_uuid=run_uuid, sha256=sha256, submitter_id=submitter.pk if submitter is not None else None)
        .first()
    )


def _existing(run_uuid: uuid.UUID, *, sha256: str, submitter: AbstractBaseUser | None) -> RawSubmission | None:
    existing = RawSubmission.objects.defer("payload").filter(run_uuid=run_uuid).first()
    if existing is None:
        return None
    same_submitter = existing.submitter_id == (submitter.pk if submitter is not None else None)
    if not same_submitter:
        raise SubmissionConflict([FieldError("$.run_uuid", "this run UUID was already submitted by someone else")])
    if existing.sha256 != sha256:
        raise SubmissionConflict(
            [
                FieldError(
                    "$.run_uuid",
                    "this run UUID was already submitted with a different payload: a new run needs a new UUID",
                )
            ]
        )
    return existing


INGEST_QUEUED_KEY = "gpuatlas:ingest:queued"


def ingest_coalescing() -> bool:
    """Whether intakes share one queued ingest task.

    Only with a real worker (not eager in-process tasks) and a cache the web and worker
    processes share (Redis): with a per-process cache the worker could not clear the mark.
    """
    return cache_is_shared() and not settings.CELERY_TASK_ALWAYS_EAGER and settings.INGEST_COALESCE_SECONDS > 0


def _ingest_already_queued() -> bool:
    """Mark an ingest as queued; True when one already was and has not started yet.

    A queued ingest drains every received submission once it starts (``submission_ingest``
    with ``drain=True``) and clears the mark first, so a submission committed before the
    mark was cleared is drained by it and one committed after queues a new task. The mark
    expires so that a lost task costs at most that many seconds before intakes queue again
    (and the sweeper re-queues what is left).
    """
    try:
        return not cache.add(INGEST_QUEUED_KEY, 1, timeout=settings.INGEST_COALESCE_SECONDS)
    except Exception:  # the cache is down: queue a task of our own, as without coalescing
        logger.warning("could not read the ingest-queued mark; queueing a task", exc_info=True)
        return False


def ingest_queued_clear() -> None:
    """Called by a starting ingest task, before it drains: later intakes queue a new one."""
    try:
        cache.delete(INGEST_QUEUED_KEY)
    except Exception:  # the mark then expires on its own
        logger.warning("could not clear the ingest-queued mark", exc_info=True)


def submission_enqueue(*, submission_id: int, coalesce: bool = False) -> bool:
    """Queue the ingest of one stored submission; False when the broker is unreachable.

    The submission is already committed: if the broker is down it stays "received" and the
    sweeper (``sweep_stuck_submissions``) queues it again once the broker is back. With
    ``coalesce`` (the intake), no task is sent while another queued one has yet to start:
    that one drains this submission too, which spares the broker and the worker a task
    per submission under load.
    """
    from benchmarks_app.tasks import ingest_submission

    try:
        if coalesce and ingest_coalescing() and _ingest_already_queued():
            return True
        ingest_submission.delay(submission_id)
    except Exception:  # kombu raises several types when Redis is down; none may fail the request
        logger.warning(
            "could not queue the ingest of submission %s; the sweeper will retry", submission_id, exc_info=True
        )
        return False
    return True


def submission_intake(
    *, body: bytes | str, submitter: AbstractBaseUser | AnonymousUser | None, channel: str = RawSubmission.Channel.API
) -> IntakeOutcome:
    """Check and store one submission; a repeat of a stored run returns the stored one.

    Raises SubmissionInvalid (400), SubmissionTooLarge (413) or SubmissionConflict (409),
    each carrying the field and the reason.
    """
    user = submitter if submitter is not None and submitter.is_authenticated else None
    text = body_decode(body)
    document = json_parse_strict(text)
    sha256 = payload_sha256(text)
    run_uuid = _run_uuid(document)
    report, errors = document_check(document)
    if errors:
        # The submitter's retry of a run stored earlier is returned as stored, even if the rules
        # changed since. Any other invalid body is a 400 for the body: whether its run UUID is
        # taken, and by whom, is only answered for a valid body (no existence oracle).
        existing = _stored_same_run(run_uuid, sha256=sha256, submitter=user) if run_uuid is not None else None  # type: ignore[arg-type]
        if existing is not None:
            return IntakeOutcome(existing, created=False)
        raise SubmissionInvalid(errors)
    assert report is not None and run_uuid is not None  # a document without errors has both
    # Insert first: a repeat of a stored run (a client's retry) is rare, and the unique
    # run_uuid finds it in the same statement, where a read first would cost every intake.
    fields = {
        "run_uuid": run_uuid,
        "payload": text,
        "sha256": sha256,
        "submitter": user,
        "channel": channel,
        "gpu_name_reported": report.gpu_name[:200],
    }
    try:
        if transaction.get_connection().in_atomic_block:
            # A savepoint, so that a repeat does not break the caller's transaction.
            with transaction.atomic():
                submission = _raw_submission_insert(fields)
        else:
            # One INSERT in autocommit is atomic by itself: BEGIN and COMMIT around it would
            # cost every intake two more round trips.
            submission = _raw_submission_insert(fields)
        # After the commit: at once in autocommit, at the caller's commit otherwise.
        transaction.on_commit(lambda: submission_enqueue(submission_id=submission.pk, coalesce=True))
    except IntegrityError:
        existing = _existing(run_uuid, sha256=sha256, submitter=user)  # type: ignore[arg-type]
        if existing is None:
            raise
        return IntakeOutcome(existing, created=False)
    return IntakeOutcome(submission, created=True)
