"""Import SemiAnalysis InferenceX's DeepSeek-R1 serving runs as lab results.

``llm/data/inferencex/benchmarks.json`` is a copy of the rows InferenceX's dashboard serves
(``llm/data/inferencex/SOURCES.md``): one object per run at a fixed number of requests in flight,
with its hardware, engine, parallelism (prefill and decode workers, tensor and expert parallel
sizes, attention data parallelism), speculative decoding, prompt and output lengths, and metrics.
Each row becomes one ``BenchmarkResult`` (trust ``lab``) of workload ``inferencex-serving``:

* value = output tokens/s per GPU over every GPU of the run: InferenceX's ``tput_per_gpu`` counts
  input and output tokens over all GPUs, so it is scaled by output / (input + output) length
  (prefill GPUs of a disaggregated run included);
* gpu_count = the run's GPUs: prefill plus decode GPUs when disaggregated; the tensor-parallel
  group when aggregated, where InferenceX's first mapper stored tensor x expert parallel size as
  the count although the experts are spread over the same GPUs (``InferencexRun.of``);
* params = model, lengths, concurrency, the decode side's parallelism and, where they apply,
  ``disaggregated`` and ``speculative`` (so nothing reads such a run as plain tensor parallelism);
* environment = InferenceX's own figures as published (total, input and output throughput,
  median and p99 interactivity, time to first token), the engine image and the run's URL.

A run whose own figures contradict its GPU count (``InferencexRun.gpus_implied``) is kept as a
skipped import row with the reason, which the summary prints: no result, so no serving point, no
fit and no measured answer rests on it.

Idempotent: a new import replaces what the last one wrote. The serving points are derived at the
end of the same transaction.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, LabImportRow, SourceKind, TrustLabel
from benchmarks_app.services.comparison_keys import comparison_key_for
from benchmarks_app.services.lab_tables import (
    GpuNameResolver,
    LabTableError,
    LabTableSummary,
    WorkloadSpec,
    lab_rows_replace,
    workload_ensure,
)
from benchmarks_app.services.mlperf_import import accelerator_name_candidates
from llm.services.serving_fit import serving_model_refit_after_write
from llm.services.serving_points import serving_points_rebuild

BUNDLED_FILE = Path(__file__).resolve().parents[1] / "data" / "inferencex" / "benchmarks.json"
UPSTREAM = (
    "https://github.com/SemiAnalysisAI/InferenceX-app/blob/{commit}/packages/app/cypress/fixtures/api/benchmarks.json"
)
COMMIT = "528c4146b8f502fcbce8df7870a935a970cbae25"  # llm/data/inferencex/SOURCES.md
# The snapshot the copy was taken from (its commit's month), as the workload's numeric version.
SNAPSHOT = "2026.6"
SOURCE_HEAD = f"InferenceX ({SNAPSHOT}, {COMMIT[:12]})"
LAB_SUBMITTER_KEY = "lab:inferencex"
DATASET = f"inferencex-{COMMIT[:12]}"
WORKLOAD = "inferencex-serving"

# InferenceX's hardware keys -> the part in MLPerf's spelling, which the catalogue's aliases know.
GPU_NAMES = {
    "b200": "NVIDIA B200-SXM-180GB",
    "b300": "NVIDIA B300",
    "gb200": "NVIDIA GB200",
    "gb300": "NVIDIA GB300",
    "h100": "NVIDIA H100-SXM-80GB",
    "h200": "NVIDIA H200-SXM-141GB",
    "mi300x": "AMD Instinct MI300X",
    "mi325x": "AMD Instinct MI325X",
    "mi355x": "AMD Instinct MI355X",
}
# InferenceX's framework keys -> the engine as a reader names it.
ENGINES = {
    "trt": "TensorRT-LLM",
    "dynamo-trt": "NVIDIA Dynamo with TensorRT-LLM",
    "sglang": "SGLang",
    "dynamo-sglang": "NVIDIA Dynamo with SGLang",
    "mori-sglang": "SGLang with MoRI",
    "vllm": "vLLM",
    "atom": "AMD ATOM",
}
MODELS = {"dsr1": "deepseek-r1"}
PRECISIONS = {"fp8": "fp8", "fp4": "fp4"}
# A run's GPU count is accepted when its own figures put it on this many times as many GPUs
# (``InferencexRun.gpus_implied``): the benchmark's wall time includes the ramp-up and the drain,
# when fewer requests are in flight, so every consistent run of the file reads 1.10 to 1.27 times
# its GPUs; the miscounted ones read 0.14 (tensor x expert parallel size), 0.56 to 0.71 (a
# disaggregated run's one figure counted on both sides) or 46 (a run whose throughput is far
# below what its latencies give).
GPUS_IMPLIED_BOUNDS = (0.9, 1.5)


@dataclass(frozen=True)
class InferencexRun:
    """One published run, as the importer reads it."""

    hardware: str
    engine: str
    model: str
    precision: str
    input_tokens: int
    output_tokens: int
    concurrency: int
    gpu_count: int
    decode_tp: int
    decode_ep: int
    attention_data_parallel: bool
    disaggregated: bool
    speculative: str
    parallelism: str  # e.g. "TP8", "DEP8", "8 prefill + 8 decode GPUs (DEP8)"
    output_tokens_per_s_per_gpu: float
    raw: dict[str, Any]

    @staticmethod
    def of(row: dict[str, Any]) -> InferencexRun:
        """A row of the file; KeyError or ValueError name what is missing."""
        metrics = row["metrics"]
        isl, osl = int(row["isl"]), int(row["osl"])
        disagg = bool(row["disagg"])
        tp, ep, dpa = int(row["decode_tp"]), int(row["decode_ep"]), bool(row["decode_dp_attention"])
        if disagg:
            gpus = int(row["num_prefill_gpu"]) + int(row["num_decode_gpu"])
        else:
            # An aggregated run's GPUs are its tensor-parallel group; the experts are spread over the
            # same GPUs. InferenceX's first mapper stored tp x ep on both sides instead, which its
            # maintainers repair the same way (SOURCES.md): 64 for a DEP8 run on one 8-GPU node.
            named = int(row["num_decode_gpu"])
            gpus = tp if ep > 1 and named == tp * ep else named
        decode = f"{'DEP' if dpa else 'TP'}{tp}" + (f",EP{ep}" if ep > 1 and not dpa else "")
        layout = (
            f"{row['num_prefill_gpu']} prefill + {row['num_decode_gpu']} decode GPUs ({decode})" if disagg else decode
        )
        spec = str(row.get("spec_method") or "none")
        return InferencexRun(
            hardware=str(row["hardware"]), engine=ENGINES.get(str(row["framework"]), str(row["framework"])),
            model=MODELS.get(str(row["model"]), str(row["model"])), precision=str(row["precision"]),
            input_tokens=isl, output_tokens=osl, concurrency=int(row["conc"]), gpu_count=gpus, decode_tp=tp,
            decode_ep=ep, attention_data_parallel=dpa, disaggregated=disagg, speculative="" if spec == "none" else spec,
            parallelism=layout, output_tokens_per_s_per_gpu=float(metrics["tput_per_gpu"]) * osl / (isl + osl),
            raw=row,
        )  # fmt: skip

    @property
    def gpus_implied(self) -> float | None:
        """The GPUs the run's own figures put it on: by Little's law, requests in flight x (input +
        output tokens) / mean request latency is its input plus output tokens/s, and InferenceX's
        ``tput_per_gpu`` is that over its GPUs. None without a latency or a throughput."""
        metrics = self.raw["metrics"]
        latency_s, per_gpu = metrics.get("mean_e2el"), metrics.get("tput_per_gpu")
        if not latency_s or not per_gpu:
            return None
        return self.concurrency * (self.input_tokens + self.output_tokens) / float(latency_s) / float(per_gpu)

    @property
    def inconsistency(self) -> str:
        """Why the run's GPU count cannot be trusted (empty when it can): its own figures put it on
        a count outside ``GPUS_IMPLIED_BOUNDS`` times the one the importer reads."""
        implied = self.gpus_implied
        low, high = GPUS_IMPLIED_BOUNDS
        if implied is None or low <= implied / self.gpu_count <= high:
            return ""
        return (
            f"its figures ({self.concurrency} in flight x {self.input_tokens + self.output_tokens} tokens / "
            f"{float(self.raw['metrics']['mean_e2el']):.1f} s mean latency / "
            f"{float(self.raw['metrics']['tput_per_gpu']):.1f} tokens/s per GPU) put it on {implied:.1f} GPUs, "
            f"not the {self.gpu_count} it names: its tokens/s per GPU cannot be read"
        )


def inferencex_import_file(
    *, path: Path | str = BUNDLED_FILE, refresh_aggregates: bool = True, refit: bool = True
) -> LabTableSummary:
    """Import the copied rows (see the module doc); LabTableError names what is wrong."""
    file_path = Path(path)
    try:
        rows = json.loads(file_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LabTableError(f"{file_path}: file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LabTableError(f"{file_path}: not a JSON file: {exc}") from None
    if not isinstance(rows, list):
        raise LabTableError(f"{file_path}: expected a list of runs, found {type(rows).__name__}")
    summary = LabTableSummary(source=f"{SOURCE_HEAD}: {UPSTREAM.format(commit=COMMIT)}", rows_read=len(rows))
    runs = []
    for index, row in enumerate(rows):
        try:
            runs.append(InferencexRun.of(row))
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise LabTableError(f"{file_path}: run #{index + 1} lacks a field it needs ({exc})") from None
    recounted = sum(1 for r in runs if not r.disaggregated and r.gpu_count != int(r.raw["num_decode_gpu"]))
    if recounted:
        summary.notes.append(f"{recounted} aggregated run(s) counted on their tensor-parallel GPUs, not the tensor x "
                             "expert parallel size the file names (SOURCES.md)")  # fmt: skip
    with transaction.atomic():
        reader = _Reader(summary)
        for index, run in enumerate(runs):
            reader.read(run, index)
        lab_rows_replace(
            result_source_prefixes=[SOURCE_HEAD],
            datasets=[DATASET],
            results=reader.results,
            import_rows=reader.import_rows,
            summary=summary,
            refresh_aggregates=refresh_aggregates,
        )
        serving_points_rebuild(source=SourceKind.INFERENCEX)
        if refit:
            serving_model_refit_after_write()
    return summary


class _Reader:
    def __init__(self, summary: LabTableSummary) -> None:
        self.summary = summary
        self.resolver = GpuNameResolver()
        self.now = timezone.now()
        self.results: list[BenchmarkResult] = []
        self.import_rows: list[LabImportRow] = []
        self.workload = workload_ensure(
            spec=WorkloadSpec(
                slug=WORKLOAD,
                version=SNAPSHOT,
                name="InferenceX serving runs",
                unit="output tokens/s per GPU",
                higher_is_better=True,
                description=(
                    "SemiAnalysis InferenceX: serving runs at a fixed number of requests in flight with random "
                    "prompts of fixed lengths. Output tokens/s over every GPU of the run (InferenceX's total "
                    "throughput per GPU times output / (input + output) length)."
                ),
                source=UPSTREAM.format(commit=COMMIT),
            )
        )

    def read(self, run: InferencexRun, index: int) -> None:
        raw, metrics = run.raw, run.raw["metrics"]
        name = GPU_NAMES.get(run.hardware, run.hardware)
        resolved = self.resolver.resolve(name=name, candidates=accelerator_name_candidates(name), memory_gib=None)
        params: dict[str, Any] = {
            "model": run.model,
            "input_tokens": run.input_tokens,
            "output_tokens": run.output_tokens,
            "concurrency": run.concurrency,
            "tensor_parallel": run.decode_tp,
        }
        if run.decode_ep > 1:
            params["expert_parallel"] = run.decode_ep
        if run.attention_data_parallel:
            params["attention_data_parallel"] = True
        if run.disaggregated:
            params.update(disaggregated=True, prefill_gpus=raw["num_prefill_gpu"], decode_gpus=raw["num_decode_gpu"])
        if run.speculative:
            params["speculative"] = run.speculative
        measured_at = timezone.make_aware(dt.datetime.combine(dt.date.fromisoformat(raw["date"]), dt.time(12)), dt.UTC)
        source = f"{SOURCE_HEAD}: {run.hardware} {run.engine} {run.parallelism}, run #{index + 1}"[:500]
        precision = PRECISIONS.get(run.precision, run.precision)
        if run.inconsistency or resolved.gpu_id is None:
            if run.inconsistency:
                self.summary.skipped.append(f"run #{index + 1} ({run.hardware} {run.engine} {run.parallelism}, "
                                            f"{run.concurrency} in flight): {run.inconsistency}")  # fmt: skip
                outcome, reason = LabImportRow.Outcome.SKIPPED, run.inconsistency
            else:
                self.summary.unmatched[run.hardware] = resolved.how
                outcome, reason = LabImportRow.Outcome.UNMATCHED, resolved.how
            self.import_rows.append(
                LabImportRow(
                    dataset=DATASET,
                    outcome=outcome,
                    name_reported=run.hardware,
                    gpu_id=resolved.gpu_id,
                    workload_slug=WORKLOAD,
                    gpu_count=run.gpu_count,
                    precision=precision,
                    params=params,
                    row={"index": index + 1, "run_url": raw.get("run_url", "")},
                    reason=reason,
                    source=source,
                    measured_at=measured_at,
                )  # fmt: skip
            )
            return
        self.summary.matched[run.hardware] = f"{resolved.slug} ({resolved.how})"
        key = comparison_key_for(workload_slug=WORKLOAD, version=SNAPSHOT, precision=precision, params=params,
                                 gpu_count=run.gpu_count)  # fmt: skip
        self.results.append(
            BenchmarkResult(
                submission=None,
                gpu_id=resolved.gpu_id,
                workload=self.workload,
                precision=precision,
                gpu_count=run.gpu_count,
                params=params,
                comparison_key=key.key,
                comparison_label=key.label,
                value=run.output_tokens_per_s_per_gpu,
                repetitions=[],
                spread_pct=None,
                trust=TrustLabel.LAB,
                submitter=None,
                submitter_key=LAB_SUBMITTER_KEY,
                source=source,
                environment={
                    "dataset": "inferencex",
                    "commit": COMMIT,
                    "index": index + 1,
                    "hardware": run.hardware,
                    "framework": raw["framework"],
                    "engine": run.engine,
                    "image": raw.get("image") or "",
                    "parallelism": run.parallelism,
                    "published_tokens_per_s_per_gpu": metrics.get("tput_per_gpu"),
                    "published_input_tokens_per_s_per_gpu": metrics.get("input_tput_per_gpu"),
                    "published_output_tokens_per_s_per_gpu": metrics.get("output_tput_per_gpu"),
                    "median_interactivity": metrics.get("median_intvty"),
                    "p99_interactivity": metrics.get("p99_intvty"),
                    "median_ttft_ms": metrics["median_ttft"] * 1000.0 if metrics.get("median_ttft") else None,
                    "run_url": raw.get("run_url", ""),
                },
                measured_at=measured_at,
                created_at=self.now,
            )  # fmt: skip
        )
