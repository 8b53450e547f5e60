"""Submission documents (valid against submission-1.schema.json) and a small GPU world.

The peak figures are test fixtures with easy arithmetic, not catalogue data.
"""

from __future__ import annotations

import copy
import json
import statistics
import uuid
from dataclasses import dataclass
from typing import Any

from benchmarks_app.services.snapshot import catalog_snapshot_clear
from benchmarks_app.services.workloads import workload_seed
from catalog.models import Gpu
from tests.factories import GpuAliasFactory, GpuFactory, TensorPeakFactory

H100_BF16_PEAK = 1000.0
H100_FP32_PEAK = 60.0
H100_BANDWIDTH = 3000.0


def make_result(
    *,
    workload: str = "matmul",
    precision: str = "bf16",
    unit: str = "TFLOPS",
    median: float = 700.0,
    spread: float = 0.01,
    params: dict[str, Any] | None = None,
    gpu_count: int = 1,
    mode: str = "burst",
    repetitions: int = 10,
) -> dict[str, Any]:
    """One result whose statistics window is all repetitions, spread ``spread`` around ``median``."""
    values = [median * (1 - spread / 2 + spread * i / (repetitions - 1)) for i in range(repetitions)]
    middle = statistics.median(values)
    return {
        "workload": workload,
        "workload_version": "1.0",
        "precision": precision,
        "gpu_count": gpu_count,
        "params": params if params is not None else {"size": "fixed", "m": 8192, "n": 8192, "k": 8192},
        "unit": unit,
        "higher_is_better": True,
        "mode": mode,
        "repetitions": values,
        "median": middle,
        "min": min(values),
        "max": max(values),
        "spread_pct": (max(values) - min(values)) / middle * 100,
        "stats": {"window_start": 0, "window_size": repetitions, "converged": True, "target_spread_pct": 3.0},
        "timing": {"method": "cuda_events", "warmup_iterations": 5, "inner_iterations": 10, "seconds_total": 2.5},
        "correctness": {"method": "256x256 slice vs float64", "rel_error": 0.002, "tolerance": 0.02, "passed": True},
    }


def bandwidth_result(median: float = 2700.0, **kwargs: Any) -> dict[str, Any]:
    return make_result(
        workload="membw-copy",
        precision="fp32",
        unit="GB/s",
        median=median,
        params={"buffer_bytes": 4294967296, "dtype": "float32"},
        **kwargs,
    )


def submission_document(
    *,
    results: list[dict[str, Any]] | None = None,
    name_smi: str | None = "NVIDIA H100 80GB HBM3",
    name_torch: str = "NVIDIA H100 80GB HBM3",
    memory_total_mib: int = 81559,
    run_uuid: str | None = None,
    **top: Any,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema_version": 1,
        "client": {"name": "gpuatlas-bench", "version": "0.1.0"},
        "run_uuid": run_uuid or str(uuid.uuid4()),
        "created_at": "2026-11-22T10:00:00Z",
        "duration_s": 120.0,
        "cpu_only": False,
        "run_mode": "standard",
        "environment": {
            "gpu": {
                "name_torch": name_torch,
                "name_nvidia_smi": name_smi,
                "count": 1,
                "index": 0,
                "memory_total_mib": memory_total_mib,
                "uuid": "GPU-0a1b2c3d",
                "pci_bus_id": "00000000:18:00.0",
                "compute_capability": "9.0",
                "multiprocessor_count": 132,
                "l2_cache_bytes": 52428800,
            },
            "driver_version": "550.54.15",
            "cuda_version": "12.4",
            "cuda_driver_version": "12.4",
            "torch_version": "2.4.0+cu124",
            "cublas_version": "12.4.5",
            "cudnn_version": "90100",
            "clocks_before": {"sm_mhz": 1980, "mem_mhz": 2619, "max_sm_mhz": 1980},
            "clocks_after": {"sm_mhz": 1755, "mem_mhz": 2619, "max_sm_mhz": 1980},
            "power_limit_w": 700,
            "power_draw_before_w": 72.5,
            "power_draw_after_w": 650.1,
            "temperature_before_c": 31,
            "temperature_after_c": 64,
            "telemetry_source": "nvml",
            "cpu": {"model": "Intel(R) Xeon(R) Platinum 8480+", "cores": 224},
            "ram_gib": 2015.6,
            "os": "Linux-5.15.0-105-generic-x86_64-with-glibc2.35",
            "python_version": "3.11.9",
            "container_image": None,
        },
        "workload_code_sha256": "ab" * 32,
        "results": results if results is not None else [make_result(), bandwidth_result()],
        "skipped": [],
    }
    document.update(top)
    return document


