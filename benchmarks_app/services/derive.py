"""Derivation: the rules applied to a submission, and the rows they produce.

``submission_judge`` is the one check every submission passes: at intake (what it finds wrong
is a 400, nothing stored) and again at ingest, moderation and rebuild, on the stored payload
with today's rules. ``submissions_derive`` handles a batch of stored submissions in order inside
the caller's transaction: it judges each one, then locks the GPUs they touch, checks outliers
against the trusted peers (which grow as the batch proceeds, so the outcome is the same as
one-by-one in that order), and writes the results, the aggregates and every verdict.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db import IntegrityError, connection, transaction
from django.db.models import F, JSONField
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, RawSubmission, SubmissionStatus, TrustLabel
from benchmarks_app.services.aggregates import AggregateInput, aggregates_refresh_pairs, aggregates_write
from benchmarks_app.services.canonical_json import canonical_json
from benchmarks_app.services.comparison_keys import ComparisonKey
from benchmarks_app.services.energy import energy_verdict
from benchmarks_app.services.errors import FieldError, SubmissionInvalid
from benchmarks_app.services.locks import aggregate_locks
from benchmarks_app.services.payload import json_parse_strict
from benchmarks_app.services.peers import PeerCache, PeerSet, live_peers
from benchmarks_app.services.plausibility import PEAK_TOLERANCE, GpuPeaks, intake_impossible, peak_for, result_check
from benchmarks_app.services.report import ResultReport, RunReport, report_from_document
from benchmarks_app.services.snapshot import CatalogSnapshot, catalog_snapshot, catalog_snapshot_refresh_if_changed
from catalog.matching import AMBIGUOUS, CONFLICT, MATCHED, UNMATCHED, MatchResult
from catalog.models import UnmatchedGpuName
from catalog.models.gpus import alias_normalise


@dataclass
class Derivation:
    """What the rules decided for one submission, before anything is written."""

    status: str
    reasons: list[dict[str, str]] = field(default_factory=list)
    gpu_id: int | None = None
    report: RunReport | None = None
    result_flags: dict[int, list[str]] = field(default_factory=dict)
    # Held because no single catalogue GPU has the name: it goes to the curators' queue.
    unknown_gpu_name: bool = False
    # Why the intake refuses the body: a broken rule, or a result no GPU we know could reach.
    invalid: list[FieldError] = field(default_factory=list)


def _reason(error: FieldError, verdict: str) -> dict[str, str]:
    return {"field": error.field, "reason": error.reason, "verdict": verdict}


def _refused(errors: list[FieldError], report: RunReport | None = None) -> Derivation:
    return Derivation(
        SubmissionStatus.REJECTED, [_reason(e, "rejected") for e in errors], report=report, invalid=list(errors)
    )


def _result_verdict(result: ResultReport, peaks: GpuPeaks | None) -> tuple[list[str], list[str]]:
    verdict = result_check(
        value=result.median,
        repetitions=result.window,
        unit=result.unit,
        precision=result.precision,
        gpu_count=result.gpu_count,
        peaks=peaks,
        workload=result.workload,
    )
    rejected, flagged = list(verdict.rejected), list(verdict.flagged)
    if result.model_tflops is not None and peaks is not None:
        # A transformer step reports its model FLOP rate: it cannot beat the tensor peak either.
        bound = peak_for(peaks=peaks, unit="TFLOPS", precision=result.precision, gpu_count=result.gpu_count)
        if (
            not isinstance(bound, str)
            and bound is not None
            and result.model_tflops > bound.value * (1 + PEAK_TOLERANCE)
        ):
            rejected.append(
                f"extra.model_tflops {result.model_tflops:g} is above the {bound.description} = {bound.value:g} TFLOPS"
            )
    if result.correctness_passed is False:
        flagged.append("the output failed the client's correctness check")
    return rejected, flagged


def _energy_note(report: RunReport, result: ResultReport, peaks: GpuPeaks | None) -> dict[str, str] | None:
    """Why a result's measured energy is not published (a note: its throughput stands), or None."""
    extra = result.raw.get("extra")
    verdict = energy_verdict(
        extra=extra if isinstance(extra, dict) else {},
        tokens_per_s=result.median,
        gpu_count=result.gpu_count,
        reported_limit_w=report.environment.get("power_limit_w"),
        tdp_w=peaks.tdp_w if peaks is not None else None,
    )
    if verdict is None or verdict.published:
        return None
    reason = "energy not published: " + "; ".join(verdict.refusals)
    return {"field": f"{result.path}.extra.joules_per_token", "reason": reason, "verdict": "note"}


