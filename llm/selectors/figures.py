"""Reads for the LLM use cases: the chat ranking's figure per GPU (measured, else one stream
from the single-stream model, llm.serving.single_stream, as the newest stored fit holds it), the
ranking-row fields of an LLM figure, and the GPU page's LLM measurements. Which results count,
and as what: llm/selectors/rows.py."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from benchmarks_app.models import LabImportRow
from catalog.models import Gpu
from catalog.value import per_price
from llm.question import cost_per_million_output_tokens
from llm.selectors.rows import (
    CHAT_CONTEXT_TOKENS,
    CHAT_WEIGHTS,
    EVAL_RATE_MODELS,
    MAX_GPUS,
    LlmPoint,
    label_of,
    llm_point_order,
    llm_points_current,
)
from llm.selectors.serving import gpu_link_for, serving_fit_current, serving_hardware
from llm.selectors.single_stream import stream_fit_current
from llm.serving.comm import layer_split_token_seconds
from llm.serving.physics import ServingConstants, Workload
from llm.serving.shapes import MODEL_SHAPES, SIZE_CLASSES, ModelShape, bytes_per_weight
from llm.serving.single_stream import StreamFit, memory_family, single_stream_compute

# What limits an estimate.
_BOUNDS = {
    "memory bandwidth": gettext_lazy("memory bandwidth"),
    "does not fit": gettext_lazy("memory"),
}
# The engine class a chat estimate assumes: llama.cpp, as the chat ranking's measurements run.
CHAT_ENGINE = "llama.cpp"


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
    bound: str | None  # estimates: what limits it ("does not fit" where nothing fits); None when measured
    error_pct: float | None
    alternatives: int  # other qualifying measurements of this GPU for the same choice
    # Estimates: why it lies outside the measured range, and its configuration class (single, or
    # layer: the layers split over GPUs).
    outside: tuple[str, ...] = ()
    configuration: str = ""
    anchor: str = ""  # serving estimates: the GPU's measured points the estimate is anchored on
    capped: bool = False  # serving estimates: held at the configuration's measured throughput
    floor: bool = False  # serving, measured faster per user than the target: at least this much
    # Serving estimates: the 80 % held-out interval of ``tokens_per_s`` (low, high) and its kind of
    # extrapolation (llm.serving.heldout); None for measured figures or without a stored interval.
    interval: tuple[float, float] | None = None
    interval_kind: str = ""

    def cost_per_million(self, *, price_per_gpu_hour: float | None, mode: str) -> float | None:
        if self.tokens_per_s is None:
            return None
        # Serving figures are per GPU; a chat stream occupies all GPUs of its configuration.
        per_gpu = self.tokens_per_s if mode == "batched" else self.tokens_per_s / max(1, self.gpu_count)
        return cost_per_million_output_tokens(price_per_gpu_hour=price_per_gpu_hour, tokens_per_s_per_gpu=per_gpu)


def llm_ranking_figures(
    *,
    size: str,
    precision_family: str,
    include_all_rows: bool,
    gpus: Iterable[Gpu],
    peaks_by_gpu: Mapping[int, Mapping[str, float | None]],
    measured: bool = True,
    stream: StreamFit | None = None,
) -> dict[int, LlmFigure]:
    """Per GPU, the chat ranking's figure: the measured one-stream figure of this size and
    precision when one qualifies, else the single-stream model's estimate for the size's reference
    model (None fields when it fits on no count up to eight GPUs)."""
    gpus = list(gpus)
    ids = {g.id for g in gpus}
    points = [p for p in llm_points_current() if p.gpu_id in ids] if measured else []
    chosen = _measured_by_gpu(points, size=size, precision_family=precision_family, include_all_rows=include_all_rows)
    reference = MODEL_SHAPES[SIZE_CLASSES[size].reference]
    stream = stream or stream_fit_current()
    serving = serving_fit_current()
    constants = serving.constants if serving is not None else ServingConstants()
    weight_precision, quant = CHAT_WEIGHTS.get(precision_family, CHAT_WEIGHTS["4bit"])
    weight_bytes = bytes_per_weight(precision=weight_precision, quant=quant)
    out: dict[int, LlmFigure] = {}
    for gpu in gpus:
        measured_figure = _measured_figure(chosen.get(gpu.id, []))
        if measured_figure is not None:
            out[gpu.id] = measured_figure
            continue
        out[gpu.id] = chat_figure(gpu=gpu, peaks=peaks_by_gpu.get(gpu.id, {}), reference=reference,
                                  weight_precision=weight_precision, weight_bytes=weight_bytes, stream=stream,
                                  constants=constants)  # fmt: skip
    return out


def _measured_by_gpu(
    points: list[LlmPoint], *, size: str, precision_family: str, include_all_rows: bool
) -> dict[int, list[LlmPoint]]:
    """Per GPU, the one-stream points a chat ranking may show at ``size`` in the precision family.
    Without ``include_all_rows``, only points that are a default basis."""
    precisions = PRECISION_FAMILIES.get(precision_family, ((), ()))[0]
    chosen: dict[int, list[LlmPoint]] = defaultdict(list)
    for point in points:
        if point.kind != "decode" or point.size != size or not point.qualifies:
            continue
        if not include_all_rows and not point.default_basis:
            continue
        if precision_family != "any" and point.precision not in precisions:
            continue
        chosen[point.gpu_id].append(point)
    return chosen


def _measured_figure(points: list[LlmPoint]) -> LlmFigure | None:
    """One GPU's measured figure: its best point (the others counted as alternatives); None without one."""
    ordered = sorted(points, key=lambda p: llm_point_order(p, "decode"))
    if not ordered:
        return None
    best = ordered[0]
    return LlmFigure("measured", best.tokens_per_s, best.gpu_count, best.n, best.distinct_submitters,
                     best.label, best.url, best.precision, True, None, None, len(ordered) - 1)  # fmt: skip


