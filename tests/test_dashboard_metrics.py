"""Pure ranking arithmetic, without a database."""

from __future__ import annotations

import math

import pytest

from benchmarks_app.comparison_rules import MIN_COMMUNITY_N
from catalog.value import per_price
from dashboard.ranking.maths import (
    MIN_FIT_GPUS,
    AggregatePoint,
    EstimateModel,
    EstimateSample,
    SpecFigures,
    TierCandidate,
    conservative_value,
    estimate_model_fit,
    geometric_mean,
    measured_relative,
    pareto_frontier,
    per_kilowatt,
    spec_ratios,
    tier_mark,
    tiers_from_measurements,
)
from dashboard.ranking.use_cases import (
    USE_CASES,
    ArchitectureSupport,
    precision_supported,
    use_case_eligibility,
    use_case_requirement,
)


def test_geometric_mean():
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geometric_mean([5.0]) == pytest.approx(5.0)
    with pytest.raises(ValueError):
        geometric_mean([])
    with pytest.raises(ValueError):
        geometric_mean([1.0, 0.0])


def _point(gpu, workload, median, *, n=1, lab=True, precision="fp16", count=1, higher=True, submitters=1):
    return AggregatePoint(gpu, (workload, precision, count), median, n, submitters, lab, higher)


def test_measured_relative_is_geomean_of_ratios_to_baseline():
    points = [
        _point(1, 10, 100.0),  # baseline
        _point(1, 11, 50.0),
        _point(2, 10, 200.0),  # 2x
        _point(2, 11, 400.0),  # 8x -> geomean 4x
        _point(3, 10, 50.0),
        _point(3, 99, 10.0),  # workload the baseline lacks: ignored
    ]
    out = measured_relative(points, baseline_gpu_id=1)
    assert out[1].value == pytest.approx(1.0)
    assert out[2].value == pytest.approx(4.0)
    assert out[2].groups == 2
    assert out[3].value == pytest.approx(0.5)
    assert out[3].groups == 1


def test_measured_relative_lower_is_better_inverts_ratio():
    points = [_point(1, 10, 20.0, higher=False), _point(2, 10, 10.0, higher=False)]
    assert measured_relative(points, baseline_gpu_id=1)[2].value == pytest.approx(2.0)


def test_groups_differ_by_precision_and_gpu_count():
    points = [_point(1, 10, 100.0, count=1), _point(2, 10, 800.0, count=8), _point(1, 10, 700.0, count=8)]
    out = measured_relative(points, baseline_gpu_id=1)
    assert out[2].value == pytest.approx(800 / 700)


def test_community_aggregate_needs_min_n_and_lab_always_counts():
    few = _point(2, 10, 300.0, n=MIN_COMMUNITY_N - 1, lab=False)
    enough = _point(3, 10, 300.0, n=MIN_COMMUNITY_N, lab=False)
    out = measured_relative([_point(1, 10, 100.0), few, enough], baseline_gpu_id=1)
    assert 2 not in out
    assert out[3].value == pytest.approx(3.0)


def test_best_aggregate_per_group_is_the_one_with_most_results():
    points = [_point(1, 10, 100.0), _point(2, 10, 900.0, n=1), _point(2, 10, 200.0, n=7)]
    assert measured_relative(points, baseline_gpu_id=1)[2].value == pytest.approx(2.0)
    assert measured_relative(points, baseline_gpu_id=1)[2].n == 7


def test_no_baseline_measurement_means_no_measured_figures():
    assert measured_relative([_point(2, 10, 100.0)], baseline_gpu_id=1) == {}
    assert measured_relative([_point(2, 10, 100.0)], baseline_gpu_id=None) == {}


def estimate_relative(specs: SpecFigures, baseline: SpecFigures, *, family: str) -> float | None:
    """The spec estimate the rankings use before a fit is checked: equal weights, no scale."""
    ratios = spec_ratios(specs, baseline, family=family)
    return None if ratios is None else EstimateModel().predict(compute_ratio=ratios[0], bandwidth_ratio=ratios[1])


def test_estimate_is_geomean_of_compute_and_bandwidth_ratios():
    base = SpecFigures(peaks={"bf16": 312.0, "fp16": 312.0}, bandwidth_gbs=2039.0)
    other = SpecFigures(peaks={"bf16": 624.0}, bandwidth_gbs=2039.0 / 2)
    assert estimate_relative(base, base, family="16bit") == pytest.approx(1.0)
    assert estimate_relative(other, base, family="16bit") == pytest.approx(1.0)
    four = SpecFigures(peaks={"bf16": 312.0 * 4}, bandwidth_gbs=2039.0 * 4)
    assert estimate_relative(four, base, family="16bit") == pytest.approx(4.0)


