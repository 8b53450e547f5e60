"""Reads for the LLM use cases: the estimate model's observations, its fitted constants and
leave-one-GPU-out error (``llm_model_state``), the rankings' LLM figures per GPU and the GPU
page's LLM measurements. Which results count, and as what: llm/selectors/rows.py."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.db.models import Count, Max
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from benchmarks_app.models import BenchmarkResult, LabImportRow
from catalog.models import Gpu, TensorPeak
from catalog.value import per_price
from llm.estimate.constants import LlmConstants, constants_default, constants_from_dict
from llm.estimate.coverage import Regime, configuration_of
from llm.estimate.fit import Observation, constants_fit
from llm.estimate.loo import LooReport, leave_one_gpu_out, loo_report_from_dict
from llm.estimate.model import LlmEstimate, compute_peak, cost_per_million_tokens, llm_throughput_estimate
from llm.models import ServingModelFit
from llm.selectors.rows import (
    CHAT_CONTEXT_TOKENS,
    CHAT_WEIGHTS,
    EVAL_RATE_MODELS,
    LLM_RESULTS_Q,
    MAX_GPUS,
    LlmPoint,
    LlmRow,
    headline_points,
    label_of,
    llm_point_order,
    llm_points,
    llm_rows,
    mlperf_serving_figure,
)
from llm.selectors.serving import gpu_link_for, serving_fit_current, serving_hardware
from llm.serving.comm import GpuLink, layer_split_token_seconds
from llm.serving.fit import ServingFit
from llm.serving.physics import Workload, one_stream_compute
from llm.serving.shapes import MODEL_SHAPES, SIZE_CLASSES, ModelShape, bytes_per_weight, model_size_class

# What limits an estimate (llm.estimate.model's "bound" of a configuration that fits).
_BOUNDS = {
    "memory bandwidth": gettext_lazy("memory bandwidth"),
    "tensor throughput": gettext_lazy("tensor throughput"),
    "KV-cache memory": gettext_lazy("KV-cache memory"),
}


# Hosts the model does not describe: a GPU behind a single-board computer's narrow PCIe link.
_SBC_HOST = re.compile(r"\bPi\b|Raspberry|HiFive|RISC-V|Radxa|DC-ROMA", re.IGNORECASE)


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


def llm_model_inputs_fingerprint() -> tuple[Any, ...]:
    """What the estimate's fit depends on besides the serving points: the LLM results and the
    datasheet figures (one aggregate query each)."""
    results = BenchmarkResult.objects.filter(LLM_RESULTS_Q).aggregate(n=Count("id"), last=Max("id"))
    gpus = Gpu.objects.aggregate(updated=Max("updated_at"))
    peaks = TensorPeak.objects.aggregate(n=Count("id"), last=Max("id"))
    return (results["n"], results["last"], gpus["updated"], peaks["n"], peaks["last"])


def llm_model_state() -> LlmModelState:
    """The estimate's constants and leave-one-GPU-out report as the last fit stored them
    (``llm.services.serving_fit.serving_model_refit``); the committed defaults before any fit.
    Never fits."""
    stored = ServingModelFit.objects.newest()
    estimate = stored.constants.get("estimate") if stored and isinstance(stored.constants, dict) else None
    if not stored or not estimate:
        return LlmModelState(constants_default(), LooReport({}, [], 0), 0)
    report = loo_report_from_dict(stored.errors.get("estimate", {}) if isinstance(stored.errors, dict) else {})
    return LlmModelState(constants_from_dict(estimate), report, sum(dict(estimate.get("observations", {})).values()))


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
    # Estimates: why it lies outside the measured range (llm.estimate.coverage.REASONS), and its
    # configuration class (single, layer, or the link kind of a tensor-parallel split).
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
        count = 1 if mode == "batched" else self.gpu_count
        return cost_per_million_tokens(
            price_per_gpu_hour=price_per_gpu_hour, gpu_count=count, tokens_per_s=self.tokens_per_s
        )


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
    rows = llm_rows(gpu_ids=[g.id for g in gpus]) if measured else []
    serving_rows, chosen = _measured_by_gpu(
        rows, kind=kind, size=size, precision_family=precision_family, include_all_rows=include_all_rows
    )
    figures = gpu_figures(gpus=gpus, peaks_by_gpu=peaks_by_gpu)
    reference = MODEL_SHAPES[SIZE_CLASSES[size].reference]
    serving_fit = serving_fit_current() if kind == "decode" else None
    out: dict[int, LlmFigure] = {}
    for gpu in gpus:
        measured_figure = _measured_figure(
            kind=kind, serving_rows=serving_rows.get(gpu.id, []), points=chosen.get(gpu.id, [])
        )
        if measured_figure is not None:
            out[gpu.id] = measured_figure
            continue
        figure = figures[gpu.id]
        weight_precision, weight_bytes = _estimate_weights(figure, kind=kind, precision_family=precision_family)
        if kind == "decode" and serving_fit is not None:
            out[gpu.id] = _chat_figure(gpu=gpu, figure=figure, reference=reference, weight_precision=weight_precision,
                                       weight_bytes=weight_bytes, fit=serving_fit)  # fmt: skip
            continue
        out[gpu.id] = _estimated_figure(
            figure, kind=kind, size=size, reference=reference, weight_precision=weight_precision,
            weight_bytes=weight_bytes, state=state,
        )  # fmt: skip
    return out


def _measured_by_gpu(
    rows: list[LlmRow], *, kind: str, size: str, precision_family: str, include_all_rows: bool
) -> tuple[dict[int, list[LlmRow]], dict[int, list[LlmPoint]]]:
    """Per GPU, the measurements a ranking may show for ``kind`` at ``size`` in the precision
    family: the serving rows (the MLPerf figure is drawn from them) and the points that qualify.
    Without ``include_all_rows``, only rows and points that are a default basis."""
    precisions = PRECISION_FAMILIES.get(precision_family, ((), ()))[0]
    serving_rows: dict[int, list[LlmRow]] = defaultdict(list)
    for row in rows:
        if row.kind != "serving" or model_size_class(row.model) != size:
            continue
        if (include_all_rows or row.default_basis) and (precision_family == "any" or row.precision in precisions):
            serving_rows[row.gpu_id].append(row)
    chosen: dict[int, list[LlmPoint]] = defaultdict(list)
    for point in llm_points(rows):
        if point.kind != kind or point.size != size or not point.qualifies:
            continue
        if not include_all_rows and not point.default_basis:
            continue
        if precision_family != "any" and point.precision not in precisions:
            continue
        chosen[point.gpu_id].append(point)
    return serving_rows, chosen


def _measured_figure(*, kind: str, serving_rows: list[LlmRow], points: list[LlmPoint]) -> LlmFigure | None:
    """One GPU's measured figure: for serving, the MLPerf figure of its ``serving_rows`` when there
    is one; else its best point (the others counted as alternatives); None without either."""
    mlperf = mlperf_serving_figure(serving_rows) if kind == "serving" else None
    if mlperf is not None:
        return LlmFigure("measured", mlperf.tokens_per_s, mlperf.gpu_count, mlperf.systems, mlperf.systems,
                         mlperf.label, mlperf.url, mlperf.precision, True, None, None, 0)  # fmt: skip
    ordered = sorted(points, key=lambda p: llm_point_order(p, kind))
    if not ordered:
        return None
    best = ordered[0]
    return LlmFigure("measured", best.tokens_per_s, best.gpu_count, best.n, best.distinct_submitters,
                     best.label, best.url, best.precision, True, None, None, len(ordered) - 1)  # fmt: skip


def _estimate_weights(figure: GpuFigures, *, kind: str, precision_family: str) -> tuple[str, float]:
    """The weight format an estimate assumes, and its bytes per weight: for serving, the best
    tensor format of the family the GPU has; for chat, the family's llama.cpp quantisation."""
    if kind == "serving":
        weight_precision = _serving_precision(figure.tensor_tflops, precision_family)
        return weight_precision, bytes_per_weight(precision=weight_precision)
    weight_precision, quant = CHAT_WEIGHTS.get(precision_family, CHAT_WEIGHTS["4bit"])
    return weight_precision, bytes_per_weight(precision=weight_precision, quant=quant)


