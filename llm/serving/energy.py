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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import curve_fit

JOULES_PER_KWH = 3.6e6
MIN_FIT_POINTS = 3


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


__all__ = [
    "JOULES_PER_KWH",
    "MIN_FIT_POINTS",
    "PowerCurve",
    "electricity_per_million_tokens",
    "joules_per_token",
    "power_curve_fit",
    "tokens_per_kwh",
]
