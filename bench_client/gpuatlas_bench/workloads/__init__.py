"""The workload registry: ids and versions (from workloads.json), the cases to run, and the code hash."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

from .collective import COLLECTIVE_WORKLOADS
from .common import Case, Context
from .llm import LLM_PRECISIONS, llm_cases
from .llm_train import LLM_TRAIN, llm_train_cases
from .matmul import MATMUL_PRECISIONS, matmul_cases, stress_cases
from .membw import membw_cases
from .pcie import pcie_cases
from .serve import serve_cases
from .transformer import transformer_cases

# Run order: the AutoDL performance guide's stress test first (where users start), then the micro-benchmarks, then models.
WORKLOAD_ORDER = (
    "matmul-stress",
    "matmul",
    "membw-copy",
    "membw-triad",
    "pcie-h2d",
    "pcie-d2h",
    "transformer-train",
    "transformer-infer",
    LLM_TRAIN,
    "llm-decode",
    # One process per GPU, at 1..N GPUs (multigpu.py runs these, not cases_build).
    *COLLECTIVE_WORKLOADS,
)


@cache
def workloads_load() -> dict[str, dict[str, Any]]:
    """workloads.json, keyed by id: what the server seeds its Workload rows from."""
    text = resources.files("gpuatlas_bench").joinpath("workloads.json").read_text(encoding="utf-8")
    return {entry["id"]: entry for entry in json.loads(text)["workloads"]}


def cases_build(ctx: Context, *, workloads: tuple[str, ...], precisions: tuple[str, ...]) -> list[Case]:
    cases: list[Case] = []
    for workload in WORKLOAD_ORDER:
        if workload not in workloads or workload in COLLECTIVE_WORKLOADS:
            continue
        if workload == "matmul-stress":
            cases += stress_cases(ctx)
        elif workload == "matmul":
            cases += matmul_cases(ctx, precisions)
        elif workload.startswith("membw-"):
            cases += membw_cases(ctx, (workload,))
        elif workload.startswith("pcie-"):
            cases += pcie_cases(ctx, (workload,))
        elif workload == LLM_TRAIN:
            cases += llm_train_cases(ctx)
        elif workload == "llm-decode":
            cases += llm_cases(ctx, precisions) + serve_cases(ctx, precisions)
        else:
            cases += transformer_cases(ctx, (workload,))
    return cases


def workload_code_sha256() -> str:
    """sha256 over the measuring code (this package's workload modules, the timing harness and the energy window)."""
    root = resources.files("gpuatlas_bench")
    files = [("timing.py", root.joinpath("timing.py")), ("energy.py", root.joinpath("energy.py"))]
    files += sorted(
        (f"workloads/{entry.name}", entry)
        for entry in root.joinpath("workloads").iterdir()
        if entry.name.endswith(".py")
    )
    digest = hashlib.sha256()
    for name, entry in sorted(files, key=lambda item: item[0]):
        digest.update(name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return digest.hexdigest()


__all__ = [
    "COLLECTIVE_WORKLOADS",
    "LLM_PRECISIONS",
    "MATMUL_PRECISIONS",
    "WORKLOAD_ORDER",
    "cases_build",
    "workload_code_sha256",
    "workloads_load",
]
