"""Launch the multi-GPU workloads at 1..N processes and assemble their results and the host's description.

Each group size runs in fresh processes (torch.multiprocessing, spawn), one per GPU; rank 0 writes the
group's results to a file that this process reads back. A group that fails (a rank raised, a GPU
disappeared) leaves its cases skipped with the error; the other sizes still run.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .environment import DeviceInfo, device_describe
from .timing import TimingPolicy
from .topology import Topology, topology_probe
from .workloads import workloads_load
from .workloads.collective import COLLECTIVE_PRECISION, COLLECTIVE_WORKLOADS, CollectiveSpec, collective_worker
from .workloads.common import ServePlan

CPU_WORLD_SIZES = (1, 2)  # --allow-cpu: the same code over gloo, as CI runs it
_NCCL_ENV_LIMIT = 32
_NCCL_VARIABLE = re.compile(r"NCCL_[A-Z0-9_]{1,60}")  # the schema's host.nccl_env names


def world_sizes(count: int) -> list[int]:
    """1, the powers of two below ``count``, and ``count``: the group sizes Lambda's tables use."""
    sizes = {1, count}
    power = 2
    while power < count:
        sizes.add(power)
        power *= 2
    return sorted(size for size in sizes if size >= 1)


@dataclass
class CollectiveOutcome:
    results: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    backend: str = "nccl"
    nccl_version: str | None = None


def _scaling_add(results: list[dict[str, Any]]) -> None:
    """Scaling efficiency = throughput at N / (N x throughput at 1), against the 1-GPU result of this run."""
    baseline: dict[str, float] = {}

    def shape_key(result: dict[str, Any]) -> str:
        params = {k: v for k, v in result["params"].items() if k != "interconnect"}
        return json.dumps([result["workload"], result["precision"], params], sort_keys=True)

    for result in results:
        if result["workload"] == "transformer-train-ddp" and result["gpu_count"] == 1:
            baseline[shape_key(result)] = result["median"]
    for result in results:
        one = baseline.get(shape_key(result))
        if result["workload"] != "transformer-train-ddp" or result["gpu_count"] == 1 or not one:
            continue
        extra = result.setdefault("extra", {})
        extra["scaling_efficiency"] = round(result["median"] / (result["gpu_count"] * one), 4)
        extra["baseline_1gpu_tokens_per_s"] = one


def collective_run(
    torch: Any,
    *,
    workloads: tuple[str, ...],
    devices: list[int] | None,
    topology: Topology,
    policy: TimingPolicy,
    sizes: str,
    seed: int,
    line: Any,
    quiet: bool = False,
    serve: ServePlan | None = None,
) -> CollectiveOutcome:
    """Run the collective workloads at every group size; ``devices`` None: CPU processes (gloo)."""
    outcome = CollectiveOutcome(backend="gloo" if devices is None else "nccl")
    wanted = tuple(workload for workload in COLLECTIVE_WORKLOADS if workload in workloads)
    sizes_to_run = list(CPU_WORLD_SIZES) if devices is None else world_sizes(len(devices))
    spawn = torch.multiprocessing.spawn
    with tempfile.TemporaryDirectory(prefix="gpuatlas-collective-") as folder:
        for world in sizes_to_run:
            interconnect = (
                topology.interconnect(world) if devices is not None else ("none" if world == 1 else "unknown")
            )
            spec = CollectiveSpec(
                workloads=wanted,
                devices=tuple(devices[:world]) if devices is not None else None,
                world_size=world,
                sizes=sizes,
                policy=policy,
                seed=seed,
                interconnect=interconnect,
                meta={
                    name: {"unit": workloads_load()[name]["unit"], "version": workloads_load()[name]["version"]}
                    for name in wanted
                },
                store_path=str(Path(folder) / f"store-{world}"),
                out_path=str(Path(folder) / f"outcome-{world}.json"),
                quiet=quiet,
                serve=serve or ServePlan(),
            )
            line(
                f"multi-GPU: {world} process{'es' if world > 1 else ''} ({outcome.backend}), interconnect {interconnect}"
            )
            error = None
            try:
                spawn(collective_worker, args=(spec,), nprocs=world, join=True)
            except Exception as failure:  # noqa: BLE001 - one group size failing never loses the others
                error = f"{world} processes: {type(failure).__name__}: {str(failure).strip()[-400:]}"
            group = _group_outcome(Path(spec.out_path))
            outcome.results += group.get("results", [])
            outcome.skipped += group.get("skipped", [])
            outcome.nccl_version = outcome.nccl_version or group.get("nccl_version")
            if error is not None:
                outcome.errors.append(error)
                reported = {entry["workload"] for entry in group.get("results", []) + group.get("skipped", [])}
                for workload in wanted:
                    if workload not in reported:
                        outcome.skipped.append(
                            {
                                "workload": workload,
                                "precision": COLLECTIVE_PRECISION[workload],
                                "params": {"interconnect": interconnect, "processes": world},
                                "mode": "burst",
                                "reason": f"error: {error}"[:500],
                            }
                        )
                line(f"  ERROR {error}")
    _scaling_add(outcome.results)
    return outcome


def _group_outcome(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def host_describe(
    torch: Any, *, devices: list[int] | None, topology: Topology, outcome: CollectiveOutcome | None
) -> dict[str, Any]:
    """The submission's ``host`` object (schema: $defs/host)."""
    infos: list[DeviceInfo] = [device_describe(torch, index=index) for index in devices or []]
    peer_access = None
    if devices is not None and len(devices) > 1:
        peer_access = all(torch.cuda.can_device_access_peer(a, b) for a in devices for b in devices if a != b)
    nccl_env = {key: value[:200] for key, value in sorted(os.environ.items()) if _NCCL_VARIABLE.fullmatch(key)}
    return {
        "gpu_count": torch.cuda.device_count() if devices is not None else 0,
        "devices": list(devices or []),
        "ranks": len(devices) if devices is not None else max(CPU_WORLD_SIZES),
        "gpus": [
            {
                "index": info.index,
                "name": info.name[:200],
                "uuid": info.uuid,
                "pci_bus_id": info.pci_bus_id,
                "memory_total_mib": info.memory_total_mib,
            }
            for info in infos
        ],
        "interconnect": topology.interconnect() if devices is not None else "unknown",
        **topology.as_json(),
        "peer_access": peer_access,
        "backend": "gloo" if devices is None else "nccl",
        "nccl_version": outcome.nccl_version if outcome is not None else None,
        "nccl_env": dict(list(nccl_env.items())[:_NCCL_ENV_LIMIT]),
    }


def host_topology(torch: Any, devices: list[int] | None) -> Topology:
    if devices is None:
        return Topology(devices=[])
    buses = [device_describe(torch, index=index).pci_bus_id for index in devices]
    return topology_probe(devices=list(devices), pci_bus_ids=buses)


def mixed_models(torch: Any, devices: list[int]) -> str | None:
    """A reason not to run data-parallel work across these GPUs, or None when they are one model."""
    names = {torch.cuda.get_device_name(index) for index in devices}
    if len(names) > 1:
        return f"the GPUs are of different models ({', '.join(sorted(names))}); multi-GPU figures need one model"
    return None


__all__ = ["CollectiveOutcome", "collective_run", "host_describe", "host_topology", "mixed_models", "world_sizes"]
