"""The timing harness: warm-up, calibrated repetitions, and repetition until the spread settles.

Kept free of PyTorch so that the repetition and spread logic can be tested with a fake timer. A
*timer* runs a callable ``iterations`` times and returns the elapsed seconds (``CudaEventTimer`` in
``workloads/common.py`` brackets the calls with CUDA events; ``PerfCounterTimer`` here synchronises and
reads the host clock).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class MeasurementError(RuntimeError):
    """A timing came back impossible (zero, negative or not finite): the result would be meaningless."""


class Timer(Protocol):
    method: str

    def time(self, fn: Callable[[], object], iterations: int) -> float:
        """Run ``fn`` ``iterations`` times back to back; return the elapsed seconds."""
        ...


class PerfCounterTimer:
    """Host wall clock around the calls, with ``synchronize`` called before each clock read."""

    method = "perf_counter"

    def __init__(self, synchronize: Callable[[], object] = lambda: None) -> None:
        self._synchronize = synchronize

    def time(self, fn: Callable[[], object], iterations: int) -> float:
        self._synchronize()
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        self._synchronize()
        return time.perf_counter() - start


@dataclass(frozen=True)
class TimingPolicy:
    """How long and how often to measure one workload.

    ``min_repetitions`` timed repetitions always run; after that, repetitions continue until the
    spread of the last ``min_repetitions`` is under ``target_spread_pct``, or ``max_repetitions`` or
    ``max_seconds`` (of timed repetitions) is reached. Each repetition runs the workload
    ``inner_iterations`` times, calibrated during warm-up so that one repetition lasts at least
    ``min_repetition_seconds``, unless the workload fixes it (``fixed_inner_iterations``, as the
    stress test does with 100). A repetition must outlast the GPU's power-management plateaus: an
    H100 at its 700 W limit swings between plateaus up to 20% apart that last 100-300 ms, and a
    shorter repetition times whichever plateau is current, so two runs of one GPU disagree.
    """

    min_repetitions: int = 10
    max_repetitions: int = 60
    target_spread_pct: float = 3.0
    max_seconds: float = 12.0
    warmup_seconds: float = 0.5
    min_warmup_iterations: int = 2
    min_repetition_seconds: float = 0.2
    max_inner_iterations: int = 1000
    fixed_inner_iterations: int | None = None

    def __post_init__(self) -> None:
        if self.min_repetitions < 1:
            raise ValueError("min_repetitions must be at least 1")
        if self.max_repetitions < self.min_repetitions:
            raise ValueError("max_repetitions must be at least min_repetitions")
        if self.min_warmup_iterations < 2:
            raise ValueError("min_warmup_iterations must be at least 2 (the first call only pays for set-up)")
        if self.target_spread_pct <= 0:
            raise ValueError("target_spread_pct must be positive")


@dataclass
class Measurement:
    """Every timed repetition, converted to the workload's unit, and statistics over the final window."""

    values: list[float]
    seconds: list[float]
    inner_iterations: int
    warmup_iterations: int
    window_start: int
    converged: bool
    timer_method: str
    target_spread_pct: float
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def window(self) -> list[float]:
        return self.values[self.window_start :]

    @property
    def median(self) -> float:
        return statistics.median(self.window)

    @property
    def minimum(self) -> float:
        return min(self.window)

    @property
    def maximum(self) -> float:
        return max(self.window)

    @property
    def spread_pct(self) -> float:
        return spread_pct(self.window)

    @property
    def seconds_total(self) -> float:
        return math.fsum(self.seconds)


_MAX_WARMUP_ITERATIONS = 10_000


_MAX_WARMUP_ITERATIONS = 10_000


def spread_pct(values: list[float]) -> float:
    """(max - min) / median, in percent: the whole range, so one slow repetition counts."""
    if not values:
        raise ValueError("spread of no values")
    middle = statistics.median(values)
    if middle <= 0:
        raise MeasurementError(f"median {middle!r} is not positive")
    return 100.0 * (max(values) - min(values)) / middle


def checked_seconds(seconds: float) -> float:
    if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds > 0):
        raise MeasurementError(f"the timer returned {seconds!r} seconds; a timing must be positive and finite")
    return float(seconds)


def measure(
    fn: Callable[[], object],
    *,
    work: float,
    timer: Timer,
    policy: TimingPolicy,
    clock: Callable[[], float] = time.monotonic,
    on_repetition: Callable[[int, float], None] | None = None,
) -> Measurement:
    """Time ``fn`` under ``policy`` and return throughput figures (``work`` units per second).

    ``work`` is what one call of ``fn`` does in the result's unit numerator (FLOP in tera, bytes in
    giga, tokens): each repetition's figure is ``work * inner_iterations / seconds``.
    """
    if not (math.isfinite(work) and work > 0):
        raise ValueError(f"work must be positive and finite, got {work!r}")

    # Warm-up: module loading, cuBLAS heuristics, allocator growth and clock ramp-up stay out of the
    # figures. The first call pays the one-off set-up, so warmup_seconds count from after it.
    warmup_calls = [checked_seconds(timer.time(fn, 1))]
    warmup_started = clock()
    while len(warmup_calls) < policy.min_warmup_iterations or (
        clock() - warmup_started < policy.warmup_seconds and len(warmup_calls) < _MAX_WARMUP_ITERATIONS
    ):
        warmup_calls.append(checked_seconds(timer.time(fn, 1)))
    warmup_iterations = len(warmup_calls)

    if policy.fixed_inner_iterations is not None:
        inner = policy.fixed_inner_iterations
    else:
        # The median of the latest warm-up calls (never the first, which paid for the set-up).
        per_call = statistics.median(warmup_calls[1:][-5:])
        inner = max(1, min(policy.max_inner_iterations, math.ceil(policy.min_repetition_seconds / per_call)))

    values: list[float] = []
    seconds: list[float] = []
    converged = False
    started = clock()
    while True:
        elapsed = checked_seconds(timer.time(fn, inner))
        seconds.append(elapsed)
        values.append(work * inner / elapsed)
        if on_repetition is not None:
            on_repetition(len(values), values[-1])
        if len(values) >= policy.min_repetitions:
            if spread_pct(values[-policy.min_repetitions :]) < policy.target_spread_pct:
                converged = True
                break
            if len(values) >= policy.max_repetitions or clock() - started >= policy.max_seconds:
                break

    return Measurement(
        values=values,
        seconds=seconds,
        inner_iterations=inner,
        warmup_iterations=warmup_iterations,
        window_start=len(values) - policy.min_repetitions,
        converged=converged,
        timer_method=timer.method,
        target_spread_pct=policy.target_spread_pct,
    )
