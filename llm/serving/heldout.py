"""Held-out checks of the serving model the way a reviewer runs them, and the intervals they give (pure).

Checks (each estimates points with constants fitted without them):

* ``time``: fit on what was published before a date, estimate everything published on or after it;
* ``source``: leave one source out (MLPerf, TensorRT-LLM's tables, llama.cpp, InferenceX, our client);
* ``gpu`` and ``model``: leave one GPU, one model out.

Every held-out estimate is tagged with the kinds of extrapolation it makes against the points its
constants were fitted on:

* ``pair:measured`` (its GPU measured on its model), ``pair:new`` (GPU and model each measured,
  never together), ``gpu:new`` (the GPU never measured on anything), ``model:new``;
* ``lengths:outside`` (prompt or output outside the range measured on that model);
* ``engine:<class>`` and ``class:<hardware class>`` (the engine and the vendor's architecture);
* ``all``.

The 80 % interval of a kind is made from the held-out estimates of that kind, as
``estimate / measured``, in groups of one GPU on one engine class: centred (in log) on their
median and as wide either way as the finite-sample conformal 80 % quantile (the
``ceil((n + 1) x 0.8)``-th smallest of ``n``) of how far each group's ratios fall from the median
of the other groups' ratios, times ``sqrt(1 + 1 / G)`` for a centre estimated from ``G`` groups
(the prediction interval of a new group). Taking each group's distance from the others, not from
a centre it helped make, is what a configuration never measured sees: the points of one GPU on
one engine share its bias, so percentiles of the pooled ratios would be too narrow for it. The
group is a GPU on an engine class, not a GPU, because that is what shares a bias and what an
estimate stands in for: an answer anchors a GPU's estimate only on its points of the same engine
class (``llm.serving.answer``), and one GPU sits at different ratios on different engines (the
L40S: 0.99 on llama.cpp, 1.17 on TensorRT-LLM), a spread between engines that a group per GPU
averages away inside the card. An estimate ``e`` of that kind reads ``[e / p90, e / p10]``. Its
coverage is checked out of sample: for each group, the interval made without that group, applied
to that group's points (so no point checks an interval it made). A kind with fewer than 20
estimates, or from fewer than three GPUs, has no interval of its own (its estimates take the
widest of their other kinds).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from llm.serving.fit import (
    HELD_OUT_MAX_NFEV,
    HeldOut,
    MeasuredCoverage,
    MeasuredPoint,
    ServingFit,
    constants_fit,
    error_table,
    measured_regimes,
    predict,
    serving_fit_build,
)
from llm.serving.physics import ServingConstants

INTERVAL_LEVEL = 0.8
MIN_POINTS = 20  # a kind with fewer held-out estimates has no interval of its own
MIN_GPUS = 3  # nor one measured on fewer GPUs: its coverage could not be checked on a GPU left out


@dataclass(frozen=True)
class Estimate:
    point: MeasuredPoint
    estimate: float | None
    check: str  # time | source | gpu | model
    kinds: tuple[str, ...]
    inside: bool = False  # its regime (hardware class, engine class, parallelism) among the fitted points'

    @property
    def ratio(self) -> float | None:
        """estimate / measured (None: the model does not fit the point)."""
        return None if self.estimate is None else self.estimate / self.point.tokens_per_s_per_gpu

    @property
    def error(self) -> float:
        """|estimate / measured - 1|; a point the model does not fit counts as 100 % off."""
        r = self.ratio
        return 1.0 if r is None else abs(r - 1.0)


Fit = Callable[..., ServingConstants]


def _estimate(test: Sequence[MeasuredPoint], train: Sequence[MeasuredPoint], *, check: str, base: ServingConstants,
              fit: Fit) -> list[Estimate]:  # fmt: skip
    constants = fit(train, base=base, max_nfev=HELD_OUT_MAX_NFEV)
    seen = MeasuredCoverage.of(train)
    regimes = measured_regimes(train)
    out = []
    for p in test:
        got = predict(p, constants)
        kinds = seen.kinds(gpu_key=p.gpu_key, model_key=p.model_key, engine=p.engine,
                           hardware_class=p.hardware.hardware_class, input_len=p.workload.input_len,
                           output_len=p.workload.output_len)  # fmt: skip
        out.append(Estimate(p, got.tokens_per_s_per_gpu if got else None, check, kinds, p.regime in regimes))
    return out


def held_out_by(points: Sequence[MeasuredPoint], *, by: str, base: ServingConstants,
                fit: Fit = constants_fit) -> list[Estimate]:  # fmt: skip
    """Leave one group out: ``by`` is gpu, model or source."""
    key: Callable[[MeasuredPoint], str] = {
        "gpu": lambda p: p.gpu_key,
        "model": lambda p: p.model_key,
        "source": lambda p: p.source,
    }[by]
    groups: dict[str, list[MeasuredPoint]] = defaultdict(list)
    for p in points:
        groups[key(p)].append(p)
    out: list[Estimate] = []
    for name, test in sorted(groups.items()):
        train = [p for p in points if key(p) != name]
        if train:
            out.extend(_estimate(test, train, check=by, base=base, fit=fit))
    return out


def held_out_after(points: Sequence[MeasuredPoint], *, cutoff: str, base: ServingConstants,
                   fit: Fit = constants_fit) -> list[Estimate]:  # fmt: skip
    """The time split: fit on points published before ``cutoff`` (ISO date), estimate the rest."""
    train = [p for p in points if p.published and p.published < cutoff]
    test = [p for p in points if p.published and p.published >= cutoff]
    if not train or not test:
        return []
    return _estimate(test, train, check="time", base=base, fit=fit)


def serving_fit_checked(points: Sequence[MeasuredPoint], *, cutoff: str,
                        base: ServingConstants | None = None) -> tuple[ServingFit, list[Estimate]]:  # fmt: skip
    """The fit on every point and the reviewer's checks (time split at ``cutoff``, leave one source,
    GPU, model out), each refit done once: the fit's leave-one-GPU-out and leave-one-model-out
    error table is read off the same held-out estimates the checks make."""
    start = base or ServingConstants()
    fit = serving_fit_build(points, base=start, with_errors=False)
    if not points:
        return fit, []
    # Each refit starts where the fit on every point started (fit.HELD_OUT_MAX_NFEV says why).
    checks = held_out_after(points, cutoff=cutoff, base=start) + [
        r for by in ("source", "gpu", "model") for r in held_out_by(points, by=by, base=start)
    ]
    table = error_table(
        [HeldOut(r.point, r.estimate, r.inside, r.check) for r in checks if r.check in ("gpu", "model")]
    )
    return replace(fit, errors=table, intervals=intervals(checks), coverage=MeasuredCoverage.of(points)), checks


# -- what the checks say ----------------------------------------------------------------------


def _median_pct(values: Sequence[float]) -> float:
    return float(np.median(values) * 100)


def error_rows(results: Sequence[Estimate]) -> dict[str, dict[str, dict[str, float]]]:
    """``{check: {group: {"n", "median_pct", "p90_pct"}}}`` by scenario, on never-measured pairs
    and over all."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for check in sorted({r.check for r in results}):
        groups: dict[str, list[float]] = defaultdict(list)
        for r in results:
            if r.check != check:
                continue
            groups["all"].append(r.error)
            groups[f"scenario:{r.point.scenario}"].append(r.error)
            if "pair:measured" not in r.kinds:
                groups["never-measured pair"].append(r.error)
        table[check] = {
            g: {"n": len(v), "median_pct": round(_median_pct(v), 1), "p90_pct": round(float(np.percentile(v, 90)) * 100, 1)}
            for g, v in sorted(groups.items())
        }  # fmt: skip
    return table


