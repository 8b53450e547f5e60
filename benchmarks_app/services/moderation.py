"""Curator decisions: approve or reject held-back submissions, map unknown GPU names."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, RawSubmission, SubmissionStatus, TrustLabel
from benchmarks_app.services.aggregates import aggregates_refresh_pairs
from benchmarks_app.services.results_changed import results_changed
from benchmarks_app.tasks import submission_enqueue
from catalog.models import Gpu, GpuAlias, UnmatchedGpuName
from catalog.models.gpus import alias_normalise
from catalog.services.catalog_import import gpu_alias_upsert


@dataclass
class ModerationSummary:
    changed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def _note(submission: RawSubmission, text: str, verdict: str) -> list[dict[str, str]]:
    return [*submission.reasons, {"field": "$", "reason": text, "verdict": verdict}]


def submissions_approve(*, submission_ids: Iterable[int], moderator: AbstractBaseUser) -> ModerationSummary:
    """Approve flagged submissions: their results become trusted and count in the aggregates."""
    summary = ModerationSummary()
    with transaction.atomic():
        submissions = list(RawSubmission.objects.select_for_update().filter(pk__in=list(submission_ids)))
        approved = []
        for submission in submissions:
            if submission.status != SubmissionStatus.FLAGGED:
                summary.skipped[str(submission.run_uuid)] = (
                    f"{submission.get_status_display()}: only flagged submissions can be approved"
                    + (" (map its GPU name first)" if submission.status == SubmissionStatus.ON_HOLD else "")
                )
                continue
            submission.status = SubmissionStatus.ACCEPTED
            submission.moderated_by = moderator  # type: ignore[assignment]
            submission.reasons = _note(submission, f"approved by {moderator.get_username()}", "note")
            submission.save(update_fields=["status", "moderated_by", "reasons"])
            approved.append(submission.pk)
            summary.changed.append(str(submission.run_uuid))
        results = BenchmarkResult.objects.filter(submission_id__in=approved, trust=TrustLabel.FLAGGED)
        pairs = set(results.values_list("gpu_id", "comparison_key"))
        workload_ids = set(results.values_list("workload_id", flat=True))
        results.update(trust=TrustLabel.COMMUNITY)
        aggregates_refresh_pairs(pairs=pairs)
        results_changed(workload_ids=workload_ids)
    return summary


def submissions_reject(*, submission_ids: Iterable[int], moderator: AbstractBaseUser) -> ModerationSummary:
    """Reject submissions: their results are removed from the site and from the aggregates."""
    summary = ModerationSummary()
    with transaction.atomic():
        submissions = list(RawSubmission.objects.select_for_update().filter(pk__in=list(submission_ids)))
        rejected = []
        for submission in submissions:
            if submission.status in (SubmissionStatus.RECEIVED, SubmissionStatus.PROCESSING):
                summary.skipped[str(submission.run_uuid)] = "still being ingested: decide once it has a verdict"
                continue
            submission.status = SubmissionStatus.REJECTED
            submission.moderated_by = moderator  # type: ignore[assignment]
            submission.reasons = _note(submission, f"rejected by {moderator.get_username()}", "rejected")
            submission.processed_at = submission.processed_at or timezone.now()
            submission.save(update_fields=["status", "moderated_by", "reasons", "processed_at"])
            rejected.append(submission.pk)
            summary.changed.append(str(submission.run_uuid))
        results = BenchmarkResult.objects.filter(submission_id__in=rejected)
        pairs = set(results.values_list("gpu_id", "comparison_key"))
        workload_ids = set(results.values_list("workload_id", flat=True))
        results.delete()
        aggregates_refresh_pairs(pairs=pairs)
        results_changed(workload_ids=workload_ids)
    return summary


def submissions_reingest(*, submission_ids: Iterable[int]) -> int:
    """Put submissions back to received (moderator decisions cleared) and queue their ingest."""
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


@dataclass
class MappingSummary:
    alias: str
    gpu_slug: str
    alias_changed: bool
    reingested: int


def gpu_name_map(*, name: str, gpu: Gpu, moderator: AbstractBaseUser | None = None) -> MappingSummary:
    """Map a reported GPU name to a catalogue GPU and re-ingest the submissions held for it."""
    name = name.strip()
    normalised = alias_normalise(name)
    if not normalised:
        raise ValueError("the GPU name is empty")
    with transaction.atomic():
        changed = gpu_alias_upsert(gpu=gpu, alias=name, origin=GpuAlias.Origin.CURATOR)
        UnmatchedGpuName.objects.filter(normalised=normalised).update(resolved_to=gpu)
        held = [
            pk
            for pk, reported in RawSubmission.objects.filter(status=SubmissionStatus.ON_HOLD).values_list(
                "pk", "gpu_name_reported"
            )
            if alias_normalise(reported) == normalised
        ]
        count = submissions_reingest(submission_ids=held)
    return MappingSummary(alias=name, gpu_slug=gpu.slug, alias_changed=bool(changed), reingested=count)
