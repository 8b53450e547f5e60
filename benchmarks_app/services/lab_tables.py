"""What the imports of published result tables (MLPerf, llama.cpp) share.

Each import turns a table into ``BenchmarkResult`` rows (trust ``lab``) and ``LabImportRow``
rows (cells that are not results: out of memory, unknown or mixed accelerators, CPU-only
systems). It is idempotent: it replaces what the same dataset wrote before, in one
transaction, and refreshes the aggregates of every (GPU, comparison key) it touched.

GPU names go through the catalogue's matcher (``catalog.matching.GpuMatcher``). A table's own
spelling ("NVIDIA H100-SXM-80GB", "4090 24GB * 2") is first reduced to candidate names; a match
whose memory disagrees with the catalogue's (a 144 GB GH200 against the 96 GB entry) is refused
rather than mapped to the wrong GPU.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from benchmarks_app.models import BenchmarkResult, LabImportRow, Workload
from benchmarks_app.services.aggregates import aggregates_refresh_pairs
from benchmarks_app.services.results_changed import results_changed
from benchmarks_app.services.snapshot import catalog_snapshot_refresh_if_changed


class LabTableError(ValueError):
    """A table is missing, malformed or inconsistent; the message names the file and the row."""


@dataclass(frozen=True)
class WorkloadSpec:
    slug: str
    version: str
    name: str
    unit: str
    higher_is_better: bool
    description: str
    source: str
    category: str = Workload.Category.INFERENCE


def workload_ensure(*, spec: WorkloadSpec) -> Workload:
    """The Workload row for ``spec``, created if missing; a stored one with another unit is an error."""
    workload, created = Workload.objects.get_or_create(
        slug=spec.slug,
        version=spec.version,
        defaults={
            "name": spec.name[:200],
            "unit": spec.unit,
            "higher_is_better": spec.higher_is_better,
            "category": spec.category,
            "description": spec.description,
            "source": spec.source[:500],
        },
    )
    if not created and (workload.unit != spec.unit or workload.higher_is_better != spec.higher_is_better):
        raise LabTableError(
            f"workload {spec.slug} v{spec.version} is stored with unit {workload.unit!r} "
            f"(higher is better: {workload.higher_is_better}); this table gives {spec.unit!r}: units are never mixed"
        )
    return workload


@dataclass(frozen=True)
class Resolved:
    """A GPU name's outcome: a catalogue GPU, or why not."""

    gpu_id: int | None
    slug: str | None
    how: str


_VARIANT_WORD = re.compile(r"(?<![a-z])(sxm\d?|pcie|nvl|oam)(?![a-z])", re.IGNORECASE)
_VARIANTS = {"SXM", "PCIe", "NVL", "OAM"}
_MEMORY = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*G(?:B|iB)?(?![a-z])", re.IGNORECASE)


def memory_in_name(name: str) -> float | None:
    """``NVIDIA H200-SXM-141GB`` -> 141; ``Jetson AGX Orin 64G`` -> 64; None without a memory token."""
    found = _MEMORY.findall(name)
    return float(found[-1]) if found else None


@dataclass
class GpuNameResolver:
    """Resolves table names to catalogue GPUs through the shared matcher, one lookup per name.

    ``require_variant``: refuse a bare name ("A100 80GB") of a GPU sold in several form factors.
    For hand-written tables; names a system reports (nvidia-smi's "NVIDIA H100 80GB HBM3" is the
    SXM part) are left to the curated aliases.
    """

    require_variant: bool = False
    _cache: dict[tuple[str, float | None], Resolved] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.matcher = catalog_snapshot_refresh_if_changed().matcher

    def resolve(self, *, name: str, candidates: Sequence[str], memory_gib: float | None) -> Resolved:
        """The catalogue GPU of ``name``, trying ``candidates`` in order.

        Refused: a match whose memory differs from the catalogue's, and (``require_variant``) a
        bare name for a GPU sold in several form factors when the name says none.
        """
        key = (name, memory_gib)
        if key in self._cache:
            return self._cache[key]
        refused = ""
        resolved: Resolved | None = None
        for candidate in dict.fromkeys(c for c in candidates if c.strip()):
            result = self.matcher.match(name=candidate, memory_gib=memory_gib, hints=name)
            if not result.matched:
                continue
            if result.note:
                refused = refused or f"{result.slug}: {result.note}"
                continue
            ambiguous = self._variant_ambiguity(gpu_id=result.gpu_id, name=name) if self.require_variant else ""
            if ambiguous:
                refused = refused or f"{result.slug}: {ambiguous}"
                continue
            resolved = Resolved(result.gpu_id, result.slug, f"as {candidate!r}, {result.how}")
            break
        if resolved is None:
            why = f"closest catalogue GPU refused ({refused})" if refused else "no alias or catalogue name matches"
            resolved = Resolved(None, None, why)
        self._cache[key] = resolved
        return resolved

    def _variant_ambiguity(self, *, gpu_id: int | None, name: str) -> str:
        if gpu_id is None or _VARIANT_WORD.search(name):
            return ""
        facts = self.matcher.facts[gpu_id]
        siblings = self.matcher.families.get(facts.family, []) if facts.family else []
        variants = sorted({self.matcher.facts[s].variant for s in siblings} & _VARIANTS)
        if len(variants) > 1:
            return f"the name states no form factor and the {facts.family} comes as {', '.join(variants)}"
        return ""