def _impossible(report: RunReport, peaks: GpuPeaks) -> list[FieldError]:
    found = []
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
            found.append(FieldError(f"{result.path}.median", reason))
    return found


def _gpu_hold_reason(report: RunReport, match: MatchResult) -> FieldError:
    name_field = "$.environment.gpu." + ("name_nvidia_smi" if report.gpu_name_smi else "name_torch")
    if match.status == CONFLICT:
        return FieldError("$.environment.gpu.memory_total_mib", f"{match.reason}; held for a moderator")
    if match.status == AMBIGUOUS:
        return FieldError(name_field, f"{match.reason}; held until a curator says which GPU it is")
    return FieldError(
        name_field,
        f"unknown GPU {report.gpu_name!r}: held until a curator maps the name to a catalogue GPU ({match.reason})",
    )


def submission_judge(*, document: Any, snapshot: CatalogSnapshot, received_at: dt.datetime | None = None) -> Derivation:
    """Apply every rule to a parsed submission; pure apart from reading the snapshot.

    The rules are report_from_document's, as they are today: a submission stored under older
    rules that fails them now is rejected with the reasons, its payload untouched.
    ``received_at``: a stored submission's; None at intake (now).
    """
    if not isinstance(document, dict):
        return _refused([FieldError("$", "the submission must be a JSON object")])
    report, errors = report_from_document(document, snapshot, received_at=received_at)
    if errors or report is None:
        return _refused(errors, report)
    match = snapshot.match(name=report.gpu_name, memory_gib=report.memory_gib)
    if match.status == UNMATCHED:
        snapshot = catalog_snapshot_refresh_if_changed()
        match = snapshot.match(name=report.gpu_name, memory_gib=report.memory_gib)
    peaks = snapshot.peaks.get(match.gpu_id) if match.gpu_id is not None else None
    impossible = _impossible(report, peaks) if peaks is not None else []
    if match.status != MATCHED:
        # Never guess the GPU: a name and memory that disagree, a name several GPUs share or an
        # unknown name hold the run for a person, with the matcher's reason.
        return Derivation(
            SubmissionStatus.ON_HOLD,
            [_reason(_gpu_hold_reason(report, match), "on_hold")],
            report=report,
            unknown_gpu_name=match.status != CONFLICT,
            invalid=impossible,
        )
    derivation = Derivation(SubmissionStatus.ACCEPTED, gpu_id=match.gpu_id, report=report, invalid=impossible)
    if match.note:
        derivation.reasons.append({"field": "$.environment.gpu", "reason": match.note, "verdict": "note"})
    rejected_any = False
    for result in report.results:
        rejected, flagged = _result_verdict(result, peaks)
        for text in rejected:
            derivation.reasons.append({"field": f"{result.path}.median", "reason": text, "verdict": "rejected"})
            rejected_any = True
        for text in flagged:
            derivation.reasons.append({"field": result.path, "reason": text, "verdict": "flagged"})
        if flagged:
            derivation.result_flags[result.index] = flagged
        energy = _energy_note(report, result, peaks)
        if energy is not None:
            derivation.reasons.append(energy)
    if rejected_any:
        derivation.status = SubmissionStatus.REJECTED
    elif derivation.result_flags:
        derivation.status = SubmissionStatus.FLAGGED
    return derivation


