"""Import MLPerf Training results (bundled per round) as ``TrainingRun`` rows, and fit training MFU.

The bundled tables (``benchmarks_app/data/mlperf_training``, SOURCES.md) hold one row per system
and benchmark: the system's accelerators, nodes and networks as its ``systems/*.json`` publishes
them, and the time to train scored from its ``result_*.txt`` logs. Accelerator names are matched
to catalogue GPUs through the MLPerf Inference import's candidates and the shared matcher.

Where the benchmark's tokens are documented (:data:`LLM_BENCHMARKS`), a row also gets:

* tokens trained = samples the runs trained on (median over the runs) x tokens per sample;
* tokens/s per GPU = tokens / time to train / GPUs (the time includes MLPerf's evaluations, so
  this is the rate a user pays for, a little under the step rate);
* model FLOP per token = Kaplan et al.'s forward ``2 N + 2 L s d_attn`` (arXiv:2001.08361,
  Table 1) times 3 for pretraining (6 N plus attention), times 2 for LoRA: frozen weights need no
  weight gradients, so the backward pass computes only activation gradients (one forward's worth
  instead of two); the adapters' own FLOPs are under 1 % and left out;
* MFU = model FLOP/s per GPU over the GPU's dense peak in the format the run trained in: FP8
  where the GPU has it (the submissions of every FP8-capable GPU train LLMs in FP8), else BF16.

A row above its GPU's peak is refused (the database refuses it too): it would mean a wrong
match or a wrong token count. After the import, :func:`training_mfu_refit` stores the MFU per
GPU, architecture and benchmark that the training time model (``fitcalc.training_time``) reads.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from django.db import transaction
from django.utils import timezone

from benchmarks_app.models import TrainingMfuFit, TrainingRun
from benchmarks_app.services.lab_tables import GpuNameResolver, LabTableError, memory_in_name
from benchmarks_app.services.mlperf_import import accelerator_name_candidates
from catalog.models import TensorPeak
from gpuatlas.data_version import data_version_bump

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "data" / "mlperf_training"
RESULTS_REPO = "https://github.com/mlcommons/training_results_v{round}"


@dataclass(frozen=True)
class Round:
    round: str
    file: str
    commit: str
    published: dt.date


#: The bundled rounds: file, the snapshot's commit and the date the round's results were published
#: (the repository's first commit). SOURCES.md describes each.
BUNDLED_ROUNDS: tuple[Round, ...] = (
    Round("4.0", "training_results_v4.0.csv", "6fe954378efe4a1a1bd665550b18ff8f26018def", dt.date(2024, 6, 11)),
    Round("4.1", "training_results_v4.1.csv", "b87b9e396f771345d4ef122ba33456304f15228d", dt.date(2024, 11, 13)),
    Round("5.0", "training_results_v5.0.csv", "0fdc28f013256aea84fa36fdaf1e0fa46094b18c", dt.date(2025, 5, 30)),
    Round("5.1", "training_results_v5.1.csv", "441d65f4445cd59687466533fd9f55399136e7a4", dt.date(2025, 11, 5)),
)


@dataclass(frozen=True)
class LlmBenchmark:
    """An MLPerf Training LLM benchmark's model and tokens (sources in SOURCES.md)."""

    params: float  # parameters of the model trained
    layers: int
    attention_width: int  # query heads x head dimension
    tokens_per_sample: int  # the sequence length
    lora: bool  # LoRA fine-tuning: frozen weights, no weight gradients

    @property
    def flops_per_token(self) -> float:
        """Kaplan et al.'s forward ``2 N + 2 L s d_attn``, x3 for training, x2 for LoRA (module doc)."""
        forward = 2.0 * self.params + 2.0 * self.layers * self.tokens_per_sample * self.attention_width
        return (2.0 if self.lora else 3.0) * forward


