"""Import the llama.cpp / Ollama tables of two public READMEs as lab results.

``XiongjieDai/GPU-Benchmarks-on-LLM-Inference`` (llama.cpp ``llama-bench`` on RunPod GPUs and
Macs): text generation (``tg``) and prompt processing (``pp``) tokens/s per GPU configuration,
LLaMA 3 (May 2024, tg/pp at 512 ... 8192 tokens) and LLaMA 1 / 2 (Dec 2023, three runs and their
mean). Both revisions of the README can be read in one import: the LLaMA 3 tables they share are
the same measurements and are kept once (from the newest revision).

``geerlingguy/ai-benchmarks`` ("Findings"): single-request generation rate ("Eval Rate") and
peak wall power of whole systems, one table per model.

Rules, as the tables need them:

* a multi-GPU row keeps its GPU count (``4090 24GB * 4`` -> 4 GPUs); its tokens/s is the
  configuration's (one stream through layers split across the GPUs), never divided;
* ``OOM`` is stored as "does not fit" (``LabImportRow``, outcome does_not_fit), never as a zero;
  so is a geerlingguy row run partly on the CPU ("GPU/CPU");
* sections, README revisions' snapshots and backends (CUDA, Metal, Vulkan, unmarked) are part
  of the comparison key (params ``section`` / ``backend`` / ``host``): rows from different
  sections or backends are never averaged together;
* Apple M-series rows are whole systems outside the GPU catalogue (unified memory that is the
  system's, no datasheet tensor figures, nothing to rent): kept as ``LabImportRow``
  (not_catalogue_gpu) with their figures, shown apart on the LLM method page. CPU runs are
  kept as no_accelerator. Whole systems built on a catalogue GPU (DGX Spark = GB10) are
  imported against that GPU with the host named.
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from django.db import transaction
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, LabImportRow, TrustLabel
from benchmarks_app.services.comparison_keys import comparison_key_for
from benchmarks_app.services.lab_tables import (
    GpuNameResolver,
    LabTableError,
    LabTableSummary,
    WorkloadSpec,
    lab_rows_replace,
    memory_in_name,
    workload_ensure,
)
from benchmarks_app.services.markdown_tables import MarkdownTable, markdown_tables
from llm.models import SourceKind
from llm.services.serving_fit import serving_model_refit
from llm.services.serving_points import serving_points_rebuild

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "data" / "llamacpp"
XIONGJIEDAI_URL = "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference"
GEERLING_URL = "https://github.com/geerlingguy/ai-benchmarks"
XIONGJIEDAI_DATASET = "llamacpp-xiongjiedai"
GEERLING_DATASET = "llm-geerlingguy"
# Bundled files, newest revision first: (path, commit, commit date).
XIONGJIEDAI_FILES: tuple[tuple[str, str, dt.date], ...] = (
    ("xiongjiedai-aa72e0ec/README.md", "aa72e0ec86c3", dt.date(2024, 5, 12)),
    ("xiongjiedai-eafac9d2/README.md", "eafac9d26ac5", dt.date(2024, 5, 12)),
)
GEERLING_FILE: tuple[str, str, dt.date] = ("geerlingguy-bdf94413/README.md", "bdf94413f5f2", dt.date(2025, 12, 18))

WORKLOADS = {
    "llamacpp-tg": WorkloadSpec(
        slug="llamacpp-tg",
        version="1.0",
        name="llama.cpp text generation (one stream)",
        unit="tokens/s",
        higher_is_better=True,
        description=(
            "llama.cpp llama-bench text generation: tokens/s of one stream (batch 1) on the whole GPU "
            "configuration (layers split across the GPUs), as published in XiongjieDai/GPU-Benchmarks-on-LLM-Inference."
        ),
        source=XIONGJIEDAI_URL,
    ),
    "llamacpp-pp": WorkloadSpec(
        slug="llamacpp-pp",
        version="1.0",
        name="llama.cpp prompt processing (prefill)",
        unit="tokens/s",
        higher_is_better=True,
        description=(
            "llama.cpp llama-bench prompt processing: prompt tokens/s of the whole GPU configuration, "
            "as published in XiongjieDai/GPU-Benchmarks-on-LLM-Inference."
        ),
        source=XIONGJIEDAI_URL,
    ),
    "llm-eval-rate": WorkloadSpec(
        slug="llm-eval-rate",
        version="1.0",
        name="LLM generation rate, one request (llama.cpp or Ollama)",
        unit="tokens/s",
        higher_is_better=True,
        description=(
            "Token generation rate of a single request (Ollama 'eval rate' or llama-bench tg128) of a whole "
            "system, as published in geerlingguy/ai-benchmarks (Findings)."
        ),
        source=GEERLING_URL,
    ),
}

_MONTHS = {
    m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)
}
_APPLE = re.compile(r"\b(M[1-4])(?:\s+(?:Max|Pro|Ultra))?\b|\bMac\b", re.IGNORECASE)
_COUNT = re.compile(r"^(?P<name>.*?)\s*(?:\*\s*(?P<count>\d+))?\s*$")
_MODEL_CELL = re.compile(
    r"^(?P<size>\d+(?:\.\d+)?B)[\s_.]+(?P<quant>[A-Za-z0-9_]+?)\s*(?P<cpu>\(CPU\))?$", re.IGNORECASE
)
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")


@dataclass(frozen=True)
class CellValue:
    value: float | None
    oom: bool


def cell_value(text: str) -> CellValue | None:
    """``**144.49**`` -> 144.49; ``OOM`` -> out of memory; empty or other text -> None."""
    plain = text.replace("*", "").strip()
    if plain.upper() == "OOM":
        return CellValue(None, True)
    if _NUMBER.match(plain):
        return CellValue(float(plain), False)
    return None


def quant_precision(quant: str) -> str:
    """GGUF type -> stored precision: Q4_* -> int4, Q8_* -> int8, F16 -> fp16, F32 -> fp32."""
    upper = quant.upper()
    if upper.startswith(("Q4", "IQ4", "MXFP4")):
        return "int4" if not upper.startswith("MXFP4") else "fp4"
    if upper.startswith(("Q8", "IQ8")):
        return "int8"
    if upper in ("F16", "FP16"):
        return "fp16"
    if upper in ("BF16",):
        return "bf16"
    if upper in ("F32", "FP32"):
        return "fp32"
    raise ValueError(f"unknown GGUF type {quant!r}")


def _snapshot_date(text: str) -> dt.date | None:
    found = re.findall(r"in\s+([A-Za-z]{3})[a-z]*\s+(\d{4})", text)
    if not found:
        return None
    month, year = found[-1]
    return dt.date(int(year), _MONTHS[month.lower()], 1)


def _family(heading: str) -> str | None:
    lowered = heading.lower()
    if "llama 3" in lowered:
        return "llama-3"
    if "llama 2" in lowered:
        return "llama-2"
    if "llama" in lowered:
        return "llama-1"
    return None


def xiongjiedai_rows(*, text: str, file_label: str) -> pd.DataFrame:
    """Long table of every measured cell of the README's "Benchmarks" section (one row per cell)."""
    records: list[dict[str, Any]] = []
    for table in markdown_tables(text):
        if "Benchmarks" not in table.headings or len(table.header) < 3 or table.header[:2] != ("GPU", "Model"):
            continue
        family = _family(" ".join(table.headings))
        if family is None:
            continue
        section_heading = table.headings[-1]
        snapshot = _snapshot_date(section_heading)
        backend = "metal" if "apple" in section_heading.lower() else "cuda"
        cuda = re.search(r"cuda:\s*([\d.]+(?:\s+or\s+[\d.]+)?)", section_heading)
        section_key = f"xiongjiedai-{family}-{snapshot:%Y-%m}" if snapshot else f"xiongjiedai-{family}"
        records.extend(
            _xiongjiedai_table(table, family, section_key, section_heading, snapshot, backend, cuda, file_label)
        )
    return pd.DataFrame.from_records(records)