def _stored_judge(submission: RawSubmission, snapshot: CatalogSnapshot) -> Derivation:
    try:
        document = json_parse_strict(submission.payload)
    except SubmissionInvalid as exc:
        return _refused(exc.errors)
    return submission_judge(document=document, snapshot=snapshot, received_at=submission.received_at)


def _result_environment(report: RunReport, result: ResultReport) -> dict[str, Any]:
    """What a result row keeps of its run (the full environment stays in the raw payload)."""
    env = report.environment
    return {
        "gpu_name": report.gpu_name,
        "driver_version": env.get("driver_version"),
        "cuda_version": env.get("cuda_version"),
        "torch_version": env.get("torch_version"),
        "cublas_version": env.get("cublas_version"),
        "power_limit_w": env.get("power_limit_w"),
        "client_version": report.client_version,
        "mode": result.mode,
        "stats": result.raw.get("stats"),
        "timing": result.raw.get("timing"),
        "correctness": result.raw.get("correctness"),
        "extra": result.raw.get("extra"),
        **_multi_gpu_environment(report, result),
    }


def _multi_gpu_environment(report: RunReport, result: ResultReport) -> dict[str, Any]:
    """What a multi-GPU workload's row keeps: each rank's figure and how the host's GPUs are joined."""
    if report.host is None or "interconnect" not in result.params:
        return {}
    host = report.host
    return {
        "per_gpu": result.raw.get("per_gpu"),
        "host": {
            "gpu_count": host["gpu_count"],
            "interconnect": host["interconnect"],
            "topology_source": host["topology_source"],
            "link_matrix": host.get("link_matrix"),
            "peer_access": host.get("peer_access"),
            "backend": host["backend"],
            "nccl_version": host.get("nccl_version"),
            "nccl_env": host.get("nccl_env") or {},
        },
    }


def _unmatched_record(*, name: str, memory_gib: float | None) -> None:
    normalised = alias_normalise(name)[:200]
    if not normalised:
        return
    now = timezone.now()
    if UnmatchedGpuName.objects.filter(normalised=normalised).update(occurrences=F("occurrences") + 1, last_seen=now):
        return
    try:
        with transaction.atomic():
            UnmatchedGpuName.objects.create(
                name=name[:200], normalised=normalised, context="submission", memory_gib=memory_gib
            )
    except IntegrityError:
        UnmatchedGpuName.objects.filter(normalised=normalised).update(occurrences=F("occurrences") + 1, last_seen=now)


def _apply_moderation(submission: RawSubmission, derivation: Derivation) -> None:
    """A moderator's decision (``moderated_by`` set) wins over the rules."""
    moderated = submission.status if submission.moderated_by_id else None
    if moderated == SubmissionStatus.REJECTED and derivation.status != SubmissionStatus.ON_HOLD:
        derivation.status = SubmissionStatus.REJECTED
        derivation.reasons.append({"field": "$", "reason": "rejected by a moderator", "verdict": "rejected"})
    elif moderated == SubmissionStatus.ACCEPTED and derivation.status == SubmissionStatus.FLAGGED:
        derivation.status = SubmissionStatus.ACCEPTED
        derivation.result_flags.clear()
        for reason in derivation.reasons:
            if reason["verdict"] == "flagged":
                reason["verdict"] = "note"
        derivation.reasons.append({"field": "$", "reason": "approved by a moderator", "verdict": "note"})


@dataclass
class _Grown:
    peer_set: PeerSet
    result: ResultReport
    workload_id: int
    label: str


