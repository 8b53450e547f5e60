"""Reads for the LLM use cases: measured figures, the estimate model's observations, its
fitted constants and its leave-one-GPU-out error.

Which results count, and as what:

=====================================  ==========  ==============================================
workload (params)                      kind        figure
=====================================  ==========  ==============================================
``mlperf-<llm benchmark>-offline-      serving     output tokens/s per accelerator, batched
tokens`` (division, availability)
``llm-decode`` (phase=decode, batch>1) serving     client: decode tokens/s at a large batch / GPUs
``llamacpp-tg`` (model, quant, ...)    decode      one stream's tokens/s on the configuration
``llm-eval-rate`` (model, backend)     decode      one request's generation rate
``llm-decode`` (phase=decode, batch=1) decode      client: one stream's decode tokens/s
``llamacpp-pp``, ``llm-decode``        prefill     prompt tokens/s (reported with the model error)
(phase=prefill)
=====================================  ==========  ==============================================

The benchmark client's ``llm-decode`` results (workload ``llm-decode``, unit tokens/s, precision
bf16 or fp8) are read from params ``model`` (``llama3-8b``; ``llama-3.1-8b`` / ``Llama-3.1-8B``
spellings are accepted), ``phase`` ("decode" or "prefill"), ``batch`` (or ``batch_size``; 1 =
one stream, more = serving), ``prompt_len`` and ``generated_tokens``. A result's value is the
tokens/s of its ``gpu_count`` GPUs; serving figures are divided by it.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.db.models import Count, Max, Q
from django.utils.translation import get_language, gettext_lazy, ngettext, pgettext_lazy
from django.utils.translation import gettext as _

from benchmarks_app.models import BenchmarkResult, LabImportRow
from catalog.models import Gpu, TensorPeak
from dashboard import metrics
from gpuatlas.data_version import data_versioned
from llm_estimate.comm import GpuLink, gpu_link
from llm_estimate.constants import LlmConstants, constants_default
from llm_estimate.coverage import Regime, configuration_of
from llm_estimate.fit import Observation, constants_fit
from llm_estimate.loo import LooReport, leave_one_gpu_out
from llm_estimate.model import LlmEstimate, compute_peak, cost_per_million_tokens, llm_throughput_estimate
from llm_estimate.shapes import MODEL_SHAPES, SIZE_CLASSES, bytes_per_weight, model_size_class

_MLPERF = re.compile(
    r"^mlperf-(?P<bench>.+)-(?P<scenario>offline|server|interactive|singlestream|multistream)-(?P<unit>[a-z-]+)$"
)
_MLPERF_MODELS = (
    (re.compile(r"^llama2-70b"), "llama-2-70b"),
    (re.compile(r"^llama3_1-8b"), "llama-3.1-8b"),
    (re.compile(r"^llama3_1-405b"), "llama-3.1-405b"),
    (re.compile(r"^mixtral-8x7b"), "mixtral-8x7b"),
    (re.compile(r"^gpt-oss-120b"), "gpt-oss-120b"),
    (re.compile(r"^deepseek-r1"), "deepseek-r1"),
)
# geerlingguy/ai-benchmarks table headings -> the model measured (DeepSeek R1 14b is the
# Qwen2.5-14B distillation, "671b" the full MoE).
_EVAL_RATE_MODELS = {
    "deepseek-r1-14b": "qwen2.5-14b",
    "deepseek-r1-671b": "deepseek-r1",
    "gpt-oss-20b": "gpt-oss-20b",
    "llama-3.2-3b": "llama-3.2-3b",
    "llama-3.1-70b": "llama-3.1-70b",
    "llama-3.1-405b": "llama-3.1-405b",
}
CLIENT_WORKLOAD = "llm-decode"
LLM_WORKLOADS = ("llamacpp-tg", "llamacpp-pp", "llm-eval-rate", CLIENT_WORKLOAD)
# Context of a conversation in the chat estimates (serving uses the fitted context per stream).
CHAT_CONTEXT_TOKENS = 2048
# Weight formats of the chat precision choices: (precision, GGUF type for the bytes per weight).
CHAT_WEIGHTS = {"4bit": ("int4", "Q4_K_M"), "8bit": ("int8", "Q8_0"), "16bit": ("fp16", "F16")}
MAX_GPUS = 8

# Words in the source labels pages show beside LLM figures (translated when the label is built).
_DIVISIONS = {"closed": pgettext_lazy("MLPerf division", "closed"), "open": pgettext_lazy("MLPerf division", "open")}
_AVAILABILITY = {
    "available": pgettext_lazy("MLPerf availability", "available"),
    "preview": pgettext_lazy("MLPerf availability", "preview"),
    "rdi": pgettext_lazy("MLPerf availability", "research, development or internal"),
}
# What limits an estimate (llm_estimate.model's "bound" of a configuration that fits).
_BOUNDS = {
    "memory bandwidth": gettext_lazy("memory bandwidth"),
    "tensor throughput": gettext_lazy("tensor throughput"),
    "KV-cache memory": gettext_lazy("KV-cache memory"),
}
_PHASES = {"decode": pgettext_lazy("LLM phase", "decode"), "prefill": pgettext_lazy("LLM phase", "prefill")}
_BACKENDS = {"unmarked": gettext_lazy("backend not stated"), "vulkan": "Vulkan", "cuda": "CUDA", "rocm": "ROCm",
             "metal": "Metal"}  # fmt: skip


def _word(table: Mapping[str, Any], key: str) -> str:
    return str(table.get(key, key))


def model_slug_normalise(text: str) -> str | None:
    """A model name as a client may write it -> a known shape slug (``Llama-3.1-8B`` -> ``llama-3.1-8b``)."""
    lowered = re.sub(r"[\s_]+", "-", str(text).strip().lower())
    lowered = re.sub(r"^(meta-)?llama-?(\d)", r"llama-\2", lowered).removeprefix("meta-")
    lowered = re.sub(r"-instruct$|-hf$|-chat$", "", lowered)
    return lowered if lowered in MODEL_SHAPES else None


@dataclass(frozen=True)
class LlmRow:
    """One trusted result of an LLM workload, classified."""

    gpu_id: int
    comparison_key: str
    kind: str  # serving | decode | prefill
    model: str
    benchmark: str
    precision: str
    quant: str
    gpu_count: int
    value: float  # serving: tokens/s per GPU; decode: of the stream; prefill: of the configuration
    context_tokens: int
    split: str
    source_rank: int
    recency: str
    default_basis: bool
    label: str
    url: str
    submitter_key: str
    trust: str
    host: str = ""
    system: str = ""  # MLPerf: submitter and system, the unit its figures are taken over
    setup: str = ""  # the system, configuration or host measured (never translated: rows are told apart by it)


# Hosts the model does not describe: a GPU behind a single-board computer's narrow PCIe link.
_SBC_HOST = re.compile(r"\bPi\b|Raspberry|HiFive|RISC-V|Radxa|DC-ROMA", re.IGNORECASE)


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def llm_row_classify(
    *, slug: str, version: str, params: Mapping[str, Any], precision: str, gpu_count: int, value: float,
    environment: Mapping[str, Any],
) -> dict[str, Any] | None:  # fmt: skip
    """What an LLM result is (see the module doc), or None for results of no LLM use case."""
    mlperf = _MLPERF.match(slug)
    if mlperf:
        if mlperf.group("scenario") != "offline" or mlperf.group("unit") != "tokens":
            return None
        bench = mlperf.group("bench")
        model = next((m for pattern, m in _MLPERF_MODELS if pattern.match(bench)), None)
        if model is None:
            return None
        division, availability = params.get("division", ""), params.get("availability", "")
        system = f"{environment.get('submitter', '')} {environment.get('system', '')}".strip()
        family = re.sub(r"-99(_9)?$", "", bench).replace("_", ".")
        return {
            "kind": "serving",
            "model": model,
            "benchmark": family,
            "quant": "",
            "value": value,
            "context": 0,
            "split": "tensor",
            "rank": 0,
            "recency": f"{float(version):08.2f}",
            "default_basis": division == "closed" and availability == "available",
            "label": _(
                "MLPerf Inference v%(version)s · %(benchmark)s Offline · %(division)s, %(availability)s · %(system)s"
            )
            % {
                "version": version,
                "benchmark": bench.replace("_", "."),
                "division": _word(_DIVISIONS, division),
                "availability": _word(_AVAILABILITY, availability),
                "system": system,
            },
            "url": environment.get("url", ""),
            "system": system,
            "setup": system,
        }
    if slug in ("llamacpp-tg", "llamacpp-pp"):
        model = params.get("model", "")
        if model not in MODEL_SHAPES:
            return None
        tokens = _int(params.get("tokens"), 512)
        section = str(params.get("section", ""))
        decode = slug == "llamacpp-tg"
        return {
            "kind": "decode" if decode else "prefill",
            "model": model,
            "benchmark": "llama.cpp",
            "quant": str(params.get("quant", "")),
            "value": value,
            "context": tokens // 2 if decode else tokens,
            "split": "layer",
            "rank": 1 if "llama-3" in section else 3,
            "recency": str(environment.get("snapshot_month", "")),
            "default_basis": True,
            "label": (
                f"llama.cpp ({section}) · {params.get('quant', '')} · "
                f"{'tg' if decode else 'pp'} {params.get('tokens', '')} · {environment.get('config', '')}"
            ),
            "url": environment.get("url", ""),
            "setup": str(environment.get("config", "")),
        }
    if slug == "llm-eval-rate":
        model = _EVAL_RATE_MODELS.get(str(params.get("model", "")))
        if model is None:
            return None
        return {
            "kind": "decode",
            "model": model,
            "benchmark": "eval-rate",
            "quant": "Q4_K_M",
            "value": value,
            "context": 64,
            "split": "layer",
            "rank": 2,
            "recency": "2025-12",
            "default_basis": True,
            "label": " · ".join(
                (
                    "geerlingguy/ai-benchmarks",
                    str(params.get("model", "")),
                    _("backend %(backend)s") % {"backend": _word(_BACKENDS, str(params.get("backend", "")))}
                    if params.get("backend") != "unmarked"
                    else _word(_BACKENDS, "unmarked"),
                    str(params.get("host", "")),
                )
            ),
            "url": environment.get("issue_url") or environment.get("url", ""),
            "setup": str(params.get("host", "")),
        }
    if slug == CLIENT_WORKLOAD:
        model = model_slug_normalise(str(params.get("model", "")))
        phase = str(params.get("phase", "decode")).lower()
        batch = _int(params.get("batch", params.get("batch_size")), 1)
        if model is None or phase not in ("decode", "prefill"):
            return None
        prompt = _int(params.get("prompt_len", params.get("context", params.get("prompt_tokens"))), 512)
        generated = _int(params.get("generated_tokens"), 0)
        # Decode attends to the prompt and the tokens generated so far: half of them on average.
        context = prompt if phase == "prefill" else prompt + generated // 2
        kind = "prefill" if phase == "prefill" else ("serving" if batch > 1 else "decode")
        return {
            "kind": kind,
            "model": model,
            "benchmark": "gpuatlas-bench",
            "quant": "",
            "value": value / gpu_count if kind == "serving" else value,
            "context": context,
            "split": "tensor",
            "rank": 1 if kind == "serving" else 0,
            "recency": "",
            "default_basis": True,
            "label": _("gpuatlas-bench %(workload)s · %(phase)s · batch %(batch)s · prompt %(prompt)s tokens")
            % {"workload": CLIENT_WORKLOAD, "phase": _word(_PHASES, phase), "batch": batch, "prompt": prompt},
            "url": "",
            "setup": f"prompt {prompt}",
        }
    return None


_LLM_WORKLOADS_Q = Q(workload__slug__startswith="mlperf-", workload__slug__contains="-offline-tokens") | Q(
    workload__slug__in=LLM_WORKLOADS
)


def llm_rows(*, gpu_ids: Iterable[int] | None = None) -> list[LlmRow]:
    """Every trusted result of an LLM workload, classified (one query)."""
    queryset = BenchmarkResult.objects.trusted().filter(_LLM_WORKLOADS_Q)
    if gpu_ids is not None:
        queryset = queryset.filter(gpu_id__in=list(gpu_ids))
    rows = []
    for r in queryset.order_by().values(
        "gpu_id", "comparison_key", "workload__slug", "workload__version", "params", "precision", "gpu_count", "value",
        "environment", "submitter_key", "trust",
    ):  # fmt: skip
        info = llm_row_classify(
            slug=r["workload__slug"],
            version=r["workload__version"],
            params=r["params"] or {},
            precision=r["precision"],
            gpu_count=r["gpu_count"],
            value=r["value"],
            environment=r["environment"] or {},
        )
        if info is None:
            continue
        rows.append(
            LlmRow(
                gpu_id=r["gpu_id"],
                comparison_key=r["comparison_key"],
                kind=info["kind"],
                model=info["model"],
                benchmark=info["benchmark"],
                precision=r["precision"],
                quant=info["quant"],
                gpu_count=r["gpu_count"],
                value=info["value"],
                context_tokens=info["context"],
                split=info["split"],
                source_rank=info["rank"],
                recency=info["recency"],
                default_basis=info["default_basis"],
                label=info["label"],
                url=info["url"],
                submitter_key=r["submitter_key"],
                trust=r["trust"],
                host=str((r["params"] or {}).get("host", "")),
                system=info.get("system", ""),
                setup=info.get("setup", ""),
            )
        )
    return rows


@dataclass(frozen=True)
class LlmPoint:
    """The measured figure of one (GPU, comparison key): the median of its results."""

    gpu_id: int
    kind: str
    model: str
    size: str | None
    precision: str
    gpu_count: int
    tokens_per_s: float
    n: int
    distinct_submitters: int
    has_lab: bool
    qualifies: bool
    default_basis: bool
    source_rank: int
    recency: str
    label: str
    url: str
    comparison_key: str = ""


def llm_points(rows: Iterable[LlmRow]) -> list[LlmPoint]:
    grouped: dict[tuple[int, str], list[LlmRow]] = defaultdict(list)
    for row in rows:
        grouped[(row.gpu_id, row.comparison_key)].append(row)
    points = []
    for (gpu_id, key), group in grouped.items():
        first = group[0]
        has_lab = any(r.trust == "lab" for r in group)
        n = len(group)
        points.append(
            LlmPoint(
                gpu_id=gpu_id,
                kind=first.kind,
                model=first.model,
                size=model_size_class(first.model),
                precision=first.precision,
                gpu_count=first.gpu_count,
                tokens_per_s=statistics.median(r.value for r in group),
                n=n,
                distinct_submitters=len({r.submitter_key for r in group}),
                has_lab=has_lab,
                qualifies=has_lab or n >= metrics.MIN_COMMUNITY_N,
                default_basis=first.default_basis,
                source_rank=first.source_rank,
                recency=first.recency,
                label=first.label,
                url=first.url,
                comparison_key=key,
            )
        )
    return points


@dataclass(frozen=True)
class ServingFigure:
    """MLPerf serving figure of one GPU: the median over the systems of the newest round."""

    tokens_per_s: float
    systems: int
    gpu_count: int
    precision: str
    label: str
    url: str
    keys: frozenset[str]


def mlperf_serving_figure(rows: Iterable[LlmRow]) -> ServingFigure | None:
    """The median per-GPU tokens/s over the systems of the newest round (one GPU, one model size).

    A system listed under both accuracy targets (llama2-70b-99 and -99.9) counts once; systems of
    every size count, each with its own per-GPU figure.
    """
    mlperf = [r for r in rows if r.kind == "serving" and r.source_rank == 0]
    if not mlperf:
        return None
    newest = max(r.recency for r in mlperf)
    chosen = [r for r in mlperf if r.recency == newest]
    by_system: dict[tuple[str, int], list[LlmRow]] = defaultdict(list)
    for row in chosen:
        by_system[(row.system, row.gpu_count)].append(row)
    values = [statistics.median(r.value for r in group) for group in by_system.values()]
    first = chosen[0]
    version = float(newest)
    count = statistics.mode(r.gpu_count for r in chosen)
    if len(by_system) == 1:
        label, url = first.label, first.url
    else:
        label = ngettext(
            "MLPerf Inference v%(version)s · %(benchmark)s Offline · median of %(count)d system",
            "MLPerf Inference v%(version)s · %(benchmark)s Offline · median of %(count)d systems",
            len(by_system),
        ) % {"version": f"{version:g}", "benchmark": first.benchmark, "count": len(by_system)}
        url = f"https://github.com/mlcommons/inference_results_v{version:g}"
    return ServingFigure(
        statistics.median(values),
        len(by_system),
        count,
        statistics.mode(r.precision for r in chosen),
        label,
        url,
        frozenset(r.comparison_key for r in chosen),
    )


def _family_of(kind: str, precision: str) -> str:
    if kind == "serving":
        return "any"
    return next((f for f in ("4bit", "8bit", "16bit") if precision in metrics.PRECISION_FAMILIES[f][0]), "other")


def headline_points(
    points: Iterable[LlmPoint], *, default_basis_only: bool = True
) -> dict[tuple[int, str, str, str], LlmPoint]:
    """The figure the rankings show per (GPU, kind, size class, precision choice)."""
    best: dict[tuple[int, str, str, str], LlmPoint] = {}
    for point in points:
        if point.kind == "prefill" or point.size is None or not point.qualifies:
            continue
        if default_basis_only and not point.default_basis:
            continue
        key = (point.gpu_id, point.kind, point.size, _family_of(point.kind, point.precision))
        current = best.get(key)
        if current is None or _point_order(point, point.kind) < _point_order(current, point.kind):
            best[key] = point
    return best


@dataclass(frozen=True)
class GpuFigures:
    gpu_id: int
    slug: str
    name: str
    memory_gib: float | None
    bandwidth_gbs: float | None
    tensor_tflops: dict[str, float | None]
    link: GpuLink
    vendor: str
    architecture: str


def gpu_link_for(gpu: Gpu) -> GpuLink:
    """How a catalogue GPU reaches its neighbours (llm_estimate.comm.gpu_link): its fabric figure,
    its host link's PCIe peak, and whether its driver allows peer-to-peer transfers."""
    return gpu_link(
        interconnect_gbs=gpu.interconnect_gbs,
        pcie_gbs=metrics.pcie_peak_gbs(gpu.bus_interface),
        segment=gpu.segment,
        variant=gpu.variant,
    )