def test_estimate_uses_fp16_when_bf16_unsupported_and_none_when_missing():
    base = SpecFigures(peaks={"bf16": 100.0}, bandwidth_gbs=1000.0)
    volta = SpecFigures(peaks={"bf16": None, "fp16": 25.0}, bandwidth_gbs=1000.0)
    assert estimate_relative(volta, base, family="16bit") == pytest.approx(0.5)
    no_int8 = SpecFigures(peaks={"int8": None}, bandwidth_gbs=1000.0)
    assert estimate_relative(no_int8, SpecFigures(peaks={"int8": 10.0}, bandwidth_gbs=1.0), family="8bit") is None
    assert estimate_relative(SpecFigures(peaks={"bf16": 1.0}, bandwidth_gbs=None), base, family="16bit") is None


def test_estimate_32bit_falls_back_to_non_tensor_fp32():
    base = SpecFigures(peaks={"tf32": 156.0}, bandwidth_gbs=100.0)
    pascal = SpecFigures(peaks={}, bandwidth_gbs=100.0, fp32_tflops=39.0)
    assert estimate_relative(pascal, base, family="32bit") == pytest.approx(math.sqrt(0.25))


def test_value_metrics():
    assert per_price(2.0, 4.0) == pytest.approx(0.5)
    assert per_price(2.0, 4000.0, scale=1000) == pytest.approx(0.5)
    assert per_price(None, 1.0) is None
    assert per_price(1.0, None) is None
    assert per_price(1.0, 0.0) is None
    assert per_kilowatt(1.0, 400) == pytest.approx(2.5)
    assert per_kilowatt(1.0, None) is None


def _measured(values):
    return [TierCandidate(k, v, True) for k, v in values.items()]


def test_tiers_relative_to_best_measured():
    values = {"a": 10.0, "b": 7.0, "c": 6.9, "d": 4.5, "e": 2.5, "f": 1.2, "g": 1.19, "h": None}
    tiers = tiers_from_measurements(_measured(values))
    assert tiers == {"a": "S", "b": "S", "c": "A", "d": "A", "e": "B", "f": "C", "g": "D"}
    assert tiers_from_measurements(_measured({"x": None})) == {}


def test_estimates_are_graded_at_their_conservative_end_and_no_share_passes_the_best():
    """An estimate three times the best measured value, typically off by 50 %, counts as twice it:
    it sets the mark, every share is at most 100 %, and tiers follow the ranked figure."""
    raw = {"measured-best": (10.0, True, None), "measured-half": (5.0, True, None),
           "guess-high": (30.0, False, 50.0), "guess-unknown": (8.0, False, None)}  # fmt: skip
    candidates = [TierCandidate(k, conservative_value(v, measured=m, error_pct=e), m) for k, (v, m, e) in raw.items()]
    assert conservative_value(8.0, measured=False, error_pct=None) == 4.0  # an unknown error counts as 100 %
    assert tier_mark(candidates) == 20.0
    assert tiers_from_measurements(candidates) == {
        "guess-high": "S",
        "measured-best": "A",
        "measured-half": "B",
        "guess-unknown": "C",
    }


def test_without_measurements_the_best_estimate_is_the_mark():
    candidates = [TierCandidate("a", 10.0, False), TierCandidate("b", 3.0, False)]
    assert tier_mark(candidates) == 10.0
    assert tiers_from_measurements(candidates) == {"a": "S", "b": "B"}


def test_pareto_frontier():
    points = [
        ("cheap-slow", 1.0, 1.0),
        ("dominated", 2.0, 0.9),
        ("mid", 2.0, 2.0),
        ("fast", 5.0, 4.0),
        ("pricey-slow", 6.0, 3.0),
    ]
    assert pareto_frontier(points) == ["cheap-slow", "mid", "fast"]
    # equal price: only the faster one is on the frontier
    assert pareto_frontier([("a", 1.0, 1.0), ("b", 1.0, 2.0)]) == ["b"]


