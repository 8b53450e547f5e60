"""The ingest worker's peer cache at scale: memory and load time under its value budget; prints its figures.

A Celery worker keeps the trusted values of every (GPU, comparison key) it has judged
(``benchmarks_app.services.peers``), bounded by ``MAX_CACHED_PAIRS`` pairs and
``MAX_CACHED_VALUES`` values. This loads every pair of the scale data's GPUs into a new cache,
as a worker meets them, the busiest GPUs last (so that what stays is the worst case), once per budget and each in a fresh process (so
that each peak resident set is its own), and prints per budget: pairs and values loaded,
pairs and values still held, CPU seconds, and VmHWM.

Read-only, on the scale database of ``perf/README.md``:

    .venv/bin/python -m perf.bench_peers                        # the default budget, then unbounded
    .venv/bin/python -m perf.bench_peers --budgets 500000 2000000 default none
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/gpuatlas_perf"


def measure(budget: str) -> dict[str, float | int | str]:
    """Fill a new cache with every pair of every GPU under ``budget`` (a number, default or none)."""
    import django

    django.setup()
    from django.db.models import Sum

    from benchmarks_app.models import ResultAggregate
    from benchmarks_app.services.peers import MAX_CACHED_PAIRS, MAX_CACHED_VALUES, PeerCache

    max_values = {"default": MAX_CACHED_VALUES, "none": None}.get(budget)
    if max_values is None and budget != "none":
        max_values = int(budget)
    by_gpu: dict[int, list[str]] = {}
    quietest_first = (
        ResultAggregate.objects.values("gpu_id").annotate(results=Sum("n")).order_by("results").values_list("gpu_id")
    )
    keys = ResultAggregate.objects.values_list("gpu_id", "comparison_key")
    for gpu_id, key in keys:
        by_gpu.setdefault(gpu_id, []).append(key)
    cache = PeerCache(max_values=max_values)
    pairs = values = 0
    started = time.process_time()
    for (gpu_id,) in quietest_first:
        loaded = cache.load(gpu_id=gpu_id, comparison_keys=by_gpu[gpu_id])
        pairs += len(loaded)
        values += sum(peer_set.n for peer_set in loaded.values())
    cpu = time.process_time() - started
    held_pairs, held_values = cache.held()
    return {
        "value budget": "none" if max_values is None else f"{max_values:,}",
        "pair bound": f"{MAX_CACHED_PAIRS:,}",
        "pairs loaded": pairs,
        "values loaded": values,
        "pairs held": held_pairs,
        "values held": held_values,
        "cpu s": round(cpu, 2),
        "peak RSS MB": round(_high_water_mb(), 1),
    }


def _high_water_mb() -> float:
    for text in Path("/proc/self/status").read_text().splitlines():
        if text.startswith("VmHWM:"):
            return int(text.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--budgets", nargs="+", default=["default", "none"], help="values per cache: a number, default or none"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process measuring one budget
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")
    os.environ.setdefault("DATABASE_URL", os.environ.get("PERF_DATABASE_URL", DEFAULT_DATABASE))
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    for budget in args.budgets:
        if budget not in ("default", "none") and not budget.isdigit():
            parser.error(f"--budgets: {budget!r} is not a number of values, default or none")
    print(f"Peer cache filled with every pair of the database at {os.environ['DATABASE_URL']}, busiest GPUs last")
    for budget in args.budgets:
        child = subprocess.run(
            [sys.executable, "-m", "perf.bench_peers", "--one", budget], cwd=ROOT, capture_output=True, text=True
        )
        if child.returncode != 0:
            sys.exit(f"budget {budget}: the measurement failed:\n{child.stderr[-2000:]}")
        figures = json.loads(child.stdout.strip().splitlines()[-1])
        print(
            "  "
            + ", ".join(
                f"{name} {value:,}" if isinstance(value, int) else f"{name} {value}" for name, value in figures.items()
            )
        )


if __name__ == "__main__":
    main()
