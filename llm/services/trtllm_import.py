"""Import NVIDIA's TensorRT-LLM performance overview tables as lab results.

Each figure of a copied ``perf-overview.md`` (``llm/data/trtllm/<release>/``, parsed by
``llm.trtllm``) becomes one ``BenchmarkResult`` (trust ``lab``): workload ``trtllm-throughput``
(maximum-throughput runs) or ``trtllm-serving`` (fixed request rates), version = the TensorRT-LLM
release the table names, value = output tokens/s per GPU (the published figure divided by the GPU
count where it is the configuration's total), gpu_count = TP x PP, params = model, lengths and
parallelism (an attention data-parallel ``DEP<n>`` column keeps ``expert_parallel`` = n and
``attention_data_parallel`` beside its width ``tensor_parallel`` = n, so nothing reads it as plain
tensor parallelism). A serving row whose offered rate kept fewer than one request in flight
(``TrtllmRow.rate_limited``: the GPUs idled between requests, so its throughput is the offered
rate, a lower bound) is stored with ``rate_limited`` and the requests in flight in its
environment, and gives no serving point (``llm.services.serving_points``); the summary counts them.
GPU names the catalogue lacks become ``LabImportRow`` rows. Idempotent per file: a
new import of the same file replaces what it wrote. The serving points are derived at the end of
the same transaction.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    workload_ensure,
)
from benchmarks_app.services.mlperf_import import accelerator_name_candidates
from llm.services.serving_fit import serving_model_refit_after_write
from llm.services.serving_points import serving_points_rebuild
from llm.trtllm import TrtllmFormatError, TrtllmRow, trtllm_parse
from llm.trtllm_guide import GuideFormatError, guide_parse

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "data" / "trtllm"
UPSTREAM = "https://github.com/NVIDIA/TensorRT-LLM/blob/{commit}/{path}"
PERFORMANCE_PATH = "docs/source/performance/perf-overview.md"  # up to the 1.0 docs; then developer-guide/
SOURCE_PREFIX = "TensorRT-LLM performance overview ("
LAB_SUBMITTER_KEY = "lab:tensorrt-llm"


@dataclass(frozen=True)
class TrtllmFile:
    """A copied file: its release, the upstream commit and the (estimated) dates of its tables."""

    directory: str
    release: str
    commit: str
    dates: dict[str, dt.date]  # release named by a table -> the month it came out (estimated)
    upstream_path: str = PERFORMANCE_PATH


# llm/data/trtllm/SOURCES.md
BUNDLED_FILES = (
    TrtllmFile("v0.17", "0.17", "258c7540c03517def55d9a5aadfa9288af474e1b",
               {"0.17": dt.date(2025, 2, 1), "0.14.0": dt.date(2024, 11, 1)}),
    TrtllmFile("v1.0", "1.0", "00f37686aa854010d68bcbd0f4ab000221541ca6", {"1.0": dt.date(2025, 9, 1)}),
    TrtllmFile("v1.1", "1.1", "585c756579dc4d01f21fc13c2f604cdb461ac4f0", {"1.1": dt.date(2025, 10, 1)},
               "docs/source/developer-guide/perf-overview.md"),
)  # fmt: skip

# GPU names as the files print them -> the name of the same part in MLPerf's spelling, which the
# catalogue's aliases know. The files' hardware lists say which parts ran: "H100 SXM 80GB (DGX
# H100)", "GH200 96GB HBM3 (480GB LPDDR5X)", "B200 180GB (DGX B200)", "GB200 192GB (GB200 NVL72)".
# "H200 131GB HBM3" (serving table) is the same page's H200 SXM 141GB: no 131 GB H200 exists.
GPU_NAMES = {
    "h200 141gb hbm3": "NVIDIA H200-SXM-141GB",
    "h200 131gb hbm3": "NVIDIA H200-SXM-141GB",
    "h200": "NVIDIA H200-SXM-141GB",
    "h100 80gb hbm3": "NVIDIA H100-SXM-80GB",
    "h100": "NVIDIA H100-SXM-80GB",
    "gh200 480gb": "NVIDIA GH200 Grace Hopper Superchip 96GB",
    "b200": "NVIDIA B200-SXM-180GB",
    "gb200": "NVIDIA GB200",
    "l40s": "NVIDIA L40S",
    "a100-sxm4-80gb": "NVIDIA A100-SXM4-80GB",
    "rtx 6000 pro blackwell server edition": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
}


def trtllm_import_file(
    *,
    path: Path | str,
    release: str,
    commit: str,
    dates: dict[str, dt.date],
    upstream_path: str = PERFORMANCE_PATH,
    refresh_aggregates: bool = True,
    refit: bool = True,
) -> LabTableSummary:
    """Import one copied perf-overview.md (see the module doc); LabTableError names what is wrong.
    ``upstream_path``: where the file sits in the repository at ``commit`` (its citation)."""
    file_path = Path(path)
    if not file_path.is_file():
        raise LabTableError(f"{file_path}: file not found")
    try:
        parsed = trtllm_parse(file_path.read_text(encoding="utf-8"), default_version=release)
    except (TrtllmFormatError, UnicodeDecodeError) as exc:
        raise LabTableError(f"{file_path}: {exc}") from None
    dates = {**{r.version: dates[release] for r in parsed if release in dates}, **dates}
    undated = sorted({r.version for r in parsed if r.version not in dates})
    if undated:
        raise LabTableError(f"{file_path}: no date for the table(s) of release {', '.join(undated)}: pass one")
    source_head = f"{SOURCE_PREFIX}{release}, {commit[:12]})"
    url = UPSTREAM.format(commit=commit, path=upstream_path)
    summary = LabTableSummary(source=f"{source_head}: {url}", rows_read=len(parsed))
    with transaction.atomic():
        dataset = f"trtllm-{release}-{commit[:12]}"
        reader = _Reader(
            summary=summary, source_head=source_head, commit=commit, dates=dates, file=file_path.name, dataset=dataset,
            url=url,
        )  # fmt: skip
        for row in parsed:
            reader.read(row)
        limited = [r for r in parsed if r.rate_limited]
        if limited:
            summary.notes.append(
                f"{len(limited)} serving row(s) rate-limited, kept as results without a serving point (fewer than "
                "one request in flight: the GPUs idled between requests, the throughput is the offered rate, a "
                "lower bound): lines " + ", ".join(str(r.line) for r in limited)
            )
        lab_rows_replace(
            result_source_prefixes=[source_head],
            datasets=[dataset],
            results=reader.results,
            import_rows=reader.import_rows,
            summary=summary,
            refresh_aggregates=refresh_aggregates,
        )
        serving_points_rebuild(source=SourceKind.TRTLLM)
        if refit:
            serving_model_refit_after_write()
    return summary


def trtllm_import_bundled(*, refresh_aggregates: bool = True, refit: bool = True) -> list[LabTableSummary]:
    """Import every copied release and performance guide (the demo data)."""
    overviews = [
        trtllm_import_file(
            path=BUNDLED_DIR / f.directory / "perf-overview.md",
            release=f.release,
            commit=f.commit,
            dates=f.dates,
            upstream_path=f.upstream_path,
            refresh_aggregates=refresh_aggregates,
            refit=refit,
        )  # fmt: skip
        for f in BUNDLED_FILES
    ]
    guides = [
        trtllm_guide_import_file(
            path=BUNDLED_DIR / "guides" / g.file, guide=g, refresh_aggregates=refresh_aggregates, refit=refit
        )  # fmt: skip
        for g in BUNDLED_GUIDES
    ]
    return overviews + guides


# -- performance guides: trtllm-bench runs, one per section (llm.trtllm_guide) -------------------

GUIDE_SOURCE_PREFIX = "TensorRT-LLM performance guide ("
GUIDE_WORKLOAD = "trtllm-guide"
GUIDE_WORKLOAD_VERSION = "1.0"  # of this workload's definition: one trtllm-bench report per run


@dataclass(frozen=True)
class TrtllmGuide:
    """A copied guide: what it is called, where it sits upstream and when its runs were published."""

    file: str
    title: str
    commit: str
    upstream_path: str
    published: dt.date  # estimated (llm/data/trtllm/SOURCES.md says from what)


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint a guide runs: the model, its stored weight format, and the KV-cache format the
    engine uses when the options leave it at ``auto`` (the checkpoint's own: 16-bit where its
    quantisation config sets none)."""

    model: str
    precision: str
    kv_auto: str
    source: str