def _xiongjiedai_table(
    table: MarkdownTable,
    family: str,
    section_key: str,
    section_heading: str,
    snapshot: dt.date | None,
    backend: str,
    cuda: re.Match[str] | None,
    file_label: str,
) -> list[dict[str, Any]]:
    header = [h.lower() for h in table.header]
    three_runs = any("[t/s]" in h for h in header)
    out: list[dict[str, Any]] = []
    gpu_cell = ""
    for offset, cells in enumerate(table.rows, start=1):
        gpu_cell = cells[0] or gpu_cell
        model = _MODEL_CELL.match(cells[1])
        if not gpu_cell or not model:
            continue
        name_match = _COUNT.match(gpu_cell.replace("\u2011", "-"))
        assert name_match is not None  # the pattern matches any text
        base = {
            "file": file_label,
            "line": table.line + 1 + offset,
            "section": section_heading,
            "section_key": section_key,
            "family": family,
            "gpu_text": gpu_cell,
            "gpu_name": name_match.group("name").strip(),
            "gpu_count": int(name_match.group("count") or 1),
            "model": f"{family}-{model.group('size').lower()}",
            "quant": model.group("quant").upper(),
            "on_cpu": bool(model.group("cpu")),
            "backend": backend,
            "cuda": cuda.group(1) if cuda else "",
            "snapshot": snapshot,
        }
        if three_runs:
            # TG [t/s] | | | PP [t/s] | | | mean TG | mean PP
            for test, first, mean_at in (("tg", 2, 8), ("pp", 5, 9)):
                runs = [cell_value(c) for c in cells[first : first + 3]]
                mean = cell_value(cells[mean_at]) if mean_at < len(cells) else None
                values = [r.value for r in runs if r is not None and r.value is not None]
                oom = any(r is not None and r.oom for r in runs) or (mean is not None and mean.oom)
                if not values and not oom:
                    continue
                out.append(
                    {
                        **base,
                        "test": test,
                        "tokens": None,
                        "value": statistics.median(values) if values and not oom else None,
                        "oom": oom and not values,
                        "runs": values,
                        "author_mean": mean.value if mean else None,
                    }
                )
            continue
        for column, cell in zip(header[2:], cells[2:], strict=False):
            test_match = re.fullmatch(r"(tg|pp)\s*(\d+)", column)
            parsed = cell_value(cell)
            if not test_match or parsed is None:
                continue
            out.append(
                {
                    **base,
                    "test": test_match.group(1),
                    "tokens": int(test_match.group(2)),
                    "value": parsed.value,
                    "oom": parsed.oom,
                    "runs": [],
                    "author_mean": None,
                }
            )
    return out


