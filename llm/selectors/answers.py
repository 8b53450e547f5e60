"""Reads of the serving answers: for a question (``llm.question.ServingQuestion``) and some GPUs,
each GPU's answer in every configuration it can be rented in, and its best one
(``llm.serving.answer``). The rankings, tier lists, GPU pages, compare, ``/fit/``,
``/api/v1/fit/`` and ``/api/v1/fit/serving/`` all read their serving figures here, so one question
gets one figure everywhere (tests/test_llm_one_answer.py).

Stable interface
----------------
``serving_answers(*, question, gpus, rented=None, peaks_by_gpu=None, include_all_mlperf=False,
fit=None, links=None) -> dict[int, GpuAnswers]``
    ``gpus``: catalogue GPUs with vendor and architecture loaded; ``rented``: gpu id -> the GPU
    counts current offers rent in one machine (read when None). A GPU is answered at the counts
    up to eight its offers rent, or at 1, 2, 4 and 8 where no offer rents it (its row has no
    price unless the user gives one). Reads the points, tensor peaks, the stored fit and measured
    all-reduce figures once (a fixed number of queries); never fits.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext as _

from benchmarks_app.comparison_rules import MIN_COMMUNITY_N
from benchmarks_app.models import SourceKind, TrustLabel
from catalog.models import Gpu, TensorPeak
from catalog.selectors.prices import gpu_counts_rented
from llm.models import EngineClass, PerUserBasis, Scenario, ServingPoint
from llm.question import PRECISION_CLASS, ServingQuestion, models_answering
from llm.selectors.serving import (
    MeasuredAllReduce,
    ServingEstimate,
    allreduce_measured,
    serving_curve,
    serving_fit_current,
    serving_hardware,
)
from llm.serving.answer import (
    ANCHOR_BOUNDS,
    ESTIMATED,
    Anchor,
    ModelledConfiguration,
    ServingAnswer,
    WorkloadPoint,
    anchor_from,
    anchored_curve,
    best_answer,
    configuration_answer,
)
from llm.serving.fit import ServingFit
from llm.serving.physics import Hardware, curve_at_interactivity, roofline_tokens_per_s_per_gpu

MAX_GPUS = 8
UNRENTED_COUNTS = (1, 2, 4, 8)
# Engine classes that batch many users; one stream on llama.cpp answers the chat question only.
_BATCHED_ENGINES = frozenset({EngineClass.TENSORRT_LLM, EngineClass.VLLM_SGLANG, EngineClass.PYTORCH,
                              EngineClass.OTHER})  # fmt: skip
# MLPerf rows of the closed division and of systems on sale, unless the page asks for all of them.
_MLPERF_DEFAULT = Q(result__params__division="closed", result__params__availability="available")


def serving_counts(rented: frozenset[int] | None) -> tuple[tuple[int, bool], ...]:
    """(GPU count, rented) a GPU is answered at: the counts up to eight current offers rent in one
    machine, else 1, 2, 4 and 8 unrented (tensor parallelism stays within one machine)."""
    counts = sorted(c for c in (rented or ()) if 1 <= c <= MAX_GPUS)
    if counts:
        return tuple((c, True) for c in counts)
    return tuple((c, False) for c in UNRENTED_COUNTS)


def _tp_sizes(count: int) -> list[int]:
    return [tp for tp in (1, 2, 4, 8) if tp <= count and count % tp == 0]


@dataclass(frozen=True)
class GpuAnswers:
    """One GPU's answers to a question: ``best`` over its counts (None: the model fits on none of
    them), ``by_count`` the best split of every count that fits, the points it has of the model
    and precision class (at any workload: the chart draws them), and its anchor."""

    gpu_id: int
    gpu_slug: str
    precision: str
    engine: str
    counts: tuple[tuple[int, bool], ...]
    best: ServingAnswer | None
    by_count: tuple[ServingAnswer, ...]
    points: tuple[WorkloadPoint, ...]
    anchor: Anchor | None
    curve: tuple[tuple[float, float], ...] = ()  # the best configuration's (per user, per GPU), anchored
    curve_label: str = ""
    curve_error_pct: float | None = None
    curve_loads: tuple[float, ...] = ()  # sequences in flight per GPU at each point of ``curve``
    not_fitting_reason: str = ""
    anchor_points: tuple[str, ...] = field(default_factory=tuple)

    @property
    def does_not_fit(self) -> bool:
        return self.best is None

    @property
    def rented_counts(self) -> tuple[int, ...]:
        return tuple(c for c, rented in self.counts if rented)


@dataclass(frozen=True)
class _Point:
    """A measured point as read, before it is matched to a question."""

    gpu_id: int
    model: str
    scenario: str
    source_kind: str
    point: WorkloadPoint
    tp: int | None
    measured_on: dt.date


def _points_read(*, question: ServingQuestion, gpu_ids: Iterable[int], include_all_mlperf: bool) -> list[_Point]:
    """The trusted batched points of the question's model (or the same architecture) on these GPUs.
    A lab point counts alone; community points count once MIN_COMMUNITY_N submitters measured the
    same configuration, at their median (the rule of every use case). One query."""
    points = (
        ServingPoint.objects.trusted()
        .for_models(models_answering(question.model))
        .filter(gpu_id__in=list(gpu_ids))
        .exclude(scenario=Scenario.SINGLE_STREAM)
    )
    if not include_all_mlperf:
        points = points.filter(~Q(source_kind=SourceKind.MLPERF) | _MLPERF_DEFAULT)
    groups: dict[tuple[Any, ...], list[ServingPoint]] = defaultdict(list)
    for p in points.select_related("result").order_by("gpu_id", "gpu_count", "-measured_on", "id"):
        lab = p.result.trust == TrustLabel.LAB
        key = (p.result_id,) if lab else (p.gpu_id, p.gpu_count, p.model, p.weight_precision, p.quant, p.scenario,
                                          p.concurrency, p.input_tokens, p.output_tokens, p.engine_class)  # fmt: skip
        groups[key].append(p)
    scenarios = dict(Scenario.choices)
    out = []
    for group in groups.values():
        p = group[0]
        if p.result.trust != TrustLabel.LAB and len({g.result.submitter_key for g in group}) < MIN_COMMUNITY_N:
            continue
        users = [g.tokens_per_s_per_user for g in group if g.tokens_per_s_per_user]
        decode_only = p.source_kind == SourceKind.CLIENT
        # Measured energy where every result behind the point carries one (their median).
        energies = [(g.joules_per_token, g.power_w) for g in group if g.joules_per_token is not None and g.power_w]
        lengths = (
            _("%(input)s/%(output)s tokens") % {"input": p.input_tokens, "output": p.output_tokens}
            if p.input_tokens and p.output_tokens
            else _("request lengths not known")
        )
        label = _point_label(
            p.source_title,
            kind=_("decode microbenchmark (no prefill, no scheduler)") if decode_only else str(
                scenarios.get(p.scenario, p.scenario)),
            engine=p.engine, precision=p.weight_precision.upper(), lengths=lengths,
            length_pair=f"{p.input_tokens}/{p.output_tokens}",
        )  # fmt: skip
        params = p.result.params if isinstance(p.result.params, dict) else {}
        given = params.get("tp") or params.get("tensor_parallel")
        tp = int(given) if isinstance(given, int | float) and given >= 1 and p.gpu_count % int(given) == 0 else None
        point = WorkloadPoint(
            gpu_count=p.gpu_count,
            precision=p.weight_precision,
            engine_class=p.engine_class,
            input_tokens=p.input_tokens,
            output_tokens=p.output_tokens,
            tokens_per_s_per_gpu=statistics.median(g.tokens_per_s_per_gpu for g in group),
            tokens_per_s_per_user=statistics.median(users) if len(users) == len(group) else None,
            joules_per_token=statistics.median(e[0] for e in energies) if len(energies) == len(group) else None,
            power_w=statistics.median(e[1] for e in energies) if len(energies) == len(group) else None,
            label=label,
            url=p.source_url,
            results=len(group),
            latency_bound=p.per_user_basis == PerUserBasis.LATENCY_FLOOR,
            decode_only=decode_only,
            tp=tp,
        )
        out.append(_Point(p.gpu_id, p.model, p.scenario, p.source_kind, point, tp, p.measured_on))
    return out


def _point_label(title: str, *, kind: str, engine: str, precision: str, lengths: str, length_pair: str) -> str:
    """A measured point's line: its source's title, then what the title does not say already (an
    InferenceX run's title names its engine, precision and lengths; an MLPerf row's none of them)."""
    folded = title.casefold()
    title_parts = {part.strip() for part in folded.split("·")}
    parts = (
        (title, False),
        (kind, False),
        (engine, engine.casefold() in folded),
        (precision, precision.casefold() in folded.split()),
        (lengths, length_pair in title_parts),
    )
    return " · ".join(part for part, said in parts if part and not said)


def _answers_workload(point: _Point, *, question: ServingQuestion, precision: str) -> bool:
    """Whether a point measures the question on its GPU: the precision class the GPU answers in,
    the question's lengths, a batched engine (the question's where it fixes one), a full serving
    run (a decode microbenchmark has no prefill and no scheduler)."""
    p = point.point
    return (
        PRECISION_CLASS.get(p.precision) == PRECISION_CLASS.get(precision)
        and (question.precision not in PRECISION_CLASS or p.precision == precision)
        and question.lengths_match(p.input_tokens, p.output_tokens)
        and p.engine_class in _BATCHED_ENGINES
        and (question.engine == "auto" or p.engine_class == question.engine)
        and not p.decode_only
    )


def _anchors_on(point: _Point, *, precision: str, engine: str) -> bool:
    """Whether a point can anchor the GPU's estimate: the same precision class and engine class,
    batched, full serving, with known lengths (the model prices them)."""
    p = point.point
    return (
        PRECISION_CLASS.get(p.precision) == PRECISION_CLASS.get(precision)
        and p.engine_class == engine
        and not p.decode_only
        and p.input_tokens is not None
        and p.output_tokens is not None
    )


def serving_answers(
    *,
    question: ServingQuestion,
    gpus: Iterable[Gpu],
    rented: Mapping[int, frozenset[int]] | None = None,
    peaks_by_gpu: Mapping[int, Mapping[str, float | None]] | None = None,
    include_all_mlperf: bool = False,
    fit: ServingFit | None = None,
    links: Mapping[int, Sequence[MeasuredAllReduce]] | None = None,
) -> dict[int, GpuAnswers]:
    """Per GPU, its answers to ``question`` (module doc)."""
    gpus = list(gpus)
    ids = [g.id for g in gpus]
    if peaks_by_gpu is None:
        loaded: dict[int, dict[str, float | None]] = defaultdict(dict)
        for peak in TensorPeak.objects.filter(gpu_id__in=ids).values("gpu_id", "precision", "supported",
                                                                      "dense_tflops"):  # fmt: skip
            loaded[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None
        peaks_by_gpu = loaded
    rented = gpu_counts_rented(gpu_ids=ids) if rented is None else rented
    fit = fit if fit is not None else serving_fit_current()
    links = allreduce_measured(gpu_ids=ids) if links is None else links
    by_gpu: dict[int, list[_Point]] = defaultdict(list)
    for point in _points_read(question=question, gpu_ids=ids, include_all_mlperf=include_all_mlperf):
        by_gpu[point.gpu_id].append(point)
    return {
        gpu.id: gpu_answers(
            gpu,
            question=question,
            peaks=peaks_by_gpu.get(gpu.id, {}),
            counts=serving_counts(rented.get(gpu.id)),
            points=by_gpu.get(gpu.id, []),
            fit=fit,
            links=links,
        )
        for gpu in gpus
    }


def gpu_answers(
    gpu: Gpu,
    *,
    question: ServingQuestion,
    peaks: Mapping[str, float | None],
    counts: tuple[tuple[int, bool], ...],
    points: Sequence[_Point],
    fit: ServingFit | None,
    links: Mapping[int, Sequence[MeasuredAllReduce]],
) -> GpuAnswers:
    """One GPU's answers (:func:`serving_answers`)."""
    precision = question.precision_for(peaks)
    engine = question.engine_for(gpu.vendor.slug)
    hardware = serving_hardware(gpu, peaks=peaks)
    scenario = "offline" if question.target is None else "server"

    # A curve is one replica's: the GPU count only says how many replicas of ``tp`` run it, so
    # every count with the same split reads one evaluation (the anchors' too).
    replica_curves: dict[tuple[int, int, int, str], ServingEstimate] = {}

    def curve(count: int, tp: int, input_len: int, output_len: int, at_precision: str) -> ServingEstimate:
        key = (tp, input_len, output_len, at_precision)
        if key not in replica_curves:
            replica_curves[key] = serving_curve(gpu=gpu, model=question.model, precision=at_precision, gpu_count=tp,
                                                tp=tp, input_len=input_len, output_len=output_len, engine=engine,
                                                fit=fit, links=links, hardware=hardware, scenario=scenario)  # fmt: skip
        estimate = replica_curves[key]
        return estimate if estimate.gpu_count == count else replace(estimate, gpu_count=count)

    anchoring = [p for p in points if _anchors_on(p, precision=precision, engine=engine)]
    anchor = _anchor(points=anchoring, curve=curve, hardware=hardware)
    at_lengths = [p for p in anchoring if question.lengths_match(p.point.input_tokens, p.point.output_tokens)]
    nearest: dict[tuple[int, ...], Anchor | None] = {}

    def count_anchor(count: int) -> Anchor | None:
        """The anchor of an estimate on ``count`` GPUs: the points at the question's lengths at
        the nearest measured count (llm.serving.answer), else the GPU's anchor."""
        counts = _nearest_counts(count, {p.point.gpu_count for p in at_lengths})
        if not counts:
            return anchor
        if counts not in nearest:
            chosen = [p for p in at_lengths if p.point.gpu_count in counts]
            found = _anchor(points=chosen, curve=curve, hardware=hardware)
            best = max(p.point.tokens_per_s_per_gpu for p in chosen)
            nearest[counts] = replace(found, counts=counts, measured_max=best) if found else None
        return nearest[counts] or anchor

    at_workload = [p.point for p in points if _answers_workload(p, question=question, precision=precision)]
    answers: list[ServingAnswer] = []
    estimates: dict[int, list[tuple[ModelledConfiguration, ServingEstimate]]] = {}
    not_fitting = ""
    for count, _rented in counts:
        modelled = []
        here = count_anchor(count)
        for tp in _tp_sizes(count):
            estimate = curve(count, tp, question.input_len, question.output_len, precision)
            if not estimate.fits:
                not_fitting = _not_fitting_reason(estimate)  # the largest count and split tried last
                continue
            factor = _bounded_factor(here, estimate, hardware)
            modelled.append((ModelledConfiguration(tp, anchored_curve(estimate.points, factor),
                                                   _estimate_label(question, precision, estimate, here, factor),
                                                   estimate.error_pct, estimate.inside, estimate.allreduce_source,
                                                   estimate.allreduce_priced, estimate.interval,
                                                   estimate.interval_kind), estimate))  # fmt: skip
        estimates[count] = modelled
        answer = configuration_answer(
            gpu_slug=gpu.slug,
            gpu_count=count,
            precision=precision,
            engine=engine,
            target=question.target,
            modelled=[m for m, _e in modelled],
            # Replicas of a measured configuration run as it did: a point on 1 GPU answers 2 and 4.
            measured=[p for p in at_workload if count % p.gpu_count == 0],
            anchor=here,
        )
        if answer is not None:
            answers.append(answer)
    best = best_answer(answers)
    chosen = next((m for m, _e in estimates.get(best.gpu_count, []) if m.tp == best.tp), None) if best else None
    return GpuAnswers(
        gpu_id=gpu.id,
        gpu_slug=gpu.slug,
        precision=precision,
        engine=engine,
        counts=counts,
        best=best,
        by_count=tuple(answers),
        points=tuple(
            p.point for p in points if PRECISION_CLASS.get(p.point.precision) == PRECISION_CLASS.get(precision)
        ),  # fmt: skip
        anchor=anchor,
        curve=tuple((p.tokens_per_s_per_user, p.tokens_per_s_per_gpu) for p in chosen.points) if chosen else (),
        curve_label=chosen.label if chosen else "",
        curve_error_pct=chosen.error_pct if chosen else None,
        curve_loads=tuple(p.concurrency / chosen.tp for p in chosen.points) if chosen else (),
        not_fitting_reason=not_fitting if best is None else "",
    )


