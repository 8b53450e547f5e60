"""A schema-valid submission read into typed values, and the rules a schema cannot state.

The rules (shared with the client's own check): for each result min <= median <= max, every
repetition of the statistics window within [min, max] and the median equal to the window's
median; no two results with one identity (workload, version, precision, params, GPU count,
mode); the workload exists in our Workload rows with the unit it is reported in; no
``cpu_only`` runs; a start time that is not in the future; a result of several GPUs has one
``per_gpu`` entry for each rank 0 to gpu_count - 1 and uses no more GPUs than ``host.ranks``.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import uuid
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from benchmarks_app.services.aggregates import ComparisonKey, canonical_json, comparison_key_for
from benchmarks_app.services.errors import FieldError
from benchmarks_app.services.snapshot import CatalogSnapshot, WorkloadInfo

_MEDIAN_REL_TOLERANCE = 1e-5  # the client writes 6 significant digits (relative error up to 5e-6)
_FUTURE_SLACK = dt.timedelta(hours=1)


@dataclass(frozen=True)
class ResultReport:
    index: int
    workload: str
    workload_version: str
    precision: str
    gpu_count: int
    params: dict[str, Any]
    unit: str
    higher_is_better: bool
    mode: str
    repetitions: list[float]
    window: list[float]
    median: float
    minimum: float
    maximum: float
    spread_pct: float
    correctness_passed: bool | None
    model_tflops: float | None
    raw: dict[str, Any]

    @property
    def path(self) -> str:
        return f"$.results[{self.index}]"

    def key(self) -> ComparisonKey:
        params = normalised_params(self.params)
        if self.mode != "burst":
            # Sustained (after a thermal soak) is a different measurement of the same workload.
            params = {**params, "mode": self.mode}
        return comparison_key_for(
            workload_slug=self.workload,
            version=self.workload_version,
            precision=self.precision,
            params=params,
            gpu_count=self.gpu_count,
        )


@dataclass(frozen=True)
class RunReport:
    run_uuid: uuid.UUID
    created_at: dt.datetime
    cpu_only: bool
    gpu_name_torch: str
    gpu_name_smi: str | None
    memory_gib: float | None
    results: list[ResultReport]
    environment: dict[str, Any]
    client_version: str
    host: dict[str, Any] | None = None  # the GPUs a multi-GPU run used and how they are joined

    @property
    def gpu_name(self) -> str:
        """The name to match: nvidia-smi's when given (it carries the variant), else PyTorch's."""
        return self.gpu_name_smi or self.gpu_name_torch


def normalised_params(params: dict[str, Any]) -> dict[str, Any]:
    """8192.0 and 8192 are one parameter value: integral floats become integers."""
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in params.items()}


def _parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def report_read(document: dict[str, Any]) -> RunReport:
    """Typed view of a document that passed the schema."""
    environment = document["environment"]
    gpu = environment["gpu"]
    results = []
    for index, raw in enumerate(document["results"]):
        window = raw["repetitions"][raw["stats"]["window_start"] :]
        correctness = raw.get("correctness")
        extra = raw.get("extra") or {}
        model_tflops = extra.get("model_tflops")
        results.append(
            ResultReport(
                index=index,
                workload=raw["workload"],
                workload_version=raw["workload_version"],
                precision=raw["precision"],
                gpu_count=raw["gpu_count"],
                params=raw["params"],
                unit=raw["unit"],
                higher_is_better=raw["higher_is_better"],
                mode=raw["mode"],
                repetitions=[float(v) for v in raw["repetitions"]],
                window=[float(v) for v in window],
                median=float(raw["median"]),
                minimum=float(raw["min"]),
                maximum=float(raw["max"]),
                spread_pct=float(raw["spread_pct"]),
                correctness_passed=correctness.get("passed") if isinstance(correctness, dict) else None,
                model_tflops=float(model_tflops)
                if isinstance(model_tflops, int | float) and not isinstance(model_tflops, bool)
                else None,
                raw=raw,
            )
        )
    memory_mib = gpu.get("memory_total_mib") or 0
    return RunReport(
        run_uuid=uuid.UUID(document["run_uuid"]),
        created_at=_parse_time(document["created_at"]),
        cpu_only=document["cpu_only"],
        gpu_name_torch=gpu["name_torch"],
        gpu_name_smi=gpu.get("name_nvidia_smi"),
        memory_gib=memory_mib / 1024 if memory_mib else None,
        results=results,
        environment=environment,
        client_version=document["client"]["version"],
        host=document.get("host"),
    )


def _per_gpu_errors(result: ResultReport, host_ranks: int | None) -> list[FieldError]:
    per_gpu = result.raw.get("per_gpu")
    errors: list[FieldError] = []
    if host_ranks is not None and result.gpu_count > host_ranks:
        errors.append(
            FieldError(
                f"{result.path}.gpu_count",
                f"{result.gpu_count} GPUs, but host.ranks says the run used at most {host_ranks}",
            )
        )
    if per_gpu is None:
        return errors
    ranks = sorted(entry["rank"] for entry in per_gpu)
    if ranks != list(range(result.gpu_count)):
        errors.append(
            FieldError(
                f"{result.path}.per_gpu",
                f"needs one entry for each rank 0 to {result.gpu_count - 1}, has ranks {ranks}",
            )
        )
    for position, entry in enumerate(per_gpu):
        if not entry["min"] <= entry["median"] <= entry["max"]:
            errors.append(FieldError(f"{result.path}.per_gpu[{position}].median", "must lie between min and max"))
    return errors


def _result_errors(result: ResultReport, workload: WorkloadInfo | None, host_ranks: int | None) -> list[FieldError]:
    errors: list[FieldError] = []
    path = result.path
    if workload is None:
        errors.append(
            FieldError(
                f"{path}.workload",
                f"unknown workload {result.workload!r} version {result.workload_version}: not one of ours",
            )
        )
    else:
        if result.unit != workload.unit:
            errors.append(
                FieldError(f"{path}.unit", f"{result.unit!r} is not the unit of {workload.slug}, {workload.unit!r}")
            )
        if result.higher_is_better != workload.higher_is_better:
            errors.append(
                FieldError(
                    f"{path}.higher_is_better", f"must be {str(workload.higher_is_better).lower()} for {workload.slug}"
                )
            )
    if not result.minimum <= result.median <= result.maximum:
        errors.append(FieldError(f"{path}.median", "must lie between min and max"))
    if len(result.window) < 1:
        errors.append(FieldError(f"{path}.stats.window_start", "leaves no repetition in the statistics window"))
        return errors
    outside = [i for i, v in enumerate(result.window) if v < result.minimum or v > result.maximum]
    if outside:
        first = result.raw["stats"]["window_start"] + outside[0]
        errors.append(
            FieldError(f"{path}.repetitions[{first}]", "a repetition of the statistics window lies outside [min, max]")
        )
    errors.extend(_per_gpu_errors(result, host_ranks))
    window_median = statistics.median(result.window)
    if not math.isclose(window_median, result.median, rel_tol=_MEDIAN_REL_TOLERANCE):
        errors.append(
            FieldError(
                f"{path}.median", f"{result.median:g} is not the median of the statistics window ({window_median:g})"
            )
        )
    return errors


def report_check(report: RunReport, snapshot: CatalogSnapshot, *, now: dt.datetime | None = None) -> list[FieldError]:
    """The rules beyond the schema; an empty list means the submission may be stored."""
    errors: list[FieldError] = []
    if report.cpu_only:
        errors.append(
            FieldError("$.cpu_only", "CPU-only runs (--allow-cpu) are for testing the client and are not accepted")
        )
    now = now or timezone.now()
    if report.created_at > now + _FUTURE_SLACK:
        errors.append(FieldError("$.created_at", "is in the future"))
    seen: dict[str, int] = {}
    for result in report.results:
        host_ranks = report.host["ranks"] if report.host is not None else None
        errors.extend(_result_errors(result, snapshot.workload(result.workload, result.workload_version), host_ranks))
        identity = canonical_json(
            [
                result.workload,
                result.workload_version,
                result.precision,
                normalised_params(result.params),
                result.gpu_count,
                result.mode,
            ]
        )
        if identity in seen:
            errors.append(
                FieldError(
                    result.path,
                    f"repeats the workload, precision, params, GPU count and mode of results[{seen[identity]}]",
                )
            )
        else:
            seen[identity] = result.index
    return errors
