"""Import the Lambda deep-learning benchmark tables as lab results.

Each (config, model, precision) cell becomes one BenchmarkResult with trust ``lab``, its
source (upstream URL, commit and file) and the GPU count of the config. The import is
idempotent: it replaces the Lambda results it wrote before and refreshes the aggregates
of every (GPU, comparison key) it touched.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, TrustLabel, Workload
from benchmarks_app.services.aggregates import aggregates_refresh_pairs
from benchmarks_app.services.comparison_keys import comparison_key_for
from benchmarks_app.services.results_changed import results_changed
from benchmarks_app.services.snapshot import CatalogSnapshot, catalog_snapshot_refresh_if_changed
from benchmarks_app.services.workloads import LAMBDA_SUITES, workload_seed_lambda
from gpuatlas.progress import Progress, no_progress

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "data" / "lambda"
UPSTREAM_URL = "https://github.com/lambdal/deeplearning-benchmark"
DEFAULT_COMMIT = "aa5addb6a536"
LAB_SUBMITTER_KEY = "lab:lambda"
# Dates the upstream tables were last changed (see data/lambda/SOURCES.md).
SUITE_DATES = {"1.0": dt.date(2024, 7, 24), "2.0": dt.date(2025, 12, 10)}
FILES = [
    ("1.0", "fp16", "pytorch-train-throughput-fp16.csv", "pytorch-train-bs-fp16.csv"),
    ("1.0", "fp32", "pytorch-train-throughput-fp32.csv", "pytorch-train-bs-fp32.csv"),
    ("2.0", "fp16", "pytorch-train-throughput-v2-fp16.csv", None),
    ("2.0", "fp32", "pytorch-train-throughput-v2-fp32.csv", None),
]


class LabImportError(ValueError):
    """A Lambda file is missing or malformed; the message names the file and the row."""


@dataclass
class LabImportSummary:
    results_written: int = 0
    results_removed: int = 0
    cells_skipped_zero: int = 0
    rows_skipped: list[str] = field(default_factory=list)
    aggregates_refreshed: int = 0
    matched: dict[str, str] = field(default_factory=dict)
    unmatched: dict[str, str] = field(default_factory=dict)
    source: str = ""

    def as_lines(self) -> list[str]:
        lines = [
            f"source: {self.source}",
            f"lab results written: {self.results_written} (replacing {self.results_removed}); "
            f"empty cells (0.0 = not measured) skipped: {self.cells_skipped_zero}",
            f"aggregates refreshed: {self.aggregates_refreshed}",
            f"GPU names matched: {len(self.matched)}; unmatched: {len(self.unmatched)}",
        ]
        lines.extend(f"  matched   {name!r} -> {slug}" for name, slug in sorted(self.matched.items()))
        lines.extend(f"  UNMATCHED {name!r} ({why})" for name, why in sorted(self.unmatched.items()))
        lines.extend(f"  skipped row {r}" for r in self.rows_skipped)
        return lines


_SITE_PREFIX = re.compile(r"^(LambdaCloud|Lambda Cloud|DellTexas|Dell|SMC|1CC|RAIDZ1)\s+", re.IGNORECASE)
_COUNT = re.compile(r"\b(\d+)x\s*", re.IGNORECASE)
_MEMORY = re.compile(r"\b(\d+)\s*GB\b", re.IGNORECASE)
_V2_CONFIG = re.compile(r"(\d+)x([A-Z][A-Za-z0-9]*)_(\d+)GB(?:_(SXM\d?|PCIe))?")


@dataclass(frozen=True)
class LambdaConfig:
    gpu_name: str
    gpu_count: int
    memory_gib: float | None


def parse_v1_name(name: str, num_gpu: float) -> LambdaConfig:
    """``DellTexas 2x H100 80GB SXM5`` -> H100 80GB SXM5, 2 GPUs, 80 GiB."""
    base = _SITE_PREFIX.sub("", name.strip())
    base = _COUNT.sub("", base, count=1).strip()
    memory = _MEMORY.search(base)
    return LambdaConfig(base, int(num_gpu), float(memory.group(1)) if memory else None)


def parse_v2_name(name: str) -> LambdaConfig | None:
    """``LambdaOD_2x_Texas_1xH100_80GB_SXM5_192-222-52-120_v2`` -> H100 80GB SXM5, 1 GPU."""
    found = _V2_CONFIG.findall(name)
    if not found:
        return None
    count, gpu, memory, variant = found[-1]
    gpu_name = " ".join(p for p in (gpu, f"{memory}GB", variant) if p)
    return LambdaConfig(gpu_name, int(count), float(memory))


def name_candidates(name: str) -> list[str]:
    """The Lambda name, then spellings closer to catalogue names (memory last, no PCIe generation)."""
    candidates = [name]
    without_gen = re.sub(r"\s*Gen\d\b", "", name, flags=re.IGNORECASE).strip()
    memory = _MEMORY.search(without_gen)
    memory_last = without_gen
    if memory:
        memory_last = f"{_MEMORY.sub('', without_gen).strip()} {memory.group(1)} GB"
        memory_last = re.sub(r"\s+", " ", memory_last)
    for candidate in (without_gen, memory_last):
        if candidate not in candidates:
            candidates.append(candidate)
    return candidates


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise LabImportError(f"{path}: file not found")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames:
            raise LabImportError(f"{path}: empty file")
        return list(reader)


def _source_commit(directory: Path) -> str:
    sources = directory / "SOURCES.md"
    if sources.is_file():
        found = re.search(r"Commit:\s*([0-9a-f]{7,40})", sources.read_text(encoding="utf-8"))
        if found:
            return found.group(1)
    return DEFAULT_COMMIT


def _float(value: str, where: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise LabImportError(f"{where}: {value!r} is not a number") from None


def lambda_import_directory(
    *, path: Path | str = BUNDLED_DIR, progress: Progress = no_progress, refresh_aggregates: bool = True
) -> LabImportSummary:
    """Import the Lambda throughput tables found in ``path`` as lab results (idempotent).

    ``refresh_aggregates=False`` is for the full rebuild, which recomputes every aggregate at the end.
    """
    directory = Path(path)
    if not directory.is_dir():
        raise LabImportError(f"{directory}: not a directory")
    commit = _source_commit(directory)
    summary = LabImportSummary(source=f"{UPSTREAM_URL} @ {commit}")
    workloads = workload_seed_lambda()
    gpus = _GpuMatches(snapshot=catalog_snapshot_refresh_if_changed(), summary=summary)
    rows_out: list[BenchmarkResult] = []
    now = timezone.now()
    for entry in FILES:
        file = _SuiteFile(*entry)
        table = _read_csv(directory / file.throughput_file)
        batch_sizes: dict[str, dict[str, str]] = {}
        if file.bs_file and (directory / file.bs_file).is_file():
            batch_sizes = {r["name_gpu"]: r for r in _read_csv(directory / file.bs_file)}
        measured_at = timezone.make_aware(dt.datetime.combine(SUITE_DATES[file.version], dt.time(12)), dt.UTC)
        for index, row in enumerate(progress(table, len(table), file.throughput_file), start=2):
            where = f"{file.throughput_file} line {index}"
            named = _row_config(row, version=file.version, where=where, summary=summary)
            if named is None:
                continue
            raw_name, config = named
            gpu_id = gpus.match(config, raw_name)
            if gpu_id is None:
                continue
            rows_out.extend(
                _row_results(
                    row,
                    file=file,
                    where=where,
                    raw_name=raw_name,
                    config=config,
                    gpu_id=gpu_id,
                    workloads=workloads,
                    batch_sizes=batch_sizes.get(raw_name, {}),
                    measured_at=measured_at,
                    created_at=now,
                    summary=summary,
                )
            )
    _results_replace(rows_out, summary=summary, refresh_aggregates=refresh_aggregates)
    return summary


class _GpuMatches:
    """Catalogue GPUs of Lambda's GPU names, each name matched once and reported in the summary."""

    def __init__(self, *, snapshot: CatalogSnapshot, summary: LabImportSummary) -> None:
        self.snapshot = snapshot
        self.summary = summary
        self.gpu_ids: dict[str, int | None] = {}

    def match(self, config: LambdaConfig, raw_name: str) -> int | None:
        """The catalogue GPU id of ``config``'s GPU; None if no spelling of its name matches."""
        if config.gpu_name not in self.gpu_ids:
            result = None
            for candidate in name_candidates(config.gpu_name):
                result = self.snapshot.match(name=candidate, memory_gib=config.memory_gib)
                if result.matched:
                    break
            if result is not None and result.matched:
                self.gpu_ids[config.gpu_name] = result.gpu_id
                self.summary.matched[config.gpu_name] = f"{result.slug} (as {candidate!r}, {result.how})"
            else:
                self.gpu_ids[config.gpu_name] = None
                self.summary.unmatched[config.gpu_name] = f"e.g. row {raw_name!r}"
        return self.gpu_ids[config.gpu_name]


