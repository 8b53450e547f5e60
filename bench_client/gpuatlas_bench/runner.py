"""Run the selected workloads on one device and assemble the submission."""

from __future__ import annotations

import statistics
import sys
import time
import traceback
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TextIO

from . import CLIENT_NAME, SCHEMA_VERSION, __version__
from .environment import Telemetry, device_describe, environment_collect, telemetry_open
from .multigpu import collective_run, host_describe, host_topology, mixed_models
from .records import result_record, shown
from .timing import TimingPolicy, measure
from .workloads import cases_build, workload_code_sha256, workloads_load
from .workloads.collective import COLLECTIVE_PRECISION, COLLECTIVE_WORKLOADS
from .workloads.common import CPU_TINY_SIZES, GPU_SIZES, Case, Context, ServePlan, Unsupported
from .workloads.serve import SHARED_MODEL

POLICIES = {
    "standard": TimingPolicy(),
    "quick": TimingPolicy(max_repetitions=20, max_seconds=4.0, warmup_seconds=0.25, min_repetition_seconds=0.05),
    "cpu": TimingPolicy(max_repetitions=20, max_seconds=1.0, warmup_seconds=0.01, min_repetition_seconds=0.002),
}
DEFAULT_SOAK_SECONDS = 120.0
SEED = 20251