LLM_BENCHMARKS: dict[str, LlmBenchmark] = {
    # Llama 3.1 8B / 405B pretraining on C4: max_sequence_length 8192 in every result log.
    "llama31_8b": LlmBenchmark(8.03e9, 32, 4096, 8192, lora=False),
    "llama31_405b": LlmBenchmark(405.85e9, 126, 16384, 8192, lora=False),
    # Llama 2 70B LoRA on GovReport, tokenised and packed to sequences of 8192 tokens.
    "llama2_70b_lora": LlmBenchmark(68.98e9, 80, 8192, 8192, lora=True),
    # GPT-3 175B on C4 with 2048-token sequences; its logs count no samples, so it has no rates.
    "gpt3": LlmBenchmark(175e9, 96, 12288, 2048, lora=False),
}

REQUIRED_COLUMNS = (
    "round", "submitter", "system_id", "benchmark", "system_name", "division", "status",
    "accelerator_model_name", "accelerators_per_node", "number_of_nodes", "runs_succeeded",
    "time_to_train_min", "samples_per_run", "results_path",
)  # fmt: skip
_PARENTHESISED = re.compile(r"\(([^()]+)\)")
# Words that name no product: marketing, the product class, the cooling (DLC: direct liquid cooling).
_MARKETING = re.compile(r"\b(?:Tensor Core|AI Accelerator|DLC)\b", re.IGNORECASE)


@dataclass
class TrainingImportSummary:
    """What an import did, for the command's output and the tests."""

    rows: int = 0
    matched: int = 0
    with_mfu: int = 0
    unmatched: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    fits: list[str] = field(default_factory=list)

    def as_lines(self) -> list[str]:
        lines = [
            f"MLPerf Training: {self.rows} system x benchmark rows, {self.matched} matched to catalogue GPUs, "
            f"{self.with_mfu} with tokens/s per GPU and MFU"
        ]
        lines += [f"  unmatched {name!r}: {why}" for name, why in sorted(self.unmatched.items())]
        lines += [f"  refused: {why}" for why in self.refused]
        lines += [f"  MFU {fit}" for fit in self.fits]
        return lines


def training_name_candidates(name: str) -> list[str]:
    """The inference import's candidates for the name, then for the name without its parenthesis
    and marketing words, then for a product in the parenthesis with the vendor:
    ``NVIDIA Blackwell GPU (B200-SXM-180GB)`` -> ..., ``NVIDIA B200-SXM-180GB``, ``NVIDIA B200``;
    ``H100 NVL Tensor Core GPU (PCIe)`` -> ..., ``H100 NVL`` (a parenthesis without a digit names
    no product)."""
    candidates = accelerator_name_candidates(name)
    bare = _MARKETING.sub(" ", _PARENTHESISED.sub(" ", name))
    candidates += accelerator_name_candidates(re.sub(r"\s+", " ", bare).strip())
    vendor = name.split()[0] if name.split() else ""
    for inner in _PARENTHESISED.findall(name):
        if re.search(r"\d", inner):
            candidates += accelerator_name_candidates(f"{vendor} {inner}".strip())
    return list(dict.fromkeys(c for c in candidates if c))


