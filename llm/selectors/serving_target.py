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
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext as _

from benchmarks_app.comparison_rules import MIN_COMMUNITY_N, PRECISION_FAMILIES
from benchmarks_app.models import SourceKind, TrustLabel
from catalog.models import Gpu, TensorPeak
from catalog.selectors.prices import gpu_counts_rented
from llm.estimate.shapes import MODEL_SHAPES, SIZE_CLASSES, model_size_class
from llm.interactivity import CurvePoint, target_rate, throughput_at_target
from llm.models import EngineClass, Scenario, ServingPoint
from llm.selectors.figures import LlmFigure, _serving_precision, gpu_link_for
from llm.selectors.rows import MAX_GPUS
from llm.selectors.serving import (
    MeasuredAllReduce,
    ServingEstimate,
    allreduce_measured,
    serving_curve,
    serving_fit_current,
    serving_hardware,
)
from llm.serving.energy import power_curve_key
from llm.serving.fit import ServingFit

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
    results: int = 1  # results behind it (community points: their median)
    # The request shape and engine class: points of one curve share them.
    input_tokens: int | None = None
    output_tokens: int | None = None
    engine_class: str = ""
    # Measured energy where the point carries one (every result behind it: their median).
    joules_per_token: float | None = None  # all GPUs of the configuration, per output token
    power_w: float | None = None  # average per GPU over the window


# MLPerf rows of the closed division and of systems on sale, unless the page asks for all of them.
_MLPERF_DEFAULT = Q(result__params__division="closed", result__params__availability="available")


def serving_points_measured(
    *, gpu_ids: Iterable[int], size: str, precision_family: str, include_all_rows: bool
) -> dict[int, list[MeasuredServing]]:
    """gpu id -> its trusted measured serving points of this model class and precision choice,
    batched (every scenario but a single stream; one query)."""
    models_ = [slug for slug in MODEL_SHAPES if model_size_class(slug) == size]
    # One stream at batch 1 (llama.cpp tables, Ollama) is the chat use case's figure: as a serving
    # point it would stand for a batched configuration it says nothing about.
    points = (
        ServingPoint.objects.trusted()
        .for_models(models_)
        .filter(gpu_id__in=list(gpu_ids))
        .exclude(scenario=Scenario.SINGLE_STREAM)
    )
    if precision_family != "any":
        points = points.at_precisions(PRECISION_FAMILIES.get(precision_family, ((), ()))[0])
    if not include_all_rows:
        points = points.filter(~Q(source_kind=SourceKind.MLPERF) | _MLPERF_DEFAULT)
    scenarios = dict(Scenario.choices)
    # A lab point counts alone; community points count once MIN_COMMUNITY_N submitters measured
    # the same configuration, at their median (the rule of every use case).
    groups: dict[tuple[Any, ...], list[ServingPoint]] = defaultdict(list)
    for p in points.select_related("result").order_by("gpu_id", "gpu_count", "-measured_on", "id"):
        lab = p.result.trust == TrustLabel.LAB
        key = (p.result_id,) if lab else (p.gpu_id, p.gpu_count, p.model, p.weight_precision, p.quant, p.scenario,
                                          p.concurrency, p.input_tokens, p.output_tokens, p.engine_class)  # fmt: skip
        groups[key].append(p)
    out: dict[int, list[MeasuredServing]] = defaultdict(list)
    for group in groups.values():
        p = group[0]
        if p.result.trust != TrustLabel.LAB and len({g.result.submitter_key for g in group}) < MIN_COMMUNITY_N:
            continue
        users = [g.tokens_per_s_per_user for g in group if g.tokens_per_s_per_user]
        energies = [(g.joules_per_token, g.power_w) for g in group if g.joules_per_token is not None and g.power_w]
        energy_whole = len(energies) == len(group)
        label = " · ".join(
            part
            for part in (
                p.source_title,
                str(scenarios.get(p.scenario, p.scenario)),
                p.engine,
                p.weight_precision.upper(),
                _("%(input)s/%(output)s tokens") % {"input": p.input_tokens, "output": p.output_tokens}
                if p.input_tokens and p.output_tokens
                else "",
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
                statistics.median(g.tokens_per_s_per_gpu for g in group),
                statistics.median(users) if len(users) == len(group) else None,
                label,
                p.source_url,
                p.measured_on,
                len(group),
                p.input_tokens,
                p.output_tokens,
                p.engine_class,
                statistics.median(e[0] for e in energies) if energy_whole else None,
                statistics.median(e[1] for e in energies) if energy_whole else None,
            )  # fmt: skip
        )
    return dict(out)