# llm/data/trtllm/SOURCES.md
BUNDLED_GUIDES = (
    TrtllmGuide("deepseek-r1-best-perf.md", "How to get best performance on DeepSeek-R1 in TensorRT LLM",
                "01c4ece911eb569e72cf4177f83238a0520641c2",
                "docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md", dt.date(2025, 7, 1)),
)  # fmt: skip

CHECKPOINTS = {
    "deepseek-ai/DeepSeek-R1": Checkpoint(
        "deepseek-r1", "fp8", "bf16",
        "https://huggingface.co/deepseek-ai/DeepSeek-R1/blob/main/config.json (quantization_config: fp8, "
        "128 x 128 blocks; no KV-cache quantisation)"),
    "nvidia/DeepSeek-R1-FP4": Checkpoint(
        "deepseek-r1", "fp4", "bf16",
        "https://huggingface.co/nvidia/DeepSeek-R1-FP4 (NVFP4 weights; the guide runs it 'with FP16 KV cache')"),
    "nvidia/DeepSeek-R1-0528-FP4": Checkpoint(
        "deepseek-r1", "fp4", "fp8",
        "https://huggingface.co/nvidia/DeepSeek-R1-0528-FP4 (NVFP4 weights; the guide: the checkpoint 'had enabled "
        "FP8 KV cache by-default')"),
}  # fmt: skip


