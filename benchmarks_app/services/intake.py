"""Intake: check a submission body, store it as received, and queue its ingest.

Everything that can be decided from the body alone is decided here (``submission_judge``, the
same check the ingest applies), so that a bad submission gets a 400 naming the field and
nothing is stored. The body is stored byte-for-byte (as UTF-8 text) with its sha256; the
ingest task (benchmarks_app.tasks.ingest_submission) derives everything else.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction

from benchmarks_app.models import RawSubmission
from benchmarks_app.services.derive import submission_judge
from benchmarks_app.services.errors import FieldError, SubmissionConflict, SubmissionInvalid
from benchmarks_app.services.payload import body_decode, json_parse_strict, payload_sha256
from benchmarks_app.services.snapshot import catalog_snapshot
from benchmarks_app.tasks import submission_enqueue


@dataclass(frozen=True)
class IntakeOutcome:
    """``queued``: whether the ingest of a new submission reached the broker (None when the
    caller's transaction has not committed yet, or nothing was created). A stored submission
    whose ingest could not be queued waits for the sweeper, which queues it once the broker
    answers (benchmarks_app.tasks.sweep_stuck_submissions)."""

    submission: RawSubmission
    created: bool
    queued: bool | None = None


def _run_uuid(document: Any) -> uuid.UUID | None:
    if not isinstance(document, dict) or not isinstance(document.get("run_uuid"), str):
        return None
    try:
        return uuid.UUID(document["run_uuid"])
    except ValueError:
        return None


def _stored_same_run(run_uuid: uuid.UUID, *, sha256: str, submitter: AbstractBaseUser | None) -> RawSubmission | None:
    """This submitter's stored submission of this very body, or None; never says whose a UUID is."""
    return (
        RawSubmission.objects.defer("payload")
        .filter(run_uuid=run_uuid, sha256=sha256, submitter_id=submitter.pk if submitter is not None else None)
        .first()
    )


RUN_UUID_TAKEN = "this run UUID is already taken: a new run needs a new UUID"


def _existing(run_uuid: uuid.UUID, *, sha256: str, submitter: AbstractBaseUser | None) -> RawSubmission | None:
    existing = RawSubmission.objects.defer("payload").filter(run_uuid=run_uuid).first()
    if existing is None:
        return None
    # One answer whether the UUID is this submitter's (another payload) or anyone else's, in any
    # status: it must not tell who holds a run, nor that a hidden (on hold, flagged) run exists
    # under a name a GET answers 404 for.
    same_submitter = existing.submitter_id == (submitter.pk if submitter is not None else None)
    if not same_submitter or existing.sha256 != sha256:
        raise SubmissionConflict([FieldError("$.run_uuid", RUN_UUID_TAKEN)])
    return existing


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
    judged = submission_judge(document=document, snapshot=catalog_snapshot())
    if judged.invalid:
        # The submitter's retry of a run stored earlier is returned as stored, even if the rules
        # changed since. Any other invalid body is a 400 for the body: whether its run UUID is
        # taken, and by whom, is only answered for a valid body (no existence oracle).
        existing = _stored_same_run(run_uuid, sha256=sha256, submitter=user) if run_uuid is not None else None  # type: ignore[arg-type]
        if existing is not None:
            return IntakeOutcome(existing, created=False)
        raise SubmissionInvalid(judged.invalid)
    assert judged.report is not None and run_uuid is not None  # a valid document has both
    try:
        # A savepoint: a repeat of a stored run (the unique run_uuid) must not break a caller's transaction.
        with transaction.atomic():
            submission = RawSubmission.objects.create(
                run_uuid=run_uuid,
                payload=text,
                sha256=sha256,
                submitter_id=user.pk if user is not None else None,
                channel=channel,
                gpu_name_reported=judged.report.gpu_name[:200],
            )
            queued: list[bool] = []
            transaction.on_commit(lambda: queued.append(submission_enqueue(submission_id=submission.pk)))
    except IntegrityError:
        existing = _existing(run_uuid, sha256=sha256, submitter=user)  # type: ignore[arg-type]
        if existing is None:
            raise
        return IntakeOutcome(existing, created=False)
    return IntakeOutcome(submission, created=True, queued=queued[0] if queued else None)