_LINK = re.compile(r"^\[(?P<text>[^\]]*)\]\((?P<url>[^)]*)\)(?P<after>.*)$")
_SUP = re.compile(r"<sup>\s*(\d+)\s*</sup>")
_VENDOR = re.compile(r"\b(Nvidia|NVIDIA|AMD|Intel)\b")


def _model_slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", heading.lower().replace(":", " ")).strip("-")


def geerling_rows(*, text: str, file_label: str) -> pd.DataFrame:
    """Long table of the README's "Findings" tables (one row per system and model)."""
    records: list[dict[str, Any]] = []
    for table in markdown_tables(text):
        if "Findings" not in table.headings or table.header[:3] != ("System", "CPU/GPU", "Eval Rate"):
            continue
        model = _model_slug(table.heading)
        for offset, cells in enumerate(table.rows, start=1):
            system, placement, rate, power = (cells + ("", "", "", ""))[:4]
            link = _LINK.match(system)
            label = f"{link.group('text')}{link.group('after')}" if link else system
            vulkan = any(n == "1" for n in _SUP.findall(label))
            label = re.sub(r"\s+", " ", _SUP.sub("", label)).strip()
            value = re.match(r"\s*([\d.]+)\s*Tokens/s", rate)
            watts = re.match(r"\s*([\d.]+)\s*W", power)
            groups = re.findall(r"\(([^()]*)\)", label)
            gpu_group = next((g for g in reversed(groups) if _VENDOR.search(g)), "")
            host = re.sub(r"\s+", " ", label.replace(f"({gpu_group})", "")).strip(" -") if gpu_group else label
            records.append(
                {
                    "file": file_label,
                    "line": table.line + 1 + offset,
                    "model": model,
                    "model_label": table.heading,
                    "label": label,
                    "url": link.group("url") if link else "",
                    "gpu_text": gpu_group,
                    "host": host,
                    "placement": {"GPU": "gpu", "CPU": "cpu"}.get(placement.strip(), "gpu+cpu"),
                    "backend": "vulkan" if vulkan else "unmarked",
                    "value": float(value.group(1)) if value else None,
                    "power_w": float(watts.group(1)) if watts else None,
                }
            )
    return pd.DataFrame.from_records(records)