class Progress:
    """One line per case on stderr; the current repetition is redrawn in place on a terminal."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())

    def line(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stream, flush=True)

    def repetition(self, label: str, unit: str) -> Any:
        if self.quiet or not self.interactive:
            return None

        def show(count: int, value: float) -> None:
            print(f"\r  {label}: repetition {count}, {shown(value)} {unit}   ", end="", file=self.stream, flush=True)

        return show

    def clear(self) -> None:
        if self.interactive and not self.quiet:
            print("\r\033[K", end="", file=self.stream, flush=True)


@dataclass
class RunOptions:
    workloads: tuple[str, ...]
    precisions: tuple[str, ...]
    run_mode: str  # quick | standard | sustained
    soak_seconds: float = DEFAULT_SOAK_SECONDS
    serve: ServePlan = ServePlan()


def _run_case(
    ctx: Context, case: Case, *, mode: str, telemetry: Telemetry, progress: Progress, position: str
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str | None]:
    """(result, skipped, error) for one case; an exception in one case never loses the others."""
    meta = workloads_load()[case.workload]
    skipped = {"workload": case.workload, "precision": case.precision, "params": dict(case.params), "mode": mode}
    started = time.monotonic()
    prepared = None
    try:
        prepared = case.build(ctx)
        policy = prepared.policy or ctx.policy
        measurement = measure(
            prepared.fn,
            work=prepared.work,
            timer=ctx.timer,
            policy=policy,
            on_repetition=progress.repetition(case.label, meta["unit"]),
        )
        ctx.synchronize()
        correctness = prepared.check() if prepared.check else None
        figures = prepared.extra(statistics.median(measurement.window)) if prepared.extra else {}  # noqa: S610 - not Django
    except Unsupported as reason:
        progress.clear()
        progress.line(f"{position} {case.label}: skipped ({reason})")
        return None, {**skipped, "reason": str(reason)[:500]}, None
    except Exception as error:  # noqa: BLE001 - reported, recorded as skipped, the run goes on
        progress.clear()
        if type(error).__name__ == "OutOfMemoryError":  # torch.cuda.OutOfMemoryError: a smaller GPU
            progress.line(f"{position} {case.label}: skipped (not enough GPU memory)")
            return None, {**skipped, "reason": "not enough GPU memory for the documented sizes"}, None
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        progress.line(f"{position} {case.label}: ERROR {detail}")
        return None, {**skipped, "reason": f"error: {detail}"[:500]}, detail
    finally:
        if prepared is not None and prepared.teardown:
            prepared.teardown()
        del prepared
        ctx.release()

    record = result_record(case, measurement, unit=meta["unit"], version=meta["version"], mode=mode, extra=figures)
    if correctness is not None:
        record["correctness"] = correctness
    if telemetry.source != "none":
        record["telemetry_after"] = telemetry.sample()
    progress.clear()
    verdict = ""
    if correctness is not None and not correctness["passed"]:
        verdict = "  CORRECTNESS CHECK FAILED"
    progress.line(
        f"{position} {case.label}: {shown(record['median'])} {meta['unit']} "
        f"(median of {record['stats']['window_size']}, spread {record['spread_pct']:.2f}%"
        f"{'' if record['stats']['converged'] else ', not converged'}) {time.monotonic() - started:.1f}s{verdict}"
    )
    return record, None, None


def _soak(ctx: Context, *, seconds: float, telemetry: Telemetry, progress: Progress) -> dict[str, Any]:
    """Heat the GPU with back-to-back half-precision matmuls so the next figures are the sustained ones."""
    torch = ctx.torch
    size = ctx.sizes.matmul_fixed
    dtype = torch.float32 if ctx.cpu_only else torch.bfloat16
    a = torch.randn(size, size, generator=ctx.generator(91), device=ctx.device).to(dtype)
    b = torch.randn(size, size, generator=ctx.generator(92), device=ctx.device).to(dtype)
    before = telemetry.sample() if telemetry.source != "none" else None
    progress.line(f"thermal soak: {seconds:g} s of {str(dtype).removeprefix('torch.')} matmul {size}")
    started = last_report = time.monotonic()
    while time.monotonic() - started < seconds:
        for _ in range(20):
            torch.matmul(a, b)
        ctx.synchronize()
        if time.monotonic() - last_report >= 15 and telemetry.source != "none":
            sample = telemetry.sample()
            progress.line(
                f"  soak {time.monotonic() - started:4.0f} s: SM {sample['sm_mhz']} MHz, "
                f"{sample['temperature_c']} C, {sample['power_draw_w']} W"
            )
            last_report = time.monotonic()
    del a, b
    ctx.release()
    return {
        "seconds": round(time.monotonic() - started, 3),
        "load": f"{str(dtype).removeprefix('torch.')} matmul {size}x{size}x{size}",
        "telemetry_before": before,
        "telemetry_after": telemetry.sample() if telemetry.source != "none" else None,
    }


def device_run(
    torch: Any,
    *,
    device_index: int | None,
    options: RunOptions,
    progress: Progress,
    collective_devices: list[int] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Measure one device (``None``: the CPU, for tests) and return (submission, errors).

    The multi-GPU workloads among ``options.workloads`` run over ``collective_devices`` (default: this
    device alone; on the CPU, one and two gloo processes), and the submission then carries ``host``.
    """
    cpu_only = device_index is None
    started_at = datetime.now(timezone.utc)  # noqa: UP017 - Python 3.10 has no datetime.UTC
    created_at = started_at.isoformat(timespec="seconds").replace("+00:00", "Z")
    started = time.monotonic()
    if cpu_only:
        device = torch.device("cpu")
        policy = POLICIES["cpu"]
        sizes = CPU_TINY_SIZES
    else:
        torch.cuda.set_device(device_index)
        device = torch.device("cuda", device_index)
        policy = POLICIES["quick" if options.run_mode == "quick" else "standard"]
        sizes = GPU_SIZES
    info = device_describe(torch, index=device_index)
    telemetry = (
        Telemetry()
        if cpu_only
        else telemetry_open(torch_index=device_index, uuid=info.uuid, pci_bus_id=info.pci_bus_id)
    )
    static = telemetry.static()
    before = telemetry.sample() if telemetry.source != "none" else None
    capability = tuple(int(part) for part in info.compute_capability.split(".")) if info.compute_capability else None
    ctx = Context(
        torch=torch,
        device=device,
        cpu_only=cpu_only,
        sizes=sizes,
        policy=policy,
        seed=SEED,
        compute_capability=capability,  # type: ignore[arg-type]
        l2_bytes=info.l2_cache_bytes,
        serve=options.serve,
        energy_mj=telemetry.energy_mj,
        power_w=telemetry.power_w,
        power_limit_w=static.power_limit_w,
    )
    progress.line(
        f"{CLIENT_NAME} {__version__}: {info.name} (device {info.index}), torch {torch.__version__}, "
        f"telemetry {telemetry.source}, mode {options.run_mode}{', CPU-ONLY (test run)' if cpu_only else ''}"
    )

    results: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    errors: list[str] = []

    def run_pass(mode: str, cases: list[Case]) -> None:
        for number, case in enumerate(cases, start=1):
            position = f"[{mode} {number:2d}/{len(cases)}]"
            result, skip, error = _run_case(
                ctx, case, mode=mode, telemetry=telemetry, progress=progress, position=position
            )
            if result is not None:
                results.append(result)
            if skip is not None:
                skipped.append(skip)
            if error is not None:
                errors.append(f"{case.label}: {error}")
        ctx.forget(SHARED_MODEL)  # the serving sweep's model, before the next pass or the multi-GPU processes

    cases = cases_build(ctx, workloads=options.workloads, precisions=options.precisions)
    run_pass("burst", cases)
    host = None
    if any(workload in COLLECTIVE_WORKLOADS for workload in options.workloads):
        ctx.release()
        host = _collective_pass(
            torch,
            devices=None if cpu_only else (collective_devices or [device_index]),  # type: ignore[list-item]
            options=options,
            policy=policy,
            sizes=sizes.name,
            progress=progress,
            results=results,
            skipped=skipped,
            errors=errors,
        )
    soak = None
    if options.run_mode == "sustained":
        soak = _soak(ctx, seconds=options.soak_seconds, telemetry=telemetry, progress=progress)
        # PCIe figures depend on the host, not on how hot the GPU is.
        run_pass("sustained", [case for case in cases if not case.workload.startswith("pcie-")])

    after = telemetry.sample() if telemetry.source != "none" else None
    environment = environment_collect(
        torch=torch,
        device=info,
        telemetry=telemetry,
        static=static,
        before=before,
        after=after,
        cpu_only=cpu_only,
    )
    telemetry.close()
    submission: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "client": {"name": CLIENT_NAME, "version": __version__},
        "run_uuid": str(uuid.uuid4()),
        "created_at": created_at,
        "duration_s": round(time.monotonic() - started, 3),
        "cpu_only": cpu_only,
        "run_mode": options.run_mode,
        "environment": environment,
        "workload_code_sha256": workload_code_sha256(),
        "results": results,
        "skipped": skipped,
        "soak": soak,
    }
    if host is not None:
        submission["host"] = host
    return submission, errors


