"""Rebuild the bundled MLPerf Training tables from git snapshots of the results repositories.

    python benchmarks_app/data/mlperf_training/extract.py ROUND GIT_DIR > training_results_vROUND.csv

Reads, at the snapshot's HEAD, every ``<submitter>/systems/<system>.json`` and every
``<submitter>/results/<system>/<benchmark>/result_*.txt`` (MLLOG lines), and writes one row per
system and benchmark: the system's accelerators, nodes and networks, the runs' times to train and
the samples each run trained on. Not imported by the application: it documents how the CSV files
were made (SOURCES.md).
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from typing import Any

_RESULT = re.compile(r"^([^/]+)/results/([^/]+)/([^/]+)/result_\d+\.txt$")
_SYSTEM = re.compile(r"^([^/]+)/systems/([^/]+)\.json$")
SYSTEM_FIELDS = (
    "system_name",
    "division",
    "status",
    "accelerator_model_name",
    "accelerators_per_node",
    "number_of_nodes",
    "accelerator_interconnect",
    "host_networking",
    "host_network_card_count",
    "framework",
    "sw_notes",
)


def _blobs(git_dir: str, paths: list[str]) -> dict[str, bytes]:
    """The files' contents at HEAD through one ``git cat-file --batch``."""
    request = "".join(f"HEAD:{p}\n" for p in paths).encode()
    out = subprocess.run(
        ["git", "--git-dir", git_dir, "cat-file", "--batch"], input=request, capture_output=True, check=True
    ).stdout
    blobs, pos = {}, 0
    for path in paths:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        if header[-1] == b"missing":
            pos = header_end + 1
            continue
        size = int(header[2])
        blobs[path] = out[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
    return blobs


def run_facts(text: str) -> dict[str, Any] | None:
    """Start, stop, status and samples trained of one MLLOG run; None without run_start/run_stop.

    Samples trained: the cumulative ``samples_count`` at ``run_stop`` (else at the last
    ``eval_accuracy``) less the samples of the checkpoint the run started from
    (``init_checkpoint_step`` x ``global_batch_size``). Block events are not used: some rounds
    log each block's own length there, not the running count.
    """
    start = stop = None
    status = ""
    stop_samples: int | None = None
    eval_samples: int | None = None
    batch = None
    init_step = 0
    for line in text.splitlines():
        if ":::MLLOG" not in line:
            continue
        try:
            event = json.loads(line.split(":::MLLOG", 1)[1])
        except json.JSONDecodeError:
            continue
        key, meta = event.get("key"), event.get("metadata") or {}
        samples = meta.get("samples_count")
        if key == "run_start" and start is None:
            start = event["time_ms"]
        elif key == "run_stop":
            stop = event["time_ms"]
            status = str(meta.get("status", ""))
            if isinstance(samples, int | float):
                stop_samples = int(samples)
        elif key == "eval_accuracy" and isinstance(samples, int | float):
            eval_samples = int(samples)
        elif key == "global_batch_size":
            batch = event.get("value")
        elif key == "init_checkpoint_step" and isinstance(event.get("value"), int | float):
            init_step = int(event["value"])
    if start is None or stop is None:
        return None
    samples = stop_samples if stop_samples is not None else eval_samples
    if samples is not None and init_step and isinstance(batch, int | float):
        samples -= int(init_step * batch)
    trained = samples if samples and samples > 0 else None
    return {"minutes": (stop - start) / 60000, "status": status, "samples": trained, "batch": batch}


def score(minutes: list[float]) -> float:
    """MLPerf's score of a set of runs: the mean after dropping the fastest and slowest of five or more."""
    ordered = sorted(minutes)
    if len(ordered) >= 5:
        ordered = ordered[1:-1]
    return statistics.fmean(ordered)


def main(round_: str, git_dir: str) -> None:
    paths = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    systems = {m.group(1, 2): p for p in paths if (m := _SYSTEM.match(p))}
    runs: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for p in paths:
        if m := _RESULT.match(p):
            runs[(m.group(1), m.group(2), m.group(3))].append(p)
    system_blobs = _blobs(git_dir, sorted(systems.values()))
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(["round", "submitter", "system_id", "benchmark", *SYSTEM_FIELDS, "runs", "runs_succeeded",
                     "time_to_train_min", "samples_per_run", "global_batch_size", "results_path"])  # fmt: skip
    for (submitter, system_id, benchmark), files in sorted(runs.items()):
        system_path = systems.get((submitter, system_id))
        if system_path is None:
            continue
        system = json.loads(system_blobs[system_path])
        facts = [f for f in (run_facts(b.decode("utf-8", "replace")) for b in _blobs(git_dir, files).values()) if f]
        succeeded = [f for f in facts if f["status"].lower() == "success"]
        if not succeeded:
            continue
        samples = [f["samples"] for f in succeeded if f["samples"]]
        writer.writerow(
            [
                round_,
                submitter,
                system_id,
                benchmark,
                *(str(system.get(k, "")).strip() for k in SYSTEM_FIELDS),
                len(facts),
                len(succeeded),
                f"{score([f['minutes'] for f in succeeded]):.3f}",
                f"{statistics.median(samples):.0f}" if samples else "",
                succeeded[0]["batch"] or "",
                f"{submitter}/results/{system_id}/{benchmark}",
            ]  # fmt: skip
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