def interval_of(by_group: Mapping[str, Sequence[float]]) -> tuple[float, float] | None:
    """(p10, p90) of estimate / measured for held-out estimates grouped by GPU on an engine class
    (module doc): the median ratio, widened either way by the finite-sample conformal 80 % quantile
    of how far each group's ratios fall (in log) from the median of the other groups' ratios. None
    with fewer than two groups: a spread between groups needs two."""
    logs = {g: np.log(np.asarray(v, dtype=float)) for g, v in by_group.items() if len(v)}
    if len(logs) < 2:
        return None
    scores: list[float] = []
    for gpu, values in logs.items():
        center = float(np.median(np.concatenate([v for g, v in logs.items() if g != gpu])))
        scores.extend(np.abs(values - center).tolist())
    ordered = np.sort(np.asarray(scores))
    n = len(ordered)
    rank = min(n, math.ceil((n + 1) * INTERVAL_LEVEL))  # the finite-sample conformal rank
    # A configuration never measured is one more draw of a group's bias, and the centre it is read
    # against was itself estimated from only len(logs) groups: its distance from that centre spreads
    # by sqrt(1 + 1 / G) of the spread between groups (the prediction interval of a new group), which
    # matters where a kind rests on three or four of them.
    half = float(ordered[rank - 1]) * math.sqrt(1.0 + 1.0 / len(logs))
    center = float(np.median(np.concatenate(list(logs.values()))))
    return math.exp(center - half), math.exp(center + half)


