"""Plotly figures as pure functions: plain data in, a JSON-ready figure dict out.

Plotly renders trace text, tick labels and hover templates as a small HTML dialect, so every
name that comes from users or providers goes through ``esc`` before it reaches a figure.
Labels are translated with gettext at build time (the active language of the request).
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from plotly.subplots import make_subplots

from dashboard.scaling import AllreduceLine, ScalingLine, bytes_label, interconnect_label

MEASURED_COLOUR = "#1f6feb"
ESTIMATED_COLOUR = "#f0a020"
FRONTIER_COLOUR = "#d4380d"
PALETTE = ("#1f6feb", "#76b900", "#d4380d", "#8957e5", "#f0a020", "#0e8a7e", "#c2185b", "#5d6d7e")
_CONFIG_LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 10, "r": 20, "t": 78, "b": 10},
    "font": {"family": 'system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", sans-serif', "size": 13},
    "hoverlabel": {"align": "left"},
    "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
}


def esc(value: object) -> str:
    """Text safe for Plotly's HTML-like labels: <, > and & shown literally."""
    return html.escape(str(value), quote=False)


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:,.0f}"


def _title(text: str) -> dict[str, Any]:
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


def _to_json(fig: go.Figure) -> dict[str, Any]:
    return json.loads(fig.to_json())


@dataclass(frozen=True)
class RankedPoint:
    """What the ranking charts need of a row (RankingRow satisfies it)."""

    gpu_slug: str
    gpu_name: str
    perf: float | None
    perf_basis: str
    n: int
    distinct_submitters: int
    price: float | None
    perf_per_dollar: float | None
    memory_gib: float | None
    tier: str | None = None


def _basis_label(basis: str) -> str:
    return _("measured") if basis == "measured" else _("estimated from specs")


def _row_hover(row: Any, currency: str, price_unit: str) -> list[str]:
    sample = (
        _("n = %(n)s results, %(submitters)s distinct submitters") % {"n": row.n, "submitters": row.distinct_submitters}
        if row.perf_basis == "measured"
        else _("no accepted measurement: estimated from specs") + _estimate_hover(row)
    )
    return [
        esc(row.gpu_name),
        f"{_fmt(row.perf)} ({esc(_basis_label(row.perf_basis))})",
        esc(sample),
        f"{_fmt(row.price)} {esc(currency)} {esc(price_unit)}" if row.price is not None else esc(_("no price")),
        _fmt(row.perf_per_dollar),
        f"{row.memory_gib:g} GiB" if row.memory_gib else "—",
    ]


def _estimate_hover(row: Any) -> str:
    error = getattr(row, "estimate_error_pct", None)
    return "" if error is None else " " + _("(typically within ±%(error)s %%)") % {"error": f"{error:.0f}"}


def _estimate_text(row: Any) -> str:
    error = getattr(row, "estimate_error_pct", None)
    return _("est.") if error is None else _("est. ±%(error)s %%") % {"error": f"{error:.0f}"}


def _hovertemplate(value_label: str) -> str:
    return (
        "<b>%{customdata[0]}</b><br>"
        + esc(_("Performance"))
        + ": %{customdata[1]}<br>%{customdata[2]}<br>"
        + esc(_("Price"))
        + ": %{customdata[3]}<br>"
        + esc(value_label)
        + ": %{customdata[4]}<br>"
        + esc(_("Memory"))
        + ": %{customdata[5]}<extra></extra>"
    )


def rankings_bar_figure(
    rows: Sequence[Any],
    *,
    value_label: str,
    currency: str,
    price_unit: str,
    baseline_name: str,
    limit: int = 40,
    title: str = "",
) -> dict[str, Any]:
    """Horizontal bars of performance per price, best on top, measured and estimated apart.

    ``title`` replaces the default "Performance per price (baseline = 1.0)" (the LLM use cases
    rank absolute tokens/s)."""
    ranked = [r for r in rows if r.perf_per_dollar is not None][:limit]
    fig = go.Figure()
    for basis, colour, pattern in (("measured", MEASURED_COLOUR, ""), ("estimated", ESTIMATED_COLOUR, "/")):
        subset = [r for r in ranked if r.perf_basis == basis]
        fig.add_bar(
            name=esc(_basis_label(basis)),
            orientation="h",
            x=[r.perf_per_dollar for r in subset],
            y=[esc(r.gpu_name) for r in subset],
            marker={"color": colour, "pattern": {"shape": pattern}},
            customdata=[_row_hover(r, currency, price_unit) for r in subset],
            hovertemplate=_hovertemplate(value_label),
            text=[f"n={r.n}" if r.perf_basis == "measured" else _estimate_text(r) for r in subset],
            textposition="auto",
        )
    order = [esc(r.gpu_name) for r in reversed(ranked)]
    fig.update_layout(
        **_CONFIG_LAYOUT,
        height=max(320, 26 * len(ranked) + 110),
        barmode="overlay",
        title=_title(title or _("Performance per price (%(baseline)s = 1.0)") % {"baseline": baseline_name}),
        xaxis={"title": {"text": esc(value_label)}},
        yaxis={"categoryorder": "array", "categoryarray": order, "automargin": True, "title": {"text": ""}},
    )
    return _to_json(fig)


