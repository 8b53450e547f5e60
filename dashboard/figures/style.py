"""Plotly figures as pure functions: plain data in, a JSON-ready figure dict out.

Plotly renders trace text, tick labels and hover templates as a small HTML dialect, so every
name that comes from users or providers goes through ``esc`` before it reaches a figure.
Labels are translated with gettext at build time (the active language of the request).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from django.utils.translation import gettext as _

MEASURED_COLOUR = "#1f6feb"
ESTIMATED_COLOUR = "#f0a020"
FRONTIER_COLOUR = "#d4380d"
PALETTE = ("#1f6feb", "#76b900", "#d4380d", "#8957e5", "#f0a020", "#0e8a7e", "#c2185b", "#5d6d7e")


def _cartesian_template() -> dict[str, Any]:
    """Plotly's "plotly_white" cut to what our charts draw (bars, boxes, lines and markers on x/y
    axes): the full template carries maps, polar and 3-D defaults, 7 KB in every chart of a page."""
    full = pio.templates["plotly_white"].to_plotly_json()
    unused = {"geo", "polar", "scene", "ternary", "coloraxis", "colorscale"}
    return {
        "layout": {key: value for key, value in full["layout"].items() if key not in unused},
        "data": {key: value for key, value in full["data"].items() if key in {"bar", "scatter"}},
    }


CHART_TEMPLATE = _cartesian_template()
LAYOUT_BASE = {
    "template": "plotly_white",
    "margin": {"l": 10, "r": 20, "t": 78, "b": 10},
    "font": {"family": 'system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", sans-serif', "size": 13},
    "hoverlabel": {"align": "left"},
    "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
}


def esc(value: object) -> str:
    """Text safe for Plotly's HTML-like labels: <, > and & shown literally."""
    return html.escape(str(value), quote=False)


def number_text(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:,.0f}"


def title_layout(text: str) -> dict[str, Any]:
    # In the top margin, above the legend row, so the two never overlap.
    return {
        "text": esc(text),
        "font": {"size": 15},
        "x": 0.01,
        "xanchor": "left",
        "y": 0.985,
        "yanchor": "top",
        "yref": "container",
    }


def basis_label(basis: str) -> str:
    return _("measured") if basis == "measured" else _("estimated from specs")


def figure_dict(fig: go.Figure) -> dict[str, Any]:
    figure: dict[str, Any] = json.loads(fig.to_json())
    figure["layout"]["template"] = CHART_TEMPLATE
    return figure


def rounded(values: Sequence[float], digits: int = 4) -> list[float]:
    """Coordinates to ``digits`` significant figures: a chart is read to far less, and the page
    carries every point of every curve."""
    return [float(f"{value:.{digits}g}") for value in values]


CURRENCY_SYMBOLS = {"USD": "$", "CNY": "¥"}


def currency_prefix(currency: str) -> str:
    """The symbol written before an amount on a chart's ticks ("$0.5"), else the code and a space."""
    return CURRENCY_SYMBOLS.get(currency.upper(), f"{currency} ")


# The decades (powers of ten) a log axis may span. Real figures lie well inside (a GPU-hour at a
# tenth of a cent, a second at the other end), and inside them every power of ten, its logarithm
# and a pixel scale stay finite floats: 1e-300 (whose reciprocal overflows) or 5e-324 (which
# underflows to 0 in a logarithm) never reach an axis.
LOG_DECADES = (-15, 15)
# Beyond this magnitude a value is not drawn on a linear axis either: no real figure is near it,
# and an axis range padded around 1e308 overflows to infinity.
PLOT_LIMIT = 1e15
# Most ticks on a log axis: over a wider span only every n-th power of ten is labelled.
MAX_LOG_TICKS = 12


def plottable(value: float | None) -> bool:
    """Whether a chart may draw ``value`` on a linear axis: a finite number of a sane magnitude."""
    return value is not None and math.isfinite(value) and abs(value) <= PLOT_LIMIT


def log_plottable(value: float | None) -> bool:
    """Whether a chart may draw ``value`` on a log axis: positive, within ``LOG_DECADES``."""
    return value is not None and math.isfinite(value) and 10.0 ** LOG_DECADES[0] <= value <= 10.0 ** LOG_DECADES[1]


def log_extent(values: Sequence[float | None]) -> tuple[float, float] | None:
    """The smallest and largest log10 of the values a log axis may draw; None when there are none."""
    logs = [math.log10(v) for v in values if log_plottable(v)]  # type: ignore[arg-type]
    return (min(logs), max(logs)) if logs else None


def log_tick_text(value: float) -> str:
    """A tick's full value: 0.05, 2, 20, 1,000 (never the bare leading digit Plotly's D2 ticks show)."""
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.6g}"


def _log_range_clamped(log_range: Sequence[float]) -> tuple[float, float]:
    finite = sorted(v for v in log_range if math.isfinite(v)) or [0.0, 1.0]
    low, high = (max(LOG_DECADES[0], min(LOG_DECADES[1], v)) for v in (finite[0], finite[-1]))
    return low, high


def log_axis_ticks(log_range: Sequence[float], *, prefix: str = "", suffix: str = "") -> dict[str, Any]:
    """tickvals and ticktext for a log axis over ``log_range`` (log10 units, as Plotly's range):
    1, 2, 5, 10, 20, 50... (only the powers of ten past four decades, every n-th past twelve),
    each labelled with its full value and unit, so a "2" on a cost axis in tens reads "20"."""
    low, high = _log_range_clamped(log_range)
    steps = (1.0,) if high - low > 4 else (1.0, 2.0, 5.0)
    stride = max(1, math.ceil((high - low) / MAX_LOG_TICKS))
    values = [
        step * 10.0**decade
        for decade in range(math.floor(low) - 1, math.ceil(high) + 1)
        if decade % stride == 0
        for step in steps
        if low <= math.log10(step * 10.0**decade) <= high
    ]
    # Rounded so that 0.1 * 3 noise never shows (0.30000000000000004).
    values = [float(f"{value:.6g}") for value in values]
    return {"tickvals": values, "ticktext": [f"{prefix}{log_tick_text(v)}{suffix}" for v in values]}


def log_axis_range_of(values: Sequence[float | None], *, pad: float = 0.05) -> list[float]:
    """A log axis range (log10 units) around the drawable ``values``, a little wider on both sides."""
    low, high = log_extent(values) or (0.0, 0.0)
    if high - low < 0.3:
        low, high = low - 0.15, high + 0.15
    return [low - pad, high + pad]
