"""Plotly figure builders: pure functions, tested without a database."""

from __future__ import annotations

import datetime as dt
import json
import math

from dashboard.figures.architectures import TimelineItem, architecture_timeline_figure
from dashboard.figures.compare import compare_figure
from dashboard.figures.gpus import ResultBox, price_history_figure, price_steps, results_box_figure
from dashboard.figures.rankings import (
    MIN_PLOT_PX,
    RankedPoint,
    frontier_labels,
    label_box,
    log_axis_range,
    perf_price_scatter_figure,
    rankings_bar_figure,
    tiers_figure,
)
from dashboard.figures.style import esc
from dashboard.selectors.ranking_rows import RowPrice

EVIL = "<script>alert(1)</script> & Co"


def _row(slug, name, perf, price, basis="measured", n=3):
    return RankedPoint(
        slug,
        name,
        perf,
        basis,
        n if basis == "measured" else 0,
        1,
        RowPrice(amount=price),
        perf / price if price else None,
        24.0,
        ranked_value=perf / price if price else None,
    )


def test_esc_keeps_markup_as_text():
    assert esc(EVIL) == "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co"


def test_bar_figure_separates_measured_and_estimated_and_escapes_names():
    rows = [
        _row("a", EVIL, 2.0, 1.0),
        _row("b", "Plain", 1.0, 1.0, basis="estimated"),
        _row("c", "No price", 1.0, None),
    ]
    fig = rankings_bar_figure(
        rows, value_label="perf/$", currency="USD", price_unit="per GPU-hour", baseline_name="A100"
    )
    measured, estimated = fig["data"]
    assert measured["name"] == "measured" and estimated["name"] == "estimated from specs"
    assert measured["y"] == [esc(EVIL)] and estimated["y"] == ["Plain"]
    assert estimated["marker"]["pattern"]["shape"] == "/"
    assert measured["text"] == ["n=3"] and estimated["text"] == ["est."]
    dumped = json.dumps(fig)
    assert "<script>" not in dumped
    # best first: the category order is reversed for a horizontal bar chart
    assert fig["layout"]["yaxis"]["categoryarray"] == ["Plain", esc(EVIL)]


def test_scatter_frontier_and_label_decluttering():
    rows = [_row("a", "A", 1.0, 1.0), _row("b", "B", 1.02, 1.05), _row("c", "C", 3.0, 4.0, basis="estimated")]
    fig = perf_price_scatter_figure(
        rows, frontier=["a", "b", "c"], price_label="$", perf_label="x", value_label="v", currency="USD", price_unit="h"
    )
    frontier = fig["data"][-1]
    assert frontier["x"] == [1.0, 1.05, 4.0]
    assert frontier["text"][0] == "A" and frontier["text"][2] == "C"
    assert frontier["cliponaxis"] is False
    assert fig["layout"]["xaxis"]["type"] == "log"
    # explicit ranges: the geometry the labels were placed for is the one drawn
    assert fig["layout"]["xaxis"]["range"] == log_axis_range([1.0, 1.05, 4.0])
    assert fig["data"][1]["marker"]["symbol"] == "diamond-open"


def test_price_history_shows_only_the_chosen_series():
    series = {"all": [(dt.date(2025, 1, 1), 2.0)], EVIL: [(dt.date(2025, 1, 1), 3.0)]}
    fig = price_history_figure(series, currency="CNY", shown=["all"])
    assert [t["visible"] for t in fig["data"]] == [True, "legendonly"]
    assert fig["data"][1]["name"] == esc(EVIL)
    assert "<script>" not in json.dumps(fig)
    assert fig["layout"]["yaxis"]["title"]["text"] == "CNY per GPU-hour"


def test_box_figure_one_trace_per_precision_with_n():
    boxes = [
        ResultBox("resnet50", "fp16", 1.0, 0.9, 1.1, 0.8, 1.2, 5, 2),
        ResultBox("resnet50", "fp32", 0.5, 0.4, 0.6, 0.3, 0.7, 1, 1),
    ]
    fig = results_box_figure(boxes, relative_to="A100", gpu_count=1)
    assert [t["name"] for t in fig["data"]] == ["FP16", "FP32"]
    assert fig["data"][0]["x"] == ["resnet50 FP16 (n=5)"]
    assert fig["data"][0]["q1"] == [0.9] and fig["data"][0]["upperfence"] == [1.2]


def test_compare_and_timeline_figures():
    fig = compare_figure([EVIL, "B"], ["Training"], [[1.0], [0.5]], [["measured"], ["estimated"]])
    assert fig["data"][0]["name"] == esc(EVIL)
    assert fig["data"][1]["marker"]["pattern"]["shape"] == ["/"]
    items = [TimelineItem("volta", "Volta", "NVIDIA", dt.date(2017, 5, 1), "Tensor Cores gen 1", 3)]
    timeline = architecture_timeline_figure(items)
    assert timeline["data"][0]["x"] == ["2017-05-01"] and timeline["data"][0]["text"] == ["Volta"]


