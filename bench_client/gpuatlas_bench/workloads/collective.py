"""Multi-GPU workloads, one process per GPU: all-reduce bus bandwidth and the transformer block under DDP.

Every rank runs the same timing harness (``timing.measure``). To keep the ranks in lock step, each
timed call starts after a barrier, every rank's elapsed time is gathered to all ranks, and the
repetition's time is reduced from them the same way on every rank; the harness's clock is rank 0's,
broadcast. So every rank takes the same decisions (warm-up length, calls per repetition, when the
spread has settled) and issues the same collectives. Per-rank figures are kept for ``per_gpu``.

all-reduce follows nccl-tests: float32 buffers, algbw = bytes / time, busbw = algbw * 2(n-1)/n, and
the time of a repetition is the mean over ranks. The transformer step's time is the slowest rank's:
a data-parallel step is done when every rank is.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..environment import Telemetry, device_describe, telemetry_open
from ..records import result_record, shown
from ..timing import TimingPolicy, measure
from .common import CPU_TINY_SIZES, GPU_SIZES, Case, Context, Prepared, ServePlan, Unsupported, correctness_record
from .serve import SHARED_MODEL, tp_cases
from .transformer import _block, forward_flops_per_token, step_finite, training_step

COLLECTIVE_WORKLOADS = ("allreduce-busbw", "transformer-train-ddp", "llm-decode-tp")
COLLECTIVE_PRECISION = {"allreduce-busbw": "fp32", "transformer-train-ddp": "bf16", "llm-decode-tp": "bf16"}
_SIZES = {profile.name: profile for profile in (GPU_SIZES, CPU_TINY_SIZES)}
_SAMPLE = 1 << 20  # elements of each end of the all-reduce buffer compared in float64
# The harness's own wait limit for a collective: a rank that died must not leave the others hanging.
COLLECTIVE_TIMEOUT = dt.timedelta(minutes=10)
# How long a rank waits for the ranks before it to tear their process group down (then goes on).
_TEARDOWN_WAIT_S = 60.0


@dataclass(frozen=True)
class CollectiveSpec:
    """What every rank of one process group runs (pickled to the spawned processes)."""

    workloads: tuple[str, ...]
    devices: tuple[int, ...] | None  # PyTorch CUDA index per rank; None: CPU processes (gloo)
    world_size: int
    sizes: str  # a SizeProfile name
    policy: TimingPolicy
    seed: int
    interconnect: str
    meta: dict[str, dict[str, Any]]  # unit and version per workload, from workloads.json
    store_path: str
    out_path: str
    quiet: bool = False
    serve: ServePlan = ServePlan()


@dataclass
class Rank:
    """This process's place in the group, and the collectives the timing harness needs."""

    torch: Any
    dist: Any
    rank: int
    world: int
    device: Any
    backend: str

    def gather(self, value: float) -> list[float]:
        tensor = self.torch.tensor([float(value)], dtype=self.torch.float64, device=self.device)
        parts = [self.torch.zeros_like(tensor) for _ in range(self.world)]
        self.dist.all_gather(parts, tensor)
        return [float(part.item()) for part in parts]

    def barrier(self) -> None:
        # A collective on this rank's device, then a host wait: dist.barrier() guesses the device.
        self.gather(0.0)
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def clock(self) -> float:
        """Rank 0's monotonic clock, the same on every rank."""
        tensor = self.torch.tensor([time.monotonic()], dtype=self.torch.float64, device=self.device)
        self.dist.broadcast(tensor, 0)
        return float(tensor.item())


class CollectiveTimer:
    """Times one call on every rank; returns the mean or the maximum over ranks, the same on all."""

    def __init__(self, inner: Any, group: Rank, *, reduce: str) -> None:
        self.method = inner.method
        self._inner = inner
        self._group = group
        self._reduce = reduce
        self.per_rank: list[list[float]] = []

    def time(self, fn: Callable[[], object], iterations: int) -> float:
        self._group.barrier()
        seconds = self._group.gather(self._inner.time(fn, iterations))
        self.per_rank.append(seconds)
        return max(seconds) if self._reduce == "max" else sum(seconds) / len(seconds)


def busbw_factor(world: int) -> float:
    """nccl-tests' all-reduce bus bandwidth factor: every rank sends and receives 2(n-1)/n of the data."""
    return 2.0 * (world - 1) / world


