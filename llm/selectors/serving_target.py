"""Reads for the LLM serving ranking at a chosen interactivity: per GPU, its best rentable
configuration (a GPU count some current offer rents) and the output tokens/s per GPU it sustains
while every user gets the target rate, measured where its points reach the target, else
estimated by the serving model with the error that applies (the arithmetic:
llm/interactivity.py).

A GPU no current offer rents keeps its measured configurations (there is no offer to restrict
them to; its row says no rental price is on record unless the user gives one); its estimates use
the tensor-parallel degrees up to eight GPUs.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db.models import Q

from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from catalog.models import Gpu
from llm.estimate.coverage import Regime, configuration_of
from llm.estimate.model import llm_throughput_estimate
from llm.estimate.shapes import MODEL_SHAPES, SIZE_CLASSES, bytes_per_weight, model_size_class
from llm.interactivity import CurvePoint, throughput_at_target
from llm.models import Scenario, ServingPoint, SourceKind
from llm.selectors.figures import (
    LlmFigure,
    LlmModelState,
    _estimate_label,
    _reference_benchmark,
    _serving_precision,
    gpu_figures,
)
from llm.selectors.rows import MAX_GPUS

ESTIMATE_COUNTS = tuple(2**k for k in range(MAX_GPUS.bit_length()) if 2**k <= MAX_GPUS)


@dataclass(frozen=True)
class MeasuredServing:
    """One measured serving point of a GPU: its configuration and where it sits on the curve."""

    gpu_id: int
    gpu_count: int
    interconnect: str
    model: str
    precision: str
    scenario: str
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float | None  # measured, or a latency-bound floor; None: Offline
    label: str
    url: str
    measured_on: dt.date


# MLPerf rows of the closed division and of systems on sale, unless the page asks for all of them.
_MLPERF_DEFAULT = Q(result__params__division="closed", result__params__availability="available")


def serving_points_measured(
    *, gpu_ids: Iterable[int], size: str, precision_family: str, include_all_rows: bool
) -> dict[int, list[MeasuredServing]]:
    """gpu id -> its trusted measured serving points of this model class and precision choice (one query)."""
    models_ = [slug for slug in MODEL_SHAPES if model_size_class(slug) == size]
    points = ServingPoint.objects.trusted().for_models(models_).filter(gpu_id__in=list(gpu_ids))
    if precision_family != "any":
        points = points.at_precisions(PRECISION_FAMILIES.get(precision_family, ((), ()))[0])
    if not include_all_rows:
        points = points.filter(~Q(source_kind=SourceKind.MLPERF) | _MLPERF_DEFAULT)
    scenarios = dict(Scenario.choices)
    out: dict[int, list[MeasuredServing]] = defaultdict(list)
    for p in points.order_by("gpu_id", "gpu_count", "-measured_on", "id"):
        label = " · ".join(
            part
            for part in (
                p.source_title,
                str(scenarios.get(p.scenario, p.scenario)),
                p.engine,
                p.weight_precision.upper(),
            )
            if part
        )
        out[p.gpu_id].append(
            MeasuredServing(
                p.gpu_id,
                p.gpu_count,
                p.interconnect,
                p.model,
                p.weight_precision,
                p.scenario,
                p.tokens_per_s_per_gpu,
                p.tokens_per_s_per_user,
                label,
                p.source_url,
                p.measured_on,
            )  # fmt: skip
        )
    return dict(out)


@dataclass(frozen=True)
class ServingChoice:
    """A GPU's figure at the target in its best configuration, and what was weighed."""

    figure: LlmFigure
    target: str
    rented_counts: tuple[int, ...]  # counts current offers rent (empty: no offer on record)
    measured_unreached: bool  # measured points exist but none reaches the target in a rentable count


