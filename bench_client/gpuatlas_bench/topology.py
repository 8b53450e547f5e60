"""How the GPUs of one host are joined: ``nvidia-smi topo -m``, else NVML, else unknown.

A multi-GPU result is only comparable with results over the same kind of link, so the interconnect
between the GPUs a run used is part of its params: ``nvlink`` when every pair is joined by NVLink
(directly or through NVSwitch), ``pcie`` when no pair is, ``mixed`` otherwise, ``none`` for one GPU and
``unknown`` when neither nvidia-smi nor NVML could say.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

from .environment import _pci_key, _smi_query

INTERCONNECTS = ("nvlink", "pcie", "mixed", "none", "unknown")
# nvidia-smi's legend: X self; NV# a bonded set of # NVLinks; the rest are PCIe paths of growing length.
PCIE_PATHS = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"})
_NVLINK = re.compile(r"^NV[0-9]+$")
_GPU_LABEL = re.compile(r"^GPU[0-9]+$")


def topology_matrix_parse(text: str) -> dict[str, dict[str, str]]:
    """The GPU-to-GPU cells of ``nvidia-smi topo -m``: {'GPU0': {'GPU0': 'X', 'GPU1': 'NV18', ...}, ...}.

    The header is a tab-separated row of column names (GPUs, then NICs, CPU and NUMA affinity); each
    GPU row starts with its label. NIC rows, affinity columns and the legend are ignored.
    """
    header: list[str] | None = None
    matrix: dict[str, dict[str, str]] = {}
    for raw in text.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", raw)  # nvidia-smi underlines the header on a terminal
        cells = [cell.strip() for cell in line.split("\t")]
        if header is None:
            names = [cell for cell in cells if cell]
            if names and _GPU_LABEL.match(names[0]) and not line.startswith(names[0]):
                header = cells[1:] if cells and cells[0] == "" else cells
            continue
        if not cells or not _GPU_LABEL.match(cells[0]):
            if matrix and not cells[0].startswith("NIC"):
                break
            continue
        row = {}
        for name, cell in zip(header, cells[1:], strict=False):
            if _GPU_LABEL.match(name):
                row[name] = cell
        matrix[cells[0]] = row
    return matrix


def link_kind(cell: str) -> str:
    """'nvlink', 'pcie', 'self' or 'unknown' for one cell of the matrix."""
    cell = cell.strip().upper()
    if cell == "X":
        return "self"
    if _NVLINK.match(cell):
        return "nvlink"
    if cell in PCIE_PATHS:
        return "pcie"
    return "unknown"


def interconnect_classify(kinds: list[str]) -> str:
    """The interconnect of a set of GPUs from the link kind of every pair."""
    if not kinds:
        return "none"
    if "unknown" in kinds:
        return "unknown"
    if all(kind == "nvlink" for kind in kinds):
        return "nvlink"
    if all(kind == "pcie" for kind in kinds):
        return "pcie"
    return "mixed"


@dataclass
class Topology:
    """The links between the GPUs a run uses, in the order of ``devices`` (PyTorch indices)."""

    devices: list[int]
    source: str = "none"  # nvidia-smi | nvml | none
    links: list[list[str]] = field(default_factory=list)  # cell per pair, 'X' on the diagonal
    nvlink_counts: list[int] | None = None  # active NVLinks per GPU (NVML only)

    def interconnect(self, count: int | None = None) -> str:
        """The interconnect among the first ``count`` devices (all by default)."""
        count = len(self.devices) if count is None else count
        if count < 2:
            return "none"
        if self.source == "nvidia-smi" and self.links:
            kinds = [link_kind(self.links[a][b]) for a in range(count) for b in range(count) if a != b]
            return interconnect_classify(kinds)
        if self.source == "nvml" and self.nvlink_counts is not None:
            # NVML names the far end of a link by PCI bus id, an NVSwitch on HGX boards: only
            # "every GPU has NVLinks" or "none has" can be told apart from it.
            with_links = [links > 0 for links in self.nvlink_counts[:count]]
            return "nvlink" if all(with_links) else "pcie" if not any(with_links) else "mixed"
        return "unknown"

    def as_json(self) -> dict[str, Any]:
        return {
            "topology_source": self.source,
            "link_matrix": self.links or None,
            "nvlink_counts": self.nvlink_counts,
        }


def _smi_topology(devices: list[int], pci_bus_ids: list[str | None]) -> Topology | None:
    executable = shutil.which("nvidia-smi")
    if not executable or not all(pci_bus_ids):
        return None
    try:
        text = subprocess.run([executable, "topo", "-m"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    matrix = topology_matrix_parse(text)
    # nvidia-smi numbers GPUs by PCI bus; PyTorch may not (CUDA_DEVICE_ORDER, CUDA_VISIBLE_DEVICES).
    smi_index = {_pci_key(row.get("pci.bus_id")): row.get("index") for row in _smi_query(executable)}
    labels = [f"GPU{smi_index.get(_pci_key(bus))}" for bus in pci_bus_ids]
    if not all(label in matrix for label in labels):
        return None
    links = [[matrix[a].get(b, "?") for b in labels] for a in labels]
    return Topology(devices=devices, source="nvidia-smi", links=links)


def _nvml_topology(devices: list[int], pci_bus_ids: list[str | None]) -> Topology | None:
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - not installed or no driver
        return None
    try:
        handles = [pynvml.nvmlDeviceGetHandleByPciBusId(bus) for bus in pci_bus_ids if bus]
        if len(handles) != len(devices):
            return None
        counts = []
        for handle in handles:
            active = 0
            for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
                try:
                    active += int(pynvml.nvmlDeviceGetNvLinkState(handle, link) == pynvml.NVML_FEATURE_ENABLED)
                except Exception:  # noqa: BLE001 - a link index the GPU does not have
                    break
            counts.append(active)
        return Topology(devices=devices, source="nvml", nvlink_counts=counts)
    except Exception:  # noqa: BLE001
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def topology_probe(*, devices: list[int], pci_bus_ids: list[str | None]) -> Topology:
    """The links between ``devices`` (PyTorch indices, with their PCI bus ids)."""
    if len(devices) < 2:
        return Topology(devices=devices)
    return _smi_topology(devices, pci_bus_ids) or _nvml_topology(devices, pci_bus_ids) or Topology(devices=devices)


__all__ = [
    "INTERCONNECTS",
    "Topology",
    "interconnect_classify",
    "link_kind",
    "topology_matrix_parse",
    "topology_probe",
]
