"""A schema-valid submission read into typed values, and the rules a schema cannot state.

``report_from_document`` is the one check every submission passes, at intake (API and upload
form) and again whenever it is derived (ingest, moderation, ``rebuild_results``): the schema,
then these rules. The rules (partly shared with the client's own check): for each result min <=
median <= max, every repetition of the statistics window within [min, max] and the median equal
to the window's median; no two results with one identity (workload, version, precision, params,
GPU count, mode); the workload exists in our Workload rows with the unit it is reported in, and
its precision, GPU count, params and number of results are what the client produces
(services.workload_rules); no ``cpu_only`` runs; a start time that is a real date between the
client's first run and the time the server received it (plus a clock skew); GPU memory below any
GPU; a result of several GPUs has one ``per_gpu`` entry for each rank 0 to gpu_count - 1 and
uses no more GPUs than ``host.ranks``.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from benchmarks_app.services.canonical_json import canonical_json
from benchmarks_app.services.comparison_keys import ComparisonKey, comparison_key_for
from benchmarks_app.services.errors import FieldError
from benchmarks_app.services.schema import MAX_ERRORS, schema_errors
from benchmarks_app.services.snapshot import CatalogSnapshot, WorkloadInfo, catalog_snapshot_refresh_if_changed
from benchmarks_app.services.workload_rules import result_rules_errors, results_count_errors

_MEDIAN_REL_TOLERANCE = 1e-5  # the client writes 6 significant digits (relative error up to 5e-6)

# No run of gpuatlas-bench can start before 2026-11-22: version 0.1.0, its first, was written
# and first measured a GPU that day (the first recorded run, tests/fixtures/bench/h100_run.json,
# started 2026-11-22T03:57:14Z; the client and its measured runs are in the first commit).
CLIENT_FIRST_RUN = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)

# The most memory one GPU has today is 288 GB of HBM3E (NVIDIA B300, AMD Instinct MI355X);
# announced parts reach 432 GB (AMD Instinct MI400). 1 TiB leaves room for generations to come
# and still refuses the absurd (the schema alone allows 100,000,000 MiB).
MAX_GPU_MEMORY_MIB = 1024 * 1024


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
    memory_total_mib: int
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


def created_at_error(text: str) -> FieldError | None:
    """Why a ``created_at`` that fits the schema's pattern is not a real time, or None.

    The pattern admits 2026-02-30, month 13, hour 25, second 60 (no leap seconds: Python's
    datetime, like POSIX time, has none) and year 0000.
    """
    try:
        _parse_time(text)
    except ValueError as exc:
        return FieldError("$.created_at", f"not a real date and time ({exc})")
    return None


def created_at_window_error(created_at: dt.datetime, *, received_at: dt.datetime) -> FieldError | None:
    """A start time before the client existed, or after the submission arrived (beyond the skew)."""
    if created_at < CLIENT_FIRST_RUN:
        return FieldError(
            "$.created_at",
            f"is before {CLIENT_FIRST_RUN:%Y-%m-%d}, the day of the benchmark client's first run: "
            "check the machine's clock",
        )
    skew = dt.timedelta(seconds=settings.SUBMISSION_CLOCK_SKEW_S)
    if created_at > received_at + skew:
        ahead = created_at - received_at
        return FieldError(
            "$.created_at",
            f"is {_duration(ahead)} after the server received the run (at most {_duration(skew)} of clock "
            "skew is allowed): check the machine's clock",
        )
    return None


def _duration(delta: dt.timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 2 * 86400:
        return f"{seconds // 86400} days"
    if seconds >= 2 * 3600:
        return f"{seconds // 3600} hours"
    if seconds >= 120:
        return f"{seconds // 60} minutes"
    return f"{seconds} seconds"


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
        memory_total_mib=memory_mib,
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


def _result_errors(
    result: ResultReport, workload: WorkloadInfo | None, host_ranks: int | None, *, cpu_trial: bool = False
) -> list[FieldError]:
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
        if workload.rules is None:
            errors.append(
                FieldError(
                    f"{path}.workload",
                    f"{workload.slug} {workload.version} is a lab workload that the benchmark client does not run: "
                    "submissions of it are not accepted",
                )
            )
        elif not cpu_trial:  # a CPU trial runs tiny sizes: its params are not a GPU run's
            errors.extend(
                result_rules_errors(
                    rules=workload.rules,
                    precision=result.precision,
                    gpu_count=result.gpu_count,
                    params=result.params,
                    path=path,
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


def report_check(
    report: RunReport, snapshot: CatalogSnapshot, *, received_at: dt.datetime | None = None, cpu_trial: bool = False
) -> list[FieldError]:
    """The rules beyond the schema; an empty list means the submission may be stored.

    ``received_at``: when the server received the run (a stored submission's), else now.
    ``cpu_trial``: a dry run of a ``cpu_only`` run (never stored), checked by every rule but that
    one and its workloads' params, which a CPU run's tiny sizes never meet.
    """
    errors: list[FieldError] = []
    if report.cpu_only and not cpu_trial:
        errors.append(
            FieldError("$.cpu_only", "CPU-only runs (--allow-cpu) are for testing the client and are not accepted")
        )
    window = created_at_window_error(report.created_at, received_at=received_at or timezone.now())
    if window is not None:
        errors.append(window)
    if report.memory_total_mib > MAX_GPU_MEMORY_MIB:
        errors.append(
            FieldError(
                "$.environment.gpu.memory_total_mib",
                f"{report.memory_total_mib} MiB is more memory than any GPU has (the largest have 288 GB; "
                f"the bound is {MAX_GPU_MEMORY_MIB} MiB, 1 TiB)",
            )
        )
    workloads = [snapshot.workload(result.workload, result.workload_version) for result in report.results]
    # First, so that it is among the errors reported however many results fail one by one.
    errors.extend(
        results_count_errors(
            counted=[
                (workload.rules, result.mode)
                for result, workload in zip(report.results, workloads, strict=True)
                if workload is not None and workload.rules is not None
            ]
        )
    )
    seen: dict[str, int] = {}
    host_ranks = report.host["ranks"] if report.host is not None else None
    for result, workload in zip(report.results, workloads, strict=True):
        errors.extend(_result_errors(result, workload, host_ranks, cpu_trial=cpu_trial))
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
    return errors[:MAX_ERRORS]


def report_from_document(
    document: dict[str, Any],
    snapshot: CatalogSnapshot,
    *,
    received_at: dt.datetime | None = None,
    cpu_trial: bool = False,
) -> tuple[RunReport | None, list[FieldError]]:
    """Every rule a submission must pass, in one place: the schema, a real start time, the rules.

    The intake calls it before storing anything; the derivation calls it again on the stored
    payload with the time it was received, so a rebuild judges old submissions by today's rules
    (those they fail are rejected with the reason; the raw payload is never changed).
    """
    errors = schema_errors(document)
    if errors:
        return None, errors
    bad_time = created_at_error(document["created_at"])
    if bad_time is not None:
        return None, [bad_time]
    report = report_read(document)
    if any(snapshot.workload(r.workload, r.workload_version) is None for r in report.results):
        snapshot = catalog_snapshot_refresh_if_changed()
    return report, report_check(report, snapshot, received_at=received_at, cpu_trial=cpu_trial)
