"""The energy window: at least 5 s of steady steps after a warm-up, read from a counter or from power
readings, and flagged when too short or above the board's power limit (a fake GPU, a fake clock)."""

from __future__ import annotations

import pytest
from gpuatlas_bench.energy import (
    MIN_WINDOW_S,
    SOURCE_COUNTER,
    SOURCE_POWER_SAMPLES,
    EnergyPolicy,
    energy_flags,
    energy_window_measure,
    window_plan,
)
from hypothesis import given
from hypothesis import strategies as st

GPU_POLICY = EnergyPolicy()


class FakeGpu:
    """Steps that take ``step_s`` each at ``watts``; a counter in mJ and a power reading, either may be off."""

    def __init__(self, *, step_s: float, watts: float, counter: bool = True, power: bool = True, stuck=False):
        self.step_s, self.watts = step_s, watts
        self.now = 100.0
        self.millijoules = 5e9
        self.counter, self.power, self.stuck = counter, power, stuck
        self.steps = 0
        self.synchronized = 0

    def clock(self) -> float:
        return self.now

    def run_steps(self, count: int) -> None:
        self.steps += count
        self.now += count * self.step_s
        if not self.stuck:
            self.millijoules += count * self.step_s * self.watts * 1000

    def synchronize(self) -> None:
        self.synchronized += 1

    def energy_mj(self) -> float | None:
        return self.millijoules if self.counter else None

    def power_w(self) -> float | None:
        return self.watts if self.power else None

    def measure(self, policy: EnergyPolicy = GPU_POLICY):
        plan = window_plan(step_s=self.step_s, policy=policy)
        window = energy_window_measure(
            run_steps=self.run_steps,
            synchronize=self.synchronize,
            plan=plan,
            energy_mj=self.energy_mj,
            power_w=self.power_w,
            clock=self.clock,
        )
        return plan, window


@given(step_s=st.floats(min_value=1e-5, max_value=2.0))
def test_the_plan_covers_the_window_and_the_warm_up_at_the_measured_step_time(step_s):
    plan = window_plan(step_s=step_s, policy=GPU_POLICY)
    assert plan.window_steps * step_s >= GPU_POLICY.window_s > MIN_WINDOW_S
    assert plan.warmup_steps * step_s >= GPU_POLICY.warmup_s
    assert plan.chunks >= 2 and plan.chunk_steps >= 1
    # Chunks of about a quarter of a second: at most one step more than that, so the samples are regular.
    assert (plan.chunk_steps - 1) * step_s < GPU_POLICY.chunk_s


def test_a_steady_point_reads_the_counter_over_at_least_five_seconds_after_the_warm_up():
    gpu = FakeGpu(step_s=0.0083, watts=612.0)
    plan, window = gpu.measure()
    assert window.source == SOURCE_COUNTER
    assert window.seconds >= MIN_WINDOW_S and window.warmup_s >= GPU_POLICY.warmup_s
    assert window.samples == plan.chunks + 1  # one counter read before the window and one after each chunk
    assert window.steps == plan.window_steps
    assert gpu.steps == plan.warmup_steps + plan.window_steps
    assert window.joules == pytest.approx(612.0 * window.seconds, rel=1e-9)
    assert (
        energy_flags(seconds=window.seconds, power_w_per_gpu=[window.joules / window.seconds], power_limit_w=700) == []
    )


@pytest.mark.parametrize(
    ("counter", "stuck"), [pytest.param(False, False, id="no-counter"), pytest.param(True, True, id="counter-stuck")]
)
def test_without_a_counter_that_rises_the_power_readings_give_the_energy(counter, stuck):
    gpu = FakeGpu(step_s=0.02, watts=450.0, counter=counter, stuck=stuck)
    plan, window = gpu.measure()
    assert window.source == SOURCE_POWER_SAMPLES
    assert window.samples == plan.chunks  # one reading while each chunk runs
    assert window.joules == pytest.approx(450.0 * window.seconds, rel=1e-9)


def test_with_neither_reading_there_is_no_energy_and_nothing_to_flag():
    _plan, window = FakeGpu(step_s=0.01, watts=300.0, counter=False, power=False).measure()
    assert window.joules is None and window.source is None and window.samples == 0


def test_a_window_that_ends_under_five_seconds_is_flagged_with_its_length():
    # The old client's window: about half a second right after the timing.
    _plan, window = FakeGpu(step_s=0.01, watts=500.0).measure(EnergyPolicy(warmup_s=0.0, window_s=0.5))
    flags = energy_flags(seconds=window.seconds, power_w_per_gpu=[500.0], power_limit_w=700.0)
    assert flags == [f"energy window {window.seconds:.2f} s is shorter than 5 s"]


def test_power_above_the_board_limit_is_flagged_on_any_gpu_of_the_group():
    # The H100 fixture's bf16 concurrency-256 point: 833.1 W on a 700 W board.
    assert energy_flags(seconds=6.1, power_w_per_gpu=[833.1], power_limit_w=700.0) == [
        "average power 833.1 W per GPU is above the board's 700 W limit"
    ]
    # Two GPUs averaging 690 W, one of them at 716.7 W: that GPU's reading is impossible.
    assert len(energy_flags(seconds=6.1, power_w_per_gpu=[716.7, 663.3], power_limit_w=700.0)) == 1
    assert energy_flags(seconds=6.1, power_w_per_gpu=[700.0], power_limit_w=700.0) == []  # at the limit is possible
    # No limit known: only the window is checked.
    assert energy_flags(seconds=6.1, power_w_per_gpu=[833.1], power_limit_w=None) == []
    both = energy_flags(seconds=0.51, power_w_per_gpu=[833.1], power_limit_w=700.0)
    assert len(both) == 2


def test_bad_plans_are_refused():
    with pytest.raises(ValueError, match="step_s"):
        window_plan(step_s=0.0, policy=GPU_POLICY)
    with pytest.raises(ValueError, match="window_s"):
        EnergyPolicy(window_s=0)