def _whole(value: str, where: str, column: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise LabTableError(f"{where}: {column} {value!r} is not a whole number") from None
    if number <= 0:
        raise LabTableError(f"{where}: {column} {value!r} is not positive")
    return number


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise LabTableError(f"{path}: file not found")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise LabTableError(f"{path}: missing column(s): {', '.join(missing)}")
        return list(reader)


def _training_peaks(gpu_ids: Iterable[int]) -> dict[int, tuple[str, float]]:
    """gpu id -> (format, dense TFLOPS) a run trains in: FP8 where supported, else BF16."""
    peaks: dict[int, dict[str, float]] = defaultdict(dict)
    for gpu_id, precision, tflops in TensorPeak.objects.filter(
        gpu_id__in=list(gpu_ids), supported=True, precision__in=("fp8", "bf16")
    ).values_list("gpu_id", "precision", "dense_tflops"):
        if tflops is not None:  # a supported format always has its figure (a database constraint)
            peaks[gpu_id][precision] = tflops
    return {
        gpu_id: ("fp8", found["fp8"]) if "fp8" in found else ("bf16", found["bf16"]) for gpu_id, found in peaks.items()
    }


@transaction.atomic  # the rounds' rows and the fit together, or nothing
def mlperf_training_import(*, rounds: Sequence[Round] = BUNDLED_ROUNDS, directory: Path = BUNDLED_DIR) -> (
    TrainingImportSummary
):  # fmt: skip
    """Replace the rows of ``rounds`` with the bundled tables' (idempotent), then refit the MFU."""
    summary = TrainingImportSummary()
    resolver = GpuNameResolver()
    runs: list[TrainingRun] = []
    for round_ in rounds:
        path = directory / round_.file
        for index, row in enumerate(_rows(path), start=2):
            where = f"{round_.file} row {index}"
            if row["round"] != round_.round:
                raise LabTableError(f"{where}: round {row['round']!r}, expected {round_.round}")
            per_node = _whole(row["accelerators_per_node"], where, "accelerators_per_node")
            nodes = _whole(row["number_of_nodes"], where, "number_of_nodes")
            try:
                minutes = float(row["time_to_train_min"])
            except ValueError:
                minutes = float("nan")
            if not minutes > 0:
                raise LabTableError(f"{where}: time_to_train_min {row['time_to_train_min']!r} is not positive")
            name = row["accelerator_model_name"]
            resolved = resolver.resolve(
                name=name, candidates=training_name_candidates(name), memory_gib=memory_in_name(name)
            )
            if resolved.gpu_id is None:
                summary.unmatched[name] = f"{resolved.how}; e.g. {row['submitter']}, {row['system_name']}"
            runs.append(
                TrainingRun(
                    round=round_.round,
                    submitter=row["submitter"][:100],
                    system_id=row["system_id"][:200],
                    system_name=row["system_name"][:300],
                    division=row["division"].lower()[:16],
                    availability=row["status"][:100],
                    benchmark=row["benchmark"][:64],
                    accelerator_name=name[:200],
                    gpu_id=resolved.gpu_id,
                    match_note=resolved.how[:300],
                    gpus=per_node * nodes,
                    nodes=nodes,
                    gpus_per_node=per_node,
                    scale_up=row.get("accelerator_interconnect", "")[:200],
                    scale_out=row.get("host_networking", "")[:300],
                    framework=row.get("framework", "")[:300],
                    runs=_whole(row["runs_succeeded"], where, "runs_succeeded"),
                    time_to_train_min=minutes,
                    samples_per_run=int(row["samples_per_run"]) if row["samples_per_run"].strip() else None,
                    source_url=f"{RESULTS_REPO.format(round=round_.round)}/tree/{round_.commit}/{row['results_path']}",
                    commit=round_.commit,
                    published=round_.published,
                )
            )
    peaks = _training_peaks({r.gpu_id for r in runs if r.gpu_id is not None})
    for run in runs:
        _derive_rates(run, peaks, summary)
    TrainingRun.objects.filter(round__in=[r.round for r in rounds]).delete()
    TrainingRun.objects.bulk_create(runs)
    summary.rows = len(runs)
    summary.matched = sum(1 for r in runs if r.gpu_id is not None)
    summary.with_mfu = sum(1 for r in runs if r.mfu is not None)
    summary.fits = [str(fit) for fit in training_mfu_refit()]
    data_version_bump()  # GPU pages list the runs
    return summary


def _derive_rates(run: TrainingRun, peaks: dict[int, tuple[str, float]], summary: TrainingImportSummary) -> None:
    """tokens/s per GPU, model FLOP/s and MFU where the benchmark's tokens and the GPU's peak are known."""
    benchmark = LLM_BENCHMARKS.get(run.benchmark)
    if benchmark is None:
        return
    run.model_params = benchmark.params
    run.tokens_per_sample = benchmark.tokens_per_sample
    run.flops_per_token = benchmark.flops_per_token
    if run.gpu_id is None or run.samples_per_run is None or run.gpu_id not in peaks:
        return
    precision, peak = peaks[run.gpu_id]
    tokens_per_s = run.samples_per_run * benchmark.tokens_per_sample / (run.time_to_train_min * 60.0) / run.gpus
    achieved = tokens_per_s * benchmark.flops_per_token / 1e12
    if achieved > peak:
        summary.refused.append(
            f"v{run.round} {run.benchmark} {run.submitter} {run.system_name}: {achieved:.0f} TFLOP/s per GPU "
            f"exceeds the {precision.upper()} peak of {peak:g}"
        )
        return
    run.precision = precision
    run.peak_tflops = peak
    run.tokens_per_s_per_gpu = tokens_per_s
    run.achieved_tflops_per_gpu = achieved
    run.mfu = achieved / peak


@dataclass(frozen=True)
class MfuFit:
    """The MFU of a set of runs: their median, with the range."""

    mfu: float
    runs: int
    low: float
    high: float


def mfu_fit(mfus: Sequence[float]) -> MfuFit:
    """Median MFU of ``mfus`` (the runs of one architecture): robust to the odd slow submission."""
    if not mfus:
        raise ValueError("no runs to fit")
    return MfuFit(statistics.median(mfus), len(mfus), min(mfus), max(mfus))


#: Links over which a model split across GPUs measures the link, not the GPU (tensor parallelism
#: over PCIe): runs of such GPUs are shown but not fitted.
UNFITTED_LINKS = ("pcie", "none")


@dataclass(frozen=True)
class FittedRun:
    run_id: int
    gpu_id: int
    architecture_id: int | None
    benchmark: str
    mfu: float


def fitted_runs() -> list[FittedRun]:
    """The runs the MFU is fitted on: closed-division rows with an MFU, of GPUs joined by a
    scale-up link (NVLink, Infinity Fabric...)."""
    rows = (
        TrainingRun.objects.filter(mfu__isnull=False, division="closed", gpu__isnull=False)
        .exclude(gpu__scale_up_link__in=UNFITTED_LINKS)
        .order_by("id")
        .values_list("id", "gpu_id", "gpu__architecture_id", "benchmark", "mfu")
    )
    return [
        FittedRun(run_id, gpu_id, architecture_id, benchmark, mfu)
        for run_id, gpu_id, architecture_id, benchmark, mfu in rows
        if mfu is not None
    ]


#: Runs of one benchmark a GPU needs for a figure of its own at that benchmark.
MIN_BENCHMARK_RUNS = 2
#: Scope of a fit: ("gpu", id), ("architecture", id) or ("pooled", None), and a benchmark ("": all).
FitKey = tuple[str, int | None, str]
FitT = TypeVar("FitT")


@dataclass(frozen=True)
class MfuFits:
    """The fits of one set of runs per scope and benchmark (:data:`FitKey`)."""

    fits: dict[FitKey, MfuFit]

    def for_gpu(self, gpu_id: int, architecture_id: int | None, benchmark: str = "") -> MfuFit | None:
        return most_specific_fit(self.fits, gpu_id, architecture_id, benchmark)


def most_specific_fit(
    fits: Mapping[tuple[str, Any, str], FitT], gpu_id: int, architecture: object, benchmark: str = ""
) -> FitT | None:
    """The most specific fit: the GPU's own at the benchmark, then over its runs; its
    architecture's at the benchmark, then over its runs; every run's at the benchmark, then all.
    ``fits`` is keyed by (scope, key, benchmark), "" being every benchmark."""
    scopes = (("gpu", gpu_id), ("architecture", architecture), ("pooled", None))
    for scope, key in scopes:
        if scope != "pooled" and key is None:
            continue
        for wanted in dict.fromkeys((benchmark, "")):
            fit = fits.get((scope, key, wanted))
            if fit is not None:
                return fit
    return None


def mfu_fits(runs: Iterable[FittedRun], *, leave_out: Iterable[int] = ()) -> MfuFits:
    """The fits per GPU, per architecture and over every run, each per benchmark and over all,
    without the runs ``leave_out`` names (checks)."""
    left_out = set(leave_out)
    values: dict[FitKey, list[float]] = defaultdict(list)
    for run in runs:
        if run.run_id in left_out:
            continue
        scopes: list[tuple[str, int | None]] = [("gpu", run.gpu_id), ("pooled", None)]
        if run.architecture_id is not None:
            scopes.append(("architecture", run.architecture_id))
        for scope, key in scopes:
            values[(scope, key, run.benchmark)].append(run.mfu)
            values[(scope, key, "")].append(run.mfu)
    # One run of a benchmark is too few to tell a GPU's figure at it from a mislabelled format (a
    # v5.1 NVFP4 run counted against the FP8 peak): such a GPU reads its runs over every benchmark.
    return MfuFits(
        {
            key: mfu_fit(mfus)
            for key, mfus in values.items()
            if key[2] == "" or key[0] != "gpu" or len(mfus) >= MIN_BENCHMARK_RUNS
        }
    )


def _estimate_errors(runs: list[FittedRun]) -> tuple[dict[int, float], float | None]:
    """What an architecture's (and the pooled) MFU is typically off by for a GPU without runs: for
    each GPU with runs, its own fit against the fit of its architecture (or of every run) with
    that GPU's runs left out; the median relative error per architecture and over every GPU."""
    by_architecture: dict[int, list[float]] = defaultdict(list)
    pooled: list[float] = []
    for gpu_id, architecture_id in sorted({(run.gpu_id, run.architecture_id) for run in runs}, key=lambda p: p[0]):
        own = [run for run in runs if run.gpu_id == gpu_id]
        fits = mfu_fits(runs, leave_out=[run.run_id for run in own]).fits
        actual = mfu_fit([run.mfu for run in own]).mfu
        if ("pooled", None, "") in fits:
            pooled.append(abs(fits[("pooled", None, "")].mfu / actual - 1))
        fit = fits.get(("architecture", architecture_id, ""))
        if fit is not None and architecture_id is not None:
            by_architecture[architecture_id].append(abs(fit.mfu / actual - 1))
    return (
        {arch: statistics.median(errors) for arch, errors in by_architecture.items()},
        statistics.median(pooled) if pooled else None,
    )


def training_mfu_refit() -> list[TrainingMfuFit]:
    """Store the MFU per GPU model, per architecture and pooled, each per benchmark and over all,
    fitted on the imported runs, with the typical error of the architecture and pooled figures
    for GPUs without runs."""
    runs = fitted_runs()
    errors, pooled_error = _estimate_errors(runs)
    now = timezone.now()
    rows = []
    for (scope, key, benchmark), fit in mfu_fits(runs).fits.items():
        error = None
        if benchmark == "":
            error = errors.get(key or -1) if scope == "architecture" else pooled_error if scope == "pooled" else None
        rows.append(
            TrainingMfuFit(
                gpu_id=key if scope == "gpu" else None,
                architecture_id=key if scope == "architecture" else None,
                benchmark=benchmark,
                mfu=fit.mfu,
                runs=fit.runs,
                low=fit.low,
                high=fit.high,
                estimate_error=error,
                fitted_at=now,
            )
        )
    with transaction.atomic():
        TrainingMfuFit.objects.all().delete()
        TrainingMfuFit.objects.bulk_create(rows)
    return list(TrainingMfuFit.objects.filter(gpu__isnull=True, benchmark="").select_related("architecture"))
