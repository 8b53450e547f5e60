"""Every chart helper takes any float without raising and returns strict JSON.

A query string once put ``gpu_price[...]=1e-300`` into a ranking and ``log_axis_ticks`` took the
logarithm of an underflowed 0: a 500 for anyone. Query numbers are now checked before any
arithmetic (gpuatlas/query_numbers.py, tests/test_query_numbers.py), and the helpers are safe on
their own: each is fed the extremes (1e-300, 5e-324, infinities, NaN, 1e308, negatives, 0) in
every numeric slot, alone and mixed by hypothesis with ordinary values. A figure must come back
as JSON without NaN or Infinity (``allow_nan=False``: the browser's parser refuses them), and
every explicit log-axis range and tick must be finite, with the ticks inside the range.

``test_every_chart_helper_is_covered`` lists the public functions of dashboard/figures/ and
fitcalc/figures.py: a new helper fails it until it is added here.
"""

from __future__ import annotations

import datetime as dt
import importlib
import inspect
import json
import math
import pkgutil
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dashboard.figures
from dashboard.figures.architectures import TimelineItem, architecture_timeline_figure
from dashboard.figures.compare import compare_figure
from dashboard.figures.gpus import ResultBox, date_axis_range, price_history_figure, price_steps, results_box_figure
from dashboard.figures.multi_gpu import allreduce_figure, scaling_figure
from dashboard.figures.rankings import (
    frontier_labels,
    label_box,
    log_axis_range,
    perf_price_scatter_figure,
    rankings_bar_figure,
    tiers_figure,
)
from dashboard.figures.serving import (
    MeasuredMark,
    ServingCurveLine,
    energy_marks_of,
    log_ticks,
    serving_curve_line,
    serving_curves_figure,
)
from dashboard.figures.style import (
    log_axis_range_of,
    log_axis_ticks,
    log_extent,
    log_plottable,
    log_tick_text,
    number_text,
    plottable,
    rounded,
)
from dashboard.selectors.ranking_rows import RowPrice
from fitcalc.figures import CostTimePoint, fit_cost_time_figure
from llm.serving.energy import EnergyFigure, PowerCurve

EXTREMES = (1e-300, 5e-324, math.inf, -math.inf, math.nan, 1e308, -1e308, -1.0, -5e-324, 0.0)
ORDINARY = (0.05, 0.9, 1.0, 2.5, 37.0, 1200.0)
any_float = st.sampled_from(EXTREMES) | st.sampled_from(ORDINARY) | st.floats()
floats_lists = st.lists(any_float, min_size=1, max_size=6)
DAY = dt.date(2026, 11, 1)


def strict_json(figure: dict[str, Any]) -> dict[str, Any]:
    """The figure as the page embeds it: no NaN or Infinity allowed."""
    return json.loads(json.dumps(figure, allow_nan=False))


def assert_log_axes_finite(figure: dict[str, Any]) -> None:
    for name, axis in figure["layout"].items():
        if not name.startswith(("xaxis", "yaxis")) or axis.get("type") != "log":
            continue
        if "range" in axis:
            low, high = axis["range"]
            assert math.isfinite(low) and math.isfinite(high) and low < high, (name, axis["range"])
            for tick in axis.get("tickvals", []):
                assert tick > 0 and low <= math.log10(tick) <= high, (name, tick, axis["range"])
        assert all(math.isfinite(tick) and tick > 0 for tick in axis.get("tickvals", [])), (name, axis)


def ranked(perf: float, price: float, value: float, *, slug: str = "g", basis: str = "measured") -> SimpleNamespace:
    return SimpleNamespace(
        gpu_slug=slug,
        gpu_name=f"GPU {slug}",
        perf=perf,
        perf_basis=basis,
        n=3,
        distinct_submitters=2,
        price=RowPrice(amount=price, unit="per GPU-hour"),
        perf_per_dollar=value,
        ranked_value=value,
        memory_gib=perf,
        estimate_error_pct=value,
        estimate_outside_range=False,
    )


def rows_of(values: list[float]) -> list[SimpleNamespace]:
    count = len(values)
    return [
        ranked(
            values[i],
            values[(i + 1) % count],
            values[(i + 2) % count],
            slug=f"g{i}",
            basis=("measured", "estimated")[i % 2],
        )
        for i in range(count)
    ]


