"""LLM serving curves: output tokens/s per GPU against tokens/s per user, per GPU, with the measured
points as markers and the serving model's curve as a line; the cost of a million output tokens at
the GPU's price on hover (the rankings' and the GPU pages' chart).

Energy on hover: a measured point with a measured energy shows its joules per output token, tokens
per kWh and its measured average watts per GPU (tokens/s per measured kW); a point of the model's
curve shows the energy estimated from its GPU class's fitted power curve at the curve's load
(llm.serving.energy), labelled estimated with its interval. A point with neither shows none: the
TDP is never passed off as a measured draw."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from dashboard.figures.style import (
    LAYOUT_BASE,
    LOG_DECADES,
    PALETTE,
    esc,
    figure_dict,
    log_plottable,
    rounded,
    title_layout,
)
from llm.question import cost_per_million_output_tokens
from llm.selectors.energy import EnergyCurve
from llm.selectors.serving_target import ServingChoice
from llm.serving.energy import EnergyFigure, PowerCurve, energy_estimate, energy_measured

# Lines shown at first; the others wait in the legend (a click shows one) and behind the chart's
# "show all" button (static/js/charts.js reads its labels from layout.meta.more).
VISIBLE_LINES = 8


@dataclass(frozen=True)
class MeasuredMark:
    tokens_per_s_per_user: float
    tokens_per_s_per_gpu: float
    gpu_count: int
    label: str
    energy: EnergyFigure | None = None  # measured energy, where the point carries one


@dataclass(frozen=True)
class ServingCurveLine:
    """One line of the chart: a GPU's serving curve and measured points for one model (named by the
    GPU on the rankings, by the model on a GPU's page), priced at ``price`` per GPU-hour (None: no price)."""

    key: str
    name: str
    price: float | None
    measured: tuple[MeasuredMark, ...]
    curve: tuple[tuple[float, float], ...]  # (tokens/s per user, tokens/s per GPU) of the model
    curve_label: str
    curve_error_pct: float | None
    offline_points: int = 0  # measured points without a per-user rate (not drawn)
    curve_energy: tuple[EnergyFigure | None, ...] = ()  # estimated, beside each point of ``curve``
    power_class: str = ""  # the GPU class and model size of the power curve the estimates come from
    # Measured points with a measured energy that no ranking counts yet (fewer submitters than the
    # rule asks): drawn apart, so that their energy is seen without passing for a ranked figure.
    energy_marks: tuple[MeasuredMark, ...] = ()


def serving_curve_line(
    *,
    choice: ServingChoice,
    key: str,
    name: str,
    price: float | None,
    power_curves: Mapping[str, PowerCurve] | None = None,
) -> ServingCurveLine | None:
    """A chart line of a serving choice: its measured points that have a per-user rate and the
    model's curve of its configuration (None when it has neither), with the measured energy of
    its points and, given the stored ``power_curves``, the estimated energy along the curve."""
    marks = tuple(
        MeasuredMark(
            p.tokens_per_s_per_user,
            p.tokens_per_s_per_gpu,
            p.gpu_count,
            p.label
            + (
                " · " + _("drawn at its latency limit: a bound on the rate per user, not a measured rate")
                if p.latency_bound
                else ""
            ),
            energy_measured(joules_per_token_=p.joules_per_token, power_w=p.power_w)
            if p.joules_per_token is not None and p.power_w is not None
            else None,
        )
        for p in choice.measured
        if p.tokens_per_s_per_user
    )
    if not marks and not choice.curve:
        return None
    offline = sum(1 for p in choice.measured if not p.tokens_per_s_per_user)
    power = (power_curves or {}).get(choice.power_key)
    energy: tuple[EnergyFigure | None, ...] = ()
    if power is not None and len(choice.curve_loads) == len(choice.curve):
        # The curve's rates are the model's estimates: their error widens the joules' interval.
        error = 1.0 + (100.0 if choice.curve_error_pct is None else choice.curve_error_pct) / 100.0
        rates = (1.0 / error, error)
        energy = tuple(
            energy_estimate(
                power, load=load, tokens_per_s_per_gpu=y, limit_w=choice.board_limit_w, rate_interval=rates
            )  # fmt: skip
            for load, (_x, y) in zip(choice.curve_loads, choice.curve, strict=True)
        )
    return ServingCurveLine(key, name, price, marks, choice.curve, choice.curve_label, choice.curve_error_pct, offline,
                            energy, choice.power_key if energy else "")  # fmt: skip