def test_use_case_workload_selection():
    fine = USE_CASES["fine-tuning"]
    assert fine.includes_workload(slug="bert_large_squad", category="training")
    assert fine.includes_workload(slug="transformer-train", category="training")
    assert not fine.includes_workload(slug="resnet50", category="training")
    assert not fine.includes_workload(slug="bert_large_squad", category="inference")
    assert USE_CASES["training"].includes_workload(slug="resnet50", category="training")
    assert not USE_CASES["training"].includes_workload(slug="matmul", category="micro")
    assert USE_CASES["training"].memory_floor_gib == 24
    # Dettmers's 24 GB for transformers; 8-bit weights halve it
    assert USE_CASES["inference-16bit"].memory_floor_gib == 24
    assert USE_CASES["inference-8bit"].memory_floor_gib == 12


def test_use_case_texts_name_no_internal_sources():
    for uc in USE_CASES.values():
        for text in (uc.memory_floor_source, uc.precision_reason, uc.description):
            assert "seed" not in str(text).lower()


VOLTA = ArchitectureSupport(vendor_slug="nvidia", tensor_core_generation=1, bf16=False, fp8=False)
TURING = ArchitectureSupport(vendor_slug="nvidia", tensor_core_generation=2, bf16=False, fp8=False)
AMPERE = ArchitectureSupport(vendor_slug="nvidia", tensor_core_generation=3, bf16=True, fp8=False)


def test_precision_support_from_figures_then_architecture():
    # a curated figure decides; None there means "the hardware lacks it"
    assert precision_supported("bf16", peaks={"bf16": None}, architecture=AMPERE) is False
    assert precision_supported("bf16", peaks={"bf16": 312.0}, architecture=VOLTA) is True
    # no figure: the architecture's flags (Turing added INT8 tensor cores, Volta has none)
    assert precision_supported("bf16", peaks={}, architecture=VOLTA) is False
    assert precision_supported("int8", peaks={}, architecture=TURING) is True
    assert precision_supported("int8", peaks={}, architecture=VOLTA) is False
    assert precision_supported("fp16", peaks={}, architecture=VOLTA) is True
    assert precision_supported("bf16", peaks={}, architecture=None) is None


def test_eligibility_of_a_v100_16gb():
    """The issue's V100 16 GB: #1 for training though it has 16 GB and no BF16."""
    v100 = {"bf16": None, "fp16": 125.0, "fp8": None, "int8": None}
    training = use_case_eligibility(
        USE_CASES["training"], family="16bit", memory_gib=16, peaks=v100, architecture=VOLTA
    )
    assert not training.eligible and not training.meets_memory_floor and not training.has_precision
    assert training.reasons == ("16 GB is below the 24 GB floor", "no BF16 tensor cores")
    # 32-bit training needs no tensor format, only the memory
    fp32 = use_case_eligibility(USE_CASES["training"], family="32bit", memory_gib=32, peaks=v100, architecture=VOLTA)
    assert fp32.eligible and fp32.reasons == ()
    # 16-bit inference runs on FP16 tensor cores: a 32 GB V100 may do it
    inference = use_case_eligibility(
        USE_CASES["inference-16bit"], family="16bit", memory_gib=32, peaks=v100, architecture=VOLTA
    )
    assert inference.eligible
    eight = use_case_eligibility(
        USE_CASES["inference-8bit"], family="8bit", memory_gib=32, peaks=v100, architecture=VOLTA
    )
    assert not eight.eligible and eight.reasons == ("no INT8 or FP8 tensor cores",)


def test_eligibility_of_a_10gb_rtx_3080_for_8bit_inference():
    """The issue's RTX 3080 10 GB: #1 for 8-bit inference below the 12 GB floor."""
    result = use_case_eligibility(
        USE_CASES["inference-8bit"], family="8bit", memory_gib=10, peaks={"int8": 238.0}, architecture=AMPERE
    )
    assert not result.eligible and result.has_precision and result.reasons == ("10 GB is below the 12 GB floor",)
    unknown = use_case_eligibility(
        USE_CASES["inference-8bit"], family="8bit", memory_gib=None, peaks={}, architecture=None
    )
    assert unknown.reasons == ("memory size not on record", "INT8 or FP8 tensor support not on record")