def _not_fitting_reason(estimate: ServingEstimate) -> str:
    c = estimate.curve
    if c.reason == "does not fit":
        return _("does not fit on %(count)d: %(weights).1f GiB of weights per GPU, %(usable).1f GiB usable") % {
            "count": estimate.gpu_count,
            "weights": c.weights_gib_per_gpu,
            "usable": c.usable_gib_per_gpu,
        }
    return c.reason


def _nearest_counts(count: int, measured: set[int]) -> tuple[int, ...]:
    """The measured GPU counts nearest ``count`` on a doubling scale (both where two are as near)."""
    if not measured:
        return ()
    distance = {c: abs(math.log2(c / count)) for c in measured}
    closest = min(distance.values())
    return tuple(sorted(c for c, d in distance.items() if d == closest))


def _anchor(*, points: Sequence[_Point], curve: Any, hardware: Hardware) -> Anchor | None:
    """The GPU's anchor (llm.serving.answer): each point against the model's figure for its own
    configuration and lengths, at its user rate (its most throughput where it has none)."""
    ratios = []
    cache: dict[tuple[int, int, int, int, str], ServingEstimate] = {}
    for p in points:
        w = p.point
        if not w.input_tokens or not w.output_tokens:
            continue
        best: float | None = None
        for tp in [p.tp] if p.tp else _tp_sizes(w.gpu_count):
            key = (w.gpu_count, tp, w.input_tokens, w.output_tokens, w.precision)
            if key not in cache:
                cache[key] = curve(w.gpu_count, tp, w.input_tokens, w.output_tokens, w.precision)
            estimate = cache[key]
            if not estimate.fits:
                continue
            at = curve_at_interactivity(estimate.points, w.tokens_per_s_per_user)
            if at is not None and (best is None or at.tokens_per_s_per_gpu > best):
                best = at.tokens_per_s_per_gpu
        if best:
            ratios.append((w.tokens_per_s_per_gpu / best, w.label))
    return anchor_from(ratios)


