"""A measurement turned into a submission's result record (schema: $defs/result)."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from .timing import Measurement, spread_pct

if TYPE_CHECKING:  # the workloads import this module; a runtime import would be a cycle
    from .workloads.common import Case


def sig(value: float) -> float:
    """Six significant digits: 0.0001% resolution, a file a person can read."""
    return float(f"{value:.6g}")


def shown(value: float) -> str:
    return f"{value:,.1f}" if value >= 10 else f"{value:.3g}"


def result_record(
    case: Case,
    measurement: Measurement,
    *,
    unit: str,
    version: str,
    mode: str,
    extra: dict[str, Any],
    gpu_count: int = 1,
) -> dict[str, Any]:
    values = [sig(value) for value in measurement.values]
    window = values[measurement.window_start :]
    record: dict[str, Any] = {
        "workload": case.workload,
        "workload_version": version,
        "precision": case.precision,
        "gpu_count": gpu_count,
        "params": dict(case.params),
        "unit": unit,
        "higher_is_better": True,
        "mode": mode,
        "repetitions": values,
        "median": sig(statistics.median(window)),
        "min": min(window),
        "max": max(window),
        "spread_pct": round(spread_pct(window), 3),
        "stats": {
            "window_start": measurement.window_start,
            "window_size": len(window),
            "converged": measurement.converged,
            "target_spread_pct": measurement.target_spread_pct,
        },
        "timing": {
            "method": measurement.timer_method,
            "warmup_iterations": measurement.warmup_iterations,
            "inner_iterations": measurement.inner_iterations,
            "seconds_total": round(measurement.seconds_total, 6),
        },
    }
    if extra:
        record["extra"] = extra
    return record


__all__ = ["result_record", "shown", "sig"]