def gpu_figures(
    *, gpus: Iterable[Gpu], peaks_by_gpu: Mapping[int, Mapping[str, float | None]] | None = None
) -> dict[int, GpuFigures]:
    """Datasheet figures of these GPUs (dense tensor peaks, plus the vector FP16 rate)."""
    gpus = list(gpus)
    if peaks_by_gpu is None:
        loaded: dict[int, dict[str, float | None]] = defaultdict(dict)
        for peak in TensorPeak.objects.filter(gpu_id__in=[g.id for g in gpus]).values(
            "gpu_id", "precision", "supported", "dense_tflops"
        ):
            loaded[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None
        peaks_by_gpu = loaded
    out = {}
    for gpu in gpus:
        tensor = dict(peaks_by_gpu.get(gpu.id, {}))
        tensor["fp16_nontensor"] = gpu.fp16_tflops
        architecture = gpu.architecture.slug if gpu.architecture else ""
        out[gpu.id] = GpuFigures(gpu.id, gpu.slug, gpu.name, gpu.memory_gib, gpu.memory_bandwidth_gbs, tensor,
                                 gpu_link_for(gpu), gpu.vendor.slug, architecture)  # fmt: skip
    return out


def llm_observations(
    *, rows: Iterable[LlmRow], figures: Mapping[int, GpuFigures], constants: LlmConstants
) -> list[Observation]:
    """The rows the model is fitted on: default basis (closed, available for MLPerf), one per
    system and benchmark (MLPerf lists a result under both accuracy targets)."""
    rows = list(rows)
    headline = {p.comparison_key + f":{p.gpu_id}" for p in headline_points(llm_points(rows)).values()}
    serving: dict[tuple[int, str | None], list[LlmRow]] = defaultdict(list)
    for row in rows:
        if row.kind == "serving" and row.default_basis:
            serving[(row.gpu_id, model_size_class(row.model))].append(row)
    for (gpu_id, _size), group in serving.items():
        figure = mlperf_serving_figure(group)
        if figure is not None:
            headline |= {f"{key}:{gpu_id}" for key in figure.keys}
    seen: set[tuple[Any, ...]] = set()
    out = []
    for row in rows:
        if not row.default_basis or row.gpu_id not in figures:
            continue
        identity = (
            row.gpu_id,
            row.kind,
            row.model,
            row.benchmark,
            row.gpu_count,
            row.setup,
            row.value,
        )
        if identity in seen:
            continue
        seen.add(identity)
        gpu = figures[row.gpu_id]
        out.append(
            Observation(
                gpu_key=gpu.slug,
                kind=row.kind,
                measured=row.value,
                memory_gib=gpu.memory_gib,
                bandwidth_gbs=gpu.bandwidth_gbs,
                tensor_tflops=gpu.tensor_tflops,
                model=MODEL_SHAPES[row.model],
                bytes_per_weight=bytes_per_weight(precision=row.precision, quant=row.quant),
                weight_precision=row.precision,
                gpu_count=row.gpu_count,
                split=row.split,
                context_tokens=row.context_tokens,
                benchmark=row.benchmark if row.kind == "serving" else "",
                label=f"{gpu.name}: {row.label}",
                fit=not _SBC_HOST.search(row.host) and not _serving_without_tensor_figure(row, gpu),
                headline=f"{row.comparison_key}:{row.gpu_id}" in headline,
                link=gpu.link,
                vendor=gpu.vendor,
                architecture=gpu.architecture,
            )
        )
    return out


def _serving_without_tensor_figure(row: LlmRow, gpu: GpuFigures) -> bool:
    """A serving row of a GPU whose catalogue entry lacks the tensor peak of the row's format: the
    model would compute it at the vector FP16 rate, so the row says nothing about its efficiencies
    (it is still compared with the estimate)."""
    peak = compute_peak(gpu.tensor_tflops, weight_precision=row.precision)
    return row.kind == "serving" and (peak is None or peak[1] == "fp16_nontensor")


@dataclass(frozen=True)
class LlmModelState:
    constants: LlmConstants
    error: LooReport
    observations: int


def _observations_all() -> tuple[list[Observation], LlmConstants]:
    rows = llm_rows()
    gpus = Gpu.objects.with_related().filter(id__in={r.gpu_id for r in rows})
    base = constants_default()
    return llm_observations(rows=rows, figures=gpu_figures(gpus=gpus), constants=base), base


def llm_model_compute() -> LlmModelState:
    """The constants fitted to every measured row, and the leave-one-GPU-out error (about three seconds)."""
    observations, base = _observations_all()
    if not observations:
        return LlmModelState(base, LooReport({}, [], 0), 0)
    fitted = constants_fit(observations, base=base)
    error = leave_one_gpu_out(observations, base=fitted)
    constants = replace(
        fitted, typical_error_pct=error.typical_error_pct(), outside_error_pct=error.outside_error_pct()
    )
    return LlmModelState(constants, error, len(observations))


def _llm_data_fingerprint() -> tuple[Any, ...]:
    results = BenchmarkResult.objects.filter(_LLM_WORKLOADS_Q).aggregate(n=Count("id"), last=Max("id"))
    gpus = Gpu.objects.aggregate(updated=Max("updated_at"))
    peaks = TensorPeak.objects.aggregate(n=Count("id"), last=Max("id"))
    return (results["n"], results["last"], gpus["updated"], peaks["n"], peaks["last"])


# Every LLM ranking and GPU page needs the fitted model; fitting it and measuring its error
# takes about three seconds, so the last state is kept per process while the measurements and
# the datasheet figures it was computed from are unchanged (one aggregate query checks that).
# One state per language: its error table quotes the rows' source labels, which are translated.
_STATE_MEMO: dict[tuple[Any, ...], LlmModelState] = {}


def llm_model_state_clear() -> None:
    """Forget the kept state (tests; the data check makes it unnecessary otherwise)."""
    _STATE_MEMO.clear()


@data_versioned("llm_model_state")
def llm_model_state() -> LlmModelState:
    """:func:`llm_model_compute`, kept while the data behind it is unchanged."""
    fingerprint = _llm_data_fingerprint()
    key = (*fingerprint, get_language() or "")
    state = _STATE_MEMO.get(key)
    if state is None:
        state = llm_model_compute()
        for stale in [k for k in _STATE_MEMO if k[:-1] != fingerprint]:
            del _STATE_MEMO[stale]
        _STATE_MEMO[key] = state
    return state


@dataclass(frozen=True)
class LlmFigure:
    """The tokens/s figure of one GPU in an LLM ranking, measured or estimated."""

    basis: str  # measured | estimated
    tokens_per_s: float | None  # serving: per GPU; chat: the stream's
    gpu_count: int
    n: int
    distinct_submitters: int
    source: str
    url: str
    precision: str
    fits: bool
    estimate: LlmEstimate | None
    error_pct: float | None
    alternatives: int  # other qualifying measurements of this GPU for the same choice
    # Estimates: why it lies outside the measured range (llm_estimate.coverage.REASONS), and its
    # configuration class (single, layer, or the link kind of a tensor-parallel split).
    outside: tuple[str, ...] = ()
    configuration: str = ""

    def cost_per_million(self, *, price_per_gpu_hour: float | None, mode: str) -> float | None:
        if self.tokens_per_s is None:
            return None
        # Serving figures are per GPU; a chat stream occupies all GPUs of its configuration.
        count = 1 if mode == "batched" else self.gpu_count
        return cost_per_million_tokens(
            price_per_gpu_hour=price_per_gpu_hour, gpu_count=count, tokens_per_s=self.tokens_per_s
        )


def _point_order(point: LlmPoint, kind: str) -> tuple[Any, ...]:
    if kind == "serving":
        return (point.source_rank, _neg_text(point.recency), -point.n, -point.tokens_per_s)
    return (point.gpu_count, point.source_rank, _neg_text(point.recency), -point.n, -point.tokens_per_s)


def _neg_text(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


def _serving_precision(tensor: Mapping[str, float | None], family: str) -> str:
    wanted = {
        "any": ("fp4", "fp8", "int8", "fp16"),
        "4bit": ("fp4",),
        "8bit": ("fp8", "int8"),
        "16bit": ("bf16", "fp16"),
    }
    for precision in wanted.get(family, ("fp16",)):
        if tensor.get(precision):
            return precision
    return {"4bit": "int4", "8bit": "int8"}.get(family, "fp16")


def llm_ranking_figures(
    *,
    use_case: str,
    size: str,
    precision_family: str,
    include_all_rows: bool,
    gpus: Iterable[Gpu],
    peaks_by_gpu: Mapping[int, Mapping[str, float | None]],
    state: LlmModelState | None = None,
    measured: bool = True,
) -> dict[int, LlmFigure]:
    """Per GPU: the measured figure of this use case, size and precision when one qualifies,
    else the model's estimate (None fields when the model does not fit on 8 GPUs)."""
    gpus = list(gpus)
    state = state or llm_model_state()
    kind = "serving" if use_case == "llm-serving" else "decode"
    mode = "batched" if kind == "serving" else "one_stream"
    precisions = metrics.PRECISION_FAMILIES.get(precision_family, ((), ()))[0]
    chosen: dict[int, list[LlmPoint]] = defaultdict(list)
    rows = llm_rows(gpu_ids=[g.id for g in gpus]) if measured else []
    serving_rows: dict[int, list[LlmRow]] = defaultdict(list)
    for row in rows:
        if row.kind != "serving" or model_size_class(row.model) != size:
            continue
        if (include_all_rows or row.default_basis) and (precision_family == "any" or row.precision in precisions):
            serving_rows[row.gpu_id].append(row)
    for point in llm_points(rows):
        if point.kind != kind or point.size != size or not point.qualifies:
            continue
        if not include_all_rows and not point.default_basis:
            continue
        if precision_family != "any" and point.precision not in precisions:
            continue
        chosen[point.gpu_id].append(point)
    figures = gpu_figures(gpus=gpus, peaks_by_gpu=peaks_by_gpu)
    reference = MODEL_SHAPES[SIZE_CLASSES[size].reference]
    use_case_key = "serving" if kind == "serving" else "chat"
    error = state.constants.typical_error_pct.get(use_case_key)
    out: dict[int, LlmFigure] = {}
    for gpu in gpus:
        mlperf = mlperf_serving_figure(serving_rows.get(gpu.id, [])) if kind == "serving" else None
        if mlperf is not None:
            out[gpu.id] = LlmFigure("measured", mlperf.tokens_per_s, mlperf.gpu_count, mlperf.systems, mlperf.systems,
                                    mlperf.label, mlperf.url, mlperf.precision, True, None, None, 0)  # fmt: skip
            continue
        points = sorted(chosen.get(gpu.id, []), key=lambda p: _point_order(p, kind))
        if points:
            best = points[0]
            out[gpu.id] = LlmFigure("measured", best.tokens_per_s, best.gpu_count, best.n, best.distinct_submitters,
                                    best.label, best.url, best.precision, True, None, None, len(points) - 1)  # fmt: skip
            continue
        figure = figures[gpu.id]
        if kind == "serving":
            weight_precision = _serving_precision(figure.tensor_tflops, precision_family)
            weight_bytes = bytes_per_weight(precision=weight_precision)
        else:
            weight_precision, quant = CHAT_WEIGHTS.get(precision_family, CHAT_WEIGHTS["4bit"])
            weight_bytes = bytes_per_weight(precision=weight_precision, quant=quant)
        estimate = llm_throughput_estimate(
            memory_gib=figure.memory_gib,
            bandwidth_gbs=figure.bandwidth_gbs,
            tensor_tflops=figure.tensor_tflops,
            total_params_b=reference.total_params_b,
            active_params_b=reference.active_params_b,
            layers=reference.layers,
            kv_heads=reference.kv_heads,
            head_dim=reference.head_dim,
            hidden=reference.hidden,
            bytes_per_weight=weight_bytes,
            weight_precision=weight_precision,
            mode=mode,
            context_tokens=state.constants.serving_context_tokens if mode == "batched" else CHAT_CONTEXT_TOKENS,
            benchmark=_reference_benchmark(size),
            max_gpus=MAX_GPUS,
            constants=state.constants,
            link=figure.link,
        )
        rate = estimate.tokens_per_s_per_gpu if mode == "batched" else estimate.tokens_per_s
        regime = Regime(
            kind,
            figure.vendor,
            figure.architecture,
            configuration_of(
                gpu_count=estimate.gpu_count,
                split="tensor" if mode == "batched" else "layer",
                link_kind=estimate.link_kind,
            ),
            estimate.compute_precision,
        )
        outside = state.error.coverage.outside(regime)
        out[gpu.id] = LlmFigure("estimated", rate if estimate.fits else None, estimate.gpu_count, 0, 0,
                                _estimate_label(reference.name, weight_precision, estimate.bound), "",
                                weight_precision, estimate.fits, estimate,
                                state.constants.outside_error_pct.get(use_case_key, error) if outside else error, 0,
                                outside, regime.configuration)  # fmt: skip
    return out


def _estimate_label(model: str, weight_precision: str, bound: str) -> str:
    return _("estimate · %(model)s · %(precision)s · limited by %(bound)s") % {
        "model": model,
        "precision": weight_precision.upper(),
        "bound": _word(_BOUNDS, bound),
    }


def llm_row_values(*, figure: LlmFigure, price: float | None, mode: str, llm_mode: str, scale: float) -> dict[str, Any]:
    """The ranking-row fields of an LLM figure (dashboard.selectors.RankingRow)."""
    measured = figure.basis == "measured"
    # Serving figures are per GPU; a chat stream occupies every GPU of its configuration.
    gpus_paid = 1 if llm_mode == "batched" else figure.gpu_count
    cost = figure.cost_per_million(price_per_gpu_hour=price, mode=llm_mode) if mode == "rent" else None
    return {
        "perf": figure.tokens_per_s,
        "perf_basis": figure.basis,
        "perf_measured": figure.tokens_per_s if measured else None,
        "perf_estimated": None if measured else figure.tokens_per_s,
        "n": figure.n,
        "distinct_submitters": figure.distinct_submitters,
        "groups": 1 if measured else 0,
        "perf_per_dollar": metrics.per_price(figure.tokens_per_s, price * gpus_paid if price else None, scale=scale),
        "meets_memory_floor": figure.fits,
        "llm_gpu_count": figure.gpu_count,
        "cost_per_million_tokens": cost,
        "llm_source": figure.source,
        "llm_source_url": figure.url,
        "llm_precision": figure.precision,
        "estimate_error_pct": None if measured else figure.error_pct,
        "estimate_outside_range": bool(figure.outside),
        "estimate_outside_reasons": list(figure.outside),
        "llm_configuration": figure.configuration,
    }


# The MLPerf benchmark whose fitted serving efficiency estimates each size class.
_REFERENCE_BENCHMARK = {
    "8b": "llama3.1-8b",
    "70b": "llama2-70b",
    "mixtral": "mixtral-8x7b",
    "120b-moe": "gpt-oss-120b",
    "405b": "llama3.1-405b",
    "deepseek-r1": "deepseek-r1",
}


def _reference_benchmark(size: str) -> str:
    return _REFERENCE_BENCHMARK.get(size, "")


@dataclass(frozen=True)
class LlmGpuLine:
    """One measured LLM figure of a GPU, for its page."""

    kind: str
    size: str | None
    model: str
    precision: str
    gpu_count: int
    tokens_per_s: float
    n: int
    qualifies: bool
    label: str
    url: str


@dataclass(frozen=True)
class DoesNotFitLine:
    """A configuration a source reports as not fitting on this GPU (out of memory, or run partly on the CPU)."""

    model: str
    quant: str
    gpu_count: int
    on_cpu_tokens_per_s: float | None  # set when the source ran it split between GPU and CPU
    source: str


def llm_gpu_measurements(*, gpu: Gpu) -> tuple[list[LlmGpuLine], list[DoesNotFitLine]]:
    """A GPU's measured LLM figures and the configurations reported not to fit, each once."""
    lines = [
        LlmGpuLine(
            p.kind,
            p.size,
            MODEL_SHAPES[p.model].name,
            p.precision,
            p.gpu_count,
            p.tokens_per_s,
            p.n,
            p.qualifies,
            p.label,
            p.url,
        )  # fmt: skip
        for p in llm_points(llm_rows(gpu_ids=[gpu.id]))
    ]
    lines.sort(key=lambda line: (line.kind, line.size or "", line.model, line.gpu_count, -line.tokens_per_s))
    seen: set[tuple[str, str, int]] = set()
    does_not_fit = []
    rows = LabImportRow.objects.filter(gpu=gpu, outcome=LabImportRow.Outcome.DOES_NOT_FIT).order_by("gpu_count", "id")
    for row in rows:
        params = row.params or {}
        model_slug = str(params.get("model", ""))
        model_slug = _EVAL_RATE_MODELS.get(model_slug, model_slug)
        model = MODEL_SHAPES[model_slug].name if model_slug in MODEL_SHAPES else model_slug
        key = (model, str(params.get("quant", "")), row.gpu_count or 1)
        if key in seen:
            continue
        seen.add(key)
        value = (row.row or {}).get("value") if (row.row or {}).get("placement") == "gpu+cpu" else None
        does_not_fit.append(DoesNotFitLine(key[0], key[1], key[2], value, row.source))
    return lines, does_not_fit
