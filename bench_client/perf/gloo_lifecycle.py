"""Run the two-process gloo lifecycle of the multi-GPU workloads many times and count how each run ended.

``--path client``: the client's own ``collective_worker`` with two CPU ranks (gloo, a file store),
all-reduce and the DDP step, the outcome file, the process group's teardown and the processes' exit;
only the timing policy is cut to one repetition (tens of seconds a run on a loaded machine).
``--path lifecycle`` (default, about a second a run): the same process-group lifecycle without the
timing harness: init over a file store, a DDP step left for the garbage collector (as the client's
cases leave theirs), an all-gather and an all-reduce, rank 0 writing its outcome file, then the
teardown: ``--teardown fixed`` is the client's ``_teardown``; ``--teardown before`` the one it replaced
(a barrier, rank 0 writes its file, every rank destroys its group at once).
A run ends "ok", "SIGABRT" (or another signal), or "error" (an exception).

    PYTHONPATH=bench_client python3 bench_client/perf/gloo_lifecycle.py --runs 200 [--delay-ms 200] [--start-method spawn]

--delay-ms makes rank 0's write of the outcome file that much slower (as on a loaded CI machine),
which widens the window in which the other rank tears its connections down first. The start
method "fork" (default here, the client uses "spawn") saves each run two imports of PyTorch.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch._dynamo  # noqa: F401 - DDP imports it; done once here, forked runs do not repeat it (seconds each)
import torch.nn.parallel.distributed  # noqa: F401
from gpuatlas_bench.timing import TimingPolicy
from gpuatlas_bench.workloads.collective import CollectiveSpec, Rank, _teardown, collective_worker

POLICY = TimingPolicy(
    min_repetitions=1, max_repetitions=1, warmup_seconds=0.0, min_repetition_seconds=0.0, max_seconds=0.1
)


def worker(rank: int, spec: CollectiveSpec, delay_s: float) -> None:
    if delay_s and rank == 0:
        replace = os.replace

        def slow_replace(source: str, target: str) -> None:
            time.sleep(delay_s)
            replace(source, target)

        os.replace = slow_replace  # type: ignore[assignment]
    collective_worker(rank, spec)


def _ddp_step(torch_module: object) -> None:
    """One DDP forward and backward; the model is left for the garbage collector, as the client's cases leave it."""
    torch.manual_seed(1)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64))
    model(torch.randn(8, 64)).sum().backward()


def lifecycle_worker(rank: int, store_path: str, out_path: str, teardown: str, delay_s: float) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=2)
    group = Rank(torch=torch, dist=dist, rank=rank, world=2, device=torch.device("cpu"), backend="gloo")
    _ddp_step(torch)
    group.gather(float(rank))
    buffer = torch.ones(1 << 14)
    dist.all_reduce(buffer)

    def write_outcome() -> None:
        if rank == 0:
            time.sleep(delay_s)
            temporary = Path(out_path + ".tmp")
            temporary.write_text(json.dumps({"results": [float(buffer[0])] * 3}), encoding="utf-8")
            os.replace(temporary, out_path)

    if teardown == "before":
        group.barrier()
        write_outcome()
        dist.destroy_process_group()
    else:
        write_outcome()
        _teardown(
            group,
            CollectiveSpec(("x",), None, 2, "cpu-tiny", POLICY, 1, "unknown", {}, store_path, out_path),
            meet=True,
        )


def lifecycle_run(folder: Path, index: int, *, teardown: str, delay_s: float, start_method: str) -> str:
    out_path = str(folder / f"outcome-{index}.json")
    try:
        torch.multiprocessing.start_processes(
            lifecycle_worker,
            args=(str(folder / f"store-{index}"), out_path, teardown, delay_s),
            nprocs=2,
            join=True,
            start_method=start_method,
        )
    except Exception as failure:  # noqa: BLE001 - counted, not raised
        text = str(failure)
        signal = re.search(r"signal (SIG[A-Z]+)", text)
        return signal.group(1) if signal else f"error: {type(failure).__name__}: {text.strip()[-200:]}"
    return "ok" if Path(out_path).exists() else "no outcome file"


def one_run(folder: Path, index: int, *, delay_s: float, start_method: str) -> str:
    spec = CollectiveSpec(
        workloads=("allreduce-busbw", "transformer-train-ddp"),
        devices=None,
        world_size=2,
        sizes="cpu-tiny",
        policy=POLICY,
        seed=1,
        interconnect="unknown",
        meta={name: {"unit": "x", "version": "1.0"} for name in ("allreduce-busbw", "transformer-train-ddp")},
        store_path=str(folder / f"store-{index}"),
        out_path=str(folder / f"outcome-{index}.json"),
        quiet=True,
    )
    try:
        torch.multiprocessing.start_processes(
            worker, args=(spec, delay_s), nprocs=2, join=True, start_method=start_method
        )
    except Exception as failure:  # noqa: BLE001 - counted, not raised
        text = str(failure)
        signal = re.search(r"signal (SIG[A-Z]+)", text)
        return signal.group(1) if signal else f"error: {type(failure).__name__}: {text.strip()[-200:]}"
    outcome = json.loads(Path(spec.out_path).read_text(encoding="utf-8"))
    return "ok" if len(outcome["results"]) == 3 else f"incomplete: {len(outcome['results'])} results"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--start-method", choices=["fork", "spawn"], default="fork")
    parser.add_argument("--path", choices=["lifecycle", "client"], default="lifecycle")
    parser.add_argument("--teardown", choices=["fixed", "before"], default="fixed")
    args = parser.parse_args()
    counts: collections.Counter[str] = collections.Counter()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gloo-lifecycle-") as name:
        for index in range(args.runs):
            if args.path == "client":
                verdict = one_run(Path(name), index, delay_s=args.delay_ms / 1000, start_method=args.start_method)
            else:
                verdict = lifecycle_run(
                    Path(name),
                    index,
                    teardown=args.teardown,
                    delay_s=args.delay_ms / 1000,
                    start_method=args.start_method,
                )
            counts[verdict] += 1
            if verdict != "ok":
                print(f"run {index}: {verdict}", flush=True)
    print(
        f"{args.runs} runs ({args.path}, teardown {args.teardown}, {args.start_method}, delay {args.delay_ms:g} ms) "
        f"in {time.monotonic() - started:.0f} s, "
        f"torch {torch.__version__}: {dict(counts)}"
    )
    return 0 if counts["ok"] == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