def _boxes(points, placed, x_range, y_range):
    width, height = MIN_PLOT_PX
    boxes = []
    for (name, price, perf), (text, position) in zip(points, placed, strict=True):
        if not text:
            continue
        assert text == name
        px = (math.log10(price) - x_range[0]) / (x_range[1] - x_range[0]) * width
        py = height - (perf - y_range[0]) / (y_range[1] - y_range[0]) * height
        boxes.append(label_box(px, py, text, position))
    return boxes


def test_frontier_labels_never_overlap_or_clip():
    """The issue: frontier labels overlapped and the leftmost one was cut off by the plot edge.
    A real frontier of the rankings page (training, cheapest on-demand): long names, close points."""
    points = [
        ("Tesla V100 SXM2 32 GB", 0.10, 0.29),
        ("GeForce RTX 3090", 0.165, 0.47),
        ("RTX 6000 Ada Generation", 0.37, 0.74),
        ("A30 PCIe", 0.34, 0.52),
        ("A100 SXM4 80 GB", 0.55, 1.0),
        ("H100 SXM5 80 GB", 0.69, 2.31),
        ("H200 SXM 141 GB", 1.18, 2.6),
        ("B200", 1.79, 3.9),
    ]
    x_range = log_axis_range([p[1] for p in points])
    y_range = [0.0, 3.9 * 1.15]
    placed = frontier_labels(points, x_range=x_range, y_range=y_range)
    boxes = _boxes(points, placed, x_range, y_range)
    width, height = MIN_PLOT_PX
    for i, box in enumerate(boxes):
        assert box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height, box  # nothing clipped
        for other in boxes[i + 1 :]:
            assert box[2] <= other[0] or other[2] <= box[0] or box[3] <= other[1] or other[3] <= box[1]
    assert placed[0][0] == "Tesla V100 SXM2 32 GB"  # the leftmost label is shown, inside the plot
    assert len(boxes) >= 6
    # two cards at nearly the same price and speed: the second label finds no room and is left out
    crowded = [("Tesla V100 SXM2 32 GB", 0.10, 0.29), ("Tesla V100 SXM2 16 GB", 0.101, 0.295), *points[1:]]
    labels = frontier_labels(crowded, x_range=x_range, y_range=y_range)
    assert [text for text, _position in labels[:2]].count("") == 1


def test_price_history_single_day_has_a_date_axis_of_days():
    """The RTX 4090 price chart ran from "23:59:59.999 Nov 21" to "00:00:00.001": one day of data."""
    fig = price_history_figure({"all": [(dt.date(2025, 11, 21), 0.35)]}, currency="USD")
    axis = fig["layout"]["xaxis"]
    assert axis["type"] == "date" and axis["tickformat"] == "%Y-%m-%d"
    start, end = (dt.date.fromisoformat(v[:10]) for v in axis["range"])
    assert start < dt.date(2025, 11, 21) < end and (end - start).days >= 13


def test_price_history_is_steps_broken_across_gaps():
    """A flat line crossed months without data: steps hold a price only to the next observation,
    and a silence of more than a week breaks the line."""
    points = [(dt.date(2025, 6, 1), 2.0), (dt.date(2025, 6, 2), 1.8), (dt.date(2025, 11, 1), 1.5)]
    xs, ys = price_steps(points)
    assert xs == ["2025-06-01", "2025-06-02", None, "2025-11-01"] and ys == [2.0, 1.8, None, 1.5]
    trace = price_history_figure({"all": points}, currency="USD")["data"][0]
    assert trace["line"]["shape"] == "hv" and trace["connectgaps"] is False and None in trace["x"]


def test_tiers_figure_bars_share_of_best_by_tier():
    rows = {
        "S": [_row("a", EVIL, 2.0, 1.0)],
        "A": [_row("b", "B", 1.0, 1.0, basis="estimated")],
        "B": [],
        "C": [],
        "D": [],
    }
    fig = tiers_figure(rows, thresholds={"S": 0.7, "A": 0.45, "B": 0.25, "C": 0.12}, currency="USD", price_unit="h")
    assert [t["name"] for t in fig["data"]] == ["Tier S", "Tier A"]
    assert fig["data"][0]["x"] == [1.0] and fig["data"][1]["x"] == [0.5]
    assert fig["data"][1]["marker"]["pattern"]["shape"] == ["/"]
    assert len(fig["layout"]["shapes"]) == 5 and "<script>" not in json.dumps(fig)
