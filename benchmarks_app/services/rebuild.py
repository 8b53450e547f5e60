"""Re-derive every result and aggregate from the raw submissions and the bundled Lambda files;
the other lab imports (MLPerf, llama.cpp tables) are kept as imported."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.db.models import Q

from benchmarks_app.models import BenchmarkResult, RawSubmission, ResultAggregate, SubmissionStatus, Workload
from benchmarks_app.services.aggregates import aggregates_rebuild
from benchmarks_app.services.derive import submission_derive
from benchmarks_app.services.ingest import TERMINAL
from benchmarks_app.services.lab_import import BUNDLED_DIR, LabImportSummary, lambda_import_directory
from benchmarks_app.services.lab_import import UPSTREAM_URL as LAMBDA_URL
from benchmarks_app.services.locks import aggregate_locks
from benchmarks_app.services.peers import PeerCache
from benchmarks_app.services.results_changed import results_changed
from benchmarks_app.services.snapshot import catalog_snapshot_refresh_if_changed
from catalog.models import Gpu
from gpuatlas.followups import followup_after_commit
from gpuatlas.progress import Progress, no_progress

logger = logging.getLogger(__name__)

NEWLY_REJECTED_SHOWN = 20


@dataclass
class RebuildSummary:
    submissions: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    # Accepted or flagged before, rejected by today's rules: run UUID -> the first reason.
    newly_rejected: dict[str, str] = field(default_factory=dict)
    results: int = 0
    aggregates: int = 0
    lab: LabImportSummary | None = None

    def as_lines(self) -> list[str]:
        lines = [
            f"submissions re-derived: {self.submissions} ("
            + ", ".join(f"{k} {v}" for k, v in sorted(self.by_status.items()))
            + ")",
            f"results: {self.results}; aggregates: {self.aggregates}",
        ]
        if self.lab is not None:
            lines.append(f"lab results: {self.lab.results_written} from {self.lab.source}")
        if self.newly_rejected:
            lines.append(
                f"rejected by the current rules, public before: {len(self.newly_rejected)} "
                "(their raw submissions are kept as received)"
            )
            shown = list(self.newly_rejected.items())[:NEWLY_REJECTED_SHOWN]
            lines.extend(f"  {uuid}: {why}" for uuid, why in shown)
        lines.extend(f"FAILED {uuid}: {why}" for uuid, why in self.failed.items())
        return lines


def results_rebuild(*, lab_path: Path | str | None = BUNDLED_DIR, progress: Progress = no_progress) -> RebuildSummary:
    """Delete every derived row and derive it again, in one transaction.

    Submissions are replayed in the order they were received, so the outlier checks see the
    same accepted peers as the live ingest did; moderators' decisions are kept. Submissions
    still waiting in the queue (received, processing) are left to the workers.
    """
    summary = RebuildSummary()
    with transaction.atomic():
        # Live ingests wait for the rebuild instead of writing into half-built tables.
        aggregate_locks(gpu_ids=Gpu.objects.values_list("pk", flat=True))
        # Results of submissions and Lambda's tables are derived again below. The other lab
        # imports (MLPerf, llama.cpp: files that may not be bundled) are kept as imported; their
        # aggregates are recomputed with the rest.
        BenchmarkResult.objects.filter(Q(submission__isnull=False) | Q(source__startswith=LAMBDA_URL)).delete()
        ResultAggregate.objects.all().delete()
        if lab_path is not None:
            summary.lab = lambda_import_directory(path=lab_path, refresh_aggregates=False)
        snapshot = catalog_snapshot_refresh_if_changed()
        # One writer inside one transaction: peers accumulate in memory, no version checks.
        peer_cache = PeerCache(validate=False, max_pairs=None, max_values=None)
        queryset = RawSubmission.objects.filter(status__in=TERMINAL).order_by("received_at", "pk")
        total = queryset.count()
        for submission in progress(queryset.iterator(chunk_size=500), total, "submissions"):
            was_public = submission.status in (SubmissionStatus.ACCEPTED, SubmissionStatus.FLAGGED)
            try:
                with transaction.atomic():
                    status = submission_derive(
                        submission=submission, snapshot=snapshot, maintain_aggregates=False, peer_cache=peer_cache
                    )
            except Exception as exc:  # one bad row must not stop the rebuild; it is reported
                logger.exception("rebuild: submission %s failed", submission.run_uuid)
                summary.failed[str(submission.run_uuid)] = f"{type(exc).__name__}: {exc}"
                peer_cache.clear()  # it may hold values of the rolled-back savepoint
                continue
            summary.submissions += 1
            summary.by_status[status] = summary.by_status.get(status, 0) + 1
            if was_public and status == SubmissionStatus.REJECTED:
                first = next((r for r in submission.reasons if r.get("verdict") == "rejected"), None)
                summary.newly_rejected[str(submission.run_uuid)] = (
                    f"{first['field']}: {first['reason']}" if first else "rejected"
                )
        summary.aggregates = aggregates_rebuild()
        # Every published result was derived again: every workload's watches may have moved.
        results_changed(workload_ids=Workload.objects.values_list("id", flat=True))
        summary.results = BenchmarkResult.objects.count()
        # Every LLM serving point derived again, and the model refitted (llm, above this app).
        followup_after_commit("llm.tasks.serving_points_refresh")
        # The rankings' submitter counts, stored per GPU and use case (dashboard, above this app).
        followup_after_commit("dashboard.tasks.ranking_submitters_refresh_task")
        followup_after_commit("dashboard.tasks.stored_standings_refresh_task")
    return summary