@dataclass
class LabTableSummary:
    """What an import did, for the command's output and the tests."""

    source: str = ""
    rows_read: int = 0
    results_written: int = 0
    results_removed: int = 0
    aggregates_refreshed: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    matched: dict[str, str] = field(default_factory=dict)
    unmatched: dict[str, str] = field(default_factory=dict)
    heterogeneous: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_lines(self, *, max_skipped: int = 20) -> list[str]:
        lines = [
            f"source: {self.source}",
            f"rows read: {self.rows_read}; lab results written: {self.results_written} "
            f"(replacing {self.results_removed}); aggregates refreshed: {self.aggregates_refreshed}",
        ]
        if self.outcomes:
            lines.append("rows kept as non-results: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())))
        lines.append(f"GPU names matched: {len(self.matched)}; unmatched: {len(self.unmatched)}")
        lines.extend(f"  matched   {name!r} -> {how}" for name, how in sorted(self.matched.items()))
        lines.extend(f"  UNMATCHED {name!r} ({why})" for name, why in sorted(self.unmatched.items()))
        lines.extend(f"  HETEROGENEOUS {name!r} ({why})" for name, why in sorted(self.heterogeneous.items()))
        lines.extend(f"  note: {note}" for note in self.notes)
        lines.extend(f"  skipped {row}" for row in self.skipped[:max_skipped])
        if len(self.skipped) > max_skipped:
            lines.append(f"  ... and {len(self.skipped) - max_skipped} more skipped rows")
        return lines


def lab_rows_replace(
    *,
    result_source_prefixes: Iterable[str],
    datasets: Iterable[str],
    results: list[BenchmarkResult],
    import_rows: list[LabImportRow],
    summary: LabTableSummary,
    refresh_aggregates: bool = True,
) -> None:
    """Replace the results and import rows of these datasets with the new ones, atomically."""
    prefixes = sorted(set(result_source_prefixes))
    with transaction.atomic():
        previous = BenchmarkResult.objects.none()
        for prefix in prefixes:
            previous = previous | BenchmarkResult.objects.filter(submission__isnull=True, source__startswith=prefix)
        touched = set(previous.values_list("gpu_id", "comparison_key").distinct())
        workload_ids = set(previous.values_list("workload_id", flat=True).distinct())
        summary.results_removed = previous.count()
        previous.delete()
        LabImportRow.objects.filter(dataset__in=list(set(datasets))).delete()
        for result in results:
            result.environment, result.params = json_clean(result.environment), json_clean(result.params)
        BenchmarkResult.objects.bulk_create(results, batch_size=500)
        for row in import_rows:
            row.row, row.params = json_clean(row.row), json_clean(row.params)
        LabImportRow.objects.bulk_create(import_rows, batch_size=500)
        summary.results_written = len(results)
        summary.outcomes.update(row.outcome for row in import_rows)
        touched |= {(r.gpu_id, r.comparison_key) for r in results}
        if refresh_aggregates:
            aggregates_refresh_pairs(pairs=touched)
            summary.aggregates_refreshed = len(touched)
        results_changed(workload_ids=workload_ids | {r.workload_id for r in results})


def json_clean(value: Any) -> Any:
    """``value`` with NaN read as None and dates as ISO text, so it can be stored as JSON."""
    if isinstance(value, dict):
        return {str(k): json_clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_clean(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "item"):  # numpy scalars
        return json_clean(value.item())
    return value


def text_or_empty(value: Any) -> str:
    """A table cell as stripped text: NaN, None and "nan" read as empty."""
    if value is None:
        return ""
    if isinstance(value, float) and value != value:
        return ""
    text = str(value).strip()
    return "" if text.lower() in ("nan", "none") else text
