"""The multi-GPU charts: data-parallel training scaling and all-reduce bus bandwidth."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from plotly.subplots import make_subplots

from dashboard.figures.style import (
    LAYOUT_BASE,
    PALETTE,
    esc,
    figure_dict,
    number_text,
    title_layout,
)
from dashboard.multi_gpu_maths import AllreduceLine, ScalingLine, bytes_label, interconnect_label


def _gpus(count: int) -> str:
    return ngettext("%(count)s GPU", "%(count)s GPUs", count) % {"count": count}


def scaling_figure(lines: Sequence[ScalingLine]) -> dict[str, Any]:
    """Data-parallel training against the GPU count: per-GPU throughput (top) and scaling efficiency
    (bottom, 100 % = perfect), one line per interconnect, each starting from the 1-GPU figure."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1)
    counts = sorted({line.gpu_count for line in lines})
    one_gpu = [line for line in lines if line.gpu_count == 1]
    several = [line for line in lines if line.gpu_count > 1]
    interconnects = list(dict.fromkeys(line.interconnect for line in several))
    for i, interconnect in enumerate(interconnects):
        series = one_gpu[:1] + [line for line in several if line.interconnect == interconnect]
        colour = PALETTE[i % len(PALETTE)]
        name = esc(interconnect_label(interconnect))
        x = [str(line.gpu_count) for line in series]
        fig.add_scatter(
            row=1,
            col=1,
            x=x,
            y=[line.tokens_per_s_per_gpu for line in series],
            mode="lines+markers",
            name=name,
            legendgroup=interconnect,
            marker={"color": colour, "size": 9},
            line={"color": colour},
            customdata=[
                [esc(_gpus(line.gpu_count)), line.n, line.distinct_submitters, number_text(line.tokens_per_s)]
                for line in series
            ],
            hovertemplate="%{customdata[0]}, "
            + name
            + "<br>"
            + esc(_("per GPU"))
            + ": %{y:,.0f} "
            + esc(_("tokens/s"))
            + "<br>"
            + esc(_("whole group"))
            + ": %{customdata[3]} "
            + esc(_("tokens/s"))
            + "<br>n = %{customdata[1]} · "
            + esc(_("submitters"))
            + ": %{customdata[2]}<extra></extra>",
        )
        with_efficiency = [line for line in series if line.gpu_count == 1 or line.efficiency is not None]
        fig.add_scatter(
            row=2,
            col=1,
            x=[str(line.gpu_count) for line in with_efficiency],
            y=[100.0 if line.gpu_count == 1 else (line.efficiency or 0) * 100 for line in with_efficiency],
            mode="lines+markers",
            name=name,
            legendgroup=interconnect,
            showlegend=False,
            marker={"color": colour, "size": 9, "symbol": "diamond"},
            line={"color": colour, "dash": "dot"},
            customdata=[
                [
                    esc(_gpus(line.gpu_count)),
                    esc(_("the reference (1 GPU)"))
                    if line.gpu_count == 1
                    else esc(
                        _("median of %(n)s runs, %(low)s–%(high)s %%")
                        % {
                            "n": line.efficiency_n,
                            "low": f"{(line.efficiency_min or 0) * 100:.0f}",
                            "high": f"{(line.efficiency_max or 0) * 100:.0f}",
                        }
                    ),
                ]
                for line in with_efficiency
            ],
            hovertemplate="%{customdata[0]}, "
            + name
            + "<br>"
            + esc(_("scaling efficiency"))
            + ": %{y:.0f} %<br>%{customdata[1]}<extra></extra>",
        )
    fig.add_hline(row=2, col=1, y=100, line={"color": "#888", "width": 1, "dash": "dash"})
    fig.update_layout(
        **LAYOUT_BASE,
        height=520,
        title=title_layout(_("Data-parallel training: per-GPU throughput and scaling efficiency")),
    )
    order = {"type": "category", "categoryorder": "array", "categoryarray": [str(c) for c in counts]}
    fig.update_xaxes(**order)
    fig.update_xaxes(row=2, col=1, title={"text": esc(_("GPUs"))})
    fig.update_yaxes(row=1, col=1, title={"text": esc(_("tokens/s per GPU"))}, rangemode="tozero")
    fig.update_yaxes(row=2, col=1, title={"text": esc(_("efficiency, %"))}, rangemode="tozero")
    return figure_dict(fig)


def allreduce_figure(lines: Sequence[AllreduceLine]) -> dict[str, Any]:
    """All-reduce bus bandwidth against the message size, one line per GPU count and interconnect."""
    fig = go.Figure()
    series = list(dict.fromkeys((line.gpu_count, line.interconnect) for line in lines))
    sizes = sorted({line.bytes for line in lines})
    for i, (count, interconnect) in enumerate(series):
        subset = sorted(
            (line for line in lines if (line.gpu_count, line.interconnect) == (count, interconnect)),
            key=lambda line: line.bytes,
        )
        name = esc(f"{_gpus(count)} · {interconnect_label(interconnect)}")
        fig.add_scatter(
            x=[line.bytes for line in subset],
            y=[line.busbw_gbs for line in subset],
            mode="lines+markers",
            name=name,
            marker={"color": PALETTE[i % len(PALETTE)], "size": 9},
            line={"color": PALETTE[i % len(PALETTE)]},
            customdata=[
                [bytes_label(line.bytes), line.n, number_text(line.algbw_gbs), number_text(line.time_us)]
                for line in subset
            ],
            hovertemplate=name
            + "<br>%{customdata[0]}: %{y:.1f} GB/s "
            + esc(_("bus bandwidth"))
            + "<br>"
            + esc(_("algorithm bandwidth"))
            + ": %{customdata[2]} GB/s · %{customdata[3]} µs<br>n = %{customdata[1]}<extra></extra>",
        )
    fig.update_layout(
        **LAYOUT_BASE,
        height=420,
        title=title_layout(_("All-reduce bus bandwidth by message size")),
        xaxis={
            "type": "log",
            "title": {"text": esc(_("message size per GPU"))},
            "tickvals": sizes,
            "ticktext": [bytes_label(size) for size in sizes],
        },
        yaxis={"title": {"text": esc(_("bus bandwidth, GB/s"))}, "rangemode": "tozero"},
    )
    return figure_dict(fig)
