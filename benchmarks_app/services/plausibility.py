"""Plausibility of one measured result against the catalogue peak of its GPU (pure functions).

Rules (documented on the submit page too):

* above the dense peak of that GPU and precision by more than ``PEAK_TOLERANCE`` -> rejected
  at ingest (the submission is kept with the reason, for a curator to read);
* at intake, when the GPU is already recognised, a result above ``INTAKE_IMPOSSIBLE_FACTOR``
  times the peak is answered with 400 and nothing is stored: such a figure is a unit error
  or a fabrication, not a fast GPU;
* below ``FAR_BELOW_FRACTION`` of the peak, or repetitions spread by more than
  ``MAX_SPREAD_PCT`` -> flagged (kept, shown, not counted in aggregates). All-reduce bus
  bandwidth is exempt from the spread rule: a collective of a few MiB takes tens of
  microseconds, so its repetitions scatter with launch and link latency however careful the
  run (two NVLink H200s: 53 % at 1 MiB, 0.15 % at 1 GiB); its median is the figure, and the
  spread is kept beside it.

Only workloads whose unit is a rate the catalogue has a peak for are checked: TFLOPS
against the tensor peak (FP32 against the non-tensor FP32 figure), GB/s against memory
bandwidth. Link transfers are in GB/s too but are bounded by a link, not by device memory:
host-link copies (``pcie-*``) by the bus, for which the catalogue has no reliable figure
(NVLink-C2C hosts such as GH200 beat any PCIe bound), and all-reduce bus bandwidth
(``allreduce-*``) by NVLink or PCIe between the GPUs, a tenth of memory bandwidth or less;
so they are not checked against a peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

PEAK_TOLERANCE = 0.05
INTAKE_IMPOSSIBLE_FACTOR = 2.0
FAR_BELOW_FRACTION = 0.10
MAX_SPREAD_PCT = 10.0

_FLOPS_UNITS = {"tflops": 1.0, "tflop/s": 1.0, "gflops": 1e-3, "gflop/s": 1e-3, "pflops": 1e3, "pflop/s": 1e3}
_TOPS_UNITS = {"tops": 1.0, "top/s": 1.0}
_BANDWIDTH_UNITS = {"gb/s": 1.0, "gbps": 1.0, "gib/s": 1.073741824, "tb/s": 1e3, "mb/s": 1e-3}
ALLREDUCE_PREFIX = "allreduce-"
LINK_WORKLOAD_PREFIXES = ("pcie-", ALLREDUCE_PREFIX)


@dataclass(frozen=True)
class GpuPeaks:
    """What the catalogue says a GPU can do at most; figures may be missing (None)."""

    gpu_id: int
    name: str
    fp32_tflops: float | None = None
    memory_bandwidth_gbs: float | None = None
    # precision -> dense TFLOPS (TOPS for int8); None value = the format is not supported.
    tensor_dense: dict[str, float | None] = field(default_factory=dict)
    tdp_w: float | None = None  # board power: the cross-check of a measured average power


@dataclass(frozen=True)
class PeakReference:
    value: float
    description: str


@dataclass(frozen=True)
class Verdict:
    rejected: list[str] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)
    peak: PeakReference | None = None


def peak_for(
    *, peaks: GpuPeaks, unit: str, precision: str, gpu_count: int, workload: str = ""
) -> PeakReference | str | None:
    """The peak a result in ``unit`` at ``precision`` must stay under, for ``gpu_count`` GPUs.

    Returns a string (the reason) when the GPU does not support the precision at all, and
    None when the unit has no catalogue peak to compare with or the figure is unknown.
    """
    unit_key = unit.strip().lower()
    count = max(gpu_count, 1)
    if unit_key in _BANDWIDTH_UNITS:
        if not peaks.memory_bandwidth_gbs or workload.startswith(LINK_WORKLOAD_PREFIXES):
            return None
        scale = _BANDWIDTH_UNITS[unit_key]
        value = peaks.memory_bandwidth_gbs / scale * count
        return PeakReference(value, f"memory bandwidth {peaks.memory_bandwidth_gbs:g} GB/s × {count}")
    if unit_key in _FLOPS_UNITS or unit_key in _TOPS_UNITS:
        scale = _FLOPS_UNITS.get(unit_key) or _TOPS_UNITS[unit_key]
        if precision in peaks.tensor_dense:
            dense = peaks.tensor_dense[precision]
            if dense is None:
                return f"{peaks.name} does not support {precision.upper()}"
            what = f"dense {precision.upper()} tensor peak {dense:g} TFLOPS × {count}"
        elif precision == "fp32" and peaks.fp32_tflops:
            dense = peaks.fp32_tflops
            what = f"FP32 peak {dense:g} TFLOPS × {count}"
        else:
            return None
        return PeakReference(dense / scale * count, what)
    return None


def spread_pct(repetitions: Sequence[float]) -> float | None:
    """(max - min) / median of the repetitions, in percent."""
    if len(repetitions) < 2:
        return None
    ordered = sorted(repetitions)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    if median <= 0:
        return None
    return (ordered[-1] - ordered[0]) / median * 100.0


def result_check(
    *,
    value: float,
    repetitions: Sequence[float],
    unit: str,
    precision: str,
    gpu_count: int,
    peaks: GpuPeaks | None,
    workload: str = "",
) -> Verdict:
    """Judge one result: reasons to reject it and reasons to flag it."""
    rejected: list[str] = []
    flagged: list[str] = []
    reference: PeakReference | None = None
    if peaks is not None:
        found = peak_for(peaks=peaks, unit=unit, precision=precision, gpu_count=gpu_count, workload=workload)
        if isinstance(found, str):
            rejected.append(found)
        elif found is not None:
            reference = found
            if value > found.value * (1 + PEAK_TOLERANCE):
                rejected.append(
                    f"{value:g} {unit} is above the {found.description} = {found.value:g} {unit} "
                    f"(+{PEAK_TOLERANCE:.0%} tolerance)"
                )
            elif value < found.value * FAR_BELOW_FRACTION:
                flagged.append(
                    f"{value:g} {unit} is below {FAR_BELOW_FRACTION:.0%} of the {found.description} = {found.value:g} {unit}"
                )
    spread = spread_pct(repetitions)
    if spread is not None and spread > MAX_SPREAD_PCT and not workload.startswith(ALLREDUCE_PREFIX):
        flagged.append(f"repetitions spread by {spread:.1f}% (more than {MAX_SPREAD_PCT:g}%)")
    return Verdict(rejected=rejected, flagged=flagged, peak=reference)


def intake_impossible(
    *, value: float, unit: str, precision: str, gpu_count: int, peaks: GpuPeaks, workload: str = ""
) -> str | None:
    """The reason a result cannot be real (over twice the peak), or None."""
    found = peak_for(peaks=peaks, unit=unit, precision=precision, gpu_count=gpu_count, workload=workload)
    if isinstance(found, str):
        return found
    if found is not None and value > found.value * INTAKE_IMPOSSIBLE_FACTOR:
        return (
            f"{value:g} {unit} is {value / found.value:.1f} times the {found.description} = {found.value:g} {unit} "
            f"of {peaks.name}: impossible"
        )
    return None