def line_of(values: list[float], *, index: int = 0) -> ServingCurveLine:
    count = len(values)
    pairs = tuple((values[i], values[(i + 1) % count]) for i in range(count))
    marks = tuple(
        MeasuredMark(x, y, 1 + i % 4, f"point {i}", EnergyFigure("measured", x, y)) for i, (x, y) in enumerate(pairs)
    )
    energy = tuple(EnergyFigure("estimated", y, x, x, y, i) for i, (x, y) in enumerate(pairs))
    return ServingCurveLine(f"k{index}", f"GPU {index}", values[0], marks, pairs, "8 GPUs", values[-1], 0, energy, "c")


def scaling_line(value: float, count: int) -> SimpleNamespace:
    return SimpleNamespace(
        gpu_count=count,
        interconnect=("nvlink", "pcie")[count % 2],
        n=2,
        distinct_submitters=1,
        tokens_per_s=value,
        tokens_per_s_per_gpu=value,
        efficiency=value,
        efficiency_n=2,
        efficiency_min=value,
        efficiency_max=value,
    )


def allreduce_line(value: float, size: int) -> SimpleNamespace:
    return SimpleNamespace(
        gpu_count=2, interconnect="nvlink", bytes=size, n=1, busbw_gbs=value, algbw_gbs=value, time_us=value
    )


# Each helper with how it is fed a list of floats; what it returns is checked by the caller.
FIGURES: dict[str, Callable[[list[float]], dict[str, Any]]] = {
    "rankings_bar_figure": lambda v: rankings_bar_figure(
        rows_of(v), value_label="v", currency="USD", price_unit="per GPU-hour", baseline_name="A100"
    ),
    "perf_price_scatter_figure": lambda v: perf_price_scatter_figure(
        rows_of(v),
        frontier=[f"g{i}" for i in range(len(v))],
        price_label="p",
        perf_label="q",
        value_label="v",
        currency="CNY",
        price_unit="per GPU-hour",
    ),
    "tiers_figure": lambda v: tiers_figure(
        {"S": rows_of(v)[:2], "A": rows_of(v)[2:]},
        thresholds={"S": v[0], "A": 0.5, "B": v[-1]},
        currency="USD",
        price_unit="per GPU-hour",
        mark=v[0],
    ),
    "serving_curves_figure": lambda v: serving_curves_figure(
        [line_of(v), line_of(list(reversed(v)), index=1)], currency="USD", target=v[0], title="t"
    ),
    "price_history_figure": lambda v: price_history_figure(
        {"a": [(DAY + dt.timedelta(days=3 * i), x) for i, x in enumerate(v)], "b": [(DAY, v[0])]},
        currency="USD",
        shown=["a"],
    ),
    "results_box_figure": lambda v: results_box_figure(
        [ResultBox(f"w{i}", "fp16", x, x, v[0], v[-1], x, 1, 1) for i, x in enumerate(v)],
        relative_to="A100",
        gpu_count=1,
    ),
    "compare_figure": lambda v: compare_figure(
        ["A", "B"], ["u1", "u2"], [v[:2], v[-2:]], [["measured", ""], ["estimated", "measured"]]
    ),
    "scaling_figure": lambda v: scaling_figure([scaling_line(x, count) for count, x in enumerate(v, start=1)]),
    "allreduce_figure": lambda v: allreduce_figure([allreduce_line(x, 1 << (10 + i)) for i, x in enumerate(v)]),
    "architecture_timeline_figure": lambda v: architecture_timeline_figure(
        [TimelineItem("a", "Arch", "NVIDIA", DAY, f"{x}", i) for i, x in enumerate(v)]
    ),
    "fit_cost_time_figure": lambda v: fit_cost_time_figure(
        [CostTimePoint(f"G{i}", 1 + i, x, v[(i + 1) % len(v)], bool(i % 2), i == 0) for i, x in enumerate(v)],
        currency="USD",
        max_hours=v[-1],
    ),
}


def _ranges(v: list[float]) -> list[float]:
    return [v[0], v[-1]]