def body(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()


def with_change(document: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    """A copy of ``document`` with the value at ``path`` replaced."""
    changed = copy.deepcopy(document)
    node = changed
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return changed


@dataclass
class IngestWorld:
    h100: Gpu
    h100_nvl: Gpu
    a100_80: Gpu
    a100_40: Gpu


def ingest_world() -> IngestWorld:
    """Workloads from the client's workloads.json, and GPUs with aliases as nvidia-smi prints them."""
    workload_seed()
    h100 = GpuFactory(
        name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", family="H100", variant="SXM", memory_gib=80,
        fp32_tflops=H100_FP32_PEAK, memory_bandwidth_gbs=H100_BANDWIDTH,
    )  # fmt: skip
    h100_nvl = GpuFactory(
        name="H100 NVL", slug="h100-nvl", family="H100", variant="NVL", memory_gib=94,
        fp32_tflops=H100_FP32_PEAK, memory_bandwidth_gbs=3900.0,
    )  # fmt: skip
    for gpu in (h100, h100_nvl):
        TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=H100_BF16_PEAK)
        TensorPeakFactory(gpu=gpu, precision="fp16", dense_tflops=H100_BF16_PEAK)
    GpuAliasFactory(gpu=h100, alias="NVIDIA H100 80GB HBM3")
    GpuAliasFactory(gpu=h100_nvl, alias="NVIDIA H100 NVL")
    a100_80 = GpuFactory(
        name="A100 SXM4 80 GB", slug="a100-sxm4-80-gb", family="A100", variant="SXM", memory_gib=80,
        fp32_tflops=19.5, memory_bandwidth_gbs=2039.0,
    )  # fmt: skip
    a100_40 = GpuFactory(
        name="A100 SXM4 40 GB", slug="a100-sxm4-40-gb", family="A100", variant="SXM", memory_gib=40,
        fp32_tflops=19.5, memory_bandwidth_gbs=1555.0,
    )  # fmt: skip
    for gpu in (a100_80, a100_40):
        TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=312.0)
    GpuAliasFactory(gpu=a100_80, alias="NVIDIA A100-SXM4-80GB")
    GpuAliasFactory(gpu=a100_40, alias="NVIDIA A100-SXM4-40GB")
    catalog_snapshot_clear()
    return IngestWorld(h100=h100, h100_nvl=h100_nvl, a100_80=a100_80, a100_40=a100_40)


def per_gpu_entries(median: float, count: int) -> list[dict[str, Any]]:
    """Each rank's own figure of a multi-GPU result: the group's median split evenly."""
    return [
        {"rank": rank, "device_index": rank, "median": median / count, "min": median / count, "max": median / count}
        for rank in range(count)
    ]


def host_block(count: int, interconnect: str = "nvlink", link: str = "NV18") -> dict[str, Any]:
    """The ``host`` of a host run on ``count`` GPUs, as gpuatlas-bench writes it."""
    return {
        "gpu_count": count,
        "devices": list(range(count)),
        "ranks": count,
        "gpus": [],
        "interconnect": interconnect,
        "topology_source": "nvidia-smi",
        "link_matrix": [["X" if a == b else link for b in range(count)] for a in range(count)],
        "peer_access": True,
        "backend": "nccl",
        "nccl_version": "2.28.9",
        "nccl_env": {"NCCL_NVLS_ENABLE": "0"},
    }


def ddp_result(median: float, count: int, interconnect: str = "nvlink") -> dict[str, Any]:
    """A transformer-train-ddp result on ``count`` GPUs (interconnect "none" at 1 GPU)."""
    params = {
        "batch": 8, "seq_len": 2048, "d_model": 2048, "n_heads": 16, "d_ff": 8192,
        "interconnect": "none" if count == 1 else interconnect,
    }  # fmt: skip
    result = make_result(
        workload="transformer-train-ddp", unit="tokens/s", median=median, params=params, gpu_count=count
    )
    del result["correctness"]
    result["per_gpu"] = per_gpu_entries(result["median"], count)
    return result


def allreduce_result(busbw: float, count: int, size: int, interconnect: str = "nvlink") -> dict[str, Any]:
    """An allreduce-busbw result (GB/s of bus bandwidth) on ``count`` GPUs with its extra figures."""
    params = {"bytes": size, "dtype": "float32", "op": "avg", "interconnect": interconnect}
    result = make_result(
        workload="allreduce-busbw", precision="fp32", unit="GB/s", median=busbw, params=params, gpu_count=count
    )
    factor = 2 * (count - 1) / count
    result["extra"] = {
        "op_timed": "avg",
        "busbw_factor": factor,
        "algbw_gbs": result["median"] / factor,
        "time_us": size * factor / 1e9 / result["median"] * 1e6,
    }
    result["per_gpu"] = per_gpu_entries(result["median"] * count, count)
    return result
