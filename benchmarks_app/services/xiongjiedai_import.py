"""Import the llama.cpp tables of ``XiongjieDai/GPU-Benchmarks-on-LLM-Inference`` as lab results.

llama.cpp ``llama-bench`` on RunPod GPUs and Macs: text generation (``tg``) and prompt processing
(``pp``) tokens/s per GPU configuration, LLaMA 3 (May 2024, tg/pp at 512 ... 8192 tokens) and
LLaMA 1 / 2 (Dec 2023, three runs and their mean). Both revisions of the README can be read in
one import: the LLaMA 3 tables they share are the same measurements and are kept once (from the
newest revision). The rules both README imports follow are in ``llm_readme_tables``.
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

from benchmarks_app.models import LabImportRow, SourceKind
from benchmarks_app.services.lab_tables import (
    GpuNameResolver,
    LabTableError,
    LabTableSummary,
    memory_in_name,
)
from benchmarks_app.services.llm_readme_tables import (
    APPLE_SYSTEM,
    BUNDLED_DIR,
    XIONGJIEDAI_DATASET,
    XIONGJIEDAI_FILES,
    XIONGJIEDAI_URL,
    LabResultWriter,
    consumer_name_candidates,
    date_at_noon,
)
from benchmarks_app.services.markdown_tables import MarkdownTable, markdown_tables
from gpuatlas.followups import followup_after_commit

_MONTHS = {
    m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)
}
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
    writer = LabResultWriter(XIONGJIEDAI_DATASET, "lab:xiongjiedai", summary, GpuNameResolver(require_variant=True))
    for record in kept.to_dict("records"):
        _xiongjiedai_record(writer, record)
    summary = writer.store(source_prefix=XIONGJIEDAI_URL, refresh_aggregates=refresh_aggregates)
    followup_after_commit("llm.tasks.serving_points_refresh", source=SourceKind.LLAMACPP, refit=refit)
    return summary


@dataclass(frozen=True)
class _Cell:
    """One measured cell as every row kept or result written for it states it."""

    source: str
    measured_at: dt.datetime
    snapshot: dt.date | None
    workload_slug: str
    test_label: str
    params: dict[str, Any]
    row: dict[str, Any]


def _cell_of(record: dict[str, Any]) -> _Cell:
    """Where a cell comes from, when it was measured and which workload and parameters it measures."""
    snapshot = record["snapshot"] if isinstance(record["snapshot"], dt.date) else None
    tokens = None if pd.isna(record["tokens"]) else int(record["tokens"])
    params: dict[str, Any] = {
        "model": record["model"],
        "quant": record["quant"],
        "section": record["section_key"],
        "backend": record["backend"],
    }
    if tokens is not None:
        params["tokens"] = tokens
    test_label = f"{record['test']}{tokens or ''}"
    return _Cell(
        source=f"{XIONGJIEDAI_URL} {record['file']}, line {record['line']}: {record['gpu_text']} {record['model']} {record['quant']}",
        measured_at=date_at_noon(snapshot or dt.date(2024, 5, 12)),
        snapshot=snapshot,
        workload_slug=f"llamacpp-{record['test']}",
        test_label=test_label,
        params=params,
        row={
            "gpu": record["gpu_text"],
            "model": record["model"],
            "quant": record["quant"],
            "test": test_label,
            "value": record["value"],
            "section": record["section"],
        },
    )


def _keep(writer: LabResultWriter, cell: _Cell, *, outcome: str, name: str, reason: str, **extra: Any) -> None:
    """Keep a cell that yields no result, with the cell's source, date, workload and row."""
    writer.keep(
        outcome=outcome,
        name=name,
        reason=reason,
        source=cell.source,
        measured_at=cell.measured_at,
        row=cell.row,
        params=cell.params,
        workload_slug=cell.workload_slug,
        **extra,
    )


def _xiongjiedai_record(writer: LabResultWriter, record: dict[str, Any]) -> None:
    """Write one cell as a lab result, or keep it with why it is none (CPU, Apple, unmatched, OOM)."""
    summary = writer.summary
    cell = _cell_of(record)
    precision = quant_precision(record["quant"])
    if record["on_cpu"]:
        _keep(
            writer,
            cell,
            outcome=LabImportRow.Outcome.NO_ACCELERATOR,
            name=record["gpu_text"],
            reason="run on the CPU (the table marks the model '(CPU)')",
        )
        return
    gpu = {"precision": precision, "gpu_count": record["gpu_count"]}
    if APPLE_SYSTEM.search(record["gpu_name"]):
        _keep(
            writer,
            cell,
            outcome=LabImportRow.Outcome.NOT_A_CATALOGUE_GPU,
            name=record["gpu_text"],
            reason="Apple silicon system: unified memory, not a catalogue GPU",
            **gpu,
        )
        return
    resolved = writer.resolver.resolve(
        name=record["gpu_name"],
        candidates=consumer_name_candidates(record["gpu_name"]),
        memory_gib=memory_in_name(record["gpu_name"]),
    )
    if resolved.gpu_id is None:
        summary.unmatched[record["gpu_name"]] = resolved.how
        _keep(writer, cell, outcome=LabImportRow.Outcome.UNMATCHED, name=record["gpu_name"], reason=resolved.how, **gpu)
        return
    summary.matched[record["gpu_name"]] = f"{resolved.slug} ({resolved.how})"
    if record["oom"]:
        _keep(
            writer,
            cell,
            outcome=LabImportRow.Outcome.DOES_NOT_FIT,
            name=record["gpu_text"],
            reason=f"out of memory: {record['model']} {record['quant']} on {record['gpu_count']} GPU(s)",
            gpu_id=resolved.gpu_id,
            **gpu,
        )
        return
    _result_write(writer, cell, record, gpu_id=resolved.gpu_id, precision=precision)


def _result_write(writer: LabResultWriter, cell: _Cell, record: dict[str, Any], *, gpu_id: int, precision: str) -> None:
    """The lab result of a measured cell on a catalogue GPU."""
    writer.result(
        gpu_id=gpu_id,
        workload_slug=cell.workload_slug,
        precision=precision,
        gpu_count=record["gpu_count"],
        params=cell.params,
        value=float(record["value"]),
        repetitions=[float(v) for v in record["runs"]],
        source=cell.source,
        environment={
            "dataset": XIONGJIEDAI_DATASET,
            "engine": "llama.cpp (llama-bench)",
            "build": "not stated in the README",
            "cuda_version": record["cuda"],
            "backend": record["backend"],
            "section": record["section"],
            "config": record["gpu_text"],
            "test": cell.test_label,
            "snapshot_month": f"{cell.snapshot:%Y-%m}" if cell.snapshot else "",
            "author_mean": record["author_mean"],
            "file": record["file"],
            "url": XIONGJIEDAI_URL,
        },
        measured_at=cell.measured_at,
    )