def trtllm_guide_import_file(
    *, path: Path | str, guide: TrtllmGuide, refresh_aggregates: bool = True, refit: bool = True
) -> LabTableSummary:
    """Import the ``trtllm-bench`` runs of one copied guide (``llm.trtllm_guide``): each becomes one
    ``BenchmarkResult`` (trust ``lab``, workload ``trtllm-guide``) with the run's parallelism,
    requests in flight, batch limits and lengths in its parameters and the whole report in its
    environment. Sections it cannot read, and checkpoints it does not know, are listed in the
    summary, not guessed. Idempotent per guide; the serving points are derived in the same
    transaction."""
    file_path = Path(path)
    if not file_path.is_file():
        raise LabTableError(f"{file_path}: file not found")
    try:
        parsed = guide_parse(file_path.read_text(encoding="utf-8"))
    except (GuideFormatError, UnicodeDecodeError) as exc:
        raise LabTableError(f"{file_path}: {exc}") from None
    source_head = f"{GUIDE_SOURCE_PREFIX}{guide.title}, {guide.commit[:12]})"
    url = UPSTREAM.format(commit=guide.commit, path=guide.upstream_path)
    summary = LabTableSummary(source=f"{source_head}: {url}", rows_read=len(parsed.runs) + len(parsed.skipped))
    summary.skipped.extend(parsed.skipped)
    dataset = f"trtllm-guide-{guide.commit[:12]}"
    resolver = GpuNameResolver()
    now = timezone.now()
    measured_at = timezone.make_aware(dt.datetime.combine(guide.published, dt.time(12)), dt.UTC)
    results: list[BenchmarkResult] = []
    import_rows: list[LabImportRow] = []
    with transaction.atomic():
        workload = workload_ensure(
            spec=WorkloadSpec(
                slug=GUIDE_WORKLOAD,
                version=GUIDE_WORKLOAD_VERSION,
                name="TensorRT-LLM performance guides",
                unit="output tokens/s per GPU",
                higher_is_better=True,
                description=(
                    "NVIDIA's TensorRT-LLM performance guides: trtllm-bench throughput runs at a stated number of "
                    "requests in flight and batch size per rank, each result citing its guide and section. The "
                    "report's 'Per GPU Output Throughput'."
                ),
                source=url,
            )
        )
        for run in parsed.runs:
            checkpoint = CHECKPOINTS.get(run.checkpoint)
            if checkpoint is None:
                summary.skipped.append(
                    f"line {run.line}, {run.section}: checkpoint {run.checkpoint} is not known (model, weight and "
                    "KV-cache format): add it to CHECKPOINTS"
                )
                continue
            name = GPU_NAMES.get(run.gpu_name.strip().lower(), run.gpu_name)
            resolved = resolver.resolve(
                name=name, candidates=accelerator_name_candidates(name), memory_gib=memory_in_name(name)
            )
            kv = checkpoint.kv_auto if run.kv_cache_dtype == "auto" else run.kv_cache_dtype
            params: dict[str, Any] = {
                "model": checkpoint.model,
                "checkpoint": run.checkpoint,
                "input_tokens": run.input_tokens,
                "output_tokens": run.output_tokens,
                "tensor_parallel": run.tensor_parallel,
                "pipeline_parallel": run.pipeline_parallel,
                "concurrency": run.concurrency,
                "max_batch_size_per_rank": run.max_batch_size,
                "max_num_tokens": run.max_num_tokens,
                "kv_cache_precision": kv,
            }
            if run.expert_parallel > 1:
                params["expert_parallel"] = run.expert_parallel
            if run.attention_data_parallel:
                params["attention_data_parallel"] = True
            if run.speculative:
                params["speculative"] = True
            source = f"{source_head}: {run.section}, {run.gpu_name} {run.parallelism}, line {run.line}"[:500]
            if resolved.gpu_id is None:
                summary.unmatched[run.gpu_name] = resolved.how
                import_rows.append(
                    _unmatched_row(
                        dataset=dataset,
                        name=run.gpu_name,
                        workload_slug=GUIDE_WORKLOAD,
                        gpu_count=run.gpu_count,
                        precision=checkpoint.precision,
                        params=params,
                        row={"line": run.line, "value": run.tokens_per_s_per_gpu},
                        reason=resolved.how,
                        source=source,
                        measured_at=measured_at,
                    )  # fmt: skip
                )
                continue
            summary.matched[run.gpu_name] = f"{resolved.slug} ({resolved.how})"
            results.append(
                _lab_result(
                    gpu_id=resolved.gpu_id,
                    workload=workload,
                    precision=checkpoint.precision,
                    gpu_count=run.gpu_count,
                    params=params,
                    value=run.tokens_per_s_per_gpu,
                    source=source,
                    environment={
                        "dataset": "trtllm-guide",
                        "guide": guide.title,
                        "commit": guide.commit,
                        "file": guide.file,
                        "section": run.section,
                        "line": run.line,
                        "gpu_name": run.gpu_name,
                        "parallelism": run.parallelism,
                        "tokens_per_s_per_user": run.tokens_per_s_per_user,
                        "fixed_lengths": run.fixed_lengths,
                        "report": run.report,
                        "checkpoint_source": checkpoint.source,
                        "date_estimated": True,
                        "url": url,
                    },
                    measured_at=measured_at,
                    created_at=now,
                )
            )
        speculative = [r for r in parsed.runs if r.speculative]
        if speculative:
            summary.notes.append(
                f"{len(speculative)} run(s) with speculative decoding kept as results without a serving point (the "
                "serving model does not price draft tokens): lines " + ", ".join(str(r.line) for r in speculative)
            )
        lab_rows_replace(
            result_source_prefixes=[source_head],
            datasets=[dataset],
            results=results,
            import_rows=import_rows,
            summary=summary,
            refresh_aggregates=refresh_aggregates,
        )
        serving_points_rebuild(source=SourceKind.TRTLLM_GUIDE)
        if refit:
            serving_model_refit_after_write()
    return summary