def consumer_name_candidates(text: str) -> list[str]:
    """``Nvidia 4070 Ti Super`` -> ..., ``GeForce RTX 4070 Ti Super``; ``AMD 7900 XT`` -> ``Radeon RX 7900 XT``."""
    cleaned = re.sub(r"\s+", " ", re.sub(r"\bECO\b", "", text)).strip()
    vendor_match = _VENDOR.search(cleaned)
    vendor = vendor_match.group(1).lower() if vendor_match else ""
    rest = re.sub(r"\s+", " ", _VENDOR.sub("", cleaned)).strip()
    candidates = [text, cleaned, rest]
    memory = memory_in_name(rest)
    if memory:
        without = re.sub(r"\s*\d+(?:\.\d+)?\s*GB\b", "", rest, flags=re.IGNORECASE).strip()
        candidates += [without, f"{without} {memory:g} GB"]
    if vendor in ("nvidia", "") and re.match(r"^\d{4}", rest):
        candidates += [f"RTX {rest}", f"GeForce RTX {rest}"]
    if vendor in ("nvidia", "") and re.match(r"^A\d{3,4}\b", rest):
        candidates.append(f"RTX {rest}")
    if vendor == "amd":
        if re.match(r"^\d{3,4}", rest):
            candidates.append(f"Radeon RX {rest}")
        candidates.append(f"Radeon {rest}" if not rest.lower().startswith("radeon") else rest)
    return list(dict.fromkeys(c for c in candidates if c))


def _date_time(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time(12)), dt.UTC)


@dataclass
class _Writer:
    """Collects results and import rows of one dataset."""

    dataset: str
    submitter_key: str
    summary: LabTableSummary
    resolver: GpuNameResolver

    def __post_init__(self) -> None:
        self.results: list[BenchmarkResult] = []
        self.rows: list[LabImportRow] = []
        self.workloads = {slug: workload_ensure(spec=spec) for slug, spec in WORKLOADS.items()}
        self.now = timezone.now()

    def store(self, *, source_prefix: str, refresh_aggregates: bool) -> LabTableSummary:
        """Replace what this dataset wrote before with the collected rows."""
        lab_rows_replace(
            result_source_prefixes=[source_prefix],
            datasets=[self.dataset],
            results=self.results,
            import_rows=self.rows,
            summary=self.summary,
            refresh_aggregates=refresh_aggregates,
        )
        return self.summary

    def keep(
        self, *, outcome: str, name: str, reason: str, source: str, measured_at: dt.datetime, **extra: Any
    ) -> None:
        self.rows.append(
            LabImportRow(
                dataset=self.dataset,
                outcome=outcome,
                name_reported=name[:300],
                gpu_id=extra.get("gpu_id"),
                gpu_count=extra.get("gpu_count"),
                workload_slug=extra.get("workload_slug", ""),
                precision=extra.get("precision", ""),
                params=extra.get("params", {}),
                row=extra.get("row", {}),
                reason=reason,
                source=source[:500],
                measured_at=measured_at,
            )
        )

    def result(
        self,
        *,
        gpu_id: int,
        workload_slug: str,
        precision: str,
        gpu_count: int,
        params: dict[str, Any],
        value: float,
        repetitions: list[float],
        source: str,
        environment: dict[str, Any],
        measured_at: dt.datetime,
    ) -> None:
        workload = self.workloads[workload_slug]
        key = comparison_key_for(
            workload_slug=workload.slug,
            version=workload.version,
            precision=precision,
            params=params,
            gpu_count=gpu_count,
        )
        spread = None
        if len(repetitions) > 1 and statistics.median(repetitions) > 0:
            spread = (max(repetitions) - min(repetitions)) / statistics.median(repetitions) * 100
        self.results.append(
            BenchmarkResult(
                submission=None,
                gpu_id=gpu_id,
                workload=workload,
                precision=precision,
                gpu_count=gpu_count,
                params=params,
                comparison_key=key.key,
                comparison_label=key.label,
                value=value,
                repetitions=repetitions,
                spread_pct=spread,
                trust=TrustLabel.LAB,
                submitter=None,
                submitter_key=self.submitter_key,
                source=source[:500],
                environment=environment,
                measured_at=measured_at,
                created_at=self.now,
            )
        )