def _measured_at(
    points: list[MeasuredServing], *, target: float | None, allowed: frozenset[int] | None
) -> tuple[float, MeasuredServing, int] | None:
    """The best measured (tokens/s per GPU, point quoted, points behind it) over the rentable counts."""
    by_configuration: dict[tuple[int, str, str], list[MeasuredServing]] = defaultdict(list)
    for point in points:
        if allowed is None or point.gpu_count in allowed:
            by_configuration[(point.gpu_count, point.interconnect, point.precision)].append(point)
    best: tuple[float, MeasuredServing, int] | None = None
    for group in by_configuration.values():
        value = throughput_at_target(
            [CurvePoint(p.tokens_per_s_per_user, p.tokens_per_s_per_gpu) for p in group], target=target
        )
        if value is None:
            continue
        # The point the figure rests on: the one closest to it from above (or the best one).
        quoted = min(group, key=lambda p: (p.tokens_per_s_per_gpu < value, abs(p.tokens_per_s_per_gpu - value)))
        if best is None or value > best[0]:
            best = (value, quoted, len(group))
    return best


def llm_serving_choices(
    *,
    size: str,
    precision_family: str,
    include_all_rows: bool,
    target: str,
    target_rate: float | None,
    gpus: Iterable[Gpu],
    peaks_by_gpu: Mapping[int, Mapping[str, float | None]],
    rented: Mapping[int, frozenset[int]],
    state: LlmModelState,
) -> dict[int, ServingChoice]:
    """Per GPU: the measured figure at the target in a rentable configuration, else the estimate
    in the rentable configuration with the most tokens/s per GPU (see the module doc)."""
    gpus = list(gpus)
    measured = serving_points_measured(
        gpu_ids=[g.id for g in gpus],
        size=size,
        precision_family=precision_family,
        include_all_rows=include_all_rows,
    )
    figures = gpu_figures(gpus=gpus, peaks_by_gpu=peaks_by_gpu)
    reference = MODEL_SHAPES[SIZE_CLASSES[size].reference]
    error = state.constants.typical_error_pct.get("serving")
    outside_error = state.constants.outside_error_pct.get("serving", error)
    out: dict[int, ServingChoice] = {}
    for gpu in gpus:
        counts = rented.get(gpu.id, frozenset())
        allowed = counts or None
        points = measured.get(gpu.id, [])
        found = _measured_at(points, target=target_rate, allowed=allowed)
        if found is not None:
            value, quoted, n = found
            figure = LlmFigure("measured", value, quoted.gpu_count, n, len({p.label for p in points}), quoted.label,
                               quoted.url, quoted.precision, True, None, None, len(points) - n)  # fmt: skip
            out[gpu.id] = ServingChoice(figure, target, tuple(sorted(counts)), False)
            continue
        gpu_figure = figures[gpu.id]
        weight_precision = _serving_precision(gpu_figure.tensor_tflops, precision_family)
        best = None
        for count in sorted(counts) if counts else ESTIMATE_COUNTS:
            if count > MAX_GPUS:
                continue
            estimate = llm_throughput_estimate(
                memory_gib=gpu_figure.memory_gib,
                bandwidth_gbs=gpu_figure.bandwidth_gbs,
                tensor_tflops=gpu_figure.tensor_tflops,
                total_params_b=reference.total_params_b,
                active_params_b=reference.active_params_b,
                layers=reference.layers,
                kv_heads=reference.kv_heads,
                head_dim=reference.head_dim,
                hidden=reference.hidden,
                bytes_per_weight=bytes_per_weight(precision=weight_precision),
                weight_precision=weight_precision,
                mode="batched",
                context_tokens=state.constants.serving_context_tokens,
                gpu_count=count,
                benchmark=_reference_benchmark(size),
                constants=state.constants,
                link=gpu_figure.link,
            )
            # The model answers the highest-throughput end of the curve only.
            rate = estimate.tokens_per_s_per_gpu if estimate.fits and target_rate is None else None
            if best is None or (rate or 0) > (best[0] or 0):
                best = (rate, estimate)
        if best is None:
            continue
        rate, estimate = best
        regime = Regime("serving", gpu_figure.vendor, gpu_figure.architecture,
                        configuration_of(gpu_count=estimate.gpu_count, split="tensor", link_kind=estimate.link_kind),
                        estimate.compute_precision)  # fmt: skip
        outside = state.error.coverage.outside(regime)
        figure = LlmFigure("estimated", rate, estimate.gpu_count, 0, 0,
                           _estimate_label(reference.name, weight_precision, estimate.bound), "", weight_precision,
                           estimate.fits, estimate, outside_error if outside else error, 0, outside,
                           regime.configuration)  # fmt: skip
        out[gpu.id] = ServingChoice(figure, target, tuple(sorted(counts)), bool(points))
    return out