def submissions_derive(
    *,
    submissions: list[RawSubmission],
    snapshot: CatalogSnapshot | None = None,
    maintain_aggregates: bool = True,
    peer_cache: PeerCache | None = None,
) -> dict[int, str]:
    """Re-derive these submissions, in this order, inside the caller's transaction.

    Returns the new status by submission id. Results they had before are replaced. A
    moderator's decision wins over the rules: approved stays accepted with its results
    trusted, rejected stays rejected. ``maintain_aggregates=False`` (the full rebuild, which
    recomputes every aggregate at the end) skips the locks and the aggregate writes.
    """
    snapshot = snapshot or catalog_snapshot()
    peer_cache = peer_cache or live_peers
    touched: set[tuple[int, str]] = set()
    again = [s.pk for s in submissions if s.processed_at is not None]
    if again:
        previous = BenchmarkResult.objects.filter(submission_id__in=again)
        touched = set(previous.values_list("gpu_id", "comparison_key"))
        if touched:
            previous.delete()
            peer_cache.forget(pairs=touched)

    plans: list[tuple[RawSubmission, Derivation]] = []
    for submission in submissions:
        derivation = _stored_judge(submission, snapshot)
        _apply_moderation(submission, derivation)
        plans.append((submission, derivation))

    writers = [
        (s, d)
        for s, d in plans
        if d.status in (SubmissionStatus.ACCEPTED, SubmissionStatus.FLAGGED) and d.report is not None and d.gpu_id
    ]
    keyed = {s.pk: [(r, r.key()) for r in d.report.results] for s, d in writers}  # type: ignore[union-attr]
    pairs: set[tuple[int, str]] = {(int(d.gpu_id or 0), key.key) for s, d in writers for _, key in keyed[s.pk]}
    if maintain_aggregates:
        aggregate_locks(gpu_ids={gpu_id for gpu_id, _ in pairs})
    peer_sets: dict[int, dict[str, PeerSet]] = {}
    for gpu_id in {gpu for gpu, _ in pairs}:
        peer_sets[gpu_id] = peer_cache.load(gpu_id=gpu_id, comparison_keys=[k for g, k in pairs if g == gpu_id])

    results: list[BenchmarkResult] = []
    grown: dict[tuple[int, str], _Grown] = {}
    for submission, derivation in writers:
        any_flagged = _results_rows(
            submission=submission,
            derivation=derivation,
            keyed=keyed[submission.pk],
            peer_sets=peer_sets[int(derivation.gpu_id or 0)],
            snapshot=snapshot,
            results=results,
            grown=grown,
        )
        derivation.status = SubmissionStatus.FLAGGED if any_flagged else SubmissionStatus.ACCEPTED
    results_insert(results=results)
    if maintain_aggregates:
        if grown:
            items = [
                AggregateInput(
                    gpu_id,
                    key,
                    g.label,
                    g.workload_id,
                    g.result.precision,
                    g.result.gpu_count,
                    g.peer_set.summary(),
                    g.peer_set.lab > 0,
                    g.result.params,
                )
                for (gpu_id, key), g in grown.items()
            ]
            for row in aggregates_write(items=items):
                grown[(row.gpu_id, row.comparison_key)].peer_set.version = (row.n, row.updated_at)
        aggregates_refresh_pairs(pairs=touched - set(grown))

    for _submission, derivation in plans:
        if derivation.unknown_gpu_name and derivation.report is not None:
            _unmatched_record(name=derivation.report.gpu_name, memory_gib=derivation.report.memory_gib)
    now = timezone.now()
    _verdicts_write(plans=plans, now=now)
    for submission, derivation in plans:
        submission.status, submission.reasons = derivation.status, derivation.reasons
        submission.gpu_id, submission.processed_at = derivation.gpu_id, now
    return {s.pk: d.status for s, d in plans}


def _verdicts_write(*, plans: list[tuple[RawSubmission, Derivation]], now: dt.datetime) -> None:
    """Store the verdicts: one UPDATE per distinct verdict, which most submissions of a batch share."""
    groups: dict[str, tuple[Derivation, list[int]]] = {}
    for submission, derivation in plans:
        key = canonical_json([derivation.status, derivation.gpu_id, derivation.reasons])
        groups.setdefault(key, (derivation, []))[1].append(submission.pk)
    for derivation, ids in groups.values():
        RawSubmission.objects.filter(pk__in=ids).update(
            status=derivation.status, reasons=derivation.reasons, gpu_id=derivation.gpu_id, processed_at=now
        )


