"""The host link of a catalogue GPU: a PCIe bus interface's theoretical bandwidth."""

from __future__ import annotations

import re

# GB/s per lane and direction: the transfer rate after 128b/130b encoding (PCI-SIG: PCIe 3.0 runs
# 8 GT/s, 4.0 16 GT/s, 5.0 32 GT/s; 6.0 64 GT/s with FLIT encoding, about 7.56 GB/s usable).
PCIE_LANE_GBS = {3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
_PCIE = re.compile(r"pcie\s*(\d)(?:\.\d)?\s*x\s*(\d+)", re.IGNORECASE)


def pcie_peak_gbs(bus_interface: str) -> float | None:
    """Theoretical one-direction bandwidth of a PCIe link such as "PCIe 5.0 x16" (63 GB/s)."""
    found = _PCIE.search(bus_interface or "")
    if not found or int(found.group(1)) not in PCIE_LANE_GBS:
        return None
    return PCIE_LANE_GBS[int(found.group(1))] * int(found.group(2))
