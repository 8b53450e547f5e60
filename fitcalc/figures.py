"""The fit page's chart as a pure function: plan points in, a JSON-ready Plotly figure out.

GPU names come from the catalogue (and, through it, from imports), so every label goes through
``esc``: Plotly renders trace text and hover templates as a small HTML dialect.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from dashboard.figures.style import (
    ESTIMATED_COLOUR,
    FRONTIER_COLOUR,
    LAYOUT_BASE,
    MEASURED_COLOUR,
    currency_prefix,
    esc,
    figure_dict,
    log_axis_range_of,
    log_axis_ticks,
    log_plottable,
)
from fitcalc.plan import GpuPlan


@dataclass(frozen=True)
class CostTimePoint:
    """One GPU model at one count that fits, with a known time and cost."""

    gpu_name: str
    count: int
    hours: float
    cost: float
    is_estimate: bool
    recommended: bool


def cost_time_points(plans: Iterable[GpuPlan]) -> list[CostTimePoint]:
    """Every fitting (GPU, count) with both a time and a cost, in the plans' order."""
    points = []
    for plan in plans:
        for count_plan in plan.counts:
            if count_plan.fits and count_plan.hours is not None and count_plan.cost is not None:
                points.append(
                    CostTimePoint(
                        gpu_name=plan.gpu.name,
                        count=count_plan.count,
                        hours=count_plan.hours,
                        cost=count_plan.cost,
                        is_estimate=count_plan.throughput_is_estimate,
                        recommended=plan.recommended is not None and plan.recommended.count == count_plan.count,
                    )
                )
    return points


def _label(point: CostTimePoint) -> str:
    return f"{point.count} × {esc(point.gpu_name)}"


def fit_cost_time_figure(points: Sequence[CostTimePoint], *, currency: str, max_hours: float) -> dict[str, Any]:
    """Cost to finish against time to finish (both log scales), one marker per GPU and count.

    Measured and estimated throughput apart (estimates hollow); each GPU's recommended count
    ringed; a dashed line at ``max_hours`` (the GPU selection help page: a run should finish within 24 hours).
    A point whose time or cost a log axis cannot draw (style.log_plottable) stays out.
    """
    points = [p for p in points if log_plottable(p.hours) and log_plottable(p.cost)]
    fig = go.Figure()
    hover = (
        "<b>%{text}</b><br>"
        + esc(_("Time"))
        + ": %{x:.3g} h<br>"
        + esc(_("Cost"))
        + ": %{y:,.2f} "
        + esc(currency)
        + "<br>%{customdata}<extra></extra>"
    )
    for is_estimate, colour, symbol, name in (
        (False, MEASURED_COLOUR, "circle", _("measured throughput")),
        (True, ESTIMATED_COLOUR, "diamond-open", _("throughput estimated from specs")),
    ):
        subset = [p for p in points if p.is_estimate is is_estimate]
        fig.add_scatter(
            name=esc(name),
            mode="markers",
            x=[p.hours for p in subset],
            y=[p.cost for p in subset],
            text=[_label(p) for p in subset],
            customdata=[esc(_("recommended count") if p.recommended else "") for p in subset],
            marker={
                "color": colour,
                "symbol": symbol,
                "size": [13 if p.recommended else 8 for p in subset],
                "line": {"width": 1.5, "color": colour},
            },
            hovertemplate=hover,
        )
    if points and log_plottable(max_hours):
        # A trace, not a shape: it gets a legend entry, and log axes need no coordinate juggling.
        costs = [p.cost for p in points]
        fig.add_scatter(
            name=esc(_("%(hours)s h limit") % {"hours": f"{max_hours:g}"}),
            mode="lines",
            x=[max_hours, max_hours],
            y=[min(costs), max(costs)],
            line={"color": FRONTIER_COLOUR, "dash": "dash", "width": 1.5},
            hoverinfo="skip",
        )
    hours_range = log_axis_range_of([p.hours for p in points] + ([max_hours] if points else []))
    cost_range = log_axis_range_of([p.cost for p in points])
    fig.update_layout(
        **LAYOUT_BASE,
        height=460,
        title={
            "text": esc(_("Cost against time to finish")),
            "font": {"size": 15},
            "x": 0.01,
            "xanchor": "left",
            "y": 0.985,
            "yanchor": "top",
            "yref": "container",
        },
        xaxis={
            "title": {"text": esc(_("Hours to finish"))},
            "type": "log",
            "range": hours_range,
            **log_axis_ticks(hours_range, suffix=" h"),
        },
        yaxis={
            "title": {"text": esc(_("Cost (%(currency)s)") % {"currency": currency})},
            "type": "log",
            "range": cost_range,
            **log_axis_ticks(cost_range, prefix=currency_prefix(currency)),
        },
    )
    return figure_dict(fig)
