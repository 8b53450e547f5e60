"""Reads of the benchmark pipeline: submissions (with who may see them), results, aggregates."""

from __future__ import annotations

import math
import statistics
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from benchmarks_app.models import (
    BenchmarkResult,
    RawSubmission,
    SubmissionStatus,
    TrainingMfuFit,
    TrainingRun,
    Workload,
)
from benchmarks_app.services.mlperf_training_import import LLM_BENCHMARKS, most_specific_fit

# Decided submissions are public (their results are on the site); pending ones are the
# submitter's and the curators' business only.
PUBLIC_STATUSES = (SubmissionStatus.ACCEPTED, SubmissionStatus.FLAGGED, SubmissionStatus.REJECTED)


def submission_visible_to(*, submission: RawSubmission, user: AbstractBaseUser | AnonymousUser | None) -> bool:
    if submission.status in PUBLIC_STATUSES:
        return True
    if user is None or not user.is_authenticated:
        return False
    return bool(getattr(user, "is_staff", False)) or submission.submitter_id == user.pk


def submission_get_for_viewer(
    *, run_uuid: uuid.UUID | str, user: AbstractBaseUser | AnonymousUser | None
) -> RawSubmission | None:
    """The submission with this run UUID if ``user`` may see it, else None (reads as 404)."""
    submission = RawSubmission.objects.select_related("gpu", "submitter").filter(run_uuid=run_uuid).first()
    if submission is None or not submission_visible_to(submission=submission, user=user):
        return None
    return submission


def submission_results(*, submission: RawSubmission) -> QuerySet[BenchmarkResult]:
    return (
        BenchmarkResult.objects.filter(submission=submission)
        .select_related("workload", "gpu")
        .order_by("workload__slug", "precision", "comparison_label")
    )


def submission_summary(*, submission: RawSubmission, with_results: bool = True) -> dict[str, Any]:
    """The status document of one submission (API and page), payload excluded.

    ``with_results=False`` for a submission just stored: it has none yet, no need to ask.
    """
    results = [
        {
            "workload": r.workload.slug,
            "workload_version": r.workload.version,
            "precision": r.precision,
            "gpu_count": r.gpu_count,
            "params": r.params,
            "unit": r.workload.unit,
            "value": r.value,
            "spread_pct": r.spread_pct,
            "trust": r.trust,
            "comparison_label": r.comparison_label,
        }
        for r in (submission_results(submission=submission) if with_results else [])
    ]
    return {
        "run_uuid": str(submission.run_uuid),
        "status": submission.status,
        # One label translated, where get_status_display() translates every choice to look it up.
        "status_display": str(SubmissionStatus(submission.status).label),
        "reasons": submission.reasons,
        "received_at": submission.received_at,
        "processed_at": submission.processed_at,
        "channel": submission.channel,
        "sha256": submission.sha256,
        "gpu_name_reported": submission.gpu_name_reported,
        "gpu": {"slug": submission.gpu.slug, "name": submission.gpu.name} if submission.gpu else None,
        "results": results,
    }


def submissions_needing_moderation() -> QuerySet[RawSubmission]:
    return RawSubmission.objects.needing_moderation().select_related("gpu", "submitter").order_by("received_at")


def workloads_for_submission() -> QuerySet[Workload]:
    """The workloads the client can submit (the Lambda suites are lab-only)."""
    return Workload.objects.exclude(source__startswith="https://github.com/lambdal/").order_by("category", "slug")


def gpu_training_runs(*, gpu_id: int) -> list[TrainingRun]:
    """The GPU's MLPerf Training results: newest round first, then benchmark and system size."""
    return list(TrainingRun.objects.filter(gpu_id=gpu_id).order_by("-round", "benchmark", "gpus", "submitter"))


@dataclass(frozen=True)
class TrainingRunGroup:
    """One MLPerf Training round's results of one benchmark on a GPU, as the GPU page lists them."""

    round: str
    benchmark: str
    systems: int
    fewest_gpus: int
    most_gpus: int
    fastest_min: float
    median_tokens_per_s_per_gpu: float | None
    median_mfu: float | None
    source_url: str
    commit: str


