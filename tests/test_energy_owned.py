"""Energy where users decide (llm.serving.energy and its readers): the power curves fitted to the
real H200 sweeps, an estimate that never exceeds the board limit, a measured power chosen over the
estimate, the owned cost of a million tokens with electricity, and the rankings' kwh_price."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dashboard.selectors.ranking_params import RankingParamError, ranking_params_from_query
from fitcalc.plan import DAYS_PER_MONTH
from fitcalc.selectors.serving_plans import _plan_energy, owned_serving_costs
from llm.serving.energy import (
    MIN_ESTIMATED_POWER_W,
    EnergyFigure,
    PowerCurve,
    PowerSample,
    electricity_per_million_tokens,
    energy_at_power,
    energy_estimate,
    owned_cost_per_million_tokens,
    power_curve_key,
    power_curves_fit,
)

FIXTURES = Path(__file__).parent / "fixtures" / "bench"
H200_SWEEPS = ("h200_serving_sweep_energy.json", "h200_serving_sweep_energy_4096.json")


def _h200_samples() -> list[PowerSample]:
    """The 8B points of the H200 sweeps with a defensible energy (at least 5 s, within the limit)."""
    samples = []
    for name in H200_SWEEPS:
        run = json.loads((FIXTURES / name).read_text())
        limit = run["environment"]["power_limit_w"]
        for result in run["results"]:
            extra = result.get("extra") or {}
            power, window = extra.get("power_w"), extra.get("energy_window_s") or 0
            if power is not None and window >= 5 and power <= limit:
                load = result["params"]["concurrency"] / result["gpu_count"]
                samples.append(PowerSample(power_curve_key(gpu_class="hopper", size="8b"), load, power, limit))
    return samples


def test_the_h200_sweeps_fit_one_hopper_8b_power_curve_within_the_limit():
    samples = _h200_samples()
    assert len(samples) >= 30
    curves = power_curves_fit(samples)
    assert set(curves) == {"hopper/8b"}
    curve = curves["hopper/8b"]
    assert curve.points == len(samples) and curve.limit_w == 700.0
    # Power rises from the lightest load and flattens towards the limit, as the sweeps do.
    powers = [curve.power_w(load) for load in (1, 8, 32, 64, 128, 256)]
    assert powers == sorted(powers) and powers[-1] <= 700.0
    assert 350 <= powers[0] <= 500  # one sequence: about 450 W measured
    # bf16, fp8 and two contexts share the curve: its spread is the interval, a few tens of watts.
    assert 5 < curve.rms_error_w < 60
    assert PowerCurve.from_dict(curve.as_dict()) == curve


def test_a_key_with_too_few_points_gets_no_curve():
    samples = [PowerSample("ada/8b", 1.0, 200.0, 450.0), PowerSample("ada/8b", 8.0, 300.0, 450.0)]
    assert power_curves_fit(samples) == {}


@settings(max_examples=300, deadline=None)
# A subnormal power at no load: it would divide to zero joules per token.
@example(base=5e-324, span=0.0, scale=1.0, rms=0.0, curve_limit=1.0, load=0.0, rate=2.0, board=None)
@given(
    base=st.floats(0, 1000),
    span=st.floats(0, 1000),
    scale=st.floats(1e-3, 1e4),
    rms=st.floats(0, 500),
    curve_limit=st.floats(1, 1000),
    load=st.floats(0, 1e6),
    rate=st.floats(1e-3, 1e7),
    board=st.one_of(st.none(), st.floats(1, 1000)),
)
def test_an_estimated_energy_never_draws_more_than_the_board_limit(
    base, span, scale, rms, curve_limit, load, rate, board
):
    curve = PowerCurve(base, span, scale, curve_limit, 10, rms)
    energy = energy_estimate(curve, load=load, tokens_per_s_per_gpu=rate, limit_w=board, rate_interval=None)
    if energy is None:
        assert min(curve_limit, board or curve_limit, curve.power_w(load)) < MIN_ESTIMATED_POWER_W
        return
    cap = min(curve_limit, board) if board else curve_limit
    assert energy.basis == "estimated"
    assert 0 < energy.power_w <= cap
    assert energy.low_j is not None and energy.high_j is not None
    assert 0 <= energy.low_j <= energy.joules_per_token <= energy.high_j
    # Even the top of the interval stays within the board limit.
    assert energy.high_j * rate <= cap * (1 + 1e-9)
    assert math.isclose(energy.joules_per_token * rate, energy.power_w, rel_tol=1e-9)


@settings(max_examples=300, deadline=None)
@given(
    load=st.floats(0, 1e4),
    rate=st.floats(1e-2, 1e6),
    slow=st.floats(0.05, 1.0),
    fast=st.floats(1.0, 20.0),
)
def test_an_estimated_rate_widens_the_energy_interval_by_its_own(load, rate, slow, fast):
    # Joules per token is power over rate: at the slow end of the rate's interval the same power
    # costs more joules, at the fast end fewer; the interval must hold both ends of both.
    curve = PowerCurve(400.0, 300.0, 30.0, 700.0, 36, 20.0)
    alone = energy_estimate(curve, load=load, tokens_per_s_per_gpu=rate, limit_w=700.0, rate_interval=None)
    both = energy_estimate(curve, load=load, tokens_per_s_per_gpu=rate, limit_w=700.0, rate_interval=(slow, fast))
    assert alone is not None and both is not None
    assert both.joules_per_token == alone.joules_per_token
    assert both.high_j == pytest.approx(alone.high_j / slow) and both.low_j == pytest.approx(alone.low_j / fast)
    # Every rate in the interval, at every power the curve allows, gives joules inside it.
    for factor in (slow, 1.0, fast):
        for watts in (alone.low_j * rate, alone.high_j * rate):
            assert both.low_j * (1 - 1e-9) <= watts / (rate * factor) <= both.high_j * (1 + 1e-9)
    # No more than the board limit at the slowest rate the interval allows.
    assert both.high_j * rate * slow <= 700.0 * (1 + 1e-9)


def test_a_measured_power_over_an_estimated_rate_is_an_estimate_with_the_rates_interval():
    measured = energy_at_power(power_w=612.0, tokens_per_s_per_gpu=3500.0, rate_interval=None)
    assert measured is not None and measured.basis == "measured" and measured.low_j is None
    estimated = energy_at_power(power_w=612.0, tokens_per_s_per_gpu=3500.0, rate_interval=(0.8, 1.25))
    assert estimated is not None and estimated.basis == "estimated" and estimated.power_measured
    assert estimated.joules_per_token == pytest.approx(612.0 / 3500.0)
    assert (estimated.low_j, estimated.high_j) == (
        pytest.approx(612.0 / 3500.0 / 1.25),
        pytest.approx(612.0 / 3500.0 / 0.8),
    )
    assert energy_at_power(power_w=0.0, tokens_per_s_per_gpu=3500.0, rate_interval=None) is None


def test_an_estimate_is_none_without_a_rate_or_a_load():
    curve = PowerCurve(400.0, 300.0, 30.0, 700.0, 10, 10.0)
    assert energy_estimate(curve, load=math.nan, tokens_per_s_per_gpu=100.0, limit_w=700.0) is None
    assert energy_estimate(curve, load=1.0, tokens_per_s_per_gpu=0.0, limit_w=700.0) is None
    assert energy_estimate(curve, load=math.inf, tokens_per_s_per_gpu=100.0, limit_w=700.0) is None


def test_the_electricity_of_a_million_tokens_on_the_h200():
    # bf16 8B, 1,024 tokens of context, concurrency 64: 0.0900 J/token measured. At 0.15 per kWh a
    # million tokens draw 90 kJ = 0.025 kWh: 0.00375 of electricity.
    assert electricity_per_million_tokens(energy_per_token_j=0.0900, price_per_kwh=0.15) == pytest.approx(0.00375)
    # Concurrency 1: 2.600 J/token, 0.1083 per million tokens; 29 times the electricity of 64.
    assert electricity_per_million_tokens(energy_per_token_j=2.600, price_per_kwh=0.15) == pytest.approx(0.10833, 1e-4)
    # Owned: 1,000 a month of purchase over 24 h a day is 1.369 an hour; at 6,800 tokens/s that is
    # 0.0559 per million tokens of capital, plus the electricity.
    capital_per_hour = 1000 / (24 * DAYS_PER_MONTH)
    owned = owned_cost_per_million_tokens(
        capital_per_hour=capital_per_hour, tokens_per_s_per_gpu=6800.0, energy_per_token_j=0.0900, price_per_kwh=0.15
    )
    assert owned == pytest.approx(capital_per_hour / (6800 * 3600) * 1e6 + 0.00375)
    with pytest.raises(ValueError):
        owned_cost_per_million_tokens(capital_per_hour=1.0, tokens_per_s_per_gpu=0.0, energy_per_token_j=0.1,
                                      price_per_kwh=0.1)  # fmt: skip


def test_a_measured_power_near_the_operating_point_wins_over_the_curve():
    curve = PowerCurve(400.0, 300.0, 30.0, 700.0, 36, 20.0)
    measured = [(175.0, 450.0), (55.0, 612.0)]  # (tokens/s per user, W)
    near = _plan_energy(measured, curve, tokens_per_s_per_gpu=3500.0, tokens_per_s_per_user=60.0, load=64.0,
                        limit_w=700, rate_interval=None)  # fmt: skip
    assert near is not None and near.basis == "measured"
    assert near.power_w == 612.0 and near.joules_per_token == pytest.approx(612.0 / 3500.0)
    # The same power over an estimated rate is not a measured J/token.
    guessed = _plan_energy(measured, curve, tokens_per_s_per_gpu=3500.0, tokens_per_s_per_user=60.0, load=64.0,
                           limit_w=700, rate_interval=(0.7, 1.3))  # fmt: skip
    assert guessed is not None and guessed.basis == "estimated" and guessed.power_measured
    assert guessed.low_j < guessed.joules_per_token < guessed.high_j
    # 20 tokens/s per user is more than 25 % from both: the curve's estimate at the load instead.
    far = _plan_energy(measured, curve, tokens_per_s_per_gpu=5000.0, tokens_per_s_per_user=20.0, load=200.0,
                       limit_w=700, rate_interval=None)  # fmt: skip
    assert far is not None and far.basis == "estimated" and not far.power_measured
    assert far.power_w == pytest.approx(curve.power_w(200.0))
    assert _plan_energy([], None, tokens_per_s_per_gpu=5000.0, tokens_per_s_per_user=20.0, load=200.0,
                        limit_w=700, rate_interval=None) is None  # fmt: skip


def test_the_owned_cost_counts_electricity_only_with_a_price_per_kwh():
    energy = EnergyFigure("measured", 0.09, 612.0)
    slow = SimpleNamespace(gpu_slug="h200", tokens_per_s_per_gpu=3400.0, energy=energy)
    fast = SimpleNamespace(gpu_slug="h200", tokens_per_s_per_gpu=6800.0, energy=energy)
    serving = SimpleNamespace(options=[slow, fast])
    result = SimpleNamespace(depreciation_per_month=1000.0, rent_price_per_hour=3.0)
    rows = [SimpleNamespace(slug="h200", result=result), SimpleNamespace(slug="b200", result=result)]
    costs = owned_serving_costs(rows=rows, serving=serving, price_per_kwh=0.15, hours_per_day=24)
    assert set(costs) == {"h200"}
    cost = costs["h200"]
    assert cost.plan is fast  # the configuration with the most tokens/s per GPU
    assert cost.electricity_per_million == pytest.approx(0.00375)
    assert cost.owned_per_million == pytest.approx(cost.capital_per_million + 0.00375)
    assert cost.rented_per_million == pytest.approx(3.0 / (6800 * 3600) * 1e6)
    unpriced = owned_serving_costs(rows=rows, serving=serving, price_per_kwh=None, hours_per_day=24)["h200"]
    assert unpriced.electricity_per_million is None and unpriced.owned_per_million is None
    assert unpriced.capital_per_million == pytest.approx(cost.capital_per_million)


def test_the_rankings_read_a_price_per_kwh_and_refuse_a_bad_one():
    params = ranking_params_from_query({"use_case": "llm-serving", "mode": "buy", "kwh_price": "0.15"})
    assert params.kwh_price == 0.15
    assert params.to_query()["kwh_price"] == "0.15"
    assert ranking_params_from_query({"use_case": "llm-serving"}).kwh_price is None
    for bad in ("-1", "abc", "1000"):
        with pytest.raises(RankingParamError) as error:
            ranking_params_from_query({"use_case": "llm-serving", "mode": "buy", "kwh_price": bad})
        assert error.value.field == "kwh_price"
