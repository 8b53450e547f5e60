"""The serving curve read (llm.selectors.serving) on the curated catalogue and the real 2x H200
NVLink run of our client (tests/fixtures/bench/h200x2_nvlink_multigpu.json)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks_app.models import SubmissionStatus
from catalog.models import Gpu
from llm.selectors.serving import allreduce_measured, serving_curve
from llm.serving.fit import MeasuredCoverage, ServingFit
from llm.serving.physics import ServingConstants
from tests.factories import UserFactory, document_ingest
from tests.world import LLM_WORLD, world_build

pytestmark = pytest.mark.django_db
RUN = Path(__file__).resolve().parent / "fixtures" / "bench" / "h200x2_nvlink_multigpu.json"


@pytest.fixture
def h200_run():
    world_build(rows=replace(LLM_WORLD, seed_workloads=True))
    submission = document_ingest(json.loads(RUN.read_text()), submitter=UserFactory(username="h200-owner"))
    # The small-message all-reduces spread by 18-53 % between repetitions (latency-bound, as
    # nccl-tests' are): all-reduce is exempt from the spread rule, so the run counts as it comes.
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    return Gpu.objects.select_related("architecture").get(slug="h200-sxm-141-gb")


def _curve(gpu, *, tp, links, precision="fp8", model="llama-3.1-70b"):
    return serving_curve(gpu=gpu, model=model, precision=precision, gpu_count=tp, tp=tp, input_len=1000,
                         output_len=1000, engine="tensorrt-llm", fit=None, links=links)  # fmt: skip


def test_the_measured_all_reduce_of_the_real_h200_run_prices_tp2_and_is_named(h200_run):
    links = allreduce_measured(gpu_ids=[h200_run.id])
    (run,) = links[h200_run.id]
    assert run.gpu_count == 2 and run.interconnect == "nvlink"
    sizes = dict(run.points)
    assert sizes[1 << 20] == pytest.approx(42.59, rel=0.01) and sizes[1 << 30] == pytest.approx(328.137, rel=0.01)
    tp2 = _curve(h200_run, tp=2, links=links)
    assert tp2.allreduce_measured and "measured" in tp2.allreduce_source and "2×" in tp2.allreduce_source
    # No 4-GPU run: the datasheet link, and the estimate says so.
    tp4 = _curve(h200_run, tp=4, links=links)
    assert not tp4.allreduce_measured and tp4.allreduce_source.startswith("datasheet")
    # Without the run the same TP2 curve uses the datasheet too.
    assert _curve(h200_run, tp=2, links={}).allreduce_source.startswith("datasheet")
    one = _curve(h200_run, tp=1, links=links)
    assert one.allreduce_source == "" and one.fits


def test_curve_reports_its_error_and_whether_it_is_inside_the_measured_range(h200_run):
    fit = ServingFit(
        ServingConstants(),
        {"gpu": {"scenario:server": {"inside": {"n": 5, "median_pct": 12.0, "p90_pct": 30.0},
                                     "outside": {"n": 5, "median_pct": 35.0, "p90_pct": 60.0}}}},
        frozenset({("hopper", "tensorrt-llm", "tp")}),
        10,
    )  # fmt: skip
    tp2 = serving_curve(gpu=h200_run, model="llama-3.1-70b", precision="fp8", gpu_count=8, tp=2, input_len=1000,
                        output_len=1000, engine="tensorrt-llm", fit=fit)  # fmt: skip
    assert tp2.inside and tp2.error_pct == 12.0 and tp2.replicas == 4
    single = serving_curve(gpu=h200_run, model="llama-3.1-70b", precision="fp8", gpu_count=1, tp=1, input_len=1000,
                           output_len=1000, engine="tensorrt-llm", fit=fit)  # fmt: skip
    assert not single.inside and single.error_pct == 35.0
    target = single.at(20.0)
    assert target is not None and target.tokens_per_s_per_user >= 20.0 - 1e-9


def test_bad_arguments_name_the_argument(h200_run):
    with pytest.raises(ValueError, match="model"):
        _curve(h200_run, tp=1, links={}, model="nonesuch")
    with pytest.raises(ValueError, match="tp"):
        serving_curve(gpu=h200_run, model="llama-3.1-70b", precision="fp8", gpu_count=3, tp=2, input_len=10,
                      output_len=10, fit=None)  # fmt: skip


def test_deepseek_v3_fp8_does_not_fit_on_8x_80gb_but_on_8x_h200(h200_run):
    h100 = Gpu.objects.select_related("architecture").get(slug="h100-sxm5-80-gb")
    on_h100 = _curve(h100, tp=8, links={}, model="deepseek-r1")
    assert not on_h100.fits and on_h100.curve.reason == "does not fit"
    # 671e9 bytes / 8 = 78.1 GiB per GPU of 80 x 0.9 - 1.34 = 70.7 GiB usable.
    assert on_h100.curve.weights_gib_per_gpu > on_h100.curve.usable_gib_per_gpu
    assert _curve(h200_run, tp=8, links={}, model="deepseek-r1").fits


def test_an_estimate_carries_the_80_percent_interval_of_the_widest_kind_it_makes(h200_run):
    intervals: dict[str, dict[str, float | None]] = {
        "all": {"n": 100, "p10": 0.8, "p90": 1.25, "coverage": 0.8},
        "pair:measured": {"n": 30, "p10": 0.9, "p90": 1.1, "coverage": 0.8},
        "gpu:new": {"n": 50, "p10": 0.5, "p90": 2.0, "coverage": 0.8},
        "class:hopper": {"n": 40, "p10": 0.7, "p90": 1.4, "coverage": 0.8},
    }
    coverage = MeasuredCoverage.of([])
    coverage = replace(coverage, gpus=frozenset({"h200-sxm-141-gb"}), models=frozenset({"llama-3.1-70b"}),
                       pairs=frozenset({("h200-sxm-141-gb", "llama-3.1-70b")}),
                       lengths={"llama-3.1-70b": (128, 2048, 128, 2048)})  # fmt: skip
    fit = ServingFit(ServingConstants(), {}, frozenset(), 10, intervals=intervals, coverage=coverage)
    measured = serving_curve(gpu=h200_run, model="llama-3.1-70b", precision="fp8", gpu_count=2, tp=2, input_len=1000,
                             output_len=1000, engine="tensorrt-llm", fit=fit)  # fmt: skip
    # A measured pair on Hopper: the Hopper interval is the widest of its kinds.
    assert measured.interval_kind == "class:hopper"
    assert measured.interval == pytest.approx((1 / 1.4, 1 / 0.7))
    assert measured.interval_at(100.0) == pytest.approx((100 / 1.4, 100 / 0.7))
    other = serving_curve(gpu=h200_run, model="llama-3.1-8b", precision="fp8", gpu_count=1, tp=1, input_len=1000,
                          output_len=1000, engine="tensorrt-llm", fit=fit)  # fmt: skip
    # A model never measured: no interval of that kind stored, so the widest of the rest (Hopper).
    assert other.interval_kind == "class:hopper"
    bare = serving_curve(gpu=h200_run, model="llama-3.1-8b", precision="fp8", gpu_count=1, tp=1, input_len=1000,
                         output_len=1000, engine="tensorrt-llm", fit=None)  # fmt: skip
    assert bare.interval is None and bare.interval_at(100.0) is None
