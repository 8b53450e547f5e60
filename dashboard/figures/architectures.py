"""The architecture timeline."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
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


@dataclass(frozen=True)
class TimelineItem:
    slug: str
    name: str
    vendor: str
    release: dt.date
    features: str
    gpus: int


def architecture_timeline_figure(items: Sequence[TimelineItem]) -> dict[str, Any]:
    """Architectures on a time axis, one row per vendor, features in the hover."""
    fig = go.Figure()
    vendors = list(dict.fromkeys(i.vendor for i in items))
    for v, vendor in enumerate(vendors):
        subset = [i for i in items if i.vendor == vendor]
        fig.add_scatter(
            name=esc(vendor),
            mode="markers+text",
            x=[i.release.isoformat() for i in subset],
            y=[esc(vendor)] * len(subset),
            text=[esc(i.name) for i in subset],
            textposition=["top center" if k % 2 == 0 else "bottom center" for k in range(len(subset))],
            marker={"size": 14, "color": PALETTE[v % len(PALETTE)], "symbol": "diamond"},
            customdata=[[esc(i.name), esc(i.features), i.gpus, i.release.strftime("%Y-%m")] for i in subset],
            hovertemplate="<b>%{customdata[0]}</b> (%{customdata[3]})<br>%{customdata[1]}<br>"
            + esc(_("GPUs in the catalogue"))
            + ": %{customdata[2]}<extra></extra>",
        )
    fig.update_layout(
        **LAYOUT_BASE,
        height=200 + 90 * max(1, len(vendors)),
        title=title_layout(_("Architecture timeline")),
        xaxis={"title": {"text": esc(_("Release"))}, "type": "date"},
        yaxis={"title": {"text": ""}, "automargin": True},
        showlegend=False,
    )
    return figure_dict(fig)