class _Reader:
    def __init__(
        self,
        *,
        summary: LabTableSummary,
        source_head: str,
        commit: str,
        dates: dict[str, dt.date],
        file: str,
        dataset: str,
        url: str,
    ) -> None:
        self.summary, self.source_head, self.commit, self.dates, self.file = summary, source_head, commit, dates, file
        self.dataset, self.url = dataset, url
        self.resolver = GpuNameResolver()
        self.now = timezone.now()
        self.results: list[BenchmarkResult] = []
        self.import_rows: list[LabImportRow] = []
        self.workloads: dict[tuple[str, str], Workload] = {}

    def read(self, row: TrtllmRow) -> None:
        name = GPU_NAMES.get(row.gpu_name.strip().lower(), row.gpu_name)
        resolved = self.resolver.resolve(
            name=name, candidates=accelerator_name_candidates(name), memory_gib=memory_in_name(name)
        )
        slug = f"trtllm-{row.table}"
        params: dict[str, Any] = {
            "model": row.model or row.model_name,
            "input_tokens": row.input_tokens,
            "output_tokens": row.output_tokens,
            "tensor_parallel": row.tensor_parallel,
            "pipeline_parallel": row.pipeline_parallel,
        }
        if row.attention_data_parallel:
            params.update(expert_parallel=row.expert_parallel, attention_data_parallel=True)
        if row.table == "serving":
            params["qps"] = row.qps if row.qps is not None else "INF"
        measured_at = timezone.make_aware(dt.datetime.combine(self.dates[row.version], dt.time(12)), dt.UTC)
        source = f"{self.source_head}: {row.model_name}, {row.gpu_name} {row.parallelism}, line {row.line}"[:500]
        if resolved.gpu_id is None:
            self.summary.unmatched[row.gpu_name] = resolved.how
            self.import_rows.append(
                _unmatched_row(
                    dataset=self.dataset,
                    name=row.gpu_name,
                    workload_slug=slug,
                    gpu_count=row.gpu_count,
                    precision=row.precision,
                    params=params,
                    row={"line": row.line, "value": row.tokens_per_s, "model": row.model_name},
                    reason=resolved.how,
                    source=source,
                    measured_at=measured_at,
                )  # fmt: skip
            )
            return
        self.summary.matched[row.gpu_name] = f"{resolved.slug} ({resolved.how})"
        workload = self._workload(slug, row.version)
        self.results.append(
            _lab_result(
                gpu_id=resolved.gpu_id,
                workload=workload,
                precision=row.precision,
                gpu_count=row.gpu_count,
                params=params,
                value=row.tokens_per_s_per_gpu,
                source=source,
                environment={
                    "dataset": "trtllm-perf-overview",
                    "release": row.version,
                    "commit": self.commit,
                    "file": self.file,
                    "table": row.table,
                    "line": row.line,
                    "model_name": row.model_name,
                    "gpu_name": row.gpu_name,
                    "published_tokens_per_s": row.tokens_per_s,
                    "published_per_gpu": row.per_gpu,
                    "ttft_ms": row.ttft_ms,
                    "itl_ms": row.itl_ms,
                    "requests_per_s": row.requests_per_s,
                    "requests_in_flight": row.requests_in_flight,
                    "rate_limited": row.rate_limited,
                    "parallelism": row.parallelism,
                    "date_estimated": True,
                    "url": self.url,
                },
                measured_at=measured_at,
                created_at=self.now,
            )
        )

    def _workload(self, slug: str, version: str) -> Workload:
        if (slug, version) not in self.workloads:
            what = (
                "maximum throughput (requests issued at an unbounded rate)"
                if slug == "trtllm-throughput"
                else "online serving at fixed request rates (mean TTFT and inter-token latency published)"
            )
            self.workloads[(slug, version)] = workload_ensure(
                spec=WorkloadSpec(
                    slug=slug,
                    version=version,
                    name=f"TensorRT-LLM {version} {what.split(' (')[0]}",
                    unit="output tokens/s per GPU",
                    higher_is_better=True,
                    description=(
                        f"NVIDIA's TensorRT-LLM performance overview, release {version}: {what}. The published "
                        "output tokens/s of the configuration divided by its GPU count (TP x PP), or as published per GPU."
                    ),
                    source=self.url,
                )
            )
        return self.workloads[(slug, version)]