def log_ticks(low: float, high: float) -> tuple[list[float], list[str]]:
    """Tick values 1, 2, 5 x 10^k between ``low`` and ``high`` with short labels (500, 1k, 20k),
    within the decades a log axis may span (style.LOG_DECADES)."""
    values: list[float] = []
    texts: list[str] = []
    if not (0 < low <= high < math.inf):
        return values, texts
    first = max(math.floor(math.log10(low)), LOG_DECADES[0])
    last = min(math.ceil(math.log10(high)), LOG_DECADES[1])
    for exponent in range(first, last + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10.0**exponent
            if low <= value <= high:
                values.append(value)
                texts.append(_short(value))
    return values, texts


def _drawn(x: float, y: float) -> bool:
    return log_plottable(x) and log_plottable(y)


def _short(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def _costs(price: float | None, tokens_per_s_per_gpu: Sequence[float]) -> list[float] | None:
    """The cost of a million output tokens at each rate, for the hover (None: no price)."""
    if price is None:
        return None
    costs = [
        cost_per_million_output_tokens(price_per_gpu_hour=price, tokens_per_s_per_gpu=rate)
        for rate in tokens_per_s_per_gpu
    ]
    return [float(f"{cost:.4g}") if cost is not None else math.nan for cost in costs]


def _cost_hover(price: float | None, currency: str, field: str) -> str:
    """The hover's cost line: the number from ``field`` (a customdata reference), the words once."""
    if price is None:
        return esc(_("no price: enter yours to see the cost"))
    words = esc(_("%(cost)s %(currency)s per million output tokens") % {"cost": "\x00", "currency": currency})
    return words.replace("\x00", f"%{{{field}:.3f}}")


def energy_marks_of(
    curves: Sequence[EnergyCurve], *, size: str, ranked: Sequence[MeasuredMark]
) -> tuple[MeasuredMark, ...]:
    """The measured-energy points of a GPU's sweeps of one model size class (llm.selectors.energy)
    that the chart's ranked marks do not already show, as marks with their energy."""
    shown = {(round(m.tokens_per_s_per_user, 6), round(m.tokens_per_s_per_gpu, 6)) for m in ranked}
    marks = []
    for curve in curves:
        if curve.size != size:
            continue
        for p in curve.points:
            if (
                not p.tokens_per_s_per_user
                or (round(p.tokens_per_s_per_user, 6), round(p.tokens_per_s_per_gpu, 6)) in shown
            ):
                continue
            label = " · ".join(
                part
                for part in (
                    curve.engine,
                    curve.precision.upper(),
                    _("concurrency %(n)s") % {"n": p.concurrency} if p.concurrency else "",
                    _("%(tokens)s tokens of context") % {"tokens": curve.context_tokens}
                    if curve.context_tokens
                    else "",
                    _("measured %(date)s") % {"date": f"{curve.measured_on:%Y-%m-%d}"},
                )
                if part
            )
            energy = energy_measured(joules_per_token_=p.joules_per_token, power_w=p.power_w)
            marks.append(MeasuredMark(p.tokens_per_s_per_user, p.tokens_per_s_per_gpu, curve.gpu_count, label, energy))
    return tuple(marks)


# The energy line's figures: their names in the line's words, and how each is written (Python's
# format and d3's, the one Plotly's hover templates use, to the same digits).
_ENERGY_FORMATS = {"joules": (".3g", ".3~g"), "per_kwh": (",.0f", ",.0f"), "watts": (",.0f", ",.0f"),
                   "per_kw": (",.0f", ",.0f"), "low": (".3g", ".3~g"), "high": (".3g", ".3~g")}  # fmt: skip


def _drawable(energy: EnergyFigure | None) -> bool:
    return energy is not None and log_plottable(energy.joules_per_token) and log_plottable(energy.power_w)


def _energy_figures(energy: EnergyFigure) -> dict[str, float | None]:
    figures: dict[str, float | None] = {
        "joules": energy.joules_per_token,
        "per_kwh": energy.tokens_per_kwh,
        "watts": energy.power_w,
        "per_kw": energy.tokens_per_s_per_kw,
    }
    if energy.basis != "measured":
        figures.update(low=energy.low_j, high=energy.high_j)
    return figures


def _energy_words(basis: str, figures: Mapping[str, str], *, power_class: str, points: int) -> str:
    """The energy line (with its line break), its figures already written as ``figures`` says."""
    if basis == "measured":
        text = _(
            "%(joules)s J per output token (measured) · %(per_kwh)s tokens per kWh · %(watts)s W per GPU measured, "
            "%(per_kw)s tokens/s per measured kW"
        ) % {name: figures[name] for name in ("joules", "per_kwh", "watts", "per_kw")}
    else:
        text = _(
            "estimated %(joules)s J per output token (%(low)s–%(high)s) · %(per_kwh)s tokens per kWh · "
            "%(watts)s W per GPU from the power curve of %(class)s, fitted on %(points)s measured points"
        ) % {**figures, "class": power_class, "points": points}
    return "<br>" + esc(text)


def _energy_text(energy: EnergyFigure | None, power_class: str = "") -> str:
    """One point's energy line (with its line break); empty without one."""
    if energy is None or not _drawable(energy):
        return ""
    written = {
        name: "?" if value is None else format(value, _ENERGY_FORMATS[name][0])
        for name, value in _energy_figures(energy).items()
    }
    return _energy_words(energy.basis, written, power_class=power_class, points=energy.curve_points)


def _energy_hover(
    energies: Sequence[EnergyFigure | None], *, power_class: str, first: int
) -> tuple[str, list[list[Any]]]:
    """A trace's energy on hover: the text its template carries and each point's customdata
    columns from ``first`` on. Where every point has a drawable energy of one kind (measured, or
    estimated from one power curve) the words are in the template once and each point carries its
    figures; otherwise each point carries its own line (empty where it has none)."""
    if not any(_drawable(e) for e in energies):
        return "", [[] for _e in energies]
    drawn = [e for e in energies if e is not None and _drawable(e)]
    kinds = {(e.basis, e.curve_points) for e in drawn}
    columns = [_energy_figures(e) for e in drawn]
    if len(drawn) < len(energies) or len(kinds) > 1 or any(v is None for c in columns for v in c.values()):
        return f"%{{customdata[{first}]}}", [[_energy_text(e, power_class)] for e in energies]
    names = list(columns[0])
    references = {name: f"%{{customdata[{first + i}]:{_ENERGY_FORMATS[name][1]}}}" for i, name in enumerate(names)}
    basis, points = kinds.pop()
    template = _energy_words(basis, references, power_class=power_class, points=points)
    return template, [[_carried(c[name], _ENERGY_FORMATS[name][0]) for name in names] for c in columns]


def _carried(value: float | None, python_format: str) -> float | int | None:
    """A figure as a point carries it: a whole number where it is shown as one, else two digits
    more than shown (the bytes of a chart that holds every point of every curve)."""
    if value is None:
        return None
    return round(value) if python_format.endswith(".0f") else float(f"{value:.5g}")


def _template_text(text: str) -> str:
    """Text for a hover template: escaped, and never read as one of Plotly's %{...} references."""
    return esc(text).replace("%{", "%\u200b{")


def _shared_and_own(labels: Sequence[str]) -> tuple[str, list[str], str]:
    """A trace's point labels as the leading and trailing parts every point shares, said once in
    the trace's hover template, and each point's own middle (with the separators it needs): the
    page carries a source's title once per trace, not once per point, and each label still reads
    in its own order, prefix + own + suffix."""
    split = [label.split(" · ") for label in labels]
    if not split:
        return "", [], ""
    first, shortest = split[0], min(len(parts) for parts in split)
    head = 0
    while head < shortest and all(parts[head] == first[head] for parts in split):
        head += 1
    tail = 0
    while tail < shortest - head and all(parts[-1 - tail] == first[-1 - tail] for parts in split):
        tail += 1
    prefix, suffix = first[:head], first[len(first) - tail :]
    own = [" · ".join([""] * bool(prefix) + parts[head : len(parts) - tail] + [""] * bool(suffix)) for parts in split]
    return " · ".join(prefix), own, " · ".join(suffix)


def serving_curves_figure(
    lines: Sequence[ServingCurveLine], *, currency: str, target: float | None, title: str
) -> dict[str, Any]:
    """The chart (module doc); ``target``: the ranking's tokens/s per user, drawn as a dashed line."""
    fig = go.Figure()
    xs: list[float] = []
    ys: list[float] = []
    per_user, per_gpu = _("tokens/s per user"), _("tokens/s per GPU")
    target = target if log_plottable(target) else None
    drawn = 0
    for index, line in enumerate(lines):
        # Both axes are logarithmic: a point either of them cannot draw stays out.
        curve = [(x, y) for x, y in line.curve if _drawn(x, y)]
        energy = dict(zip(line.curve, line.curve_energy, strict=False))
        measured = [m for m in line.measured if _drawn(m.tokens_per_s_per_user, m.tokens_per_s_per_gpu)]
        if not curve and not measured:
            continue
        drawn += 1
        colour = PALETTE[index % len(PALETTE)]
        visible: bool | str = True if drawn <= VISIBLE_LINES else "legendonly"
        group = line.key
        name = esc(line.name)
        if curve:
            error = (
                _("serving model, typically ±%(error)s %%") % {"error": f"{line.curve_error_pct:.0f}"}
                if line.curve_error_pct is not None
                else _("serving model, error not measured yet")
            )
            curve_template, curve_energy = _energy_hover(
                [energy.get(point) for point in curve], power_class=line.power_class, first=1
            )
            fig.add_trace(
                go.Scatter(
                    x=rounded([x for x, _y in curve]),
                    y=rounded([y for _x, y in curve]),
                    mode="lines",
                    name=name,
                    legendgroup=group,
                    visible=visible,
                    line={"color": colour, "width": 2, "dash": "dot" if measured else "solid"},
                    customdata=[
                        [cost, *cells]
                        for cost, cells in zip(
                            _costs(line.price, [y for _x, y in curve]) or [math.nan] * len(curve),
                            curve_energy,
                            strict=True,
                        )
                    ],
                    hovertemplate=f"<b>{name}</b><br>{esc(error)}<br>{_template_text(line.curve_label)}<br>"
                    f"%{{x:,.1f}} {esc(per_user)} · %{{y:,.0f}} {esc(per_gpu)}<br>"
                    f"{_cost_hover(line.price, currency, 'customdata[0]')}{curve_template}<extra></extra>",
                )
            )
            xs += [x for x, _y in curve]
            ys += [y for _x, y in curve]
        energy_marks = [m for m in line.energy_marks if _drawn(m.tokens_per_s_per_user, m.tokens_per_s_per_gpu)]
        if energy_marks:
            not_ranked = _("measured, not ranked")
            energy_prefix, energy_own, energy_suffix = _shared_and_own([m.label for m in energy_marks])
            marks_template, marks_energy = _energy_hover([m.energy for m in energy_marks], power_class="", first=2)
            fig.add_trace(
                go.Scatter(
                    x=[m.tokens_per_s_per_user for m in energy_marks],
                    y=[m.tokens_per_s_per_gpu for m in energy_marks],
                    mode="markers",
                    name=esc(_("%(name)s · measured energy, not ranked") % {"name": line.name}),
                    legendgroup=group,
                    visible=visible,
                    marker={"color": colour, "size": 9, "symbol": "diamond-open", "line": {"width": 2}},
                    customdata=[
                        [esc(own), m.gpu_count, *cells]
                        for m, own, cells in zip(energy_marks, energy_own, marks_energy, strict=True)
                    ],
                    hovertemplate=f"<b>{name}</b> ×%{{customdata[1]}} · {esc(not_ranked)}<br>"
                    f"{_template_text(energy_prefix)}%{{customdata[0]}}{_template_text(energy_suffix)}<br>"
                    f"%{{x:,.1f}} {esc(per_user)} · %{{y:,.0f}} {esc(per_gpu)}"
                    f"{marks_template}<extra></extra>",
                )
            )
            xs += [m.tokens_per_s_per_user for m in energy_marks]
            ys += [m.tokens_per_s_per_gpu for m in energy_marks]
        if measured:
            measured_prefix, measured_own, measured_suffix = _shared_and_own([m.label for m in measured])
            measured_template, measured_energy = _energy_hover([m.energy for m in measured], power_class="", first=3)
            fig.add_trace(
                go.Scatter(
                    x=[m.tokens_per_s_per_user for m in measured],
                    y=[m.tokens_per_s_per_gpu for m in measured],
                    mode="markers",
                    name=name,
                    legendgroup=group,
                    showlegend=not curve,
                    visible=visible,
                    marker={"color": colour, "size": 9, "symbol": "circle", "line": {"color": "white", "width": 1}},
                    customdata=[
                        [esc(own), cost, m.gpu_count, *cells]
                        for m, own, cost, cells in zip(
                            measured,
                            measured_own,
                            _costs(line.price, [m.tokens_per_s_per_gpu for m in measured])
                            or [math.nan] * len(measured),
                            measured_energy,
                            strict=True,
                        )
                    ],
                    hovertemplate=f"<b>{name}</b> ×%{{customdata[2]}} · {esc(_('measured'))}<br>"
                    f"{_template_text(measured_prefix)}%{{customdata[0]}}{_template_text(measured_suffix)}<br>"
                    f"%{{x:,.1f}} {esc(per_user)} · %{{y:,.0f}} {esc(per_gpu)}<br>"
                    f"{_cost_hover(line.price, currency, 'customdata[1]')}{measured_template}<extra></extra>",
                )
            )
            xs += [m.tokens_per_s_per_user for m in measured]
            ys += [m.tokens_per_s_per_gpu for m in measured]
    layout: dict[str, Any] = {
        **LAYOUT_BASE,
        "title": title_layout(title),
        "height": 560,
        "xaxis": {"title": {"text": esc(per_user)}, "type": "log"},
        "yaxis": {"title": {"text": esc(per_gpu)}, "type": "log"},
        # Beside the plot, one GPU a line: a long list scrolls instead of squeezing the axes.
        "legend": {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"},
        "margin": {"l": 10, "r": 20, "t": 78, "b": 50},
    }
    if drawn > VISIBLE_LINES:
        layout["meta"] = {
            "more": {
                "all": _("Show all %(count)d lines") % {"count": drawn},
                "first": _("Show the first %(count)d only") % {"count": VISIBLE_LINES},
            }
        }
    if xs and ys:
        for axis, values in (("xaxis", xs + ([target] if target else [])), ("yaxis", ys)):
            low, high = min(values), max(values)
            ticks, texts = log_ticks(low / 1.5, high * 1.5)
            layout[axis].update(tickvals=ticks, ticktext=texts)
    if target:
        layout["shapes"] = [
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": target,
                "x1": target,
                "y0": 0,
                "y1": 1,
                "line": {"color": "#5d6d7e", "width": 1, "dash": "dash"},
            }
        ]
        layout["annotations"] = [
            {
                "x": math.log10(target),
                "xref": "x",
                "yref": "paper",
                "y": 1,
                "yanchor": "bottom",
                "showarrow": False,
                "text": esc(_("target: %(rate)s tokens/s per user") % {"rate": f"{target:g}"}),
                "font": {"size": 11, "color": "#5d6d7e"},
            }
        ]
    fig.update_layout(**layout)
    return figure_dict(fig)
