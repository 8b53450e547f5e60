"""Reads for the LLM serving ranking: per GPU, its answer to the page's serving question
(``llm.selectors.answers``) as a ranking figure, with the points and the model's curve behind it
(the curves chart). The question is the page's model, lengths, precision and target; a GPU no
current offer rents is answered at 1, 2, 4 and 8 GPUs, without a price unless the user gives one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.utils.translation import gettext as _

from catalog.models import Gpu, TensorPeak
from catalog.selectors.prices import gpu_counts_rented
from llm.models import ServingPoint
from llm.question import ServingQuestion
from llm.selectors.answers import GpuAnswers, serving_answers
from llm.selectors.figures import LlmFigure, gpu_link_for
from llm.selectors.serving import serving_fit_current
from llm.serving.answer import ESTIMATED, MEASURED, UNREACHABLE, ServingAnswer, WorkloadPoint
from llm.serving.energy import power_curve_key
from llm.serving.fit import ServingFit
from llm.serving.physics import hardware_class
from llm.serving.shapes import SIZE_CLASSES, model_size_class


@dataclass(frozen=True)
class ServingChoice:
    """A GPU's answer at the target in its best configuration, and what was weighed."""

    figure: LlmFigure
    question: ServingQuestion
    answers: GpuAnswers
    measured: tuple[WorkloadPoint, ...] = ()  # every point of the model and precision class (any workload)
    curve: tuple[tuple[float, float], ...] = ()  # the model's (per user, per GPU) of the configuration, anchored
    curve_label: str = ""
    curve_error_pct: float | None = None
    curve_loads: tuple[float, ...] = ()  # sequences in flight per GPU at each point of the curve
    power_key: str = ""  # its power curve (llm.serving.energy.power_curve_key): GPU class and model size
    board_limit_w: float | None = None  # the catalogue's TDP, which caps an estimated power

    @property
    def answer(self) -> ServingAnswer | None:
        return self.answers.best

    @property
    def rented_counts(self) -> tuple[int, ...]:
        return self.answers.rented_counts

    @property
    def unreachable(self) -> bool:
        return self.answer is not None and self.answer.basis == UNREACHABLE

    @property
    def does_not_fit(self) -> bool:
        return self.answers.does_not_fit


def _outside_reasons(fit: ServingFit | None, *, hardware_class: str, engine: str, tp: int) -> tuple[str, ...]:
    """Why an estimate lies outside the measured range of the stored fit: no point of its hardware
    class ("architecture"), none of its engine class on it ("engine"), or none of its kind of
    configuration ("configuration"); empty inside it."""
    if fit is None or fit.inside(hardware_class=hardware_class, engine=engine, tp=tp):
        return ()
    if not any(r[0] == hardware_class for r in fit.regimes):
        return ("architecture",)
    if not any(r[:2] == (hardware_class, engine) for r in fit.regimes):
        return ("engine",)
    return ("configuration",)


def answer_figure(
    answer: ServingAnswer | None, *, precision: str, gpu: Gpu, fit: ServingFit | None = None
) -> LlmFigure:
    """A serving answer as a ranking figure (the row's tokens/s per GPU, basis, source)."""
    if answer is None:
        return LlmFigure(ESTIMATED, None, 0, 0, 0, "", "", precision, False, None, None, 0)
    if answer.basis == MEASURED:
        return LlmFigure(MEASURED, answer.tokens_per_s_per_gpu, answer.gpu_count, answer.results, answer.results,
                         answer.source, answer.url, answer.precision, True, None, None, 0,
                         floor=answer.floor)  # fmt: skip
    if answer.basis == UNREACHABLE:
        return LlmFigure(UNREACHABLE, None, answer.gpu_count, 0, 0, answer.source, "", answer.precision, True, None,
                         answer.error_pct, 0)  # fmt: skip
    configuration = "single" if answer.tp == 1 else gpu_link_for(gpu).kind(answer.tp)
    hardware = hardware_class(architecture=gpu.architecture.slug if gpu.architecture else "", segment=gpu.segment)
    outside = _outside_reasons(fit, hardware_class=hardware, engine=answer.engine, tp=answer.tp)
    anchor = answer.anchor
    return LlmFigure(ESTIMATED, answer.tokens_per_s_per_gpu, answer.gpu_count, 0, 0, answer.source, "",
                     answer.precision, True, None, answer.error_pct, 0, outside, configuration,
                     anchor=_anchor_text(answer) if anchor else "", capped=answer.capped,
                     interval=answer.tokens_per_s_per_gpu_interval,
                     interval_kind=answer.interval_kind)  # fmt: skip


