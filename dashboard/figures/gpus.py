"""The GPU page's charts: price history and results relative to the baseline GPU."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from dashboard.figures.style import (
    LAYOUT_BASE,
    PALETTE,
    esc,
    figure_dict,
    title_layout,
)

PRICE_GAP_DAYS = 7


def price_steps(
    points: Sequence[tuple[dt.date, float]], *, max_gap_days: int = PRICE_GAP_DAYS
) -> tuple[list[str | None], list[float | None]]:
    """x and y of a step line ("hv": each price holds until the next one) with a break (None)
    wherever two observations are more than ``max_gap_days`` apart."""
    xs: list[str | None] = []
    ys: list[float | None] = []
    previous: dt.date | None = None
    for day, price in sorted(points):
        if previous is not None and (day - previous).days > max_gap_days:
            xs.append(None)
            ys.append(None)
        xs.append(day.isoformat())
        ys.append(price)
        previous = day
    return xs, ys


def date_axis_range(days: Sequence[dt.date], *, min_span_days: int = 14) -> list[str]:
    """An x range of whole days around the data, at least ``min_span_days`` wide: a single day of
    data otherwise autoranges to milliseconds ("23:59:59.999 Nov 21" to "00:00:00.001")."""
    first, last = min(days), max(days)
    pad = max(dt.timedelta(days=1), (last - first) * 0.03)
    missing = dt.timedelta(days=min_span_days) - (last - first) - 2 * pad
    if missing > dt.timedelta(0):
        pad += missing / 2
    return [(first - pad).isoformat(), (last + pad).isoformat()]


def price_history_figure(
    series: Mapping[str, Sequence[tuple[dt.date, float]]], *, currency: str, shown: Sequence[str] = ()
) -> dict[str, Any]:
    """Lowest price per GPU-hour per day as steps, one line per series, broken across gaps of
    more than ``PRICE_GAP_DAYS``; series not in ``shown`` start hidden (a click on the legend shows
    them), so thirty providers stay readable."""
    # The traces as plain dicts: thirty providers over months are thousands of points, which
    # plotly's per-property validation would take a tenth of a second to check; the layout, small,
    # is still built and checked by plotly.
    traces = []
    for i, (name, points) in enumerate(series.items()):
        xs, ys = price_steps(points)
        traces.append(
            {
                "type": "scatter",
                "name": esc(name),
                "mode": "lines+markers",
                "x": xs,
                "y": [y if y is not None and math.isfinite(y) else None for y in ys],  # JSON has no NaN
                "connectgaps": False,
                "line": {"color": PALETTE[i % len(PALETTE)], "shape": "hv", "width": 3 if name in shown else 1.5},
                "marker": {"size": 5},
                "visible": True if not shown or name in shown else "legendonly",
                "hovertemplate": esc(name) + "<br>%{x|%Y-%m-%d}: %{y:.3f} " + esc(currency) + "<extra></extra>",
            }
        )
    fig = go.Figure()
    layout = dict(LAYOUT_BASE)
    layout["legend"] = {"orientation": "v", "x": 1.02, "y": 1, "font": {"size": 11}}
    days = [day for points in series.values() for day, _price in points]
    fig.update_layout(
        **layout,
        height=420,
        title=title_layout(_("Lowest price per GPU-hour, by day")),
        xaxis={
            "title": {"text": esc(_("Date"))},
            "type": "date",
            "range": date_axis_range(days) if days else None,
            "tickformat": "%Y-%m-%d",
            "hoverformat": "%Y-%m-%d",
        },
        yaxis={"title": {"text": esc(_("%(currency)s per GPU-hour") % {"currency": currency})}, "rangemode": "tozero"},
    )
    figure = figure_dict(fig)
    figure["data"] = traces
    return figure


@dataclass(frozen=True)
class ResultBox:
    label: str
    precision: str
    median: float
    q1: float
    q3: float
    minimum: float
    maximum: float
    n: int
    distinct_submitters: int


def results_box_figure(boxes: Sequence[ResultBox], *, relative_to: str, gpu_count: int) -> dict[str, Any]:
    """Measured results per workload as boxes (quartiles, min-max whiskers), one colour per
    precision, n in each label."""
    fig = go.Figure()
    precisions = list(dict.fromkeys(b.precision for b in boxes))
    for i, precision in enumerate(precisions):
        subset = [b for b in boxes if b.precision == precision]
        fig.add_box(
            name=esc(precision.upper()),
            x=[f"{esc(b.label)} {esc(precision.upper())} (n={b.n})" for b in subset],
            q1=[b.q1 for b in subset],
            median=[b.median for b in subset],
            q3=[b.q3 for b in subset],
            lowerfence=[b.minimum for b in subset],
            upperfence=[b.maximum for b in subset],
            marker={"color": PALETTE[i % len(PALETTE)]},
            customdata=[[b.n, b.distinct_submitters] for b in subset],
            hovertemplate="%{x}<br>"
            + esc(_("median"))
            + ": %{median:.3g}<br>"
            + esc(_("submitters"))
            + ": %{customdata[1]}<extra></extra>",
        )
    fig.update_layout(
        **LAYOUT_BASE,
        height=440,
        title=title_layout(
            _("Measured results, %(count)s GPU per run, relative to %(name)s")
            % {"count": gpu_count, "name": relative_to}
        ),
        yaxis={"title": {"text": esc(_("× %(name)s") % {"name": relative_to})}, "rangemode": "tozero"},
        xaxis={"title": {"text": ""}, "automargin": True, "tickangle": -35},
    )
    return figure_dict(fig)