# The request shape estimates are priced at: 1,024 prompt and 1,024 output tokens, the middle
# of the published sweeps (SemiAnalysis InferenceX, TensorRT-LLM's performance overview).
ESTIMATE_INPUT_TOKENS = 1024
ESTIMATE_OUTPUT_TOKENS = 1024


def estimate_engine(vendor_slug: str) -> str:
    """The engine class an estimate assumes: TensorRT-LLM on NVIDIA GPUs (what their published
    figures run), vLLM/SGLang elsewhere."""
    return "tensorrt-llm" if vendor_slug == "nvidia" else "vllm-sglang"


@dataclass(frozen=True)
class ServingChoice:
    """A GPU's figure at the target in its best configuration, and what was weighed."""

    figure: LlmFigure
    target: str
    rented_counts: tuple[int, ...]  # counts current offers rent (empty: no offer on record)
    measured_unreached: bool  # measured points exist but none reaches the target in a rentable count
    does_not_fit: bool = False  # no rentable configuration holds the model
    measured: tuple[MeasuredServing, ...] = ()  # every measured point of the model class and precision
    curve: tuple[tuple[float, float], ...] = ()  # the model's (tokens/s per user, per GPU) of the configuration
    curve_label: str = ""
    curve_error_pct: float | None = None
    curve_loads: tuple[float, ...] = ()  # sequences in flight per GPU at each point of the curve
    power_key: str = ""  # its power curve (llm.serving.energy.power_curve_key): GPU class and model size
    board_limit_w: float | None = None  # the catalogue's TDP, which caps an estimated power


def _measured_at(
    points: list[MeasuredServing], *, target: float | None, allowed: frozenset[int] | None
) -> tuple[float, MeasuredServing, int] | None:
    """The best measured (tokens/s per GPU, point quoted, results behind it) over the rentable counts."""
    # A curve: one configuration (GPUs, link, precision) serving one request shape on one engine
    # class; points of different shapes lie on different curves and are never interpolated across.
    by_configuration: dict[tuple[Any, ...], list[MeasuredServing]] = defaultdict(list)
    for point in points:
        if allowed is None or point.gpu_count in allowed:
            key = (point.gpu_count, point.interconnect, point.precision, point.input_tokens, point.output_tokens,
                   point.engine_class)  # fmt: skip
            by_configuration[key].append(point)
    best: tuple[float, MeasuredServing, int] | None = None
    for group in by_configuration.values():
        value = throughput_at_target(
            [CurvePoint(p.tokens_per_s_per_user, p.tokens_per_s_per_gpu) for p in group], target=target
        )
        if value is None:
            continue
        # The point the figure rests on: the one closest to it from above (or the best one).
        # At a target only points with a user rate can carry the figure (an Offline point cannot).
        candidates = [p for p in group if p.tokens_per_s_per_user] if target is not None else group
        quoted = min(candidates, key=lambda p: (p.tokens_per_s_per_gpu < value, abs(p.tokens_per_s_per_gpu - value)))
        if best is None or value > best[0]:
            best = (value, quoted, sum(p.results for p in group))
    return best