def _anchor_text(answer: ServingAnswer) -> str:
    anchor = answer.anchor
    if anchor is None:
        return ""
    values = {"count": len(anchor.points), "factor": anchor.factor, "spread": anchor.spread_pct,
              "gpus": "/".join(str(c) for c in anchor.counts)}  # fmt: skip
    if anchor.counts:
        text = _(
            "anchored on %(count)d point(s) of this GPU measured at this workload on %(gpus)s GPU(s): ×%(factor).2f "
            "(points within ±%(spread).0f %%), scaled by the model to %(here)d GPU(s)"
        ) % {**values, "here": answer.gpu_count}
    else:
        text = (
            _("anchored on %(count)d measured point(s) of this GPU: ×%(factor).2f (points within ±%(spread).0f %%)")
            % values
        )
    rate, measured = answer.tokens_per_s_per_gpu, anchor.measured_max
    if rate is not None and measured is not None and anchor.counts and rate > measured:
        fewer = answer.gpu_count < min(anchor.counts)
        why = (
            _("fewer GPUs per replica spend less of each step on all-reduce")
            if fewer
            else _("more GPUs hold more sequences at once")
        )
        text += " · " + _(
            "above the %(measured)s tokens/s per GPU measured on %(gpus)s GPU(s), as the model says: %(why)s"
        ) % {
            "measured": f"{measured:,.0f}",
            "gpus": values["gpus"],
            "why": why,
        }
    if anchor.factor != anchor.raw:
        text += " " + _("(the points alone say ×%(raw).2f; the anchor is bounded)") % {"raw": anchor.raw}
    if answer.capped:
        text += " · " + _("held at the throughput measured at the fastest measured rate per user")
    return text


def llm_serving_choices(
    *,
    question: ServingQuestion,
    include_all_rows: bool,
    gpus: Iterable[Gpu],
    peaks_by_gpu: Mapping[int, Mapping[str, float | None]],
    rented: Mapping[int, frozenset[int]],
) -> dict[int, ServingChoice]:
    """Per GPU: its answer to ``question`` in its best rentable configuration."""
    gpus = list(gpus)
    fit = serving_fit_current()
    answers = serving_answers(question=question, gpus=gpus, rented=rented, peaks_by_gpu=peaks_by_gpu,
                              include_all_mlperf=include_all_rows, fit=fit)  # fmt: skip
    out = {}
    for gpu in gpus:
        a = answers[gpu.id]
        hardware = hardware_class(architecture=gpu.architecture.slug if gpu.architecture else "", segment=gpu.segment)
        out[gpu.id] = ServingChoice(answer_figure(a.best, precision=a.precision, gpu=gpu, fit=fit), question, a,
                                    a.points, a.curve, a.curve_label, a.curve_error_pct, a.curve_loads,
                                    power_curve_key(gpu_class=hardware, size=model_size_class(question.model) or ""),
                                    gpu.tdp_w)  # fmt: skip
    return out


def gpu_serving_choices(*, gpu: Gpu, question: ServingQuestion) -> dict[str, ServingChoice]:
    """size class -> a GPU's answer to the question for the reference model of every class it has
    measured serving points of (its page's curves), in a rentable count."""
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
            question=ServingQuestion(
                SIZE_CLASSES[size].reference,
                question.input_len,
                question.output_len,
                question.precision,
                question.target,
                question.engine,
            ),
            include_all_rows=False,
            gpus=[gpu],
            peaks_by_gpu={gpu.id: peaks},
            rented=rented,
        )[gpu.id]  # fmt: skip
        for size in sizes
    }


def serving_error_summary(*, target_rate: float | None) -> float | None:
    """The serving model's held-out median error (per cent) at this kind of target, over every
    held-out point; None without a stored fit or enough held-out points. Each row carries the
    error that applies to it; this is the one sentence a page says about them."""
    fit = serving_fit_current()
    if fit is None:
        return None
    scenario = "offline" if target_rate is None else "server"
    return fit.error_pct(scenario=scenario, engine="", inside=True)