def _collective_pass(
    torch: Any,
    *,
    devices: list[int] | None,
    options: RunOptions,
    policy: TimingPolicy,
    sizes: str,
    progress: Progress,
    results: list[dict[str, Any]],
    skipped: list[dict[str, Any]],
    errors: list[str],
) -> dict[str, Any]:
    """Run the multi-GPU workloads (burst only) and return the submission's ``host`` object."""
    wanted = tuple(workload for workload in COLLECTIVE_WORKLOADS if workload in options.workloads)
    topology = host_topology(torch, devices)
    reason = mixed_models(torch, devices) if devices is not None and len(devices) > 1 else None
    if reason is not None:
        progress.line(f"multi-GPU workloads skipped: {reason}")
        for workload in wanted:
            skipped.append(
                {"workload": workload, "precision": COLLECTIVE_PRECISION[workload], "mode": "burst", "reason": reason}
            )
        outcome = None
    else:
        outcome = collective_run(
            torch,
            workloads=wanted,
            devices=devices,
            topology=topology,
            policy=policy,
            sizes=sizes,
            seed=SEED,
            line=progress.line,
            quiet=progress.quiet,
            serve=options.serve,
        )
        results += outcome.results
        skipped += outcome.skipped
        errors += outcome.errors
    return host_describe(torch, devices=devices, topology=topology, outcome=outcome)


__all__ = ["POLICIES", "Progress", "RunOptions", "device_run", "result_record"]
