"""Plotly figures as pure functions: plain data in, a JSON-ready figure dict out.

Plotly renders trace text, tick labels and hover templates as a small HTML dialect, so every
name that comes from users or providers goes through ``esc`` before it reaches a figure.
Labels are translated with gettext at build time (the active language of the request).
"""

from __future__ import annotations

import html
import json
from typing import Any

import plotly.graph_objects as go
from django.utils.translation import gettext as _

MEASURED_COLOUR = "#1f6feb"
ESTIMATED_COLOUR = "#f0a020"
FRONTIER_COLOUR = "#d4380d"
PALETTE = ("#1f6feb", "#76b900", "#d4380d", "#8957e5", "#f0a020", "#0e8a7e", "#c2185b", "#5d6d7e")
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
    return json.loads(fig.to_json())