FRONTIER_FONT_PX = 11
# The smallest plot area the scatter gets (the chart grid's narrowest card, 460 px tall): labels
# placed without overlap or clipping there keep clear of each other in any larger one.
MIN_PLOT_PX = (360.0, 280.0)
_LABEL_POSITIONS = (
    "top center", "bottom center", "middle right", "middle left", "top right", "top left", "bottom right", "bottom left",
)  # fmt: skip


def log_axis_range(values: Sequence[float]) -> list[float]:
    """A log axis range (in log10 units, as Plotly wants it) with room for labels at both ends."""
    logs = [math.log10(v) for v in values if v and v > 0] or [0.0]
    low, high = min(logs), max(logs)
    pad = max(0.12, (high - low) * 0.08)
    return [low - pad, high + pad]


def label_box(
    px: float, py: float, text: str, position: str, *, font_px: float = FRONTIER_FONT_PX, gap: float = 8.0
) -> tuple[float, float, float, float]:
    """The box (left, top, right, bottom, in screen pixels, y down) a Plotly text label takes at a
    textposition around a marker at (px, py); widths are estimated (0.62 em per character)."""
    width, height = 0.62 * font_px * len(text), 1.3 * font_px
    vertical, horizontal = position.split()
    if vertical == "top":
        top = py - gap - height
    elif vertical == "bottom":
        top = py + gap
    else:
        top = py - height / 2
    if horizontal == "center":
        left = px - width / 2
    elif horizontal == "right":
        left = px + (gap if vertical == "middle" else 0)
    else:
        left = px - width - (gap if vertical == "middle" else 0)
    return left, top, left + width, top + height


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float], pad: float = 2.0) -> bool:
    return a[0] < b[2] + pad and b[0] < a[2] + pad and a[1] < b[3] + pad and b[1] < a[3] + pad


def frontier_labels(
    points: Sequence[tuple[str, float, float]],
    *,
    x_range: Sequence[float],
    y_range: Sequence[float],
    plot_px: tuple[float, float] = MIN_PLOT_PX,
    others: Sequence[tuple[float, float]] = (),
) -> list[tuple[str, str]]:
    """(text, textposition) per frontier point (name, price, performance): the first position
    around the point where the label stays inside the plot, off every other label and off every
    marker (the frontier's and ``others``, as (price, performance)); no label (the name stays in
    the hover and the table) where none fits."""
    width, height = plot_px

    def pixel(price: float, perf: float) -> tuple[float, float]:
        x = (math.log10(price) - x_range[0]) / (x_range[1] - x_range[0]) * width
        y = height - (perf - y_range[0]) / (y_range[1] - y_range[0]) * height
        return x, y

    markers = [pixel(price, perf) for _name, price, perf in points]
    obstacles = [pixel(price, perf) for price, perf in others if price > 0]
    boxes: list[tuple[float, float, float, float]] = []
    out = []
    for i, (name, _price, _perf) in enumerate(points):
        px, py = markers[i]
        chosen = ("", "top center")
        for position in _LABEL_POSITIONS:
            box = label_box(px, py, name, position)
            inside = box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height
            clear = not any(_overlap(box, other) for other in boxes)
            off_markers = not any(
                _overlap(box, (mx - 4, my - 4, mx + 4, my + 4), pad=0)
                for j, (mx, my) in enumerate([*markers, *obstacles])
                if j != i and (mx, my) != (px, py)
            )
            if inside and clear and off_markers:
                boxes.append(box)
                chosen = (name, position)
                break
        out.append(chosen)
    return out