_IDENTITY = ["section_key", "gpu_text", "model", "quant", "on_cpu", "test", "tokens"]


@transaction.atomic  # workloads, results and kept rows together, or nothing
def xiongjiedai_import(
    *, files: list[tuple[Path, str, dt.date]] | None = None, refresh_aggregates: bool = True, refit: bool = True
) -> LabTableSummary:
    """Import the XiongjieDai README revisions (newest first) as one dataset; idempotent."""
    chosen = files or [(BUNDLED_DIR / name, commit, day) for name, commit, day in XIONGJIEDAI_FILES]
    frames = []
    for path, commit, _day in chosen:
        if not Path(path).is_file():
            raise LabTableError(f"{path}: file not found")
        frame = xiongjiedai_rows(text=Path(path).read_text(encoding="utf-8"), file_label=f"README.md @ {commit}")
        if frame.empty:
            raise LabTableError(f"{path}: no llama.cpp results table found under a 'Benchmarks' heading")
        frame["commit"] = commit
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    table["tokens_key"] = table["tokens"].astype("Int64").astype(str)
    key_columns = [c if c != "tokens" else "tokens_key" for c in _IDENTITY]
    duplicated = table.duplicated(subset=key_columns, keep="first")
    summary = LabTableSummary(
        source=f"{XIONGJIEDAI_URL} (README.md @ {', '.join(c for _, c, _ in chosen)})",
        rows_read=len(table),
    )
    kept = table[~duplicated]
    dropped = table[duplicated]
    if len(dropped):
        merged = dropped.merge(kept, on=key_columns, suffixes=("", "_kept"))
        differ = merged[(merged["value"] != merged["value_kept"]) & merged["value"].notna()]
        summary.notes.append(
            f"{len(dropped)} cells repeated in an older revision were kept once (newest revision); "
            f"{len(differ)} of them differ between revisions"
        )
    writer = _Writer(XIONGJIEDAI_DATASET, "lab:xiongjiedai", summary, GpuNameResolver(require_variant=True))
    for record in kept.to_dict("records"):
        _xiongjiedai_record(writer, record)
    summary = writer.store(source_prefix=XIONGJIEDAI_URL, refresh_aggregates=refresh_aggregates)
    summary.notes.extend(serving_points_rebuild(source=SourceKind.LLAMACPP).as_lines())
    if refit:
        serving_model_refit()
    return summary