@dataclass(frozen=True)
class _SuiteFile:
    """One throughput table of a suite, and the batch-size table beside it if there is one."""

    version: str
    precision: str
    throughput_file: str
    bs_file: str | None


def _row_config(
    row: dict[str, str], *, version: str, where: str, summary: LabImportSummary
) -> tuple[str, LambdaConfig] | None:
    """A row's config name and the GPUs it names; None (noted as skipped) for rows that name none."""
    if version == "1.0":
        raw_name = row.get("name_gpu", "")
        config: LambdaConfig | None = parse_v1_name(raw_name, _float(row.get("num_gpu", "1"), where))
    else:
        raw_name = row.get("", "") or next(iter(row.values()))
        if raw_name.endswith("_bk"):
            summary.rows_skipped.append(f"{where} {raw_name!r}: a backup re-run of another row")
            return None
        config = parse_v2_name(raw_name)
    if config is None:
        summary.rows_skipped.append(f"{where} {raw_name!r}: no <count>x<GPU>_<memory>GB in the name")
        return None
    return raw_name, config


def _row_results(
    row: dict[str, str],
    *,
    file: _SuiteFile,
    where: str,
    raw_name: str,
    config: LambdaConfig,
    gpu_id: int,
    workloads: dict[tuple[str, str], Workload],
    batch_sizes: dict[str, str],
    measured_at: dt.datetime,
    created_at: dt.datetime,
    summary: LabImportSummary,
) -> list[BenchmarkResult]:
    """One lab result per measured workload column of a row (0.0 means not measured)."""
    results = []
    for slug in LAMBDA_SUITES[file.version]:
        if slug not in row:
            continue
        value = _float(row[slug], f"{where} column {slug}")
        if value <= 0:
            summary.cells_skipped_zero += 1
            continue
        key = comparison_key_for(
            workload_slug=slug, version=file.version, precision=file.precision, params={}, gpu_count=config.gpu_count
        )
        environment: dict[str, Any] = {
            "config": raw_name,
            "suite": f"lambda v{file.version[0]}",
            "file": file.throughput_file,
        }
        bs = batch_sizes.get(slug)
        if bs:
            environment["batch_size"] = int(_float(bs, f"{file.bs_file} {raw_name} {slug}"))
        results.append(
            BenchmarkResult(
                submission=None,
                gpu_id=gpu_id,
                workload=workloads[(slug, file.version)],
                precision=file.precision,
                gpu_count=config.gpu_count,
                params={},
                comparison_key=key.key,
                comparison_label=key.label,
                value=value,
                repetitions=[],
                spread_pct=None,
                trust=TrustLabel.LAB,
                submitter=None,
                submitter_key=LAB_SUBMITTER_KEY,
                source=f"{summary.source}: pytorch/{file.throughput_file}, row {raw_name!r}"[:500],
                environment=environment,
                measured_at=measured_at,
                created_at=created_at,
            )
        )
    return results


@transaction.atomic  # the old Lambda results go only if the new ones and their aggregates are written
def _results_replace(rows_out: list[BenchmarkResult], *, summary: LabImportSummary, refresh_aggregates: bool) -> None:
    """Replace the Lambda results written before with ``rows_out`` and refresh what they touch."""
    previous = BenchmarkResult.objects.filter(submission__isnull=True, source__startswith=UPSTREAM_URL)
    touched = set(previous.values_list("gpu_id", "comparison_key").distinct())
    workload_ids = set(previous.values_list("workload_id", flat=True).distinct())
    summary.results_removed = previous.count()
    previous.delete()
    BenchmarkResult.objects.bulk_create(rows_out, batch_size=500)
    summary.results_written = len(rows_out)
    touched |= {(r.gpu_id, r.comparison_key) for r in rows_out}
    if refresh_aggregates:
        aggregates_refresh_pairs(pairs=touched)
        summary.aggregates_refreshed = len(touched)
    results_changed(workload_ids=workload_ids | {r.workload_id for r in rows_out})