def perf_price_scatter_figure(
    rows: Sequence[Any],
    *,
    frontier: Sequence[str],
    price_label: str,
    perf_label: str,
    value_label: str,
    currency: str,
    price_unit: str,
) -> dict[str, Any]:
    """Performance against price; the Pareto frontier (nothing cheaper is faster) as a line."""
    priced = [r for r in rows if r.price is not None and r.perf is not None]
    fig = go.Figure()
    for basis, colour, symbol in (
        ("measured", MEASURED_COLOUR, "circle"),
        ("estimated", ESTIMATED_COLOUR, "diamond-open"),
    ):
        subset = [r for r in priced if r.perf_basis == basis]
        fig.add_scatter(
            name=esc(_basis_label(basis)),
            mode="markers",
            x=[r.price for r in subset],
            y=[r.perf for r in subset],
            marker={"color": colour, "symbol": symbol, "size": 11, "line": {"width": 1.5, "color": colour}},
            customdata=[_row_hover(r, currency, price_unit) for r in subset],
            hovertemplate=_hovertemplate(value_label),
        )
    by_slug = {r.gpu_slug: r for r in priced}
    front = [by_slug[s] for s in frontier if s in by_slug]
    x_range = log_axis_range([r.price for r in priced])
    y_range = [0.0, max((r.perf for r in priced), default=1.0) * 1.15]
    placed = frontier_labels(
        [(r.gpu_name, r.price, r.perf) for r in front],
        x_range=x_range,
        y_range=y_range,
        others=[(r.price, r.perf) for r in priced if r.gpu_slug not in set(frontier)],
    )
    fig.add_scatter(
        name=esc(_("Pareto frontier")),
        mode="lines+markers+text",
        x=[r.price for r in front],
        y=[r.perf for r in front],
        text=[esc(text) for text, _position in placed],
        customdata=[esc(r.gpu_name) for r in front],
        textposition=[position for _text, position in placed],
        cliponaxis=False,
        textfont={"size": FRONTIER_FONT_PX, "color": FRONTIER_COLOUR},
        line={"color": FRONTIER_COLOUR, "width": 2, "dash": "dot"},
        marker={"color": FRONTIER_COLOUR, "size": 6},
        hoverinfo="skip",
    )
    fig.update_layout(
        **_CONFIG_LAYOUT,
        height=460,
        title=_title(_("Performance against price")),
        xaxis={"title": {"text": esc(price_label)}, "type": "log", "dtick": "D2", "range": x_range},
        yaxis={"title": {"text": esc(perf_label)}, "range": y_range},
    )
    return _to_json(fig)


# A price holds until the next observation only this long; a longer silence breaks the line
# (a catalogue snapshot months later says nothing about the months between).
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
    fig = go.Figure()
    for i, (name, points) in enumerate(series.items()):
        xs, ys = price_steps(points)
        fig.add_scatter(
            name=esc(name),
            mode="lines+markers",
            x=xs,
            y=ys,
            connectgaps=False,
            line={"color": PALETTE[i % len(PALETTE)], "shape": "hv", "width": 3 if name in shown else 1.5},
            marker={"size": 5},
            visible=True if not shown or name in shown else "legendonly",
            hovertemplate=esc(name) + "<br>%{x|%Y-%m-%d}: %{y:.3f} " + esc(currency) + "<extra></extra>",
        )
    layout = dict(_CONFIG_LAYOUT)
    layout["legend"] = {"orientation": "v", "x": 1.02, "y": 1, "font": {"size": 11}}
    days = [day for points in series.values() for day, _price in points]
    fig.update_layout(
        **layout,
        height=420,
        title=_title(_("Lowest price per GPU-hour, by day")),
        xaxis={
            "title": {"text": esc(_("Date"))},
            "type": "date",
            "range": date_axis_range(days) if days else None,
            "tickformat": "%Y-%m-%d",
            "hoverformat": "%Y-%m-%d",
        },
        yaxis={"title": {"text": esc(_("%(currency)s per GPU-hour") % {"currency": currency})}, "rangemode": "tozero"},
    )
    return _to_json(fig)


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
        **_CONFIG_LAYOUT,
        height=440,
        title=_title(
            _("Measured results, %(count)s GPU per run, relative to %(name)s")
            % {"count": gpu_count, "name": relative_to}
        ),
        yaxis={"title": {"text": esc(_("× %(name)s") % {"name": relative_to})}, "rangemode": "tozero"},
        xaxis={"title": {"text": ""}, "automargin": True, "tickangle": -35},
    )
    return _to_json(fig)


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
                [esc(_gpus(line.gpu_count)), line.n, line.distinct_submitters, _fmt(line.tokens_per_s)]
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
        **_CONFIG_LAYOUT,
        height=520,
        title=_title(_("Data-parallel training: per-GPU throughput and scaling efficiency")),
    )
    order = {"type": "category", "categoryorder": "array", "categoryarray": [str(c) for c in counts]}
    fig.update_xaxes(**order)
    fig.update_xaxes(row=2, col=1, title={"text": esc(_("GPUs"))})
    fig.update_yaxes(row=1, col=1, title={"text": esc(_("tokens/s per GPU"))}, rangemode="tozero")
    fig.update_yaxes(row=2, col=1, title={"text": esc(_("efficiency, %"))}, rangemode="tozero")
    return _to_json(fig)


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
            customdata=[[bytes_label(line.bytes), line.n, _fmt(line.algbw_gbs), _fmt(line.time_us)] for line in subset],
            hovertemplate=name
            + "<br>%{customdata[0]}: %{y:.1f} GB/s "
            + esc(_("bus bandwidth"))
            + "<br>"
            + esc(_("algorithm bandwidth"))
            + ": %{customdata[2]} GB/s · %{customdata[3]} µs<br>n = %{customdata[1]}<extra></extra>",
        )
    fig.update_layout(
        **_CONFIG_LAYOUT,
        height=420,
        title=_title(_("All-reduce bus bandwidth by message size")),
        xaxis={
            "type": "log",
            "title": {"text": esc(_("message size per GPU"))},
            "tickvals": sizes,
            "ticktext": [bytes_label(size) for size in sizes],
        },
        yaxis={"title": {"text": esc(_("bus bandwidth, GB/s"))}, "rangemode": "tozero"},
    )
    return _to_json(fig)


