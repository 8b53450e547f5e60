"""Energy over a steady-state window of repeated work, and the checks a figure must pass to be published.

Kept free of PyTorch so that the window and its checks can be tested with a fake clock and a fake
power source. The protocol, for one serving point:

1. warm-up: ``warmup_s`` of the same steps, so that clocks and power have left the idle or previous
   point's level before the window opens (the timing before it ran at most about a second);
2. the window: at least ``window_s`` of steps, in chunks of about ``chunk_s``; after each chunk the
   device is synchronised and the energy counter read (one sample), and while each chunk runs one
   power reading is taken (the GPU is busy then);
3. the figure: the counter's difference over the window when the counter is there and moved forward
   (source ``nvml-total-energy``), else the mean of the power readings times the window (source
   ``nvml-power-usage``; NVML averages those over about a second on Ampere and newer), else none.

The number of steps is fixed before the window opens, from the step time already measured, so
that every rank of a tensor-parallel group runs the same steps (a rank that stopped on its own clock
would leave the others waiting in a collective). The window is planned ``window_s`` long, 10 % over
``MIN_WINDOW_S``; a window that still ends under ``MIN_WINDOW_S`` (the steps ran faster than timed)
is flagged, as is a point whose average power per GPU is above the board's power limit: a reading
over the limit is a short-window or counter artefact (the board holds its average under the limit),
not a measurement. A flagged figure is kept in the result with its reason; the server does not
publish it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MIN_WINDOW_S = 5.0
SOURCE_COUNTER = "nvml-total-energy"
SOURCE_POWER_SAMPLES = "nvml-power-usage"


@dataclass(frozen=True)
class EnergyPolicy:
    """How long to warm up, how long the window is, and how often it is sampled (seconds)."""

    warmup_s: float = 1.0
    window_s: float = 5.5
    chunk_s: float = 0.25

    def __post_init__(self) -> None:
        if self.window_s <= 0 or self.chunk_s <= 0 or self.warmup_s < 0:
            raise ValueError("window_s and chunk_s must be positive and warmup_s not negative")


@dataclass(frozen=True)
class WindowPlan:
    """Steps to run, fixed before the window opens (the same on every rank of a group)."""

    warmup_steps: int
    chunk_steps: int
    chunks: int

    @property
    def window_steps(self) -> int:
        return self.chunk_steps * self.chunks


def window_plan(*, step_s: float, policy: EnergyPolicy) -> WindowPlan:
    """Chunks of about ``chunk_s`` whose steps, at ``step_s`` each, last at least ``window_s``."""
    if not (math.isfinite(step_s) and step_s > 0):
        raise ValueError(f"step_s must be positive and finite, got {step_s!r}")
    chunk_steps = max(1, math.ceil(policy.chunk_s / step_s))
    chunks = max(2, math.ceil(policy.window_s / (chunk_steps * step_s)))
    return WindowPlan(warmup_steps=math.ceil(policy.warmup_s / step_s), chunk_steps=chunk_steps, chunks=chunks)


@dataclass(frozen=True)
class EnergyWindow:
    """One window's readings: the joules over it (this GPU's), its length and how it was read."""

    joules: float | None
    seconds: float
    steps: int
    samples: int
    warmup_s: float
    source: str | None


def energy_window_measure(
    *,
    run_steps: Callable[[int], object],
    synchronize: Callable[[], object],
    plan: WindowPlan,
    energy_mj: Callable[[], float | None],
    power_w: Callable[[], float | None],
    clock: Callable[[], float] = time.perf_counter,
) -> EnergyWindow:
    """Warm up, then run the window's chunks, reading the counter after each and the power during each."""
    synchronize()
    warmup_started = clock()
    if plan.warmup_steps:
        run_steps(plan.warmup_steps)
        synchronize()
    started = clock()
    counter = [energy_mj()]
    powers: list[float] = []
    for _ in range(plan.chunks):
        run_steps(plan.chunk_steps)
        sample = power_w()  # the chunk's steps are queued: the GPU is busy while this reads
        synchronize()
        counter.append(energy_mj())
        if sample is not None:
            powers.append(sample)
    seconds = clock() - started
    joules, source, samples = _window_joules(counter, powers, seconds)
    return EnergyWindow(
        joules=joules,
        seconds=seconds,
        steps=plan.window_steps,
        samples=samples,
        warmup_s=started - warmup_started,
        source=source,
    )


def _window_joules(
    counter: Sequence[float | None], powers: Sequence[float], seconds: float
) -> tuple[float | None, str | None, int]:
    """(joules, source, samples): the counter's rise where it was read every time and rose, else the power readings."""
    first, last = counter[0], counter[-1]
    if all(reading is not None for reading in counter) and first is not None and last is not None and last > first:
        return (last - first) / 1000.0, SOURCE_COUNTER, len(counter)
    if powers and seconds > 0:
        return sum(powers) / len(powers) * seconds, SOURCE_POWER_SAMPLES, len(powers)
    return None, None, 0


def energy_flags(
    *, seconds: float, power_w_per_gpu: Sequence[float], power_limit_w: float | None, min_window_s: float = MIN_WINDOW_S
) -> list[str]:
    """Why a window's energy is not a figure to publish: too short, or a GPU above its power limit."""
    flags = []
    if seconds < min_window_s:
        flags.append(f"energy window {seconds:.2f} s is shorter than {min_window_s:g} s")
    if power_limit_w is not None:
        highest = max(power_w_per_gpu, default=0.0)
        if highest > power_limit_w:
            flags.append(f"average power {highest:.1f} W per GPU is above the board's {power_limit_w:g} W limit")
    return flags


__all__ = [
    "MIN_WINDOW_S",
    "SOURCE_COUNTER",
    "SOURCE_POWER_SAMPLES",
    "EnergyPolicy",
    "EnergyWindow",
    "WindowPlan",
    "energy_flags",
    "energy_window_measure",
    "window_plan",
]