def gpu_training_run_groups(runs: list[TrainingRun]) -> list[TrainingRunGroup]:
    """``runs`` (gpu_training_runs' order) one row per round and benchmark: a busy GPU has
    hundreds of systems; each group links its round's repository at the imported commit."""
    groups: dict[tuple[str, str], list[TrainingRun]] = {}
    for run in runs:
        groups.setdefault((run.round, run.benchmark), []).append(run)
    rows = []
    for (round_, benchmark), members in groups.items():
        rates = [r.tokens_per_s_per_gpu for r in members if r.tokens_per_s_per_gpu is not None]
        mfus = [r.mfu for r in members if r.mfu is not None]
        first = members[0]
        rows.append(
            TrainingRunGroup(
                round=round_,
                benchmark=benchmark,
                systems=len(members),
                fewest_gpus=min(r.gpus for r in members),
                most_gpus=max(r.gpus for r in members),
                fastest_min=min(r.time_to_train_min for r in members),
                median_tokens_per_s_per_gpu=statistics.median(rates) if rates else None,
                median_mfu=statistics.median(mfus) if mfus else None,
                source_url=f"https://github.com/mlcommons/training_results_v{round_}/tree/{first.commit}",
                commit=first.commit,
            )
        )
    return rows


# The training MFU fitted on the MLPerf Training runs, as stored when they were imported.

#: Where a GPU's MFU comes from: its own MLPerf Training runs, its architecture's, or every run's.
MfuBasis = Literal["gpu", "architecture", "pooled"]


@dataclass(frozen=True)
class TrainingMfu:
    mfu: float
    basis: MfuBasis
    runs: int  # the runs behind the figure
    error: float | None  # an estimate's typical relative error (None: measured on this GPU, or unknown)
    benchmark: str = ""  # the MLPerf benchmark the figure is of ("": every benchmark)

    @property
    def measured(self) -> bool:
        return self.basis == "gpu"


def job_benchmark(*, params: float, lora: bool) -> str:
    """The MLPerf Training benchmark nearest a job: of the same kind (LoRA or not), nearest in the
    logarithm of the parameters (MFU grows with the model's matrices: on Hopper, Llama 3.1 405B
    pretraining reaches about 0.38-0.45, 8B about 0.24-0.31)."""
    same_kind = [(slug, b) for slug, b in LLM_BENCHMARKS.items() if b.lora == lora and slug in FITTED_BENCHMARKS]
    if not same_kind or params <= 0:
        return ""
    return min(same_kind, key=lambda item: (abs(math.log(item[1].params / params)), item[0]))[0]


#: The benchmarks whose logs give the tokens trained (the others have no MFU to fit).
FITTED_BENCHMARKS = ("llama31_8b", "llama31_405b", "llama2_70b_lora")

_Key = tuple[str, int | str | None, str]


@dataclass(frozen=True)
class TrainingMfus:
    """The stored fits by (scope, GPU id or architecture slug, benchmark)."""

    fits: dict[_Key, TrainingMfu] = field(default_factory=dict)

    def for_gpu(self, gpu_id: int, architecture_slug: str | None, benchmark: str = "") -> TrainingMfu | None:
        """The GPU's own MFU where it has runs (at the benchmark, else over its runs), else its
        architecture's, else every run's; None when nothing is fitted."""
        return most_specific_fit(self.fits, gpu_id, architecture_slug, benchmark)


def training_mfus() -> TrainingMfus:
    """The stored fits, one query. An estimate's error is its scope's over every benchmark."""
    rows = list(
        TrainingMfuFit.objects.values_list("gpu_id", "architecture__slug", "benchmark", "mfu", "runs", "estimate_error")
    )
    errors = {(gpu is None, slug): error for gpu, slug, benchmark, _, _, error in rows if benchmark == ""}
    fits: dict[_Key, TrainingMfu] = {}
    for gpu_id, slug, benchmark, mfu, runs, _error in rows:
        if gpu_id is not None:
            fits[("gpu", gpu_id, benchmark)] = TrainingMfu(mfu, "gpu", runs, None, benchmark)
        elif slug is not None:
            # An architecture of one GPU with runs has no left-out error of its own: the pooled one.
            error = errors.get((True, slug))
            fits[("architecture", slug, benchmark)] = TrainingMfu(
                mfu, "architecture", runs, error if error is not None else errors.get((True, None)), benchmark
            )
        else:
            fits[("pooled", None, benchmark)] = TrainingMfu(mfu, "pooled", runs, errors.get((True, None)), benchmark)
    return TrainingMfus(fits)