def compare_figure(
    gpu_names: Sequence[str],
    use_case_labels: Sequence[str],
    values: Sequence[Sequence[float | None]],
    bases: Sequence[Sequence[str]],
) -> dict[str, Any]:
    """Grouped bars: each GPU's performance per use case relative to the first GPU."""
    fig = go.Figure()
    for i, name in enumerate(gpu_names):
        fig.add_bar(
            name=esc(name),
            x=[esc(label) for label in use_case_labels],
            y=values[i],
            marker={
                "color": PALETTE[i % len(PALETTE)],
                "pattern": {"shape": ["/" if b == "estimated" else "" for b in bases[i]]},
            },
            customdata=[esc(_basis_label(b)) if b else "—" for b in bases[i]],
            hovertemplate=esc(name) + "<br>%{x}: %{y:.3g} (%{customdata})<extra></extra>",
        )
    fig.update_layout(
        **_CONFIG_LAYOUT,
        height=420,
        barmode="group",
        title=_title(_("Performance relative to %(name)s") % {"name": gpu_names[0] if gpu_names else ""}),
        yaxis={"title": {"text": esc(_("× %(name)s") % {"name": gpu_names[0] if gpu_names else ""})}},
    )
    return _to_json(fig)


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
        **_CONFIG_LAYOUT,
        height=200 + 90 * max(1, len(vendors)),
        title=_title(_("Architecture timeline")),
        xaxis={"title": {"text": esc(_("Release"))}, "type": "date"},
        yaxis={"title": {"text": ""}, "automargin": True},
        showlegend=False,
    )
    return _to_json(fig)


TIER_COLOURS = {"S": "#d4380d", "A": "#fa8c16", "B": "#fadb14", "C": "#a0d911", "D": "#8c8c8c"}


def tiers_figure(
    tiers: Mapping[str, Sequence[Any]], *, thresholds: Mapping[str, float], currency: str, price_unit: str
) -> dict[str, Any]:
    """Each tiered GPU's performance per price as a share of the best, one colour per tier, the
    tier bounds as shaded bands; estimated GPUs hatched. ``tiers`` maps S..D to rows, best first."""
    rows = [(name, row) for name, members in tiers.items() for row in members if row.perf_per_dollar]
    best = max((row.perf_per_dollar for _name, row in rows), default=0.0) or 1.0
    fig = go.Figure()
    for name, members in tiers.items():
        subset = [row for row in members if row.perf_per_dollar]
        if not subset:
            continue
        fig.add_bar(
            name=esc(_("Tier %(name)s") % {"name": name}),
            orientation="h",
            x=[row.perf_per_dollar / best for row in subset],
            y=[esc(row.gpu_name) for row in subset],
            marker={
                "color": TIER_COLOURS.get(name, PALETTE[0]),
                "pattern": {"shape": ["/" if row.perf_basis == "estimated" else "" for row in subset]},
            },
            customdata=[_row_hover(row, currency, price_unit) for row in subset],
            hovertemplate=_hovertemplate(_("Share of the best value")),
        )
    order = [esc(row.gpu_name) for _name, row in reversed(rows)]
    bands = []
    upper = 1.0
    for name in TIER_COLOURS:
        lower = thresholds.get(name, 0.0)
        bands.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": lower,
                "x1": upper,
                "y0": 0,
                "y1": 1,
                "fillcolor": TIER_COLOURS[name],
                "opacity": 0.07,
                "line": {"width": 0},
                "layer": "below",
            }
        )
        upper = lower
    fig.update_layout(
        **_CONFIG_LAYOUT,
        height=max(320, 24 * len(rows) + 130),
        barmode="overlay",
        shapes=bands,
        title=_title(_("Performance per price, as a share of the best")),
        xaxis={"title": {"text": esc(_("Share of the best value"))}, "tickformat": ".0%", "range": [0, 1.02]},
        yaxis={"categoryorder": "array", "categoryarray": order, "automargin": True, "title": {"text": ""}},
    )
    return _to_json(fig)
