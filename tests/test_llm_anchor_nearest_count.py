"""An estimate at a GPU count nobody measured is anchored on the same GPU's points measured at the
question's lengths on the nearest measured count, and scaled from there by the serving model (demo
data): Llama 3.1 405B FP8 on H200, measured by TensorRT-LLM at 1000/1000 on 8 GPUs only.

Before, every count took the GPU's anchor over all its 405B points (ten request shapes, ratios
from 0.85 to 1.13), so a 4-GPU estimate at 1000/1000 leant on 128/128 and 20000/2000 runs."""

from __future__ import annotations

import math

import pytest

from catalog.models import Gpu
from llm.question import ServingQuestion
from llm.selectors.answers import serving_answers
from llm.selectors.serving import serving_curve, serving_fit_current
from llm.selectors.serving_target import answer_figure
from llm.serving.answer import ESTIMATED, MEASURED

pytestmark = pytest.mark.django_db

GPU = "h200-sxm-141-gb"
ALL_COUNTS = frozenset({1, 2, 4, 8})


def _answers(gpu: Gpu, target: float | None):  # type: ignore[no-untyped-def]
    question = ServingQuestion("llama-3.1-405b", 1000, 1000, "fp8", target)
    return question, serving_answers(question=question, gpus=[gpu], rented={gpu.id: ALL_COUNTS})[gpu.id]


def _model_at(gpu: Gpu, count: int, tp: int, target: float | None) -> float:
    estimate = serving_curve(gpu=gpu, model="llama-3.1-405b", precision="fp8", gpu_count=count, tp=tp, input_len=1000,
                             output_len=1000, engine="tensorrt-llm", fit=serving_fit_current())  # fmt: skip
    at = estimate.at(target)
    assert at is not None
    return at.tokens_per_s_per_gpu


def test_the_4_gpu_estimate_is_the_8_gpu_measurement_at_its_lengths_scaled_by_the_model(demo) -> None:  # type: ignore[no-untyped-def]
    gpu = Gpu.objects.with_related().get(slug=GPU)
    question, answers = _answers(gpu, None)
    by_count = {a.gpu_count: a for a in answers.by_count}
    eight, four = by_count[8], by_count[4]
    assert eight.basis == MEASURED
    assert four.basis == ESTIMATED and four.anchor is not None
    # The anchor rests on the 8-GPU points at 1000/1000 alone, none of the other request shapes.
    anchoring = [p for p in answers.points if p.gpu_count == 8 and p.engine_class == "tensorrt-llm"
                 and question.lengths_match(p.input_tokens, p.output_tokens)]  # fmt: skip
    assert len(anchoring) >= 2
    assert four.anchor.counts == (8,)
    assert set(four.anchor.points) == {p.label for p in anchoring}
    assert len(four.anchor.points) < len([p for p in answers.points if p.input_tokens])
    model_eight = _model_at(gpu, 8, 8, None)
    factor = math.exp(sum(math.log(p.tokens_per_s_per_gpu / model_eight) for p in anchoring) / len(anchoring))
    assert four.anchor.factor == pytest.approx(factor, rel=1e-6)
    assert four.anchor.measured_max == max(p.tokens_per_s_per_gpu for p in anchoring)
    # So the 4-GPU figure stands to the measured 8-GPU points as the model's 4-GPU curve to its 8-GPU one.
    measured_mean = model_eight * factor
    model_four = _model_at(gpu, 4, four.tp, None)
    assert four.tokens_per_s_per_gpu / measured_mean == pytest.approx(model_four / model_eight, rel=1e-6)
    # Above the measured figure only with the model's reason, in the words the pages show.
    text = answer_figure(four, precision="fp8", gpu=gpu).anchor
    assert "measured at this workload on 8 GPU(s)" in text
    if four.tokens_per_s_per_gpu > eight.tokens_per_s_per_gpu:
        assert f"above the {four.anchor.measured_max:,.0f} tokens/s per GPU measured on 8 GPU(s)" in text
        assert "all-reduce" in text


def test_fewer_gpus_read_below_the_measured_configuration_where_the_model_says_they_are_more_memory_bound(  # type: ignore[no-untyped-def]
    demo,
) -> None:
    gpu = Gpu.objects.with_related().get(slug=GPU)
    _question, answers = _answers(gpu, 20.0)
    by_count = {a.gpu_count: a for a in answers.by_count}
    four, eight = by_count[4], by_count[8]
    # At 20 tokens/s per user four H200s hold 405B's weights with little room left, and each step
    # reads a quarter of them: the model's 4-GPU curve lies below its 8-GPU curve there ...
    assert _model_at(gpu, 4, four.tp, 20.0) < _model_at(gpu, 8, 8, 20.0)
    # ... and the anchored answers keep that order, on one anchor.
    assert four.anchor is not None and eight.anchor is not None
    assert four.anchor.counts == eight.anchor.counts == (8,)
    assert four.tokens_per_s_per_gpu is not None and eight.tokens_per_s_per_gpu is not None
    assert four.tokens_per_s_per_gpu < eight.tokens_per_s_per_gpu
    assert answers.best is not None and answers.best.gpu_count == 8
