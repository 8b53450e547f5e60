"""Import the "Findings" tables of ``geerlingguy/ai-benchmarks`` as lab results.

Single-request generation rate ("Eval Rate") and peak wall power of whole systems, one table per
model. The rules both README imports follow are in ``llm_readme_tables``.
"""

from __future__ import annotations

import datetime as dt
import re
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
    GEERLING_DATASET,
    GEERLING_FILE,
    GEERLING_URL,
    GPU_VENDOR,
    LabResultWriter,
    consumer_name_candidates,
    date_at_noon,
)
from benchmarks_app.services.markdown_tables import markdown_tables
from gpuatlas.followups import followup_after_commit

_LINK = re.compile(r"^\[(?P<text>[^\]]*)\]\((?P<url>[^)]*)\)(?P<after>.*)$")
_SUP = re.compile(r"<sup>\s*(\d+)\s*</sup>")


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
            gpu_group = next((g for g in reversed(groups) if GPU_VENDOR.search(g)), "")
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


@transaction.atomic  # workloads, results and kept rows together, or nothing
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
    writer = LabResultWriter(GEERLING_DATASET, "lab:geerlingguy", summary, GpuNameResolver(require_variant=True))
    measured_at = date_at_noon(day)
    for record in table.to_dict("records"):
        _geerling_record(writer, record, measured_at)
    summary = writer.store(source_prefix=GEERLING_URL, refresh_aggregates=refresh_aggregates)
    followup_after_commit("llm.tasks.serving_points_refresh", source=SourceKind.EVAL_RATE, refit=refit)
    return summary


def _geerling_record(writer: LabResultWriter, record: dict[str, Any], measured_at: dt.datetime) -> None:
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
        if APPLE_SYSTEM.search(record["label"]):
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