def _lab_result(
    *,
    gpu_id: int,
    workload: Workload,
    precision: str,
    gpu_count: int,
    params: dict[str, Any],
    value: float,
    source: str,
    environment: dict[str, Any],
    measured_at: dt.datetime,
    created_at: dt.datetime,
) -> BenchmarkResult:
    """One published TensorRT-LLM figure as a lab result (trust ``lab``, no submission)."""
    key = comparison_key_for(
        workload_slug=workload.slug, version=workload.version, precision=precision, params=params, gpu_count=gpu_count
    )
    return BenchmarkResult(
        submission=None, gpu_id=gpu_id, workload=workload, precision=precision, gpu_count=gpu_count, params=params,
        comparison_key=key.key, comparison_label=key.label, value=value, repetitions=[], spread_pct=None,
        trust=TrustLabel.LAB, submitter=None, submitter_key=LAB_SUBMITTER_KEY, source=source, environment=environment,
        measured_at=measured_at, created_at=created_at,
    )  # fmt: skip


def _unmatched_row(*, dataset: str, name: str, workload_slug: str, gpu_count: int, precision: str,
                   params: dict[str, Any], row: dict[str, Any], reason: str, source: str,
                   measured_at: dt.datetime) -> LabImportRow:  # fmt: skip
    """A figure for a GPU the catalogue does not know: kept beside the results, not guessed."""
    return LabImportRow(
        dataset=dataset, outcome=LabImportRow.Outcome.UNMATCHED, name_reported=name, workload_slug=workload_slug,
        gpu_count=gpu_count, precision=precision, params=params, row=row, reason=reason, source=source,
        measured_at=measured_at,
    )  # fmt: skip
