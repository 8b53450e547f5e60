"""Energy of serving, as arithmetic on measured figures and a fitted power curve (pure).

* ``joules_per_token``: the configuration's power over its output rate (all its GPUs);
* ``tokens_per_kwh`` and ``electricity_per_million_tokens``: what a kWh buys, and what the
  electricity of a million output tokens costs at a price per kWh (the owner's share of $/M);
* ``PowerCurve``: average board power per GPU against a load measure, fitted per GPU class to the
  measured points, so that an estimated point (the serving model's step) gets an estimated power.
  The curve is a saturating exponential, ``base + span x (1 - exp(-load / scale))``, the shape of the
  measured sweeps (power rises fast from the lightest load and flattens towards the limit); it never
  falls with load and never exceeds the board limit, which caps it, as the board caps its average.
  ``load`` is any non-negative measure of how busy a step keeps the GPU that grows with the work per
  step (tokens/s per GPU within one model, or the step's achieved share of the GPU's peaks).
  The stored curves (``power_curves_fit``) use sequences in flight per GPU, one curve per GPU class
  and model size class: it is read the same way off a measured point (its concurrency over its
  GPUs) and off a point of the serving model (its batch over the tensor-parallel group), on any GPU
  of the class;
* ``energy_estimate``: an operating point's joules per token from a power curve, with the interval
  of the curve's error (two root-mean-square residuals either side, within zero and the board
  limit) and, where the rate itself is an estimate, the rate's interval too (joules per token is
  power over rate: a rate that comes in low costs more joules per token), labelled estimated;
* ``energy_at_power``: a measured power over an estimated rate, estimated, with the rate's interval;
* ``owned_cost_per_million_tokens``: what a million output tokens cost on a GPU you own, the
  purchase spread over the hours of use plus the electricity of its joules per token.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import curve_fit

JOULES_PER_KWH = 3.6e6
MIN_FIT_POINTS = 3
# The estimate's interval: this many root-mean-square residuals of the fit either side (about 95 %
# of the measured points lie within it when the residuals are roughly normal).
INTERVAL_RMS = 2.0


def joules_per_token(*, power_w_per_gpu: float, gpu_count: int, tokens_per_s: float) -> float:
    """Energy per output token of ``gpu_count`` GPUs at ``power_w_per_gpu`` each, serving ``tokens_per_s`` together."""
    if power_w_per_gpu < 0 or gpu_count < 1 or tokens_per_s <= 0:
        raise ValueError("power must be non-negative, the GPU count at least 1 and the rate positive")
    return power_w_per_gpu * gpu_count / tokens_per_s


def tokens_per_kwh(energy_per_token_j: float) -> float:
    """Output tokens per kWh drawn."""
    if energy_per_token_j <= 0:
        raise ValueError("joules per token must be positive")
    return JOULES_PER_KWH / energy_per_token_j


def electricity_per_million_tokens(*, energy_per_token_j: float, price_per_kwh: float) -> float:
    """The electricity of a million output tokens at ``price_per_kwh`` (in that price's currency)."""
    if energy_per_token_j < 0 or price_per_kwh < 0:
        raise ValueError("joules per token and the price must be non-negative")
    return energy_per_token_j * 1e6 / JOULES_PER_KWH * price_per_kwh


@dataclass(frozen=True)
class PowerCurve:
    """Average power per GPU (W) against load, capped at the board limit; see the module doc."""

    base_w: float
    span_w: float
    scale: float
    limit_w: float
    points: int  # measured points it was fitted on
    rms_error_w: float  # root mean square of the fit's residuals on them

    def power_w(self, load: float) -> float:
        if not load >= 0:
            raise ValueError(f"load must be non-negative, got {load!r}")
        return min(self.limit_w, self.base_w + self.span_w * -math.expm1(-load / self.scale))

    def as_dict(self) -> dict[str, float | int]:
        return {"base_w": self.base_w, "span_w": self.span_w, "scale": self.scale, "limit_w": self.limit_w,
                "points": self.points, "rms_error_w": self.rms_error_w}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PowerCurve:
        return cls(float(data["base_w"]), float(data["span_w"]), float(data["scale"]), float(data["limit_w"]),
                   int(data["points"]), float(data["rms_error_w"]))  # fmt: skip


def _shape(load: np.ndarray, base: float, span: float, scale: float) -> np.ndarray:
    return base + span * -np.expm1(-load / scale)


def power_curve_fit(points: Sequence[tuple[float, float]], *, limit_w: float) -> PowerCurve:
    """Fit a GPU class's power curve to measured (load, W per GPU) points, each within ``limit_w``."""
    if limit_w <= 0:
        raise ValueError("the board limit must be positive")
    if len(points) < MIN_FIT_POINTS:
        raise ValueError(f"a power curve needs at least {MIN_FIT_POINTS} measured points, got {len(points)}")
    load = np.array([p[0] for p in points], dtype=float)
    watts = np.array([p[1] for p in points], dtype=float)
    if not (np.all(np.isfinite(load)) and np.all(load >= 0) and np.all(np.isfinite(watts)) and np.all(watts > 0)):
        raise ValueError("loads must be non-negative and powers positive, all finite")
    if np.any(watts > limit_w):
        raise ValueError(f"a measured power above the {limit_w:g} W limit cannot be fitted: it is not a measurement")
    top = float(load.max())
    if top <= 0:
        raise ValueError("the points need some load above zero")
    guess = (float(watts.min()), float(watts.max() - watts.min()) or 1.0, top / 3)
    (base, span, scale), _covariance = curve_fit(
        _shape, load, watts, p0=guess, bounds=([0.0, 0.0, top * 1e-3], [limit_w, limit_w, top * 1e3]), maxfev=10_000
    )
    curve = PowerCurve(
        base_w=float(base), span_w=float(span), scale=float(scale), limit_w=limit_w, points=len(points), rms_error_w=0.0
    )
    residuals = [curve.power_w(x) - w for x, w in zip(load.tolist(), watts.tolist(), strict=True)]
    rms = math.sqrt(sum(r * r for r in residuals) / len(residuals))
    return PowerCurve(curve.base_w, curve.span_w, curve.scale, limit_w, len(points), rms)


@dataclass(frozen=True)
class PowerSample:
    """One measured point for the power curves: its curve's key, load and average power per GPU."""

    key: str  # the GPU class and model size class, e.g. "hopper/8b"
    load: float  # sequences in flight per GPU
    power_w: float
    limit_w: float  # the board limit it was checked against


def power_curve_key(*, gpu_class: str, size: str) -> str:
    return f"{gpu_class}/{size}"


def power_curves_fit(samples: Iterable[PowerSample]) -> dict[str, PowerCurve]:
    """One power curve per key with at least ``MIN_FIT_POINTS`` samples, capped at the largest board
    limit among them (each GPU's own limit caps it again where it is used: ``energy_estimate``)."""
    by_key: dict[str, list[PowerSample]] = defaultdict(list)
    for sample in samples:
        by_key[sample.key].append(sample)
    curves: dict[str, PowerCurve] = {}
    for key, group in sorted(by_key.items()):
        if len(group) < MIN_FIT_POINTS:
            continue
        limit = max(s.limit_w for s in group)
        try:
            curves[key] = power_curve_fit([(s.load, s.power_w) for s in group], limit_w=limit)
        except (ValueError, RuntimeError):  # no load above zero, or the optimiser found no curve
            continue
    return curves


@dataclass(frozen=True)
class EnergyFigure:
    """Energy per output token at one operating point: measured, or estimated from a power curve
    with its interval (``low_j``/``high_j``; None when measured)."""

    basis: str  # "measured" | "estimated"
    joules_per_token: float
    power_w: float  # average per GPU
    low_j: float | None = None
    high_j: float | None = None
    curve_points: int = 0  # estimated: the measured points the curve was fitted on
    power_measured: bool = False  # estimated over an estimated rate, at a measured power (no curve)

    @property
    def tokens_per_kwh(self) -> float:
        return tokens_per_kwh(self.joules_per_token)

    @property
    def tokens_per_s_per_kw(self) -> float:
        """Output tokens/s per kW drawn (the measured or estimated power, not the TDP)."""
        return self.tokens_per_kwh / 3600.0


def energy_measured(*, joules_per_token_: float, power_w: float) -> EnergyFigure | None:
    """A measured point's energy (None unless both figures are positive and finite)."""
    if not (0 < joules_per_token_ < math.inf and 0 < power_w < math.inf):
        return None
    return EnergyFigure("measured", joules_per_token_, power_w)


MIN_ESTIMATED_POWER_W = 1e-3


def _rate_factors(rate_interval: tuple[float, float] | None) -> tuple[float, float]:
    """(low, high) factors on an estimated rate from its interval; (1, 1) for none or a malformed one."""
    if rate_interval is None:
        return 1.0, 1.0
    low, high = rate_interval
    if not (0 < low <= high < math.inf):
        return 1.0, 1.0
    return min(low, 1.0), max(high, 1.0)


def energy_estimate(
    curve: PowerCurve,
    *,
    load: float,
    tokens_per_s_per_gpu: float,
    limit_w: float | None,
    rate_interval: tuple[float, float] | None = None,
) -> EnergyFigure | None:
    """The estimated energy per output token of a point serving ``tokens_per_s_per_gpu`` per GPU at
    ``load`` sequences per GPU: the curve's power (within ``limit_w``, the GPU's own board limit,
    where known) over the rate, with the interval of the curve's error and of ``rate_interval`` (the
    rate's own 80 % interval as factors on it, where the rate is an estimate). None where the point
    is not one (no positive finite rate or load)."""
    if not (0 <= load < math.inf and 0 < tokens_per_s_per_gpu < math.inf):
        return None
    cap = min(curve.limit_w, limit_w) if limit_w and limit_w > 0 else curve.limit_w
    power = min(cap, curve.power_w(load))
    spread = INTERVAL_RMS * curve.rms_error_w
    low = max(min(power - spread, cap), 0.0)
    high = min(power + spread, cap)
    # Under a milliwatt a curve says nothing a board draws under load (and a subnormal power
    # would divide to zero joules per token).
    if power < MIN_ESTIMATED_POWER_W:
        return None
    slow, fast = _rate_factors(rate_interval)
    return EnergyFigure(
        "estimated",
        power / tokens_per_s_per_gpu,
        power,
        low / (tokens_per_s_per_gpu * fast),
        high / (tokens_per_s_per_gpu * slow),
        curve.points,
    )


def energy_at_power(
    *, power_w: float, tokens_per_s_per_gpu: float, rate_interval: tuple[float, float] | None
) -> EnergyFigure | None:
    """Joules per token of a measured power (per GPU) over a rate: measured when the rate is
    (``rate_interval`` None), else estimated with the rate's interval. None unless both are
    positive and finite."""
    if not (0 < power_w < math.inf and 0 < tokens_per_s_per_gpu < math.inf):
        return None
    joules = power_w / tokens_per_s_per_gpu
    if rate_interval is None:
        return EnergyFigure("measured", joules, power_w)
    slow, fast = _rate_factors(rate_interval)
    return EnergyFigure("estimated", joules, power_w, joules / fast, joules / slow, power_measured=True)


def owned_cost_per_million_tokens(
    *, capital_per_hour: float, tokens_per_s_per_gpu: float, energy_per_token_j: float, price_per_kwh: float
) -> float:
    """A million output tokens on one owned GPU: its purchase spread over the hours of use
    (``capital_per_hour``) over the tokens of an hour, plus the electricity of their joules."""
    if capital_per_hour < 0 or not tokens_per_s_per_gpu > 0:
        raise ValueError("the capital per hour must be non-negative and the rate positive")
    capital = capital_per_hour / (tokens_per_s_per_gpu * 3600.0) * 1e6
    return capital + electricity_per_million_tokens(energy_per_token_j=energy_per_token_j, price_per_kwh=price_per_kwh)


__all__ = [
    "INTERVAL_RMS",
    "EnergyFigure",
    "PowerSample",
    "energy_at_power",
    "energy_estimate",
    "energy_measured",
    "owned_cost_per_million_tokens",
    "power_curve_key",
    "power_curves_fit",
    "JOULES_PER_KWH",
    "MIN_FIT_POINTS",
    "PowerCurve",
    "electricity_per_million_tokens",
    "joules_per_token",
    "power_curve_fit",
    "tokens_per_kwh",
]
