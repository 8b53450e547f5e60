"""Import an MLPerf Inference results table as lab results: any round, either published shape.

MLCommons publishes each round's table as ``summary.csv`` (columns ``Organization``,
``MlperfModel``, ``Result``, ``Units``, ``accelerator_model_name``, ``total_accelerators`` ...)
and as ``summary_results.json`` (one object per result: ``Submitter``, ``Category``, ``Model``,
``Performance_Result``, ``Performance_Units``, ``Accelerator``, ``a#``, ``Nodes`` ...). Both are
read into one canonical pandas table through :data:`COLUMNS`; a round that adds columns needs no
code change, one that renames a required column fails with a message naming it.

One row becomes one ``BenchmarkResult`` of the catalogue GPU its accelerator name maps to:

* workload ``mlperf-<benchmark>-<scenario>-<unit>`` at version = the round (``6.1``), so units,
  scenarios, accuracy targets (``llama2-70b-99`` vs ``-99.9``) and rounds never share a key;
* throughput (tokens, samples, queries or tasks per second) divided by the total accelerator
  count (``Result`` is the whole system's); latencies are kept as published, lower is better;
* ``gpu_count`` = total accelerators; params ``division`` and ``availability`` (the rankings use
  closed + available by default; open, preview and rdi rows are kept and labelled);
* precision = the narrowest weight format named in ``weight_data_types``;
* environment: round, submitter, system, platform, suite, scenario, benchmark and model run,
  accuracy, framework, weight types, nodes and accelerators, host CPU, the published result.

Rows without a catalogue GPU become ``LabImportRow`` rows: CPU-only systems, cells naming
two accelerator types (never mapped to one GPU), names the catalogue lacks.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd
from django.db import transaction
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, LabImportRow, SourceKind, TrustLabel, Workload
from benchmarks_app.services.comparison_keys import comparison_key_for
from benchmarks_app.services.lab_tables import (
    GpuNameResolver,
    LabTableError,
    LabTableSummary,
    WorkloadSpec,
    lab_rows_replace,
    memory_in_name,
    text_or_empty,
    workload_ensure,
)
from gpuatlas.followups import followup_after_commit

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "data" / "mlperf"
RESULTS_REPO = "https://github.com/mlcommons/inference_results_v{round}"
LAB_SUBMITTER_KEY = "lab:mlperf-inference"
SOURCE_PREFIX = "MLPerf Inference v{round} ("

# Canonical column -> the names it has in the published shapes (first present wins). In the CSV
# ``Model`` is the model run and ``MlperfModel`` the benchmark; in the JSON ``Model`` is the
# benchmark and ``UsedModel`` the model run.
COLUMNS: dict[str, tuple[str, ...]] = {
    "round": ("version", "Version"),
    "submitter": ("Organization", "Submitter"),
    "availability": ("Availability",),
    "division": ("Division", "Category"),
    "suite": ("SystemType", "Suite"),
    "system": ("SystemName", "System"),
    "platform": ("Platform",),
    "benchmark": ("MlperfModel", "Model"),
    "model_used": ("UsedModel", "Model"),
    "scenario": ("Scenario",),
    "result": ("Result", "Performance_Result"),
    "units": ("Units", "Performance_Units"),
    "accuracy": ("Accuracy",),
    "nodes": ("number_of_nodes", "Nodes"),
    "accelerator": ("accelerator_model_name", "Accelerator"),
    "per_node": ("accelerators_per_node", "a#"),
    "total": ("total_accelerators", "Total Accelerators", "Total_Accelerators"),
    "framework": ("framework", "Software"),
    "weights": ("weight_data_types",),
    "location": ("Location",),
    "details": ("Details",),
    "notes": ("notes", "Notes"),
    "inferred": ("inferred",),
    "host": ("host_processor_model_name", "Processor"),
}
REQUIRED = (
    "submitter",
    "availability",
    "division",
    "system",
    "benchmark",
    "scenario",
    "result",
    "units",
    "accelerator",
)

_SCENARIOS = {
    "offline": "Offline",
    "server": "Server",
    "interactive": "Interactive",
    "singlestream": "SingleStream",
    "multistream": "MultiStream",
}
# Published unit -> (slug, stored unit, higher is better, divide by accelerators).
_UNITS = {
    "tokens/s": ("tokens", "tokens/s per accelerator", True, True),
    "samples/s": ("samples", "samples/s per accelerator", True, True),
    "queries/s": ("queries", "queries/s per accelerator", True, True),
    "tasks/s": ("tasks", "tasks/s per accelerator", True, True),
    "latency (ms)": ("latency-ms", "ms", False, False),
    "latency (s)": ("latency-s", "s", False, False),
}
_NO_ACCELERATOR = {"", "n/a", "na", "none", "-", "cpu"}
_HETEROGENEOUS = re.compile(r"\s\+\s|\s+and\s+|\),\s*|,\s*(?=(?:AMD|NVIDIA|Nvidia|Intel)\b)")
# Words in accelerator names that are not part of the product name: memory types, power
# limits, partition modes, cooling variants, virtualisation, "(R)"/"(TM)" marks.
_NOISE = re.compile(
    r"\((?:R|TM)\)|\bHBM\w*|\bGDDR\w*|\bLPDDR\w*|-?\b\d+W\b|-?\bNPS\d\b|-?\b[SC]PX\b|-CTS\b|"
    r"\bVirtualized\b|\bGrace\s+Hopper\s+Superchip\b|\bGraphics\b|\bDeveloper Kit\b|\bGPU\b",
    re.IGNORECASE,
)
_VARIANT_SUFFIX = re.compile(r"[-\s](?:SXM\d?|PCIe|NVL|OAM)\b", re.IGNORECASE)
_MEMORY_TOKEN = re.compile(r"-?\b\d+(?:\.\d+)?\s*G(?:B|iB)?\b", re.IGNORECASE)


def round_label(value: str) -> str:
    """``v6.1`` / ``6.1`` / ``v5.0`` -> ``6.1`` / ``5.0``; ValueError on anything else."""
    found = re.fullmatch(r"\s*[vV]?(\d+)\.(\d+)\s*", value or "")
    if not found:
        raise ValueError(f"MLPerf round {value!r} is not of the form v<major>.<minor>")
    return f"{int(found.group(1))}.{int(found.group(2))}"


def weights_precision(text: str) -> str | None:
    """The narrowest weight format named in ``weight_data_types`` (a stored precision), or None.

    ``NVFP4 weights; FP8 KV cache`` -> fp4, ``fp16,bf16,fp8`` -> fp8, ``int8,bf16`` -> int8,
    ``UINT4`` -> int4, ``{'unet': 'fp8', 'vae': 'fp32'}`` -> fp8, ``UNSET`` -> None.
    """
    lowered = text.lower()
    tokens = set(re.findall(r"[a-z]*\d+(?:_e\dm\d)?", lowered))
    if any(t in tokens for t in ("fp4", "nvfp4", "mxfp4", "e2m1")) or "fp4" in lowered:
        return "fp4"
    if any(t in tokens for t in ("int4", "uint4", "w4a8", "w4a16")):
        return "int4"
    if any(t in tokens for t in ("fp8", "float8", "f8_e4m3", "f8_e5m2", "e4m3", "e5m2")) or "fp8" in lowered:
        return "fp8"
    if any(t in tokens for t in ("int8", "uint8", "u8", "i8")):
        return "int8"
    if "bf16" in tokens or "bfloat16" in lowered:
        return "bf16"
    if any(t in tokens for t in ("fp16", "float16", "f16")):
        return "fp16"
    if any(t in tokens for t in ("fp32", "float32", "f32", "tf32")):
        return "fp32"
    return None


def accelerator_name_candidates(name: str) -> list[str]:
    """The published name, then spellings closer to catalogue names and aliases.

    ``NVIDIA H100-SXM-80GB`` -> ..., ``NVIDIA H100-SXM``, ``NVIDIA H100-SXM 80 GB``, ``NVIDIA H100``;
    the matcher reads the variant (SXM, PCIe, NVL) from the published name to pick the sibling.
    """
    base = _NOISE.sub(" ", name)
    memory = memory_in_name(base)
    base = _MEMORY_TOKEN.sub(" ", base)
    base = re.sub(r"\s+", " ", re.sub(r"-(?=\s|$)", " ", base)).strip(" -")
    no_variant = re.sub(r"\s+", " ", _VARIANT_SUFFIX.sub(" ", base)).strip(" -")
    candidates = [name, base]
    if memory:
        candidates.append(f"{base} {memory:g} GB")
    candidates.append(no_variant)
    if memory:
        candidates.append(f"{no_variant} {memory:g} GB")
    return list(dict.fromkeys(c for c in candidates if c))


def _is_heterogeneous(name: str) -> bool:
    parts = [p for p in _HETEROGENEOUS.split(name) if re.search(r"[A-Za-z]{2,}.*\d|\d.*[A-Za-z]{2,}", p)]
    return len(parts) >= 2


def _slug_part(text: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "-", text.strip().lower().replace(".", "_")).strip("-")


def mlperf_table_read(*, path: Path) -> pd.DataFrame:
    """The file as a table of strings (CSV, JSON list of objects, either gzip-compressed)."""
    if not path.is_file():
        raise LabTableError(f"{path}: file not found")
    raw = path.read_bytes()
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except OSError as exc:
            raise LabTableError(f"{path}: not a gzip file ({exc})") from None
    name = path.name.removesuffix(".gz")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LabTableError(f"{path}: not UTF-8 text ({exc})") from None
    if name.endswith(".json") or text.lstrip().startswith(("[", "{")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LabTableError(f"{path}: invalid JSON ({exc})") from None
        if isinstance(data, dict):
            lists = [v for v in data.values() if isinstance(v, list)]
            data = lists[0] if len(lists) == 1 else None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise LabTableError(f"{path}: expected a JSON list of result objects")
        frame = pd.DataFrame(data)
        return frame.map(lambda v: json.dumps(v) if isinstance(v, dict | list) else v)
    try:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise LabTableError(f"{path}: not a CSV table ({exc})") from None


def mlperf_canonical(*, frame: pd.DataFrame, where: str, round_override: str = "") -> pd.DataFrame:
    """The canonical columns of :data:`COLUMNS`; LabTableError naming the required ones missing."""
    present = {}
    for canonical, names in COLUMNS.items():
        column = next((n for n in names if n in frame.columns), None)
        if column is not None:
            present[canonical] = frame[column]
    missing: list[str] = [c for c in REQUIRED if c not in present]
    if "total" not in present and not ("nodes" in present and "per_node" in present):
        missing.append("total (or nodes and accelerators per node)")
    if not round_override and "round" not in present:
        missing.append("round (a version column, or pass the round)")
    if missing:
        listed = "; ".join(f"{c} ({' / '.join(COLUMNS.get(c, ()))})" if c in COLUMNS else c for c in missing)
        raise LabTableError(f"{where}: missing column(s): {listed}")
    table = pd.DataFrame({k: v.map(text_or_empty) for k, v in present.items()})
    for canonical in COLUMNS:
        if canonical not in table:
            table[canonical] = ""
    if round_override:
        table["round"] = round_override
    return table


def _count(value: str) -> float | None:
    if value == "":
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number >= 0 else None


@transaction.atomic  # workloads, results and kept rows together, or nothing
def mlperf_import_file(
    *,
    path: Path | str,
    published: dt.date,
    round_override: str = "",
    refresh_aggregates: bool = True,
    refit: bool = True,
) -> LabTableSummary:
    """Import one MLPerf Inference table (idempotent per round); see the module doc."""
    file_path = Path(path)
    where = str(file_path)
    table = mlperf_canonical(frame=mlperf_table_read(path=file_path), where=where, round_override=round_override)
    try:
        table["round"] = table["round"].map(round_label)
    except ValueError as exc:
        raise LabTableError(f"{where}: {exc}") from None
    rounds = sorted(set(table["round"]))
    summary = LabTableSummary(
        source=f"MLPerf Inference v{', v'.join(rounds)} ({file_path.name}), results of {published.isoformat()}",
        rows_read=len(table),
    )
    reader = _RowReader(
        file_path.name, summary, timezone.make_aware(dt.datetime.combine(published, dt.time(12)), dt.UTC)
    )
    for index, row in enumerate(table.to_dict("records"), start=2):
        reader.read(row, index)
    lab_rows_replace(
        result_source_prefixes=[SOURCE_PREFIX.format(round=r) for r in rounds],
        datasets=[f"mlperf-inference-v{r}" for r in rounds],
        results=reader.results,
        import_rows=reader.import_rows,
        summary=summary,
        refresh_aggregates=refresh_aggregates,
    )
    followup_after_commit("llm.tasks.serving_points_refresh", source=SourceKind.MLPERF, refit=refit)
    return summary


class _RowReader:
    """Turns canonical rows of one file into results and kept rows."""

    def __init__(self, file_name: str, summary: LabTableSummary, measured_at: dt.datetime) -> None:
        self.file_name, self.summary, self.measured_at = file_name, summary, measured_at
        self.resolver = GpuNameResolver()
        self.now = timezone.now()
        self.results: list[BenchmarkResult] = []
        self.import_rows: list[LabImportRow] = []
        self.workloads: dict[tuple[str, str], Workload] = {}

    def keep(self, row: dict[str, str], source: str, outcome: str, reason: str, **extra: Any) -> None:
        self.import_rows.append(
            LabImportRow(
                dataset=f"mlperf-inference-v{row['round']}",
                outcome=outcome,
                name_reported=row["accelerator"][:300],
                workload_slug=extra.get("workload_slug", ""),
                gpu_count=extra.get("gpu_count"),
                precision=extra.get("precision") or "",
                params=extra.get("params", {}),
                row={k: v for k, v in row.items() if v != ""},
                reason=reason,
                source=source,
                measured_at=self.measured_at,
            )
        )

    def skip(self, row: dict[str, str], source: str, line: str, reason: str) -> None:
        self.summary.skipped.append(f"{line}: {reason}")
        self.keep(row, source, LabImportRow.Outcome.SKIPPED, reason)

    def read(self, row: dict[str, str], index: int) -> None:
        round_ = row["round"]
        line = f"{self.file_name} row {index}"
        scenario = _SCENARIOS.get(re.sub(r"[\s_-]+", "", row["scenario"].lower()), row["scenario"])
        source = (
            f"{SOURCE_PREFIX.format(round=round_)}{self.file_name}): {row['submitter']}, {row['system']}, "
            f"{row['benchmark']} {scenario}"
        )[:500]
        try:
            value = float(row["result"])
        except ValueError:
            value = float("nan")
        unit_info = _UNITS.get(row["units"].strip().lower())
        if not value > 0:
            return self.skip(row, source, line, f"result {row['result']!r} is not a positive number")
        if unit_info is None:
            return self.skip(row, source, line, f"unknown unit {row['units']!r}")
        total = _count(row["total"])
        if total is None:
            nodes, per_node = _count(row["nodes"]), _count(row["per_node"])
            total = nodes * per_node if nodes is not None and per_node is not None else None
        accelerator = row["accelerator"]
        if accelerator.lower() in _NO_ACCELERATOR or total == 0:
            return self.keep(
                row, source, LabImportRow.Outcome.NO_ACCELERATOR, "CPU-only system: no accelerator to rank"
            )
        if total is None or not float(total).is_integer():
            return self.skip(
                row, source, line, f"accelerator count {row['total'] or row['per_node']!r} is not a whole number"
            )
        gpu_count = int(total)
        if _is_heterogeneous(accelerator):
            self.summary.heterogeneous[accelerator] = f"e.g. {row['submitter']}, {row['system']}"
            return self.keep(
                row,
                source,
                LabImportRow.Outcome.HETEROGENEOUS,
                "several accelerator types in one system: not one GPU's result",
            )
        precision = weights_precision(row["weights"])
        if precision is None:
            return self.skip(row, source, line, f"weight data types {row['weights']!r} name no format")
        unit_slug, unit, higher_is_better, per_accelerator = unit_info
        workload_key = (f"mlperf-{_slug_part(row['benchmark'])}-{scenario.lower()}-{unit_slug}"[:80], round_)
        params = {"division": row["division"].lower(), "availability": row["availability"].lower()}
        resolved = self.resolver.resolve(
            name=accelerator,
            candidates=accelerator_name_candidates(accelerator),
            memory_gib=memory_in_name(accelerator),
        )
        if resolved.gpu_id is None:
            self.summary.unmatched[accelerator] = f"{resolved.how}; e.g. {row['submitter']}, {row['system']}"
            return self.keep(row, source, LabImportRow.Outcome.UNMATCHED, resolved.how, workload_slug=workload_key[0],
                             gpu_count=gpu_count, precision=precision, params=params)  # fmt: skip
        self.summary.matched[accelerator] = f"{resolved.slug} ({resolved.how})"
        workload = self._workload(workload_key, row, scenario, unit, higher_is_better, per_accelerator)
        key = comparison_key_for(
            workload_slug=workload.slug,
            version=workload.version,
            precision=precision,
            params=params,
            gpu_count=gpu_count,
        )
        self.results.append(
            BenchmarkResult(
                submission=None,
                gpu_id=resolved.gpu_id,
                workload=workload,
                precision=precision,
                gpu_count=gpu_count,
                params=params,
                comparison_key=key.key,
                comparison_label=key.label,
                value=value / gpu_count if per_accelerator else value,
                repetitions=[],
                spread_pct=None,
                trust=TrustLabel.LAB,
                submitter=None,
                submitter_key=f"{LAB_SUBMITTER_KEY}:{row['submitter']}"[:64],
                source=source,
                environment=_environment(row, self.file_name, scenario),
                measured_at=self.measured_at,
                created_at=self.now,
            )
        )
        return None

    def _workload(
        self, key: tuple[str, str], row: dict[str, str], scenario: str, unit: str, higher: bool, per_accelerator: bool
    ) -> Workload:
        if key not in self.workloads:
            round_ = key[1]
            how = (
                "The published system result divided by the system's total accelerator count."
                if per_accelerator
                else "The published latency of the whole system (not divided)."
            )
            self.workloads[key] = workload_ensure(
                spec=WorkloadSpec(
                    slug=key[0],
                    version=round_,
                    name=f"MLPerf Inference {row['benchmark']} {scenario} ({row['units']})",
                    unit=unit,
                    higher_is_better=higher,
                    description=f"MLPerf Inference v{round_}, benchmark {row['benchmark']}, scenario {scenario}. {how}",
                    source=RESULTS_REPO.format(round=round_),
                )
            )
        return self.workloads[key]


def _environment(row: dict[str, str], file_name: str, scenario: str) -> dict[str, Any]:
    """What a result keeps of its row: the source's identity and the system's description."""
    round_ = row["round"]
    return {
        "dataset": f"mlperf-inference-v{round_}",
        "round": f"v{round_}",
        "file": file_name,
        "submitter": row["submitter"],
        "system": row["system"],
        "platform": row["platform"],
        "division": row["division"].lower(),
        "availability": row["availability"].lower(),
        "suite": row["suite"],
        "benchmark": row["benchmark"],
        "model_used": row["model_used"],
        "scenario": scenario,
        "accuracy": row["accuracy"][:500],
        "framework": row["framework"][:300],
        "weight_data_types": row["weights"][:200],
        "accelerator_name": row["accelerator"],
        "nodes": _count(row["nodes"]),
        "accelerators_per_node": _count(row["per_node"]),
        "result_system": row["result"],
        "units_published": row["units"],
        "inferred": row["inferred"] in ("1", "True", "true"),
        "host_processor": row["host"][:200],
        "location": row["location"],
        "url": _system_url(row, round_),
    }


def _system_url(row: dict[str, str], round_: str) -> str:
    if row["details"].startswith("http"):
        return row["details"]
    location = row["location"].removeprefix("./").strip("/")
    if not location:
        return RESULTS_REPO.format(round=round_)
    return f"{RESULTS_REPO.format(round=round_)}/tree/main/{quote(location)}"


# Files bundled for the demo and their publication dates (benchmarks_app/data/mlperf/SOURCES.md).
BUNDLED_FILES: tuple[tuple[str, dt.date], ...] = (
    ("inference_results_v4.1/summary_results.json.gz", dt.date(2024, 8, 28)),
    ("inference_results_v5.1/summary_results.json.gz", dt.date(2025, 9, 9)),
    ("inference_results_v6.1/summary.csv", dt.date(2026, 11, 25)),
)


def mlperf_import_bundled(*, refresh_aggregates: bool = True, refit: bool = True) -> list[LabTableSummary]:
    """Import every bundled round (the demo data)."""
    return [
        mlperf_import_file(
            path=BUNDLED_DIR / name, published=published, refresh_aggregates=refresh_aggregates, refit=refit
        )  # fmt: skip
        for name, published in BUNDLED_FILES
    ]
