"""The timing harness: warm-up, calibration, repetition until the spread settles, and the caps."""

from __future__ import annotations

import math

import pytest
from gpuatlas_bench.timing import MeasurementError, TimingPolicy, measure, spread_pct


class FakeTimer:
    """Replays scripted per-call durations and advances a fake clock by the time 'spent'."""

    method = "fake"

    def __init__(self, per_call: list[float], *, then: float | None = None) -> None:
        self.script = list(per_call)
        self.then = then
        self.now = 0.0
        self.calls: list[int] = []

    def clock(self) -> float:
        return self.now

    def time(self, fn, iterations: int) -> float:
        per_call = self.script.pop(0) if self.script else self.then
        assert per_call is not None, "script ran out"
        for _ in range(iterations):
            fn()
        self.calls.append(iterations)
        elapsed = per_call * iterations
        self.now += max(elapsed, 0.0) if math.isfinite(elapsed) else 0.0
        return elapsed


POLICY = TimingPolicy(
    min_repetitions=10,
    max_repetitions=40,
    target_spread_pct=3.0,
    max_seconds=1e9,
    warmup_seconds=0.0,
    min_warmup_iterations=2,
    min_repetition_seconds=0.01,
)


def run(timer: FakeTimer, policy: TimingPolicy = POLICY, work: float = 2.0):
    return measure(lambda: None, work=work, timer=timer, policy=policy, clock=timer.clock)


def test_stable_timings_stop_after_the_minimum_and_convert_to_throughput():
    # warm-up: a slow first call (set-up), then 1 ms; 10 ms repetitions need 10 calls each.
    timer = FakeTimer([0.5, 0.001], then=0.001)
    result = run(timer)
    assert result.inner_iterations == 10
    assert result.warmup_iterations == 2
    assert len(result.values) == 10
    assert result.converged and result.window_start == 0
    assert result.values == pytest.approx([2.0 * 10 / 0.01] * 10)
    assert result.median == pytest.approx(2000.0)
    assert timer.calls == [1, 1] + [10] * 10


def test_repeats_until_the_last_window_is_within_the_target_and_keeps_every_repetition():
    noisy = [0.001, 0.0015, 0.001, 0.001, 0.0012]
    timer = FakeTimer([0.001, 0.001] + noisy, then=0.001)
    result = run(timer)
    assert len(result.values) == 15  # 5 noisy + 10 stable
    assert result.window_start == 5
    assert result.converged
    assert result.values[1] == pytest.approx(2.0 * 10 / 0.015)  # the slow repetition is kept
    assert result.minimum == result.maximum == pytest.approx(2000.0)  # statistics over the window
    assert result.spread_pct == 0.0


def test_stops_at_the_repetition_cap_when_the_spread_never_settles():
    alternating = [0.001 if i % 2 else 0.0012 for i in range(100)]
    timer = FakeTimer([0.001, 0.001] + alternating)
    result = run(timer)
    assert len(result.values) == POLICY.max_repetitions
    assert not result.converged
    assert result.window_start == POLICY.max_repetitions - POLICY.min_repetitions
    low, high = 2000 / 1.2, 2000.0
    assert result.spread_pct == pytest.approx(100 * (high - low) / ((high + low) / 2))


def test_stops_at_the_time_cap_but_never_before_the_minimum_repetitions():
    alternating = [0.001 if i % 2 else 0.0012 for i in range(100)]
    timer = FakeTimer([0.001, 0.001] + alternating)
    policy = TimingPolicy(**{**POLICY.__dict__, "max_seconds": 0.05})
    result = run(timer, policy)
    assert len(result.values) == POLICY.min_repetitions  # 10 x ~11 ms is already past 50 ms
    assert not result.converged


def test_warm_up_lasts_warmup_seconds_after_the_first_call():
    timer = FakeTimer([2.0], then=2**-6)
    policy = TimingPolicy(**{**POLICY.__dict__, "warmup_seconds": 0.125, "min_repetition_seconds": 2**-4})
    result = run(timer, policy)
    # A 2 s first call, then 0.125 s of 1/64 s calls: the slow first call neither shortens the
    # warm-up nor enters the calibration (4 calls make a 1/16 s repetition).
    assert result.warmup_iterations == 1 + 8
    assert result.inner_iterations == 4


def test_fixed_inner_iterations_are_kept_as_given():
    timer = FakeTimer([], then=0.02)
    policy = TimingPolicy(**{**POLICY.__dict__, "fixed_inner_iterations": 100, "max_repetitions": 10})
    result = run(timer, policy)
    assert result.inner_iterations == 100
    assert set(timer.calls[result.warmup_iterations :]) == {100}


@pytest.mark.parametrize("bad", [0.0, -0.001, float("nan"), float("inf")])
def test_impossible_timings_are_refused(bad):
    timer = FakeTimer([0.001, 0.001, bad], then=0.001)
    with pytest.raises(MeasurementError):
        run(timer)


def test_work_must_be_positive():
    with pytest.raises(ValueError, match="work"):
        run(FakeTimer([], then=0.001), work=0.0)


def test_spread_is_the_whole_range_over_the_median():
    assert spread_pct([100.0, 101.0, 99.0, 100.0]) == pytest.approx(2.0)
    with pytest.raises(MeasurementError):
        spread_pct([0.0, 0.0])


@pytest.mark.parametrize(
    "changes",
    [{"min_repetitions": 0}, {"max_repetitions": 5}, {"target_spread_pct": 0}, {"min_warmup_iterations": 1}],
)
def test_policy_rejects_nonsense(changes):
    with pytest.raises(ValueError):
        TimingPolicy(**{**POLICY.__dict__, **changes})