def _allreduce_prepared(ctx: Context, group: Rank, size_bytes: int) -> Prepared:
    torch = ctx.torch
    elements = size_bytes // 4
    if not ctx.cpu_only:
        free = ctx.free_bytes() or 0
        if size_bytes * 4 > free:
            raise Unsupported(f"an all-reduce of {_bytes_shown(size_bytes)} needs 4x that in free GPU memory")
    # Rank r holds u + r, u the same seeded U(0,1) draw on every rank: the sum is n*u + n(n-1)/2.
    base = torch.rand(elements, generator=ctx.generator(71), device=ctx.device)
    buffer = base + group.rank
    group.dist.all_reduce(buffer, op=group.dist.ReduceOp.SUM)
    n = group.world
    rel = max_rel = 0.0
    for part in (slice(0, _SAMPLE), slice(-_SAMPLE, None)):
        expected = n * base[part].double() + n * (n - 1) / 2
        diff = (buffer[part].double() - expected).abs()
        rel = max(rel, float(diff.norm() / expected.norm()))
        max_rel = max(max_rel, float(diff.max() / expected.abs().max()))
    summed = correctness_record(
        method="sum of every rank's buffer vs float64", rel=rel, max_rel=max_rel, tolerance=1e-5
    )
    # Timed: the average, which keeps the buffer at n*u/n + (n-1)/2 call after call (a sum would
    # overflow to infinity after ~100 calls); NCCL runs it as a sum with a scaling, the same traffic.
    buffer.copy_(base + group.rank)
    steady = base + (n - 1) / 2

    def fn() -> None:
        group.dist.all_reduce(buffer, op=group.dist.ReduceOp.AVG)

    def check() -> dict[str, Any]:
        worst = 0.0
        for part in (slice(0, _SAMPLE), slice(-_SAMPLE, None)):
            got, want = buffer[part].double(), steady[part].double()
            worst = max(worst, float((got - want).norm() / want.norm())) if bool(torch.isfinite(got).all()) else 1.0
        passed = summed["passed"] and worst <= 1e-4
        return {**summed, "method": "sum vs float64 before timing; the timed average stays put", "passed": passed}

    work = size_bytes * busbw_factor(n) / 1e9 if n > 1 else size_bytes / 1e9

    def extra(median: float) -> dict[str, Any]:
        figures: dict[str, Any] = {"op_timed": "avg", "busbw_factor": round(busbw_factor(n), 6)}
        if n > 1:
            figures["algbw_gbs"] = round(median / busbw_factor(n), 3)
            figures["time_us"] = round(size_bytes * busbw_factor(n) / 1e9 / median * 1e6, 3)
        return figures

    return Prepared(fn=fn, work=work, check=check, extra=extra)


def _ddp_prepared(ctx: Context, group: Rank) -> Prepared:
    torch = ctx.torch
    shape = ctx.sizes.transformer
    batch, seq, d_model = shape["batch"], shape["seq_len"], shape["d_model"]
    dtype = torch.bfloat16
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(ctx.seed)
        block = _block(torch, d_model, shape["n_heads"], shape["d_ff"])
    block = block.to(device=ctx.device, dtype=dtype)
    device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
    model = torch.nn.parallel.DistributedDataParallel(block, device_ids=device_ids)
    # Each rank trains on its own seeded batch, as data parallelism does.
    x = torch.randn(batch, seq, d_model, generator=ctx.generator(81 + group.rank), device=ctx.device).to(dtype)
    grad_out = torch.randn(batch, seq, d_model, generator=ctx.generator(181 + group.rank), device=ctx.device).to(dtype)
    parameters = list(model.parameters())
    holder: dict[str, Any] = {}
    fn = training_step(model, x, grad_out, holder)

    def check() -> dict[str, Any]:
        finite = step_finite(torch, model, holder)
        # DDP all-reduced the gradients: every rank must hold the same ones.
        probe = float(parameters[0].grad.double().sum())
        same = len(set(group.gather(probe))) == 1
        return {"method": "output and gradients finite, gradients equal on every rank", "passed": finite and same}

    per_token = 3 * forward_flops_per_token(seq_len=seq, d_model=d_model, d_ff=shape["d_ff"])

    def extra(median_tokens_per_s: float) -> dict[str, Any]:
        return {
            "tokens_per_s_per_gpu": round(median_tokens_per_s / group.world, 3),
            "model_flops_per_token": per_token,
            "model_tflops": round(median_tokens_per_s * per_token / 1e12, 3),
            "parameters": sum(parameter.numel() for parameter in parameters),
            "bucket_cap_mb": 25,
        }

    return Prepared(
        fn=fn, work=float(batch * seq * group.world), check=check, extra=extra, per_gpu_work=float(batch * seq)
    )


