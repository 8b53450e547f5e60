"""What the two imports of public LLM README tables share: the bundled folder, the workloads,
consumer GPU names, and the writer of their results and kept rows.

``xiongjiedai_import`` reads XiongjieDai/GPU-Benchmarks-on-LLM-Inference (llama.cpp), and
``geerling_import`` geerlingguy/ai-benchmarks (Ollama eval rates). Rules, as the tables need them:

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

from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, LabImportRow, TrustLabel
from benchmarks_app.services.comparison_keys import comparison_key_for
from benchmarks_app.services.lab_tables import (
    GpuNameResolver,
    LabTableSummary,
    WorkloadSpec,
    lab_rows_replace,
    memory_in_name,
    workload_ensure,
)

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

# Apple M-series names: whole systems, outside the GPU catalogue.
APPLE_SYSTEM = re.compile(r"\b(M[1-4])(?:\s+(?:Max|Pro|Ultra))?\b|\bMac\b", re.IGNORECASE)
GPU_VENDOR = re.compile(r"\b(Nvidia|NVIDIA|AMD|Intel)\b")


def consumer_name_candidates(text: str) -> list[str]:
    """``Nvidia 4070 Ti Super`` -> ..., ``GeForce RTX 4070 Ti Super``; ``AMD 7900 XT`` -> ``Radeon RX 7900 XT``."""
    cleaned = re.sub(r"\s+", " ", re.sub(r"\bECO\b", "", text)).strip()
    vendor_match = GPU_VENDOR.search(cleaned)
    vendor = vendor_match.group(1).lower() if vendor_match else ""
    rest = re.sub(r"\s+", " ", GPU_VENDOR.sub("", cleaned)).strip()
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


def date_at_noon(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time(12)), dt.UTC)


@dataclass
class LabResultWriter:
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