def _xiongjiedai_record(writer: _Writer, record: dict[str, Any]) -> None:
    summary = writer.summary
    snapshot = record["snapshot"] if isinstance(record["snapshot"], dt.date) else None
    measured_at = _date_time(snapshot or dt.date(2024, 5, 12))
    tokens = None if pd.isna(record["tokens"]) else int(record["tokens"])
    workload_slug = f"llamacpp-{record['test']}"
    precision = quant_precision(record["quant"])
    params: dict[str, Any] = {
        "model": record["model"],
        "quant": record["quant"],
        "section": record["section_key"],
        "backend": record["backend"],
    }
    if tokens is not None:
        params["tokens"] = tokens
    source = f"{XIONGJIEDAI_URL} {record['file']}, line {record['line']}: {record['gpu_text']} {record['model']} {record['quant']}"
    test_label = f"{record['test']}{tokens or ''}"
    row = {
        "gpu": record["gpu_text"],
        "model": record["model"],
        "quant": record["quant"],
        "test": test_label,
        "value": record["value"],
        "section": record["section"],
    }
    if record["on_cpu"]:
        writer.keep(
            outcome=LabImportRow.Outcome.NO_ACCELERATOR,
            name=record["gpu_text"],
            reason="run on the CPU (the table marks the model '(CPU)')",
            source=source,
            measured_at=measured_at,
            row=row,
            params=params,
            workload_slug=workload_slug,
        )
        return
    if _APPLE.search(record["gpu_name"]):
        writer.keep(
            outcome=LabImportRow.Outcome.NOT_A_CATALOGUE_GPU,
            name=record["gpu_text"],
            reason="Apple silicon system: unified memory, not a catalogue GPU",
            source=source,
            measured_at=measured_at,
            row=row,
            params=params,
            workload_slug=workload_slug,
            precision=precision,
            gpu_count=record["gpu_count"],
        )
        return
    resolved = writer.resolver.resolve(
        name=record["gpu_name"],
        candidates=consumer_name_candidates(record["gpu_name"]),
        memory_gib=memory_in_name(record["gpu_name"]),
    )
    if resolved.gpu_id is None:
        summary.unmatched[record["gpu_name"]] = resolved.how
        writer.keep(
            outcome=LabImportRow.Outcome.UNMATCHED,
            name=record["gpu_name"],
            reason=resolved.how,
            source=source,
            measured_at=measured_at,
            row=row,
            params=params,
            workload_slug=workload_slug,
            precision=precision,
            gpu_count=record["gpu_count"],
        )
        return
    summary.matched[record["gpu_name"]] = f"{resolved.slug} ({resolved.how})"
    if record["oom"]:
        writer.keep(
            outcome=LabImportRow.Outcome.DOES_NOT_FIT,
            name=record["gpu_text"],
            reason=f"out of memory: {record['model']} {record['quant']} on {record['gpu_count']} GPU(s)",
            source=source,
            measured_at=measured_at,
            row=row,
            params=params,
            workload_slug=workload_slug,
            precision=precision,
            gpu_count=record["gpu_count"],
            gpu_id=resolved.gpu_id,
        )
        return
    writer.result(
        gpu_id=resolved.gpu_id,  # type: ignore[arg-type]
        workload_slug=workload_slug,
        precision=precision,
        gpu_count=record["gpu_count"],
        params=params,
        value=float(record["value"]),
        repetitions=[float(v) for v in record["runs"]],
        source=source,
        environment={
            "dataset": XIONGJIEDAI_DATASET,
            "engine": "llama.cpp (llama-bench)",
            "build": "not stated in the README",
            "cuda_version": record["cuda"],
            "backend": record["backend"],
            "section": record["section"],
            "config": record["gpu_text"],
            "test": test_label,
            "snapshot_month": f"{snapshot:%Y-%m}" if snapshot else "",
            "author_mean": record["author_mean"],
            "file": record["file"],
            "url": XIONGJIEDAI_URL,
        },
        measured_at=measured_at,
    )


@transaction.atomic
def geerling_import(
    *,
    path: Path | None = None,
    commit: str = "",
    day: dt.date | None = None,
    refresh_aggregates: bool = True,
    refit: bool = True,
) -> LabTableSummary:
    """Import geerlingguy/ai-benchmarks' Findings tables; idempotent."""
    name, default_commit, default_day = GEERLING_FILE
    file_path = Path(path) if path else BUNDLED_DIR / name
    commit = commit or default_commit
    day = day or default_day
    if not file_path.is_file():
        raise LabTableError(f"{file_path}: file not found")
    table = geerling_rows(text=file_path.read_text(encoding="utf-8"), file_label=f"README.md @ {commit}")
    if table.empty:
        raise LabTableError(f"{file_path}: no table with System | CPU/GPU | Eval Rate under 'Findings'")
    summary = LabTableSummary(source=f"{GEERLING_URL} (README.md @ {commit})", rows_read=len(table))
    writer = _Writer(GEERLING_DATASET, "lab:geerlingguy", summary, GpuNameResolver(require_variant=True))
    measured_at = _date_time(day)
    for record in table.to_dict("records"):
        _geerling_record(writer, record, measured_at)
    summary = writer.store(source_prefix=GEERLING_URL, refresh_aggregates=refresh_aggregates)
    summary.notes.extend(serving_points_rebuild(source=SourceKind.EVAL_RATE).as_lines())
    if refit:
        serving_model_refit()
    return summary


