"""Plotly figure builders: pure functions, tested without a database."""

from __future__ import annotations

import datetime as dt
import json

from dashboard import figures
from dashboard.figures import RankedPoint, ResultBox, TimelineItem

EVIL = "<script>alert(1)</script> & Co"


def _row(slug, name, perf, price, basis="measured", n=3):
    return RankedPoint(
        slug, name, perf, basis, n if basis == "measured" else 0, 1, price, perf / price if price else None, 24.0
    )


def test_esc_keeps_markup_as_text():
    assert figures.esc(EVIL) == "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co"


def test_bar_figure_separates_measured_and_estimated_and_escapes_names():
    rows = [
        _row("a", EVIL, 2.0, 1.0),
        _row("b", "Plain", 1.0, 1.0, basis="estimated"),
        _row("c", "No price", 1.0, None),
    ]
    fig = figures.rankings_bar_figure(
        rows, value_label="perf/$", currency="USD", price_unit="per GPU-hour", baseline_name="A100"
    )
    measured, estimated = fig["data"]
    assert measured["name"] == "measured" and estimated["name"] == "estimated from specs"
    assert measured["y"] == [figures.esc(EVIL)] and estimated["y"] == ["Plain"]
    assert estimated["marker"]["pattern"]["shape"] == "/"
    assert measured["text"] == ["n=3"] and estimated["text"] == ["est."]
    dumped = json.dumps(fig)
    assert "<script>" not in dumped
    # best first: the category order is reversed for a horizontal bar chart
    assert fig["layout"]["yaxis"]["categoryarray"] == ["Plain", figures.esc(EVIL)]


def test_scatter_frontier_and_label_decluttering():
    rows = [_row("a", "A", 1.0, 1.0), _row("b", "B", 1.02, 1.05), _row("c", "C", 3.0, 4.0, basis="estimated")]
    fig = figures.perf_price_scatter_figure(
        rows, frontier=["a", "b", "c"], price_label="$", perf_label="x", value_label="v", currency="USD", price_unit="h"
    )
    frontier = fig["data"][-1]
    assert frontier["x"] == [1.0, 1.05, 4.0]
    assert frontier["text"] == ["A", "", "C"]  # B sits on top of A: unlabelled
    assert fig["layout"]["xaxis"]["type"] == "log"
    assert fig["data"][1]["marker"]["symbol"] == "diamond-open"


def test_price_history_shows_only_the_chosen_series():
    series = {"all": [(dt.date(2025, 1, 1), 2.0)], EVIL: [(dt.date(2025, 1, 1), 3.0)]}
    fig = figures.price_history_figure(series, currency="CNY", shown=["all"])
    assert [t["visible"] for t in fig["data"]] == [True, "legendonly"]
    assert fig["data"][1]["name"] == figures.esc(EVIL)
    assert "<script>" not in json.dumps(fig)
    assert fig["layout"]["yaxis"]["title"]["text"] == "CNY per GPU-hour"


def test_box_figure_one_trace_per_precision_with_n():
    boxes = [
        ResultBox("resnet50", "fp16", 1.0, 0.9, 1.1, 0.8, 1.2, 5, 2),
        ResultBox("resnet50", "fp32", 0.5, 0.4, 0.6, 0.3, 0.7, 1, 1),
    ]
    fig = figures.results_box_figure(boxes, relative_to="A100", gpu_count=1)
    assert [t["name"] for t in fig["data"]] == ["FP16", "FP32"]
    assert fig["data"][0]["x"] == ["resnet50 FP16 (n=5)"]
    assert fig["data"][0]["q1"] == [0.9] and fig["data"][0]["upperfence"] == [1.2]


def test_compare_and_timeline_figures():
    fig = figures.compare_figure([EVIL, "B"], ["Training"], [[1.0], [0.5]], [["measured"], ["estimated"]])
    assert fig["data"][0]["name"] == figures.esc(EVIL)
    assert fig["data"][1]["marker"]["pattern"]["shape"] == ["/"]
    items = [TimelineItem("volta", "Volta", "NVIDIA", dt.date(2017, 5, 1), "Tensor Cores gen 1", 3)]
    timeline = figures.architecture_timeline_figure(items)
    assert timeline["data"][0]["x"] == ["2017-05-01"] and timeline["data"][0]["text"] == ["Volta"]
