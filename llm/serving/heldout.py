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

The 80 % interval of a kind is the 10th to 90th percentile of ``estimate / measured`` over the
held-out estimates of that kind: an estimate ``e`` of that kind reads ``[e / p90, e / p10]``.
Its coverage is checked out of sample: for each GPU, the interval from the other GPUs'
residuals of the kind, applied to that GPU's points (so no point checks an interval it made).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from llm.serving.fit import (
    HELD_OUT_MAX_NFEV,
    HeldOut,
    MeasuredPoint,
    ServingFit,
    constants_fit,
    error_table,
    measured_regimes,
    predict,
    serving_fit_build,
)
from llm.serving.physics import ServingConstants

INTERVAL_QUANTILES = (10.0, 90.0)  # an 80 % interval
MIN_POINTS = 20  # a kind with fewer held-out estimates has no interval of its own


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


@dataclass(frozen=True)
class _Seen:
    gpus: set[str]
    models: set[str]
    pairs: set[tuple[str, str]]
    lengths: dict[str, tuple[int, int, int, int]]  # model -> input min, max, output min, max

    @classmethod
    def of(cls, points: Iterable[MeasuredPoint]) -> _Seen:
        seen = cls(set(), set(), set(), {})
        spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for p in points:
            seen.gpus.add(p.gpu_key)
            seen.models.add(p.model_key)
            seen.pairs.add((p.gpu_key, p.model_key))
            spans[p.model_key].append((p.workload.input_len, p.workload.output_len))
        for model, values in spans.items():
            ins, outs = [v[0] for v in values], [v[1] for v in values]
            seen.lengths[model] = (min(ins), max(ins), min(outs), max(outs))
        return seen

    def kinds(self, p: MeasuredPoint) -> tuple[str, ...]:
        if (p.gpu_key, p.model_key) in self.pairs:
            pair = "pair:measured"
        elif p.gpu_key not in self.gpus:
            pair = "gpu:new"
        elif p.model_key not in self.models:
            pair = "model:new"
        else:
            pair = "pair:new"
        out = ["all", pair, f"engine:{p.engine}", f"class:{p.hardware.hardware_class}"]
        span = self.lengths.get(p.model_key)
        w = p.workload
        if span is None or not (span[0] <= w.input_len <= span[1] and span[2] <= w.output_len <= span[3]):
            out.append("lengths:outside")
        return tuple(out)


Fit = Callable[..., ServingConstants]


def _estimate(test: Sequence[MeasuredPoint], train: Sequence[MeasuredPoint], *, check: str, base: ServingConstants,
              fit: Fit) -> list[Estimate]:  # fmt: skip
    constants = fit(train, base=base, max_nfev=HELD_OUT_MAX_NFEV)
    seen = _Seen.of(train)
    regimes = measured_regimes(train)
    out = []
    for p in test:
        got = predict(p, constants)
        out.append(Estimate(p, got.tokens_per_s_per_gpu if got else None, check, seen.kinds(p), p.regime in regimes))
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
    fit = serving_fit_build(points, base=base, with_errors=False)
    if not points:
        return fit, []
    checks = held_out_after(points, cutoff=cutoff, base=fit.constants) + [
        r for by in ("source", "gpu", "model") for r in held_out_by(points, by=by, base=fit.constants)
    ]
    table = error_table(
        [HeldOut(r.point, r.estimate, r.inside, r.check) for r in checks if r.check in ("gpu", "model")]
    )
    return replace(fit, errors=table), checks


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


def interval_of(ratios: Sequence[float]) -> tuple[float, float]:
    """(p10, p90) of estimate / measured: an estimate ``e`` reads ``[e / p90, e / p10]``."""
    logs = np.log(np.asarray(ratios, dtype=float))
    low, high = np.percentile(logs, INTERVAL_QUANTILES)
    return float(math.exp(low)), float(math.exp(high))


def intervals(results: Sequence[Estimate]) -> dict[str, dict[str, float]]:
    """``{kind: {"n", "p10", "p90", "coverage"}}`` for every kind with at least MIN_POINTS
    held-out estimates the model fits; ``coverage``: the share of them inside the interval made
    without their GPU (module doc)."""
    by_kind: dict[str, list[Estimate]] = defaultdict(list)
    for r in results:
        if r.ratio is not None:
            for kind in r.kinds:
                by_kind[kind].append(r)
    out: dict[str, dict[str, float]] = {}
    for kind, rows in sorted(by_kind.items()):
        if len(rows) < MIN_POINTS:
            continue
        p10, p90 = interval_of([r.ratio for r in rows if r.ratio is not None])
        out[kind] = {"n": len(rows), "p10": round(p10, 4), "p90": round(p90, 4),
                     "coverage": round(_coverage(rows), 3)}  # fmt: skip
    return out


def _coverage(rows: Sequence[Estimate]) -> float:
    by_gpu: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.ratio is not None:
            by_gpu[r.point.gpu_key].append(r.ratio)
    inside = total = 0
    for gpu, ratios in by_gpu.items():
        others = [x for g, values in by_gpu.items() if g != gpu for x in values]
        if len(others) < MIN_POINTS // 2:
            continue
        p10, p90 = interval_of(others)
        inside += sum(1 for x in ratios if p10 <= x <= p90)
        total += len(ratios)
    return inside / total if total else float("nan")


def interval_for(table: dict[str, dict[str, float]], kinds: Iterable[str]) -> tuple[float, float, str] | None:
    """The widest 80 % interval among the kinds an estimate makes (p10, p90, kind), else the
    interval over all held-out estimates; None when no interval is stored."""
    found = [(table[k]["p10"], table[k]["p90"], k) for k in kinds if k in table]
    if not found and "all" in table:
        found = [(table["all"]["p10"], table["all"]["p90"], "all")]
    if not found:
        return None
    return max(found, key=lambda f: math.log(f[1]) - math.log(f[0]))