def intervals(results: Sequence[Estimate]) -> dict[str, dict[str, float | None]]:
    """``{kind: {"n", "gpus", "p10", "p90", "coverage"}}`` for every kind with at least MIN_POINTS
    held-out estimates the model fits, on at least MIN_GPUS GPUs (so that its interval can be
    checked on a GPU it was not made from); ``coverage``: the share of them inside the interval
    made without their group, a GPU on an engine class (module doc)."""
    by_kind: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    gpus: dict[str, set[str]] = defaultdict(set)
    for r in results:
        if r.ratio is not None:
            for kind in r.kinds:
                by_kind[kind][f"{r.point.gpu_key} on {r.point.engine}"].append(r.ratio)
                gpus[kind].add(r.point.gpu_key)
    out: dict[str, dict[str, float | None]] = {}
    for kind, by_group in sorted(by_kind.items()):
        n = sum(len(v) for v in by_group.values())
        made = interval_of(by_group)
        if n < MIN_POINTS or len(gpus[kind]) < MIN_GPUS or made is None:
            continue
        out[kind] = {"n": n, "gpus": len(gpus[kind]), "p10": round(made[0], 4), "p90": round(made[1], 4),
                     "coverage": _coverage(by_group)}  # fmt: skip
    return out


def _coverage(by_group: Mapping[str, Sequence[float]]) -> float | None:
    inside = total = 0
    for group, ratios in by_group.items():
        made = interval_of({g: v for g, v in by_group.items() if g != group})
        if made is None:
            continue
        inside += sum(1 for x in ratios if made[0] <= x <= made[1])
        total += len(ratios)
    return round(inside / total, 3) if total else None


def interval_for(table: Mapping[str, Mapping[str, float | None]],
                 kinds: Iterable[str]) -> tuple[float, float, str] | None:  # fmt: skip
    """The widest 80 % interval among the kinds an estimate makes (p10, p90, kind), else the
    interval over all held-out estimates; None when no interval is stored."""
    found = [(float(table[k]["p10"] or 0), float(table[k]["p90"] or 0), k) for k in kinds if k in table]
    if not found and "all" in table:
        found = [(float(table["all"]["p10"] or 0), float(table["all"]["p90"] or 0), "all")]
    found = [f for f in found if 0 < f[0] <= f[1]]
    if not found:
        return None
    return max(found, key=lambda f: math.log(f[1]) - math.log(f[0]))