# The helpers that are not figures: each must not raise on any float.
HELPERS: dict[str, Callable[[list[float]], object]] = {
    "log_axis_ticks": lambda v: log_axis_ticks(_ranges(v), prefix="$"),
    "log_axis_range_of": log_axis_range_of,
    "log_axis_range": log_axis_range,
    "log_extent": log_extent,
    "log_ticks": lambda v: log_ticks(v[0], v[-1]),
    "log_plottable": lambda v: [log_plottable(x) for x in v],
    "plottable": lambda v: [plottable(x) for x in v],
    "number_text": lambda v: [number_text(x) for x in v],
    "rounded": rounded,
    "log_tick_text": lambda v: [log_tick_text(x) for x in v if log_plottable(x)],
    "frontier_labels": lambda v: frontier_labels(
        [(f"GPU {i}", x, v[0]) for i, x in enumerate(v)],
        x_range=log_axis_range(v),
        y_range=[0.0, 1.0],
        others=[(v[0], v[-1])],
    ),
    "label_box": lambda v: [label_box(x, x, "GPU", "top center") for x in v],
    "price_steps": lambda v: price_steps([(DAY + dt.timedelta(days=9 * i), x) for i, x in enumerate(v)]),
    "date_axis_range": lambda v: date_axis_range([DAY + dt.timedelta(days=i) for i in range(len(v))]),
    "energy_marks_of": lambda v: energy_marks_of(
        [
            SimpleNamespace(
                size="8b",
                engine="PyTorch",
                precision="bf16",
                gpu_count=1,
                context_tokens=1024,
                measured_on=DAY,
                points=[
                    SimpleNamespace(
                        concurrency=i + 1,
                        tokens_per_s_per_user=x,
                        tokens_per_s_per_gpu=v[-1],
                        joules_per_token=x,
                        power_w=v[0],
                    )  # fmt: skip
                    for i, x in enumerate(v)
                ],
            )
        ],
        size="8b",
        ranked=[MeasuredMark(v[0], v[-1], 1, "m")],
    ),
    "serving_curve_line": lambda v: serving_curve_line(
        choice=SimpleNamespace(
            measured=(),
            curve=tuple(zip(v, v, strict=True)),
            curve_label="",
            curve_error_pct=v[0],
            curve_loads=tuple(v),
            power_key="hopper/8b",
            board_limit_w=v[-1],
        ),
        key="k",
        name="n",
        price=v[0],
        power_curves={"hopper/8b": PowerCurve(400.0, 300.0, 30.0, 700.0, 20, 12.0)},
    ),
}


def test_every_chart_helper_is_covered() -> None:
    modules = [
        importlib.import_module(f"dashboard.figures.{m.name}") for m in pkgutil.iter_modules(dashboard.figures.__path__)
    ]
    modules.append(importlib.import_module("fitcalc.figures"))
    public = {
        name
        for module in modules
        for name, value in vars(module).items()
        if inspect.isfunction(value) and value.__module__ == module.__name__ and not name.startswith("_")
    }
    # Not numeric: text escaping, labels and layout pieces.
    not_numeric = {"esc", "title_layout", "basis_label", "figure_dict", "currency_prefix", "cost_time_points"}
    assert public - not_numeric - set(FIGURES) - set(HELPERS) == set()


@pytest.mark.parametrize("name", sorted(FIGURES))
@pytest.mark.parametrize("extreme", EXTREMES, ids=repr)
def test_each_figure_takes_each_extreme_in_every_slot(name: str, extreme: float) -> None:
    for values in ([extreme], [0.5, extreme, 400.0, extreme]):
        figure = strict_json(FIGURES[name](values))
        assert_log_axes_finite(figure)


@pytest.mark.parametrize("name", sorted(HELPERS))
@pytest.mark.parametrize("extreme", EXTREMES, ids=repr)
def test_each_helper_takes_each_extreme(name: str, extreme: float) -> None:
    for values in ([extreme], [extreme, 2.0], [0.5, extreme, 400.0]):
        HELPERS[name](values)


@pytest.mark.parametrize(
    "log_range", [[-323.3, 2.0], [-math.inf, 1.0], [math.nan, math.nan], [300.0, 308.3], [0.0, 0.0]]
)
def test_log_axis_ticks_stay_finite_few_and_inside_a_sane_range(log_range: list[float]) -> None:
    ticks = log_axis_ticks(log_range)
    assert len(ticks["tickvals"]) <= 40
    assert all(math.isfinite(t) and t > 0 for t in ticks["tickvals"])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(FIGURES)), values=floats_lists)
def test_figures_take_any_mix_of_floats(name: str, values: list[float]) -> None:
    assert_log_axes_finite(strict_json(FIGURES[name](values)))


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(HELPERS)), values=floats_lists)
def test_helpers_take_any_mix_of_floats(name: str, values: list[float]) -> None:
    HELPERS[name](values)


@given(values=floats_lists)
def test_log_axis_range_of_holds_its_drawable_values(values: list[float]) -> None:
    low, high = log_axis_range_of(values)
    assert math.isfinite(low) and math.isfinite(high) and low < high
    for value in values:
        if log_plottable(value):
            assert low < math.log10(value) < high