def _bounded_factor(anchor: Anchor | None, estimate: ServingEstimate, hardware: Hardware) -> float:
    """The anchor's factor for one curve, no faster than the datasheet roofline allows at any of
    its operating points."""
    if anchor is None:
        return 1.0
    factor = anchor.factor
    if factor <= 1.0 or estimate.workload is None:
        return factor
    for p in estimate.points:
        roof = roofline_tokens_per_s_per_gpu(w=estimate.workload, hw=hardware, batch=p.concurrency)
        if p.tokens_per_s_per_gpu > 0 and math.isfinite(roof):
            factor = min(factor, max(roof / p.tokens_per_s_per_gpu, ANCHOR_BOUNDS[0]))
    return max(factor, 1.0) if anchor.factor >= 1.0 else factor


def _estimate_label(
    question: ServingQuestion, precision: str, estimate: ServingEstimate, anchor: Anchor | None, factor: float
) -> str:
    engine = dict(EngineClass.choices).get(estimate.engine, estimate.engine)
    if estimate.tp == estimate.gpu_count:
        split = _("tensor parallel over %(tp)d") % {"tp": estimate.tp} if estimate.tp > 1 else _("one GPU")
    else:
        split = _("%(replicas)d replicas of tensor parallel %(tp)d") % {"replicas": estimate.replicas,
                                                                         "tp": estimate.tp}  # fmt: skip
    label = _("serving model · %(model)s · %(precision)s · %(engine)s · %(split)s · %(input)d/%(output)d tokens") % {
        "model": question.shape.name,
        "precision": precision.upper(),
        "engine": engine,
        "split": split,
        "input": question.input_len,
        "output": question.output_len,
    }
    if anchor is not None and anchor.counts:
        label += " · " + _(
            "anchored on %(count)d point(s) of this GPU measured at these lengths on %(gpus)s GPU(s) (×%(factor).2f), "
            "scaled by the model to this configuration"
        ) % {"count": len(anchor.points), "gpus": "/".join(str(c) for c in anchor.counts), "factor": factor}
    elif anchor is not None:
        label += " · " + _("anchored on %(count)d measured point(s) of this GPU (×%(factor).2f)") % {
            "count": len(anchor.points),
            "factor": factor,
        }
    return label


def answer_is_estimate(answer: ServingAnswer | None) -> bool:
    return answer is not None and answer.basis == ESTIMATED
