"""Log axes label every tick with its full value and unit: Plotly's "D2" ticks read "2 5 1 2 5",
so a "2" on a cost axis could mean $20."""

from __future__ import annotations

import math

from dashboard.figures.style import log_axis_range_of, log_axis_ticks
from fitcalc.figures import CostTimePoint, fit_cost_time_figure


def test_ticks_run_1_2_5_per_decade_with_full_values_and_units():
    ticks = log_axis_ticks([math.log10(0.15), math.log10(60)], prefix="$")
    assert ticks["tickvals"] == [0.2, 0.5, 1, 2, 5, 10, 20, 50]
    assert ticks["ticktext"] == ["$0.2", "$0.5", "$1", "$2", "$5", "$10", "$20", "$50"]


def test_wide_ranges_keep_only_powers_of_ten_and_group_thousands():
    ticks = log_axis_ticks([-1.5, 4.2], suffix=" h")
    assert ticks["tickvals"] == [0.1, 1, 10, 100, 1000, 10000]
    assert ticks["ticktext"][-1] == "10,000 h"


def test_every_tick_lies_in_the_range_and_the_range_holds_the_data():
    values = [0.37, 2.4, 19.0]
    low, high = log_axis_range_of(values)
    assert low < math.log10(min(values)) and high > math.log10(max(values))
    for tick in log_axis_ticks([low, high])["tickvals"]:
        assert low <= math.log10(tick) <= high


def test_the_fit_chart_labels_cost_and_time_in_full():
    points = [
        CostTimePoint(gpu_name="A", count=1, hours=3.0, cost=12.0, is_estimate=False, recommended=True),
        CostTimePoint(gpu_name="B", count=2, hours=40.0, cost=260.0, is_estimate=True, recommended=False),
    ]
    layout = fit_cost_time_figure(points, currency="USD", max_hours=24)["layout"]
    assert "$20" in layout["yaxis"]["ticktext"] and "$200" in layout["yaxis"]["ticktext"]
    assert "10 h" in layout["xaxis"]["ticktext"]
    assert "dtick" not in layout["xaxis"] and "dtick" not in layout["yaxis"]