def _estimated_figure(
    figure: GpuFigures,
    *,
    kind: str,
    size: str,
    reference: ModelShape,
    weight_precision: str,
    weight_bytes: float,
    state: LlmModelState,
) -> LlmFigure:
    """One GPU's figure from the estimate model for the size's reference model, with the typical
    error of its use case (the error outside the measured range when its regime lies there)."""
    mode = "batched" if kind == "serving" else "one_stream"
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
    use_case_key = "serving" if kind == "serving" else "chat"
    error = state.constants.typical_error_pct.get(use_case_key)
    return LlmFigure("estimated", rate if estimate.fits else None, estimate.gpu_count, 0, 0,
                     _estimate_label(reference.name, weight_precision, estimate.bound), "",
                     weight_precision, estimate.fits, estimate,
                     state.constants.outside_error_pct.get(use_case_key, error) if outside else error, 0,
                     outside, regime.configuration)  # fmt: skip


def _chat_figure(
    *, gpu: Gpu, figure: GpuFigures, reference: ModelShape, weight_precision: str, weight_bytes: float, fit: ServingFit
) -> LlmFigure:
    """One stream from the serving model at concurrency 1 (llama.cpp's engine class), on the fewest
    GPUs whose memory holds it, the layers split across them; with the held-out error of the
    single-stream points that applies to it."""
    hw = serving_hardware(gpu, peaks=figure.tensor_tflops)
    w = Workload(reference, weight_precision, weight_bytes, CHAT_CONTEXT_TOKENS // 2, CHAT_CONTEXT_TOKENS // 2,
                 engine="llama.cpp")  # fmt: skip
    link = figure.link

    def handover(gpus: int) -> float | None:
        return layer_split_token_seconds(link=link, gpus=gpus, hidden=reference.hidden)

    stream = one_stream_compute(w=w, hw=hw, c=fit.constants, max_gpus=MAX_GPUS, handover_s=handover)
    inside = fit.inside(hardware_class=hw.hardware_class, engine="llama.cpp", tp=1)
    error = fit.error_pct(scenario="single-stream", engine="llama.cpp", inside=inside)
    outside = () if inside else ("architecture",)
    peak = hw.compute_peak(weight_precision)
    compute_precision = peak[1] if peak else ""
    if stream is None:
        estimate = LlmEstimate(False, MAX_GPUS, "one_stream", None, None, None, 0, "does not fit", compute_precision)
        return LlmFigure("estimated", None, MAX_GPUS, 0, 0, _estimate_label(reference.name, weight_precision,
                         "memory bandwidth"), "", weight_precision, False, estimate, error, 0, outside, "single")  # fmt: skip
    kind = "single" if stream.gpus == 1 else "layer"
    estimate = LlmEstimate(True, stream.gpus, "one_stream", stream.tokens_per_s, stream.tokens_per_s / stream.gpus,
                           None, 1, stream.step.bound, compute_precision, (), link.kind(stream.gpus),
                           stream.handover_s)  # fmt: skip
    return LlmFigure("estimated", stream.tokens_per_s, stream.gpus, 0, 0,
                     _estimate_label(reference.name, weight_precision, "memory bandwidth"), "", weight_precision,
                     True, estimate, error, 0, outside, kind)  # fmt: skip


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
        model_slug = EVAL_RATE_MODELS.get(model_slug, model_slug)
        model = MODEL_SHAPES[model_slug].name if model_slug in MODEL_SHAPES else model_slug
        key = (model, str(params.get("quant", "")), row.gpu_count or 1)
        if key in seen:
            continue
        seen.add(key)
        value = (row.row or {}).get("value") if (row.row or {}).get("placement") == "gpu+cpu" else None
        does_not_fit.append(DoesNotFitLine(key[0], key[1], key[2], value, row.source))
    return lines, does_not_fit
