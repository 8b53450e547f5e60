"""Pure ranking arithmetic, without a database."""

from __future__ import annotations

import math

import pytest

from dashboard import metrics
from dashboard.metrics import AggregatePoint, SpecFigures


def test_geometric_mean():
    assert metrics.geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert metrics.geometric_mean([5.0]) == pytest.approx(5.0)
    with pytest.raises(ValueError):
        metrics.geometric_mean([])
    with pytest.raises(ValueError):
        metrics.geometric_mean([1.0, 0.0])


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
    out = metrics.measured_relative(points, baseline_gpu_id=1)
    assert out[1].value == pytest.approx(1.0)
    assert out[2].value == pytest.approx(4.0)
    assert out[2].groups == 2
    assert out[3].value == pytest.approx(0.5)
    assert out[3].groups == 1


def test_measured_relative_lower_is_better_inverts_ratio():
    points = [_point(1, 10, 20.0, higher=False), _point(2, 10, 10.0, higher=False)]
    assert metrics.measured_relative(points, baseline_gpu_id=1)[2].value == pytest.approx(2.0)


def test_groups_differ_by_precision_and_gpu_count():
    points = [_point(1, 10, 100.0, count=1), _point(2, 10, 800.0, count=8), _point(1, 10, 700.0, count=8)]
    out = metrics.measured_relative(points, baseline_gpu_id=1)
    assert out[2].value == pytest.approx(800 / 700)


def test_community_aggregate_needs_min_n_and_lab_always_counts():
    few = _point(2, 10, 300.0, n=metrics.MIN_COMMUNITY_N - 1, lab=False)
    enough = _point(3, 10, 300.0, n=metrics.MIN_COMMUNITY_N, lab=False)
    out = metrics.measured_relative([_point(1, 10, 100.0), few, enough], baseline_gpu_id=1)
    assert 2 not in out
    assert out[3].value == pytest.approx(3.0)


def test_best_aggregate_per_group_is_the_one_with_most_results():
    points = [_point(1, 10, 100.0), _point(2, 10, 900.0, n=1), _point(2, 10, 200.0, n=7)]
    assert metrics.measured_relative(points, baseline_gpu_id=1)[2].value == pytest.approx(2.0)
    assert metrics.measured_relative(points, baseline_gpu_id=1)[2].n == 7


def test_no_baseline_measurement_means_no_measured_figures():
    assert metrics.measured_relative([_point(2, 10, 100.0)], baseline_gpu_id=1) == {}
    assert metrics.measured_relative([_point(2, 10, 100.0)], baseline_gpu_id=None) == {}


def test_estimate_is_geomean_of_compute_and_bandwidth_ratios():
    base = SpecFigures(peaks={"bf16": 312.0, "fp16": 312.0}, bandwidth_gbs=2039.0)
    other = SpecFigures(peaks={"bf16": 624.0}, bandwidth_gbs=2039.0 / 2)
    assert metrics.estimate_relative(base, base, family="16bit") == pytest.approx(1.0)
    assert metrics.estimate_relative(other, base, family="16bit") == pytest.approx(1.0)
    four = SpecFigures(peaks={"bf16": 312.0 * 4}, bandwidth_gbs=2039.0 * 4)
    assert metrics.estimate_relative(four, base, family="16bit") == pytest.approx(4.0)


def test_estimate_uses_fp16_when_bf16_unsupported_and_none_when_missing():
    base = SpecFigures(peaks={"bf16": 100.0}, bandwidth_gbs=1000.0)
    volta = SpecFigures(peaks={"bf16": None, "fp16": 25.0}, bandwidth_gbs=1000.0)
    assert metrics.estimate_relative(volta, base, family="16bit") == pytest.approx(0.5)
    no_int8 = SpecFigures(peaks={"int8": None}, bandwidth_gbs=1000.0)
    assert (
        metrics.estimate_relative(no_int8, SpecFigures(peaks={"int8": 10.0}, bandwidth_gbs=1.0), family="8bit") is None
    )
    assert metrics.estimate_relative(SpecFigures(peaks={"bf16": 1.0}, bandwidth_gbs=None), base, family="16bit") is None


def test_estimate_32bit_falls_back_to_non_tensor_fp32():
    base = SpecFigures(peaks={"tf32": 156.0}, bandwidth_gbs=100.0)
    pascal = SpecFigures(peaks={}, bandwidth_gbs=100.0, fp32_tflops=39.0)
    assert metrics.estimate_relative(pascal, base, family="32bit") == pytest.approx(math.sqrt(0.25))


def test_value_metrics():
    assert metrics.per_price(2.0, 4.0) == pytest.approx(0.5)
    assert metrics.per_price(2.0, 4000.0, scale=1000) == pytest.approx(0.5)
    assert metrics.per_price(None, 1.0) is None
    assert metrics.per_price(1.0, None) is None
    assert metrics.per_price(1.0, 0.0) is None
    assert metrics.per_kilowatt(1.0, 400) == pytest.approx(2.5)
    assert metrics.per_kilowatt(1.0, None) is None


def test_price_summary():
    assert metrics.price_summary([3.0, 1.0, 2.0], how="cheapest") == 1.0
    assert metrics.price_summary([3.0, 1.0, 2.0, 10.0], how="median") == 2.5
    assert metrics.price_summary([], how="median") is None


def test_tiers_relative_to_best():
    tiers = metrics.tiers_assign({"a": 10.0, "b": 7.0, "c": 6.9, "d": 4.5, "e": 2.5, "f": 1.2, "g": 1.19, "h": None})
    assert tiers == {"a": "S", "b": "S", "c": "A", "d": "A", "e": "B", "f": "C", "g": "D"}
    assert metrics.tiers_assign({"x": None}) == {}


def test_pareto_frontier():
    points = [
        ("cheap-slow", 1.0, 1.0),
        ("dominated", 2.0, 0.9),
        ("mid", 2.0, 2.0),
        ("fast", 5.0, 4.0),
        ("pricey-slow", 6.0, 3.0),
    ]
    assert metrics.pareto_frontier(points) == ["cheap-slow", "mid", "fast"]
    # equal price: only the faster one is on the frontier
    assert metrics.pareto_frontier([("a", 1.0, 1.0), ("b", 1.0, 2.0)]) == ["b"]


def test_use_case_workload_selection():
    fine = metrics.USE_CASES["fine-tuning"]
    assert fine.includes_workload(slug="bert_large_squad", category="training")
    assert fine.includes_workload(slug="transformer-train", category="training")
    assert not fine.includes_workload(slug="resnet50", category="training")
    assert not fine.includes_workload(slug="bert_large_squad", category="inference")
    assert metrics.USE_CASES["training"].includes_workload(slug="resnet50", category="training")
    assert not metrics.USE_CASES["training"].includes_workload(slug="matmul", category="micro")
    assert metrics.USE_CASES["training"].memory_floor_gib == 24
    assert metrics.USE_CASES["inference-16bit"].memory_floor_gib == 12