def test_use_case_requirement_in_words():
    assert (
        use_case_requirement(USE_CASES["training"], family="16bit") == "at least 24 GB of memory and BF16 tensor cores"
    )
    assert use_case_requirement(USE_CASES["training"], family="32bit") == "at least 24 GB of memory"
    # The LLM use cases have no memory floor: the page said "Needs: at least 0 GB of memory."
    for slug in ("llm-serving", "llm-chat"):
        needs = use_case_requirement(USE_CASES[slug], family="4bit")
        assert "0 GB" not in needs and needs.startswith("the chosen model must fit in the memory")


def _sample(key, measured, compute, bandwidth):
    return EstimateSample(key, measured, compute, bandwidth)


def test_estimate_fit_recovers_a_known_weight_and_scale():
    # measured = 1.2 * c^0.25 * b^0.75 exactly: least squares finds it and misses nothing
    ratios = [(0.5, 0.4), (1.0, 1.0), (2.0, 1.2), (3.0, 2.5), (6.0, 3.0), (0.3, 0.6)]
    samples = [_sample(str(i), 1.2 * c**0.25 * b**0.75, c, b) for i, (c, b) in enumerate(ratios)]
    model = estimate_model_fit(samples)
    assert model.least_squares and model.checked_on == 6
    assert model.compute_weight == pytest.approx(0.25) and model.scale == pytest.approx(1.2)
    assert model.typical_error == pytest.approx(0.0, abs=1e-9) and model.worst_error == pytest.approx(0.0, abs=1e-9)
    assert model.other_error is not None and model.other_error > 0.05
    assert model.predict(compute_ratio=16.0, bandwidth_ratio=1.0) == pytest.approx(1.2 * 2.0)


def test_estimate_keeps_equal_weights_when_they_miss_less():
    # exactly the equal-weight form plus noise: fitting two parameters cannot beat it out of sample
    noise = [1.03, 0.97, 1.02, 0.98, 1.01, 0.99]
    ratios = [(0.5, 0.4), (1.0, 1.0), (2.0, 1.2), (3.0, 2.5), (6.0, 3.0), (0.3, 0.6)]
    samples = [
        _sample(str(i), k * math.sqrt(c * b), c, b) for i, ((c, b), k) in enumerate(zip(ratios, noise, strict=True))
    ]
    model = estimate_model_fit(samples)
    assert not model.least_squares and model.compute_weight == 0.5 and model.scale == 1.0
    assert model.typical_error == pytest.approx(0.02, abs=0.011)
    assert model.other_error is not None and model.other_error >= model.typical_error


def test_estimate_leave_one_out_error_is_out_of_sample():
    # five GPUs on the law, one far off it: its own miss counts, from a fit that never saw it
    ratios = [(0.5, 0.4), (1.0, 1.0), (2.0, 1.2), (3.0, 2.5), (6.0, 3.0)]
    samples = [_sample(str(i), 0.8 * c**0.2 * b**0.8, c, b) for i, (c, b) in enumerate(ratios)]
    samples.append(_sample("odd", 0.8 * 4.0**0.2 * 2.0**0.8 * 1.5, 4.0, 2.0))
    model = estimate_model_fit(samples)
    assert model.worst_error is not None and model.worst_error > 0.3


def test_estimate_with_too_few_measured_gpus_is_unchecked():
    samples = [_sample(str(i), 1.0 + i, 1.0 + i, 1.0 + i) for i in range(MIN_FIT_GPUS - 1)]
    model = estimate_model_fit(samples)
    assert not model.checked and model.typical_error is None and model.compute_weight == 0.5
    assert model.predict(compute_ratio=4.0, bandwidth_ratio=1.0) == pytest.approx(2.0)


def test_measured_relative_chains_through_a_bridge_gpu():
    """Lambda's newer suite: B200 never ran the baseline's workloads; H100 ran both."""
    points = [
        _point(1, 10, 100.0),  # baseline on the old suite
        _point(2, 10, 250.0),  # H100 old suite: 2.5x
        _point(2, 20, 400.0, n=39),  # H100 new suite
        _point(2, 21, 40.0, n=39),
        _point(3, 20, 800.0),  # B200 new suite: 2x and 1.5x H100 -> sqrt(3) x H100
        _point(3, 21, 60.0),
        _point(4, 30, 5.0),  # shares nothing with anyone: stays unmeasured
    ]
    out = measured_relative(points, baseline_gpu_id=1)
    assert out[2].value == pytest.approx(2.5) and out[2].via is None
    assert out[3].value == pytest.approx(2.5 * math.sqrt(3.0)) and out[3].via == 2
    assert out[3].groups == 2 and out[3].n == 2
    assert 4 not in out