def _bytes_shown(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"


def collective_cases(ctx: Context, group: Rank, workloads: tuple[str, ...], interconnect: str) -> list[Case]:
    cases: list[Case] = []
    if "allreduce-busbw" in workloads:
        sizes = ctx.sizes.allreduce_bytes if group.world > 1 else ctx.sizes.allreduce_bytes[-1:]
        for size in sizes:
            params = {"bytes": size, "dtype": "float32", "op": "avg", "interconnect": interconnect}

            def build(c: Context, size: int = size) -> Prepared:
                return _allreduce_prepared(c, group, size)

            cases.append(
                Case("allreduce-busbw", "fp32", params, build, f"all-reduce {_bytes_shown(size)} x{group.world}")
            )
    if "transformer-train-ddp" in workloads:
        params = {**ctx.sizes.transformer, "interconnect": interconnect}
        label = f"transformer train DDP x{group.world}"
        cases.append(Case("transformer-train-ddp", "bf16", params, lambda c: _ddp_prepared(c, group), label))
    if "llm-decode-tp" in workloads:
        cases += tp_cases(ctx, group, interconnect)
    return cases


def _agreed(group: Rank, failure: str | None) -> str | None:
    """The first rank's reason when any rank could not build the case, so all ranks skip it together."""
    failed = group.gather(0.0 if failure is None else 1.0)
    if not any(failed):
        return None
    return failure or f"rank {failed.index(1.0)} could not set the case up"


def _per_gpu(
    timer: CollectiveTimer, *, timed: int, window_start: int, work: float, inner: int, devices: list[int]
) -> Any:
    calls = timer.per_rank[-timed:]
    out = []
    for rank, device in enumerate(devices):
        values = [work * inner / call[rank] for call in calls][window_start:]
        out.append(
            {
                "rank": rank,
                "device_index": device,
                "median": float(f"{statistics.median(values):.6g}"),
                "min": float(f"{min(values):.6g}"),
                "max": float(f"{max(values):.6g}"),
            }
        )
    return out


def _run_case(ctx: Context, group: Rank, case: Case, spec: CollectiveSpec, meta: dict[str, Any]) -> dict[str, Any]:
    """One case on every rank; rank 0's return value is what the parent records."""
    prepared = None
    failure = None
    try:
        prepared = case.build(ctx)
    except Unsupported as reason:
        failure = str(reason)
    except Exception as error:  # noqa: BLE001 - every rank must reach the agreement below
        if type(error).__name__ == "OutOfMemoryError":
            failure = "not enough GPU memory for the documented sizes"
        else:
            failure = "error: " + "".join(traceback.format_exception_only(type(error), error)).strip()
    reason = _agreed(group, failure)
    skipped = {"workload": case.workload, "precision": case.precision, "params": dict(case.params), "mode": "burst"}
    if reason is not None or prepared is None:
        return {"skipped": {**skipped, "reason": (reason or "set-up failed")[:500]}}
    # A data-parallel or tensor-parallel step is done when the slowest rank is.
    reduce = "mean" if case.workload == "allreduce-busbw" else "max"
    timer = CollectiveTimer(ctx.timer, group, reduce=reduce)
    try:
        measurement = measure(
            prepared.fn, work=prepared.work, timer=timer, policy=prepared.policy or ctx.policy, clock=group.clock
        )
        ctx.synchronize()
        correctness = prepared.check() if prepared.check else None
        if correctness is not None:
            passed_everywhere = all(group.gather(1.0 if correctness["passed"] else 0.0))
            correctness = {**correctness, "passed": bool(passed_everywhere)}
        figures = prepared.extra(statistics.median(measurement.window)) if prepared.extra else {}  # noqa: S610 - not Django
    finally:
        if prepared.teardown is not None:
            prepared.teardown()
    if group.world == 1 and case.workload == "allreduce-busbw":
        algbw = statistics.median(measurement.window)
        checked = "summed correctly" if correctness and correctness["passed"] else "FAILED its sum check"
        return {
            "skipped": {
                **skipped,
                "reason": (
                    "one GPU: bus bandwidth is 0 by definition (busbw = algbw x 2(n-1)/n); the 1-rank "
                    f"{group.backend} all-reduce, a local copy, ran at {algbw:.4g} GB/s algbw and {checked}"
                ),
            }
        }
    record = result_record(
        case,
        measurement,
        unit=meta["unit"],
        version=meta["version"],
        mode="burst",
        extra=figures,
        gpu_count=group.world,
    )
    devices = list(spec.devices) if spec.devices is not None else list(range(group.world))
    record["per_gpu"] = _per_gpu(
        timer,
        timed=len(measurement.values),
        window_start=measurement.window_start,
        work=prepared.per_gpu_work if prepared.per_gpu_work is not None else prepared.work,
        inner=measurement.inner_iterations,
        devices=devices,
    )
    if correctness is not None:
        record["correctness"] = correctness
    return {"result": record}


def collective_worker(rank: int, spec: CollectiveSpec) -> None:
    """The body of one spawned process (torch.multiprocessing.spawn calls it with the rank first)."""
    import torch
    import torch.distributed as dist

    if spec.devices is not None:
        torch.cuda.set_device(spec.devices[rank])
        device = torch.device("cuda", spec.devices[rank])
        backend = "nccl"
    else:
        torch.set_num_threads(1)  # one core per rank: the ranks share the CPU
        device = torch.device("cpu")
        backend = "gloo"
    dist.init_process_group(
        backend,
        init_method=f"file://{spec.store_path}",
        rank=rank,
        world_size=spec.world_size,
        timeout=COLLECTIVE_TIMEOUT,
    )
    group = Rank(torch=torch, dist=dist, rank=rank, world=spec.world_size, device=device, backend=backend)
    capability = None
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        capability = (props.major, props.minor)
    telemetry = Telemetry()
    if device.type == "cuda":
        info = device_describe(torch, index=device.index)
        telemetry = telemetry_open(torch_index=device.index, uuid=info.uuid, pci_bus_id=info.pci_bus_id)
    ctx = Context(
        torch=torch,
        device=device,
        cpu_only=device.type != "cuda",
        sizes=_SIZES[spec.sizes],
        policy=spec.policy,
        seed=spec.seed,
        compute_capability=capability,
        l2_bytes=None,
        serve=spec.serve,
        energy_mj=telemetry.energy_mj,
        power_w=telemetry.power_w,
        power_limit_w=telemetry.static().power_limit_w,
    )
    outcome: dict[str, Any] = {"results": [], "skipped": [], "errors": [], "backend": backend}
    finished = False
    if backend == "nccl":
        version = torch.cuda.nccl.version()
        outcome["nccl_version"] = (
            ".".join(str(part) for part in version) if isinstance(version, tuple) else str(version)
        )
    try:
        for case in collective_cases(ctx, group, spec.workloads, spec.interconnect):
            started = time.monotonic()
            entry = _run_case(ctx, group, case, spec, spec.meta[case.workload])
            ctx.release()
            if rank != 0:
                continue
            if "result" in entry:
                outcome["results"].append(entry["result"])
                record = entry["result"]
                verdict = "" if record.get("correctness", {}).get("passed", True) else "  CORRECTNESS CHECK FAILED"
                line = (
                    f"  {case.label}: {shown(record['median'])} {record['unit']} (median of "
                    f"{record['stats']['window_size']}, spread {record['spread_pct']:.2f}%) "
                    f"{time.monotonic() - started:.1f}s{verdict}"
                )
            else:
                outcome["skipped"].append(entry["skipped"])
                line = f"  {case.label}: skipped ({entry['skipped']['reason']})"
            if not spec.quiet:
                print(line, file=sys.stderr, flush=True)
        ctx.forget(SHARED_MODEL)
        finished = True
    finally:
        if rank == 0:
            text = json.dumps(outcome, allow_nan=False)
            temporary = Path(spec.out_path + ".tmp")
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, spec.out_path)
        telemetry.close()
        _teardown(group, spec, meet=finished)
    # Reached only when every case ran and the group is down. Leave without interpreter shutdown:
    # gloo keeps transport threads in process-wide objects that outlive the process group, and
    # destroying one of them while its thread is still joinable aborts the process ("terminate
    # called without an active exception", SIGABRT) after all its work is done. Rank 0's file is
    # written and replaced above, and nothing else of this process is needed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _teardown(group: Rank, spec: CollectiveSpec, *, meet: bool) -> None:
    """Tear the process group down one rank at a time, each while its peers' groups are idle.

    A rank that closes its connections while a peer is itself in the middle of closing its own can
    make the peer's gloo transport thread meet a connection in an unexpected state, which aborts
    that process (SIGABRT). So: first every object that holds the group (a DDP model's reducer)
    is freed, so that destroying the group really closes its connections there and then, not at
    interpreter exit; then all ranks meet; then (gloo) rank r destroys its group only once ranks
    0..r-1 have destroyed theirs (a marker file each): every close reaches a peer that is idle, waiting.
    """
    gc.collect()
    try:
        if meet:  # a rank that failed mid-case leaves at once: its peers' collectives fail, not hang
            group.barrier()
    finally:
        # gloo only: NCCL's communicator teardown may itself wait for every rank (a collective in
        # some NCCL versions), so NCCL ranks destroy their groups together.
        for lower in range(group.rank if group.backend == "gloo" else 0):
            _wait_for(Path(f"{spec.store_path}.down-{lower}"))
        group.dist.destroy_process_group()
        Path(f"{spec.store_path}.down-{group.rank}").touch()


def _wait_for(marker: Path) -> None:
    deadline = time.monotonic() + _TEARDOWN_WAIT_S
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.005)


__all__ = [
    "COLLECTIVE_PRECISION",
    "COLLECTIVE_WORKLOADS",
    "CollectiveSpec",
    "CollectiveTimer",
    "busbw_factor",
    "collective_worker",
]