def results_insert(*, results: list[BenchmarkResult]) -> None:
    """Insert derived results, as ``bulk_create`` would (defaults, auto_now_add, conversions)."""
    if connection.vendor != "postgresql":
        BenchmarkResult.objects.bulk_create(results, batch_size=1000)
        return
    # One COPY, written out: bulk_create costs more CPU per submission than the ingest rate target allows (perf/RESULTS.md).
    fields = [field for field in BenchmarkResult._meta.concrete_fields if not field.primary_key]
    json_columns = [isinstance(field, JSONField) for field in fields]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)  # type: ignore[arg-type]
    table = connection.ops.quote_name(BenchmarkResult._meta.db_table)
    # Errors of the raw psycopg cursor must reach callers as Django's: the task retries on those.
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,
    ):
        for result in results:
            values = [field.pre_save(result, True) for field in fields]  # auto_now_add
            copy.write_row([orjson.dumps(v).decode() if j else v for v, j in zip(values, json_columns, strict=True)])


def submission_derive(*, submission: RawSubmission, **options: Any) -> str:
    """Re-derive one submission (see submissions_derive); returns its new status."""
    return submissions_derive(submissions=[submission], **options)[submission.pk]


def _results_rows(
    *,
    submission: RawSubmission,
    derivation: Derivation,
    keyed: list[tuple[ResultReport, ComparisonKey]],
    peer_sets: dict[str, PeerSet],
    snapshot: CatalogSnapshot,
    results: list[BenchmarkResult],
    grown: dict[tuple[int, str], _Grown],
) -> bool:
    """Append the result rows of one submission, judging outliers; True when any is flagged."""
    gpu_id = derivation.gpu_id
    assert gpu_id is not None and derivation.report is not None
    report = derivation.report
    measured_at = min(report.created_at, submission.received_at or timezone.now())
    submitter_key = f"user:{submission.submitter_id}" if submission.submitter_id else f"anonymous:{submission.pk}"
    moderator_approved = bool(submission.moderated_by_id) and submission.status == SubmissionStatus.ACCEPTED
    any_flagged = False
    source = f"submission {submission.run_uuid}"
    for result, key in keyed:
        workload = snapshot.workload(result.workload, result.workload_version)
        assert workload is not None  # report_check refused unknown workloads
        peer_set = peer_sets[key.key]
        flags = list(derivation.result_flags.get(result.index, []))
        outlier, z = peer_set.outlier(result.median)
        if outlier and not moderator_approved:
            text = f"outlier against {peer_set.n} accepted results of this GPU and configuration (modified z-score {z:.1f})"
            flags.append(text)
            derivation.reasons.append({"field": result.path, "reason": text, "verdict": "flagged"})
        trust = TrustLabel.FLAGGED if flags else TrustLabel.COMMUNITY
        any_flagged = any_flagged or bool(flags)
        results.append(
            BenchmarkResult(
                submission_id=submission.pk,
                gpu_id=gpu_id,
                workload_id=workload.id,
                precision=result.precision,
                gpu_count=result.gpu_count,
                params=result.params,
                comparison_key=key.key,
                comparison_label=key.label,
                value=result.median,
                repetitions=result.repetitions,
                spread_pct=result.spread_pct,
                trust=trust,
                submitter_id=submission.submitter_id,
                submitter_key=submitter_key,
                source=source,
                environment=_result_environment(report, result),
                measured_at=measured_at,
            )
        )
        if trust == TrustLabel.COMMUNITY:
            peer_set.add(result.median, submitter_key, trust)
            grown[(gpu_id, key.key)] = _Grown(peer_set, result, workload.id, key.label)
    return any_flagged