def _outside_reasons(fit: ServingFit | None, *, hardware_class: str, engine: str, tp: int) -> tuple[str, ...]:
    """Why an estimate lies outside the measured range (llm.estimate.coverage.REASONS plus
    "engine"), empty when it lies inside."""
    if fit is None or fit.inside(hardware_class=hardware_class, engine=engine, tp=tp):
        return ()
    regimes = fit.regimes
    if not any(r[0] == hardware_class for r in regimes):
        return ("architecture",)
    if not any(r[:2] == (hardware_class, engine) for r in regimes):
        return ("engine",)
    return ("configuration",)


def _tp_sizes(count: int) -> list[int]:
    return [tp for tp in ESTIMATE_COUNTS if tp <= count and count % tp == 0]


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
) -> dict[int, ServingChoice]:
    """Per GPU: the measured figure at the target in a rentable configuration, else the serving
    model's estimate in the rentable configuration (and tensor-parallel split) with the most
    tokens/s per GPU at the target (see the module doc)."""
    gpus = list(gpus)
    measured = serving_points_measured(
        gpu_ids=[g.id for g in gpus],
        size=size,
        precision_family=precision_family,
        include_all_rows=include_all_rows,
    )
    fit = serving_fit_current()
    links = allreduce_measured(gpu_ids=[g.id for g in gpus])
    model = SIZE_CLASSES[size].reference
    return {
        gpu.id: _gpu_choice(
            gpu,
            points=measured.get(gpu.id, []),
            counts=rented.get(gpu.id, frozenset()),
            peaks=peaks_by_gpu.get(gpu.id, {}),
            precision_family=precision_family,
            target=target,
            target_rate=target_rate,
            fit=fit,
            links=links,
            model=model,
        )
        for gpu in gpus
    }


def _gpu_choice(
    gpu: Gpu,
    *,
    points: list[MeasuredServing],
    counts: frozenset[int],
    peaks: Mapping[str, float | None],
    precision_family: str,
    target: str,
    target_rate: float | None,
    fit: ServingFit | None,
    links: Mapping[int, Sequence[MeasuredAllReduce]],
    model: str,
) -> ServingChoice:
    """One GPU's choice (:func:`llm_serving_choices`)."""
    precision = _serving_precision(peaks, precision_family)
    engine = estimate_engine(gpu.vendor.slug)
    hardware = serving_hardware(gpu, peaks=peaks)
    scenario = "offline" if target_rate is None else "server"
    best: tuple[float, ServingEstimate] | None = None
    fitting: ServingEstimate | None = None
    for count in sorted(c for c in (counts or ESTIMATE_COUNTS) if c <= MAX_GPUS):
        for tp in _tp_sizes(count):
            estimate = serving_curve(gpu=gpu, model=model, precision=precision, gpu_count=count, tp=tp,
                                     input_len=ESTIMATE_INPUT_TOKENS, output_len=ESTIMATE_OUTPUT_TOKENS,
                                     engine=engine, fit=fit, links=links, hardware=hardware,
                                     scenario=scenario)  # fmt: skip
            if not estimate.fits:
                continue
            fitting = fitting or estimate
            at = estimate.at(target_rate)
            if at is not None and (best is None or at.tokens_per_s_per_gpu > best[0]):
                best = (at.tokens_per_s_per_gpu, estimate)
    chosen = best[1] if best else fitting
    curve = tuple((p.tokens_per_s_per_user, p.tokens_per_s_per_gpu) for p in chosen.points) if chosen else ()
    curve_label = _estimate_label(MODEL_SHAPES[model].name, precision, chosen) if chosen else ""
    error_pct = chosen.error_pct if chosen else None
    loads = tuple(p.concurrency / chosen.tp for p in chosen.points) if chosen else ()
    power_key = power_curve_key(gpu_class=hardware.hardware_class, size=model_size_class(model) or "")

    def choice(figure: LlmFigure, *, unreached: bool = False, does_not_fit: bool = False) -> ServingChoice:
        return ServingChoice(figure, target, tuple(sorted(counts)), unreached, does_not_fit, tuple(points), curve,
                             curve_label, error_pct, loads, power_key, gpu.tdp_w)  # fmt: skip

    found = _measured_at(points, target=target_rate, allowed=counts or None)
    if found is not None:
        value, quoted, n = found
        return choice(LlmFigure("measured", value, quoted.gpu_count, n, len({p.label for p in points}), quoted.label,
                                quoted.url, quoted.precision, True, None, None, 0))  # fmt: skip
    if best is None:
        figure = LlmFigure("estimated", None, chosen.gpu_count if chosen else 0, 0, 0, curve_label, "", precision,
                           chosen is not None, None, None, 0)  # fmt: skip
        return choice(figure, unreached=bool(points), does_not_fit=chosen is None)
    rate, estimate = best
    outside = _outside_reasons(fit, hardware_class=hardware.hardware_class, engine=engine, tp=estimate.tp)
    configuration = "single" if estimate.tp == 1 else gpu_link_for(gpu).kind(estimate.tp)
    return choice(LlmFigure("estimated", rate, estimate.gpu_count, 0, 0, curve_label, "", precision, True, None,
                            estimate.error_pct, 0, outside, configuration))  # fmt: skip


