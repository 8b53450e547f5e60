"""Reads for the LLM use cases: the measured results as rows and points, and the best measured
figure per GPU, model size and kind (the estimate model and the rankings' figures built on them:
llm/selectors/figures.py).

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
from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext_lazy

from benchmarks_app.comparison_rules import PRECISION_FAMILIES, figure_counts
from benchmarks_app.models import BenchmarkResult
from benchmarks_app.services.workloads import LLM_DECODE, LLM_DECODE_TP
from gpuatlas.data_version import data_versioned
from llm.models import PrecisionStatus
from llm.serving.shapes import MODEL_SHAPES, model_size_class

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
EVAL_RATE_MODELS = {
    "deepseek-r1-14b": "qwen2.5-14b",
    "deepseek-r1-671b": "deepseek-r1",
    "gpt-oss-20b": "gpt-oss-20b",
    "llama-3.2-3b": "llama-3.2-3b",
    "llama-3.1-70b": "llama-3.1-70b",
    "llama-3.1-405b": "llama-3.1-405b",
}
CLIENT_WORKLOAD = LLM_DECODE
CLIENT_TP_WORKLOAD = LLM_DECODE_TP
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
_PHASES = {"decode": pgettext_lazy("LLM phase", "decode"), "prefill": pgettext_lazy("LLM phase", "prefill")}
_BACKENDS = {"unmarked": gettext_lazy("backend not stated"), "vulkan": "Vulkan", "cuda": "CUDA", "rocm": "ROCm",
             "metal": "Metal"}  # fmt: skip

_LLAMACPP_FAMILIES = {"llama-1": "LLaMA", "llama-2": "Llama 2", "llama-3": "Llama 3"}


def llamacpp_section_title(section: str) -> str:
    """A readable title for a section of Xiongjie Dai's llama.cpp tables (the importer's key,
    e.g. ``xiongjiedai-llama-3-2024-05``): who measured, which model family, when."""
    found = re.fullmatch(r"xiongjiedai-(llama-\d)(?:-(\d{4})-(\d{2}))?", section)
    if found is None:
        return _("llama.cpp benchmarks by Xiongjie Dai")
    family = _LLAMACPP_FAMILIES.get(found[1], found[1])
    if found[2]:
        return _("llama.cpp benchmarks by Xiongjie Dai, %(family)s tables, %(month)s") % {
            "family": family,
            "month": f"{found[2]}-{found[3]}",
        }
    return _("llama.cpp benchmarks by Xiongjie Dai, %(family)s tables") % {"family": family}


def label_of(table: Mapping[str, Any], key: str) -> str:
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
        return _mlperf_row(mlperf, version=version, params=params, value=value, environment=environment)
    if slug in ("llamacpp-tg", "llamacpp-pp"):
        return _llamacpp_row(decode=slug == "llamacpp-tg", params=params, value=value, environment=environment)
    if slug == "llm-eval-rate":
        return _eval_rate_row(params=params, value=value, environment=environment)
    if slug == CLIENT_WORKLOAD:
        return _client_row(params=params, gpu_count=gpu_count, value=value)
    return None


def _mlperf_row(
    mlperf: re.Match[str], *, version: str, params: Mapping[str, Any], value: float, environment: Mapping[str, Any]
) -> dict[str, Any] | None:
    """An MLPerf Inference result (``mlperf``: its slug matched) as a serving row: output tokens/s
    in the Offline scenario; None for other scenarios and units, and for unmapped benchmarks."""
    if mlperf.group("scenario") != "offline" or mlperf.group("unit") != "tokens":
        return None
    bench = mlperf.group("bench")
    model = next((m for pattern, m in _MLPERF_MODELS if pattern.match(bench)), None)
    if model is None:
        return None
    division, availability = params.get("division", ""), params.get("availability", "")
    submitter, system = environment.get("submitter", ""), environment.get("system", "")
    # Many systems are named after their submitter ("CoreWeave B200 SXM"): the name once.
    if not system.casefold().startswith(submitter.casefold()):
        system = f"{submitter} {system}".strip()
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
            "division": label_of(_DIVISIONS, division),
            "availability": label_of(_AVAILABILITY, availability),
            "system": system,
        },
        "url": environment.get("url", ""),
        "system": system,
        "setup": system,
    }


def _llamacpp_row(
    *, decode: bool, params: Mapping[str, Any], value: float, environment: Mapping[str, Any]
) -> dict[str, Any] | None:
    """A llama.cpp scoreboard result as a one-stream decode row (tg, ``decode``) or prefill row
    (pp); None for models without a known shape."""
    model = params.get("model", "")
    if model not in MODEL_SHAPES:
        return None
    tokens = _int(params.get("tokens"), 512)
    section = str(params.get("section", ""))
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
        "label": " · ".join(
            (
                llamacpp_section_title(section),
                str(params.get("quant", "")),
                f"{'tg' if decode else 'pp'} {params.get('tokens', '')}",
                str(environment.get("config", "")),
            )
        ),
        "url": environment.get("url", ""),
        "setup": str(environment.get("config", "")),
    }


def _eval_rate_row(*, params: Mapping[str, Any], value: float, environment: Mapping[str, Any]) -> dict[str, Any] | None:
    """A result of Jeff Geerling's AI benchmarks as a decode row (one request's generation rate);
    None for table headings not in ``EVAL_RATE_MODELS``."""
    model = EVAL_RATE_MODELS.get(str(params.get("model", "")))
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
                _("Jeff Geerling's AI benchmarks"),
                str(params.get("model", "")),
                _("backend %(backend)s") % {"backend": label_of(_BACKENDS, str(params.get("backend", "")))}
                if params.get("backend") != "unmarked"
                else label_of(_BACKENDS, "unmarked"),
                str(params.get("host", "")),
            )
        ),
        "url": environment.get("issue_url") or environment.get("url", ""),
        "setup": str(params.get("host", "")),
    }


def _client_row(*, params: Mapping[str, Any], gpu_count: int, value: float) -> dict[str, Any] | None:
    """A benchmark client ``llm-decode`` result as a prefill, decode (batch 1) or serving row
    (a larger batch, per GPU); None for unknown models and phases."""
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
        % {"workload": CLIENT_WORKLOAD, "phase": label_of(_PHASES, phase), "batch": batch, "prompt": prompt},
        "url": "",
        "setup": f"prompt {prompt}",
    }


LLM_RESULTS_Q = Q(workload__slug__startswith="mlperf-", workload__slug__contains="-offline-tokens") | Q(
    workload__slug__in=LLM_WORKLOADS
)


def llm_rows(*, gpu_ids: Iterable[int] | None = None) -> list[LlmRow]:
    """Every trusted result of an LLM workload, classified (one query)."""
    queryset = BenchmarkResult.objects.trusted().filter(LLM_RESULTS_Q)
    if gpu_ids is not None:
        queryset = queryset.filter(gpu_id__in=list(gpu_ids))
    rows = []
    for r in queryset.order_by().values(
        "gpu_id", "comparison_key", "workload__slug", "workload__version", "params", "precision", "gpu_count", "value",
        "environment", "submitter_key", "trust", "serving_point__weight_precision", "serving_point__precision_status",
    ):  # fmt: skip
        # The precision a run was at: its serving point's (checked for plausibility, corrected from a
        # cited source: llm.precision); a run whose precision is unknown is no measurement of any format.
        if r["serving_point__precision_status"] == PrecisionStatus.UNKNOWN:
            continue
        precision = r["serving_point__weight_precision"] or r["precision"]
        info = llm_row_classify(
            slug=r["workload__slug"],
            version=r["workload__version"],
            params=r["params"] or {},
            precision=precision,
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
                precision=precision,
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
    quant: str = ""  # the runs' weight type (a GGUF quant, or their precision)
    context_tokens: int = 0  # the runs' average context while generating


def llm_points(rows: Iterable[LlmRow]) -> list[LlmPoint]:
    # The precision is the one each run was at (corrected where a source says so), so it splits a key.
    grouped: dict[tuple[int, str, str], list[LlmRow]] = defaultdict(list)
    for row in rows:
        grouped[(row.gpu_id, row.comparison_key, row.precision)].append(row)
    points = []
    for (gpu_id, key, _precision), group in grouped.items():
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
                qualifies=figure_counts(has_lab=has_lab, n=n),
                default_basis=first.default_basis,
                source_rank=first.source_rank,
                recency=first.recency,
                label=first.label,
                url=first.url,
                comparison_key=key,
                quant=first.quant,
                context_tokens=first.context_tokens,
            )
        )
    return points


# Cached: the chat ranking, every GPU page and the fit calculator's one-stream jobs read the points,
# which classify every trusted LLM result (a read of most results at scale): once per data version,
# shared by all of them. The name lists the fields a reader needs: a copy cached by code whose
# points lack them (a rolling restart) is not read.
@data_versioned("llm_points:quant,context")
def llm_points_current() -> list[LlmPoint]:
    """``llm_points`` of every trusted LLM result; a GPU's points are those with its id."""
    return llm_points(llm_rows())


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


def llm_point_order(point: LlmPoint, kind: str) -> tuple[Any, ...]:
    if kind == "serving":
        return (point.source_rank, _neg_text(point.recency), -point.n, -point.tokens_per_s)
    return (point.gpu_count, point.source_rank, _neg_text(point.recency), -point.n, -point.tokens_per_s)


def _neg_text(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


def _family_of(kind: str, precision: str) -> str:
    if kind == "serving":
        return "any"
    return next((f for f in ("4bit", "8bit", "16bit") if precision in PRECISION_FAMILIES[f][0]), "other")


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
        if current is None or llm_point_order(point, point.kind) < llm_point_order(current, point.kind):
            best[key] = point
    return best
