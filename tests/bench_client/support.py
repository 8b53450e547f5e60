"""Helpers shared by the client's tests."""

from __future__ import annotations

from typing import Any


def cpu_context(**changes: Any) -> Any:
    """A workload Context on the CPU with the tiny sizes, as ``--allow-cpu`` runs build it."""
    import torch
    from gpuatlas_bench.runner import POLICIES
    from gpuatlas_bench.workloads.common import CPU_TINY_SIZES, Context

    fields = {
        "torch": torch,
        "device": torch.device("cpu"),
        "cpu_only": True,
        "sizes": CPU_TINY_SIZES,
        "policy": POLICIES["cpu"],
        "seed": 1,
        "compute_capability": None,
        "l2_bytes": None,
    }
    return Context(**{**fields, **changes})