def gpu_serving_choices(*, gpu: Gpu, target: str) -> dict[str, ServingChoice]:
    """size class -> a GPU's serving choice at the target for every model class it has measured
    serving points of (its page's curves): its measured points and the model's curve of the
    configuration chosen, in a rentable count."""
    sizes = sorted(
        {
            size
            for model in ServingPoint.objects.trusted().filter(gpu=gpu).values_list("model", flat=True).distinct()
            if (size := model_size_class(model)) in SIZE_CLASSES
        }
    )
    if not sizes:
        return {}
    peaks = {
        p["precision"]: (p["dense_tflops"] if p["supported"] else None)
        for p in TensorPeak.objects.filter(gpu=gpu).values("precision", "supported", "dense_tflops")
    }
    rented = gpu_counts_rented(gpu_ids=[gpu.id])
    return {
        size: llm_serving_choices(
            size=size,
            precision_family="any",
            include_all_rows=False,
            target=target,
            target_rate=target_rate(target),
            gpus=[gpu],
            peaks_by_gpu={gpu.id: peaks},
            rented=rented,
        )[gpu.id]  # fmt: skip
        for size in sizes
    }


def serving_error_summary(*, target_rate: float | None) -> tuple[float | None, float | None]:
    """The serving model's held-out median error (per cent) at this kind of target, inside and
    outside the measured range; None without a stored fit or enough held-out points."""
    fit = serving_fit_current()
    if fit is None:
        return None, None
    scenario = "offline" if target_rate is None else "server"
    return fit.error_pct(scenario=scenario, engine="", inside=True), fit.error_pct(
        scenario=scenario, engine="", inside=False
    )


def _estimate_label(model: str, precision: str, estimate: ServingEstimate) -> str:
    engine = dict(EngineClass.choices).get(estimate.engine, estimate.engine)
    if estimate.tp == estimate.gpu_count:
        split = _("tensor parallel over %(tp)d") % {"tp": estimate.tp} if estimate.tp > 1 else _("one GPU")
    else:
        split = _("%(replicas)d replicas of tensor parallel %(tp)d") % {
            "replicas": estimate.replicas,
            "tp": estimate.tp,
        }
    return _("serving model · %(model)s · %(precision)s · %(engine)s · %(split)s · %(input)d/%(output)d tokens") % {
        "model": model,
        "precision": precision.upper(),
        "engine": engine,
        "split": split,
        "input": ESTIMATE_INPUT_TOKENS,
        "output": ESTIMATE_OUTPUT_TOKENS,
    }
