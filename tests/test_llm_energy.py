"""Serving energy arithmetic and the per-class power curve (llm.serving.energy): the curve never falls
with load and never exceeds the board limit; a fit recovers the curve it was drawn from."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llm.serving.energy import (
    PowerCurve,
    electricity_per_million_tokens,
    joules_per_token,
    power_curve_fit,
    tokens_per_kwh,
)

LIMIT = 700.0


def test_joules_per_token_is_the_group_power_over_its_rate():
    # The H200 reference point: 402 W at concurrency 1 and 175 tokens/s.
    assert joules_per_token(power_w_per_gpu=402.0, gpu_count=1, tokens_per_s=175.0) == pytest.approx(2.297, abs=1e-3)
    # Two GPUs at 600 W serving 20,000 tokens/s together: 0.06 J/token.
    assert joules_per_token(power_w_per_gpu=600.0, gpu_count=2, tokens_per_s=20_000.0) == pytest.approx(0.06)
    with pytest.raises(ValueError):
        joules_per_token(power_w_per_gpu=600.0, gpu_count=0, tokens_per_s=1.0)


def test_a_kwh_and_the_electricity_of_a_million_tokens():
    assert tokens_per_kwh(0.048) == pytest.approx(75_000_000)
    # 0.048 J/token at 0.15 per kWh: 48 kJ per million tokens, 0.01333 kWh, 0.002 in that currency.
    assert electricity_per_million_tokens(energy_per_token_j=0.048, price_per_kwh=0.15) == pytest.approx(0.002)
    assert electricity_per_million_tokens(energy_per_token_j=2.3, price_per_kwh=0.0) == 0.0
    with pytest.raises(ValueError):
        tokens_per_kwh(0.0)


@given(
    energy=st.floats(min_value=1e-4, max_value=100.0),
    price=st.floats(min_value=0.0, max_value=10.0),
    factor=st.floats(min_value=0.1, max_value=10.0),
)
def test_electricity_scales_with_energy_and_price(energy, price, factor):
    base = electricity_per_million_tokens(energy_per_token_j=energy, price_per_kwh=price)
    assert electricity_per_million_tokens(energy_per_token_j=energy * factor, price_per_kwh=price) == pytest.approx(
        base * factor
    )
    assert electricity_per_million_tokens(energy_per_token_j=energy, price_per_kwh=price * factor) == pytest.approx(
        base * factor
    )


curves = st.builds(
    PowerCurve,
    base_w=st.floats(min_value=50.0, max_value=LIMIT),
    span_w=st.floats(min_value=0.0, max_value=LIMIT),
    scale=st.floats(min_value=1.0, max_value=50_000.0),
    limit_w=st.just(LIMIT),
    points=st.just(5),
    rms_error_w=st.just(0.0),
)


@given(curve=curves, a=st.floats(min_value=0.0, max_value=1e6), b=st.floats(min_value=0.0, max_value=1e6))
def test_power_never_exceeds_the_limit_and_never_falls_with_load(curve, a, b):
    low, high = sorted((a, b))
    assert 0 < curve.power_w(low) <= curve.power_w(high) <= LIMIT


@settings(max_examples=60, deadline=None)
@given(
    base=st.floats(min_value=80.0, max_value=400.0),
    span=st.floats(min_value=50.0, max_value=450.0),
    scale=st.floats(min_value=500.0, max_value=8_000.0),
)
def test_a_fit_recovers_the_curve_its_points_were_drawn_from(base, span, scale):
    assume(base + span * (1 - math.exp(-4)) <= LIMIT)  # the drawn points are measurements: within the limit
    truth = PowerCurve(base, span, scale, LIMIT, 0, 0.0)
    loads = [scale * k for k in (0.05, 0.2, 0.5, 1.0, 2.0, 4.0)]
    fitted = power_curve_fit([(x, truth.power_w(x)) for x in loads], limit_w=LIMIT)
    for x in loads:
        assert fitted.power_w(x) == pytest.approx(truth.power_w(x), rel=0.01)
    assert fitted.rms_error_w < 2.0 and fitted.points == len(loads)
    # Far past the measured loads the curve stays within the limit.
    assert fitted.power_w(loads[-1] * 1000) <= LIMIT


def test_a_power_above_the_limit_or_too_few_points_cannot_be_fitted():
    # The fixtures' 833.1 W on a 700 W board is an artefact, not a point of the curve.
    with pytest.raises(ValueError, match="above the 700 W limit"):
        power_curve_fit([(175.0, 402.0), (7_900.0, 640.0), (13_600.0, 833.1)], limit_w=LIMIT)
    with pytest.raises(ValueError, match="at least 3"):
        power_curve_fit([(175.0, 402.0), (7_900.0, 640.0)], limit_w=LIMIT)
    with pytest.raises(ValueError, match="non-negative"):
        PowerCurve(300.0, 300.0, 1000.0, LIMIT, 3, 0.0).power_w(-1.0)