def _geerling_record(writer: _Writer, record: dict[str, Any], measured_at: dt.datetime) -> None:
    summary = writer.summary
    source = f"{GEERLING_URL} {record['file']}, line {record['line']}: {record['label']} ({record['model_label']})"
    params: dict[str, Any] = {"model": record["model"], "backend": record["backend"], "host": record["host"][:80]}
    row = {k: record[k] for k in ("label", "model_label", "value", "power_w", "url", "placement")}
    value = record["value"]
    if value is None or pd.isna(value):
        summary.skipped.append(f"line {record['line']}: no tokens/s in the Eval Rate cell")
        return
    common: dict[str, Any] = {
        "source": source,
        "measured_at": measured_at,
        "row": row,
        "params": params,
        "workload_slug": "llm-eval-rate",
    }
    if record["placement"] == "cpu":
        writer.keep(
            outcome=LabImportRow.Outcome.NO_ACCELERATOR, name=record["label"], reason="run on the CPU", **common
        )
        return
    # DGX Spark systems name their chip in the system name ("Dell Pro Max with GB10 (Nvidia Spark)").
    gpu_text = "NVIDIA GB10" if re.search(r"\bGB10\b", record["label"]) else record["gpu_text"]
    if not gpu_text:
        if _APPLE.search(record["label"]):
            writer.keep(
                outcome=LabImportRow.Outcome.NOT_A_CATALOGUE_GPU,
                name=record["label"],
                reason="Apple silicon system: unified memory, not a catalogue GPU",
                **common,
            )
            return
        else:
            writer.keep(
                outcome=LabImportRow.Outcome.NOT_A_CATALOGUE_GPU,
                name=record["label"],
                reason="the row names a system, not its GPU",
                **common,
            )
            return
    resolved = writer.resolver.resolve(
        name=gpu_text, candidates=consumer_name_candidates(gpu_text), memory_gib=memory_in_name(gpu_text)
    )
    if resolved.gpu_id is None:
        summary.unmatched[gpu_text] = resolved.how
        writer.keep(outcome=LabImportRow.Outcome.UNMATCHED, name=gpu_text, reason=resolved.how, **common)
        return
    summary.matched[gpu_text] = f"{resolved.slug} ({resolved.how})"
    if record["placement"] == "gpu+cpu":
        writer.keep(
            outcome=LabImportRow.Outcome.DOES_NOT_FIT,
            name=gpu_text,
            reason=f"did not fit in GPU memory: run split between GPU and CPU at {value:g} tokens/s",
            gpu_id=resolved.gpu_id,
            gpu_count=1,
            precision="int4",
            **common,
        )
        return
    writer.result(
        gpu_id=resolved.gpu_id,  # type: ignore[arg-type]
        workload_slug="llm-eval-rate",
        precision="int4",
        gpu_count=1,
        params=params,
        value=float(value),
        repetitions=[],
        source=source,
        environment={
            "dataset": GEERLING_DATASET,
            "engine": "llama.cpp or Ollama (single request)",
            "backend": record["backend"],
            "backend_note": (
                "The README marks Vulkan builds with footnote 1; other rows do not name their backend "
                "(CUDA, ROCm or Metal; the linked issue of the Intel 265K RTX 4090 row shows a Vulkan build)."
            ),
            "quantisation_note": "Not in the README; the linked issues name Q4_K_M GGUF files.",
            "system": record["label"],
            "host": record["host"],
            "peak_system_power_w": record["power_w"],
            "issue_url": record["url"],
            "file": record["file"],
            "url": GEERLING_URL,
        },
        measured_at=measured_at,
    )