def chat_figure(
    *,
    gpu: Gpu,
    peaks: Mapping[str, float | None],
    reference: ModelShape,
    weight_precision: str,
    weight_bytes: float,
    stream: StreamFit,
    constants: ServingConstants,
) -> LlmFigure:
    """One stream of ``reference`` (llama.cpp's engine class) on the fewest GPUs whose memory holds
    it, the layers split across them; with the held-out error of that engine's single-stream points.
    Only the bandwidth matters: a GPU without catalogue tensor figures gets its estimate too."""
    hw = serving_hardware(gpu, peaks=peaks)
    w = Workload(reference, weight_precision, weight_bytes, CHAT_CONTEXT_TOKENS // 2, CHAT_CONTEXT_TOKENS // 2,
                 engine=CHAT_ENGINE)  # fmt: skip
    link = gpu_link_for(gpu)

    def handover(gpus: int) -> float | None:
        return layer_split_token_seconds(link=link, gpus=gpus, hidden=reference.hidden)

    memory = memory_family(gpu.memory_type)
    found = single_stream_compute(w=w, hw=hw, fit=stream, serving=constants, memory=memory, max_gpus=MAX_GPUS,
                                  handover_s=handover)  # fmt: skip
    error = stream.error_pct(CHAT_ENGINE)
    inside = stream.key(CHAT_ENGINE, memory, weight_precision) != "*"
    outside = () if inside else ("engine",)
    if found is None:
        return LlmFigure("estimated", None, MAX_GPUS, 0, 0, _estimate_label(reference.name, weight_precision,
                         "does not fit"), "", weight_precision, False, "does not fit", error, 0, outside,
                         "single")  # fmt: skip
    kind = "single" if found.gpus == 1 else "layer"
    return LlmFigure("estimated", found.tokens_per_s, found.gpus, 0, 0,
                     _estimate_label(reference.name, weight_precision, "memory bandwidth"), "", weight_precision,
                     True, "memory bandwidth", error, 0, outside, kind)  # fmt: skip


def _estimate_label(model: str, weight_precision: str, bound: str) -> str:
    return _("estimate · %(model)s · %(precision)s · limited by %(bound)s") % {
        "model": model,
        "precision": weight_precision.upper(),
        "bound": label_of(_BOUNDS, bound),
    }


def llm_row_values(*, figure: LlmFigure, price: float | None, mode: str, llm_mode: str, scale: float) -> dict[str, Any]:
    """The ranking-row fields of an LLM figure (dashboard.selectors.rankings.RankingRow)."""
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
        "perf_per_dollar": per_price(figure.tokens_per_s, price * gpus_paid if price else None, scale=scale),
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
        **_interval_values(figure, price=price, mode=mode, llm_mode=llm_mode),
    }


def _interval_values(figure: LlmFigure, *, price: float | None, mode: str, llm_mode: str) -> dict[str, Any]:
    """An estimate's 80 % interval as row fields: tokens/s low and high, and the cost per million
    tokens at each end (the cost's low end is the throughput's high end)."""
    if figure.interval is None or figure.basis == "measured":
        return {}
    low, high = figure.interval
    values: dict[str, Any] = {"perf_low": low, "perf_high": high, "interval_kind": figure.interval_kind}
    if mode == "rent":
        values["cost_per_million_tokens_low"] = replace(figure, tokens_per_s=high).cost_per_million(
            price_per_gpu_hour=price, mode=llm_mode
        )
        values["cost_per_million_tokens_high"] = replace(figure, tokens_per_s=low).cost_per_million(
            price_per_gpu_hour=price, mode=llm_mode
        )
    return values


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
        for p in llm_points_current()
        if p.gpu_id == gpu.id
    ]
    lines.sort(key=lambda line: (line.kind, line.size or "", line.model, line.gpu_count, -line.tokens_per_s))
    seen: set[tuple[str, str, int]] = set()
    does_not_fit = []
    rows = LabImportRow.objects.filter(gpu=gpu, outcome=LabImportRow.Outcome.DOES_NOT_FIT).order_by("gpu_count", "id")
    for row in rows:
        params = row.params or {}
        model_slug = str(params.get("model", ""))
        model_slug = EVAL_RATE_MODELS.get(model_slug, model_slug)
        model = MODEL_SHAPES[model_slug].name if model_slug in MODEL_SHAPES else model_slug
        key = (model, str(params.get("quant", "")), row.gpu_count or 1)
        if key in seen:
            continue
        seen.add(key)
        value = (row.row or {}).get("value") if (row.row or {}).get("placement") == "gpu+cpu" else None
        does_not_fit.append(DoesNotFitLine(key[0], key[1], key[2], value, row.source))
    return lines, does_not_fit
