"""A per-process, read-only snapshot of what the intake and the ingest need from the catalogue.

Loading the matcher (every GPU and alias of the whole catalogue), the peaks and the workloads
costs more than a whole submission's intake may take (perf/RESULTS.md), and checking whether the
catalogue changed costs several queries; so a process keeps the snapshot, and checks it on a
schedule rather than per submission. The snapshot is reloaded when it is older than ``SNAPSHOT_TTL_S``,
when a name or workload misses and the catalogue changed since (a curator just mapped an
alias), and at once when a catalogue row is saved in this process (see apps.py).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Max

from benchmarks_app.models import Workload
from benchmarks_app.services.plausibility import GpuPeaks
from benchmarks_app.services.versions import version_major_minor
from benchmarks_app.services.workload_rules import WorkloadRules, workload_rules_parse
from catalog.matching import GpuMatcher, MatchResult
from catalog.models import Gpu, GpuAlias, GpuNameRule, TensorPeak

logger = logging.getLogger(__name__)

SNAPSHOT_TTL_S = 60.0


@dataclass(frozen=True)
class WorkloadInfo:
    id: int
    slug: str
    version: str
    unit: str
    higher_is_better: bool
    category: str
    # What a submitted result may carry; None: lab-only, not accepted from submissions.
    rules: WorkloadRules | None = None


@dataclass
class CatalogSnapshot:
    matcher: GpuMatcher
    peaks: dict[int, GpuPeaks]
    workloads: dict[tuple[str, str], WorkloadInfo]
    stamp: tuple[Any, ...]
    loaded_at: float = field(default_factory=time.monotonic)

    def workload(self, slug: str, version: str) -> WorkloadInfo | None:
        try:
            return self.workloads.get((slug, version_major_minor(version)))
        except ValueError:
            return None

    def match(self, *, name: str, memory_gib: float | None) -> MatchResult:
        return self.matcher.match(name=name, memory_gib=memory_gib)


_lock = threading.Lock()
_current: CatalogSnapshot | None = None


def _catalog_stamp() -> tuple[Any, ...]:
    gpus = Gpu.objects.aggregate(n=Count("id"), changed=Max("updated_at"))
    aliases = GpuAlias.objects.aggregate(n=Count("id"), last=Max("id"))
    # Every edit of a name rule (admin or import) leaves a history row.
    rules = GpuNameRule.history.aggregate(n=Count("history_id"), last=Max("history_id"))
    peaks = TensorPeak.objects.aggregate(n=Count("id"), last=Max("id"))
    workloads = Workload.objects.aggregate(n=Count("id"), last=Max("id"))
    return (
        gpus["n"],
        gpus["changed"],
        aliases["n"],
        aliases["last"],
        peaks["n"],
        peaks["last"],
        workloads["n"],
        workloads["last"],
        rules["n"],
        rules["last"],
    )


def _load() -> CatalogSnapshot:
    stamp = _catalog_stamp()
    matcher = GpuMatcher.load()
    tensor: dict[int, dict[str, float | None]] = {}
    for gpu_id, precision, supported, dense in TensorPeak.objects.values_list(
        "gpu_id", "precision", "supported", "dense_tflops"
    ):
        tensor.setdefault(gpu_id, {})[precision] = dense if supported else None
    peaks = {
        gpu_id: GpuPeaks(
            gpu_id=gpu_id,
            name=name,
            fp32_tflops=fp32,
            memory_bandwidth_gbs=bandwidth,
            tensor_dense=tensor.get(gpu_id, {}),
            tdp_w=tdp,
        )
        for gpu_id, name, fp32, bandwidth, tdp in Gpu.objects.values_list(
            "id", "name", "fp32_tflops", "memory_bandwidth_gbs", "tdp_w"
        )
    }
    workloads = {
        (w.slug, w.version): WorkloadInfo(
            w.id, w.slug, w.version, w.unit, w.higher_is_better, w.category, _stored_rules(w)
        )
        for w in Workload.objects.all()
    }
    return CatalogSnapshot(matcher=matcher, peaks=peaks, workloads=workloads, stamp=stamp)


def _stored_rules(workload: Workload) -> WorkloadRules | None:
    if workload.submission_rules is None:
        return None
    try:
        return workload_rules_parse(raw=workload.submission_rules, label=f"{workload.slug} {workload.version}")
    except ValueError:
        # Seeding checks the rules; a row edited by hand into nonsense refuses submissions instead.
        logger.error("workload %s has invalid submission rules", workload, exc_info=True)
        return None


def catalog_snapshot() -> CatalogSnapshot:
    """The current snapshot, loading it when missing or older than the TTL."""
    global _current
    snapshot = _current
    if snapshot is None or time.monotonic() - snapshot.loaded_at > SNAPSHOT_TTL_S:
        with _lock:
            _current = snapshot = _load()
    return snapshot


def catalog_snapshot_refresh_if_changed() -> CatalogSnapshot:
    """After a miss: reload only if the catalogue changed since the snapshot was taken."""
    global _current
    snapshot = catalog_snapshot()
    if _catalog_stamp() != snapshot.stamp:
        with _lock:
            _current = snapshot = _load()
    return snapshot


def catalog_snapshot_clear(**_: Any) -> None:
    """Forget the snapshot (signal receiver for catalogue saves; tests call it between cases)."""
    global _current
    _current = None
