"""The rankings' and tier list's charts: performance bars, performance against price with its frontier, tiers."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from dashboard.figures.style import (
    ESTIMATED_COLOUR,
    FRONTIER_COLOUR,
    LAYOUT_BASE,
    MEASURED_COLOUR,
    PALETTE,
    basis_label,
    currency_prefix,
    esc,
    figure_dict,
    log_axis_ticks,
    log_extent,
    log_plottable,
    number_text,
    plottable,
    title_layout,
)
from dashboard.selectors.ranking_rows import RowPrice


@dataclass(frozen=True)
class RankedPoint:
    """What the ranking charts need of a row (RankingRow satisfies it)."""

    gpu_slug: str
    gpu_name: str
    perf: float | None
    perf_basis: str
    n: int
    distinct_submitters: int
    price: RowPrice  # its amount in the page currency
    perf_per_dollar: float | None
    memory_gib: float | None
    tier: str | None = None
    ranked_value: float | None = None  # what ranks and tiers the row (RankingRow.ranked_value)


def _row_hover(row: Any, currency: str, price_unit: str) -> list[str]:
    sample = (
        _("n = %(n)s results, %(submitters)s distinct submitters") % {"n": row.n, "submitters": row.distinct_submitters}
        if row.perf_basis == "measured"
        else _("no accepted measurement: estimated from specs") + _estimate_hover(row)
    )
    return [
        esc(row.gpu_name),
        f"{number_text(row.perf)} ({esc(basis_label(row.perf_basis))})",
        esc(sample),
        f"{number_text(row.price.amount)} {esc(currency)} {esc(price_unit)}"
        if row.price.amount is not None
        else esc(_("no price")),
        number_text(row.perf_per_dollar),
        f"{row.memory_gib:g} GiB" if row.memory_gib else "—",
    ]


def _estimate_hover(row: Any) -> str:
    error = getattr(row, "estimate_error_pct", None)
    return "" if error is None else " " + _("(typically within ±%(error)s %%)") % {"error": f"{error:.0f}"}


def _estimate_text(row: Any) -> str:
    error = getattr(row, "estimate_error_pct", None)
    if error is None and getattr(row, "estimate_outside_range", False):
        return _("est., error unknown")
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
    ranked = [r for r in rows if plottable(r.perf_per_dollar)][:limit]
    fig = go.Figure()
    for basis, colour, pattern in (("measured", MEASURED_COLOUR, ""), ("estimated", ESTIMATED_COLOUR, "/")):
        subset = [r for r in ranked if r.perf_basis == basis]
        fig.add_bar(
            name=esc(basis_label(basis)),
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
        **LAYOUT_BASE,
        height=max(320, 26 * len(ranked) + 110),
        barmode="overlay",
        title=title_layout(title or _("Performance per price (%(baseline)s = 1.0)") % {"baseline": baseline_name}),
        xaxis={"title": {"text": esc(value_label)}},
        yaxis={"categoryorder": "array", "categoryarray": order, "automargin": True, "title": {"text": ""}},
    )
    return figure_dict(fig)


FRONTIER_FONT_PX = 11
# The smallest plot area the scatter gets (on a 390 px phone: the card less its padding, the
# axis labels and margins, 460 px tall): labels placed without overlap or clipping there keep
# clear of each other in any larger one.
MIN_PLOT_PX = (280.0, 280.0)
_LABEL_POSITIONS = (
    "top center", "bottom center", "middle right", "middle left", "top right", "top left", "bottom right", "bottom left",
)  # fmt: skip


def log_axis_range(values: Sequence[float]) -> list[float]:
    """A log axis range (in log10 units, as Plotly wants it) with room for labels at both ends."""
    low, high = log_extent(values) or (0.0, 0.0)
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
    x_span = (x_range[1] - x_range[0]) or 1.0
    y_span = (y_range[1] - y_range[0]) or 1.0

    def drawn(price: float, perf: float) -> bool:
        return log_plottable(price) and plottable(perf)

    def pixel(price: float, perf: float) -> tuple[float, float]:
        x = (math.log10(price) - x_range[0]) / x_span * width
        y = height - (perf - y_range[0]) / y_span * height
        return x, y

    markers = [pixel(price, perf) if drawn(price, perf) else None for _name, price, perf in points]
    obstacles = [pixel(price, perf) for price, perf in others if drawn(price, perf)]
    placed_markers = [marker for marker in markers if marker is not None]
    boxes: list[tuple[float, float, float, float]] = []
    out = []
    for i, (name, _price, _perf) in enumerate(points):
        marker = markers[i]
        chosen = ("", "top center")
        if marker is None:
            out.append(chosen)
            continue
        px, py = marker
        for position in _LABEL_POSITIONS:
            box = label_box(px, py, name, position)
            inside = box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height
            clear = not any(_overlap(box, other) for other in boxes)
            off_markers = not any(
                _overlap(box, (mx - 4, my - 4, mx + 4, my + 4), pad=0)
                for mx, my in [*placed_markers, *obstacles]
                if (mx, my) != (px, py)
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
    """Performance against price; the Pareto frontier (nothing cheaper is faster) as a line. A row
    whose price or performance no axis can draw (style.log_plottable, style.plottable) stays out."""
    priced = [r for r in rows if log_plottable(r.price.amount) and plottable(r.perf)]
    fig = go.Figure()
    for basis, colour, symbol in (
        ("measured", MEASURED_COLOUR, "circle"),
        ("estimated", ESTIMATED_COLOUR, "diamond-open"),
    ):
        subset = [r for r in priced if r.perf_basis == basis]
        fig.add_scatter(
            name=esc(basis_label(basis)),
            mode="markers",
            x=[r.price.amount for r in subset],
            y=[r.perf for r in subset],
            marker={"color": colour, "symbol": symbol, "size": 11, "line": {"width": 1.5, "color": colour}},
            customdata=[_row_hover(r, currency, price_unit) for r in subset],
            hovertemplate=_hovertemplate(value_label),
        )
    by_slug = {r.gpu_slug: r for r in priced}
    front = [by_slug[s] for s in frontier if s in by_slug]
    x_range = log_axis_range([r.price.amount for r in priced])
    y_range = [0.0, max((r.perf for r in priced), default=1.0) * 1.15]
    placed = frontier_labels(
        [(r.gpu_name, r.price.amount, r.perf) for r in front],
        x_range=x_range,
        y_range=y_range,
        others=[(r.price.amount, r.perf) for r in priced if r.gpu_slug not in set(frontier)],
    )
    fig.add_scatter(
        name=esc(_("Pareto frontier")),
        mode="lines+markers+text",
        x=[r.price.amount for r in front],
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
        **LAYOUT_BASE,
        height=460,
        title=title_layout(_("Performance against price")),
        xaxis={
            "title": {"text": esc(price_label)},
            "type": "log",
            "range": x_range,
            **log_axis_ticks(x_range, prefix=currency_prefix(currency)),
        },
        yaxis={"title": {"text": esc(perf_label)}, "range": y_range},
    )
    return figure_dict(fig)


# A price holds until the next observation only this long; a longer silence breaks the line
# (a catalogue snapshot months later says nothing about the months between).


TIER_COLOURS = {"S": "#d4380d", "A": "#fa8c16", "B": "#fadb14", "C": "#a0d911", "D": "#8c8c8c"}


def _tiered(row: Any) -> bool:
    return plottable(row.ranked_value) and row.ranked_value > 0


def tiers_figure(
    tiers: Mapping[str, Sequence[Any]],
    *,
    thresholds: Mapping[str, float],
    currency: str,
    price_unit: str,
    mark: float | None = None,
) -> dict[str, Any]:
    """Each tiered GPU's ranked figure (performance per price, an estimate at its conservative end:
    RankingRow.ranked_value) as a share of the tiers' 100 % mark, the best one
    (dashboard.ranking.maths.tier_mark; the best shown when not given): no bar passes 100 %. One
    colour per tier, the tier bounds as shaded bands, estimated GPUs hatched. ``tiers`` maps S..D
    to rows, best first."""
    rows = [(name, row) for name, members in tiers.items() for row in members if _tiered(row)]
    candidates = [float(row.ranked_value) for _name, row in rows]
    if mark is not None and plottable(mark) and mark > 0:
        candidates.append(mark)
    best = max(candidates, default=0.0) or 1.0
    fig = go.Figure()
    for name, members in tiers.items():
        subset = [row for row in members if _tiered(row)]
        if not subset:
            continue
        fig.add_bar(
            name=esc(_("Tier %(name)s") % {"name": name}),
            orientation="h",
            x=[row.ranked_value / best for row in subset],
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
        **LAYOUT_BASE,
        height=max(320, 24 * len(rows) + 130),
        barmode="overlay",
        shapes=bands,
        title=title_layout(_("Performance per price, as a share of the best (estimates at their conservative end)")),
        xaxis={
            "title": {"text": esc(_("Share of the best value"))},
            "tickformat": ".0%",
            "range": [0, 1.02],
        },
        yaxis={"categoryorder": "array", "categoryarray": order, "automargin": True, "title": {"text": ""}},
    )
    return figure_dict(fig)
