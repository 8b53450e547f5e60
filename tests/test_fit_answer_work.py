"""The fit calculator's work on the demo data (``load_demo``): each tensor-parallel split's serving
curve is evaluated once per GPU whatever the counts that run it, the fit page's serving search
covers only the GPUs it can show, with the same answer as the search over every GPU, and a
one-stream job reads the LLM points the rankings classified, not the results."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import llm.selectors.answers as answers_module
from catalog.models import Gpu, TensorPeak
from fitcalc.forms import FitForm
from fitcalc.selectors.fit import fit_compute
from fitcalc.selectors.fit_request import fit_request_from_form
from fitcalc.selectors.serving_plans import fit_serving_answer, owned_serving_costs, serving_plans
from llm.question import ServingQuestion
from llm.selectors.answers import serving_answers, serving_counts
from llm.selectors.rows import llm_points_current
from llm.selectors.serving import allreduce_measured, serving_curve, serving_fit_current, serving_hardware

pytestmark = pytest.mark.django_db

QUESTIONS = (
    ServingQuestion("llama-3-8b", 1000, 1000, "bf16", None),
    ServingQuestion("llama-3.1-70b", 1000, 1000, "fp8", 20.0),
    ServingQuestion("mixtral-8x7b", 2000, 200, "bf16", 50.0),
)


def _serving_gpus() -> list[Gpu]:
    return list(Gpu.objects.curated().with_related().filter(memory_gib__gt=0, memory_bandwidth_gbs__gt=0))


def _peaks(gpus: list[Gpu]) -> dict[int, dict[str, float | None]]:
    peaks: dict[int, dict[str, float | None]] = {}
    for row in TensorPeak.objects.filter(gpu__in=gpus).values("gpu_id", "precision", "supported", "dense_tflops"):
        peaks.setdefault(row["gpu_id"], {})[row["precision"]] = row["dense_tflops"] if row["supported"] else None
    return peaks


def test_a_curve_on_several_gpus_is_its_replicas_curve_on_every_demo_gpu(demo) -> None:  # type: ignore[no-untyped-def]
    # What lets serving_answers evaluate a split once for every count: the estimate of count GPUs
    # as count / tp replicas is the one replica's, its count aside.
    gpus = _serving_gpus()
    peaks, links, fit = _peaks(gpus), allreduce_measured(gpu_ids=[g.id for g in gpus]), serving_fit_current()
    assert fit is not None and len(gpus) > 50
    compared = 0
    for question in QUESTIONS:
        for gpu in gpus:
            precision = question.precision_for(peaks.get(gpu.id, {}))
            hardware = serving_hardware(gpu, peaks=peaks.get(gpu.id, {}))
            for tp in (1, 2, 4, 8):
                common: dict[str, Any] = {
                    "gpu": gpu, "model": question.model, "precision": precision, "tp": tp,
                    "input_len": question.input_len, "output_len": question.output_len,
                    "engine": question.engine_for(gpu.vendor.slug), "fit": fit, "links": links,
                    "hardware": hardware, "scenario": "server",
                }  # fmt: skip
                replica = serving_curve(gpu_count=tp, **common)
                for count in (c for c in (2, 4, 8) if c > tp and c % tp == 0):
                    assert serving_curve(gpu_count=count, **common) == replace(replica, gpu_count=count)
                    compared += 1
    assert compared > 1000


def test_serving_answers_evaluate_each_split_once_per_gpu(demo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    evaluated: list[tuple[str, int, int, int, str]] = []

    def counted(**kwargs: Any) -> Any:
        evaluated.append((kwargs["gpu"].slug, kwargs["tp"], kwargs["input_len"], kwargs["output_len"],
                          kwargs["precision"]))  # fmt: skip
        return serving_curve(**kwargs)

    monkeypatch.setattr(answers_module, "serving_curve", counted)
    gpus = _serving_gpus()
    every_count = {g.id: frozenset({1, 2, 4, 8}) for g in gpus}
    answers = serving_answers(question=QUESTIONS[0], gpus=gpus, rented=every_count)
    assert len(evaluated) == len(set(evaluated))
    # Four splits at the question's lengths on every GPU the model is answered on (anchors may add others).
    at_lengths = {(slug, tp) for slug, tp, i, o, _p in evaluated if (i, o) == (1000, 1000)}
    assert at_lengths == {(g.slug, tp) for g in gpus for tp in (1, 2, 4, 8)}
    # Every count of every GPU is answered, each by its own count.
    for gpu in gpus:
        by_count = answers[gpu.id].by_count
        assert {a.gpu_count for a in by_count} <= {c for c, _rented in serving_counts(every_count[gpu.id])}
        assert all(a.gpu_count % a.tp == 0 for a in by_count)
    assert sum(len(a.by_count) for a in answers.values()) > 3 * len(gpus)


def _fit(query: dict[str, str]) -> Any:
    form = FitForm(data=query)
    request = fit_request_from_form(form=form)
    assert request is not None, form.errors
    return fit_compute(request=request)


@pytest.mark.parametrize(
    ("query", "target"),
    [
        ({"model": "llama-3-8b"}, 20.0),
        ({"model": "llama-3.1-70b", "electricity_price_per_kwh": "0.2"}, None),
        (
            {
                "model": "mixtral-8x7b",
                "price": "cheapest",
                "currency": "CNY",
                "electricity_price_per_kwh": "1.5",
                "input_len": "2000",
                "output_len": "200",
            },
            50.0,
        ),
    ],
)
def test_the_fit_pages_serving_search_over_priced_gpus_answers_as_the_search_over_every_gpu(  # type: ignore[no-untyped-def]
    demo, query, target
) -> None:
    result = _fit(query)
    request = result.request
    question = {"target": target, "input_len": request.input_len, "output_len": request.output_len}
    shown = fit_serving_answer.uncached(preset=request.model.slug, precision=request.precision, **question)
    every = serving_plans(model=shown.model, precisions=list(shown.precisions), **question)
    searched = {o.gpu_slug for o in shown.options}
    assert len({o.gpu_slug for o in every.options}) > len(searched) > 10
    assert shown.recommended == every.recommended and shown.recommended is not None
    assert shown.across_counts == every.across_counts
    assert shown.options == [o for o in every.options if o.gpu_slug in searched]
    # The owned cost of every buy-or-rent row: the same configuration, energy and costs.
    owned = {"rows": result.buy_vs_rent, "price_per_kwh": request.electricity_price_per_kwh,
             "hours_per_day": request.hours_per_day}  # fmt: skip
    costs = owned_serving_costs(serving=shown, **owned)
    assert costs and costs == owned_serving_costs(serving=every, **owned)


def test_a_one_stream_job_reads_the_classified_llm_points_not_the_results(demo, versioned_cache) -> None:  # type: ignore[no-untyped-def]
    llm_points_current()  # the chat ranking's read, after a data change
    with CaptureQueriesContext(connection) as queries:
        result = _fit({"model": "llama-3-8b", "serving": "single", "precision": "q4_k_m"})
    assert not [q for q in queries.captured_queries if "benchmarks_app_benchmarkresult" in q["sql"]]
    # The GPUs measured in that size class and weight family are anchored on their measurement.
    assert len([detail for detail in result.details.values() if detail.measured_source]) > 5
