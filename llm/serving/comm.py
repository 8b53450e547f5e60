"""What GPUs pay to talk to each other when one model runs on several of them (pure arithmetic).

Tensor parallelism over ``t`` GPUs splits every layer: each layer ends in two all-reduces (after
the attention output projection and after the MLP) of the activations of every token in the
step, ``tokens x hidden x 2`` bytes (16-bit activations). An all-reduce is priced with the usual
latency-bandwidth model of a ring, in nccl-tests' terms::

    seconds = latency + 2 (t - 1) / t x message bytes / bus bandwidth

A layer split (llama.cpp's default, pipeline stages) hands one token's hidden state from one GPU
to the next: ``t - 1`` copies of ``hidden x 2`` bytes per token.

Links, from the catalogue's scale-up (intra-node) figures of each GPU (``Gpu.scale_up_link``,
``interconnect_gbs``, ``scale_up_gpus``, ``pcie_peer_to_peer``, ``bus_interface``, each cited):

* ``fabric``: NVLink, AMD Infinity Fabric, on-die RoCE Ethernet (Intel Gaudi) or HCCS
  (``Gpu.interconnect_gbs``, total bidirectional per GPU, so half of it each way), joining
  ``scale_up_gpus`` GPUs at that rate. A PCIe card with a bridge (A100 PCIe, H100 NVL) joins
  only its pair or quad: beyond them the traffic crosses PCIe. A baseboard's fabric ends at its
  server; beyond it the network between servers carries the traffic, which is not priced here.
* ``pcie_p2p``: the host link (``Gpu.bus_interface``, e.g. PCIe 4.0 x16 = 31.5 GB/s each way)
  where the catalogue says the driver allows GPU-to-GPU transfers (data-centre and workstation
  cards).
* ``pcie_host``: cards whose drivers do not allow peer-to-peer transfers over PCIe (GeForce
  RTX 2080 Ti: "CANNOT Access Peer" in p2pBandwidthLatencyTest, NVIDIA/nccl-tests#117; RTX 4090:
  the mailbox P2P hardware is absent, github.com/tinygrad/open-gpu-kernel-modules README), or
  whose peer-to-peer support the catalogue does not know: NCCL stages every transfer through host
  memory, the slower path, so an unknown is never priced as the faster one.
* ``unknown``: no figure for the link the GPUs would use (a baseboard fabric without its
  bandwidth, no host link on record, or beyond a baseboard): no estimate above one GPU uses it.

The bus-bandwidth shares and latencies below are measured collective figures, not fitted; each
constant names its source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from catalog.interconnect import pcie_peak_gbs

# Ring all-reduce bus bandwidth as a share of the per-direction line rate, by scale-up link.
# NVLink: "450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an effective
# NVLink bandwidth of 370GB/s" (NCCL maintainer, H100, NVIDIA/nccl-tests#212, 2024-05-06).
FABRIC_BUSBW_SHARE = 370.0 / 450.0
FABRIC_BUSBW_SHARES = {
    "nvlink": FABRIC_BUSBW_SHARE,
    "nvlink-bridge": FABRIC_BUSBW_SHARE,
    # AMD Infinity Fabric (xGMI): "rated up to 64 GB/s for each point-to-point link ... usable
    # bandwidth approximately 48 GB/s per link" (AMD ROCm blog, "Understanding RCCL Bandwidth and
    # xGMI Performance on AMD Instinct MI300X", 2025-03-02).
    "infinity-fabric": 48.0 / 64.0,
    # Intel Gaudi on-die RoCE: hcclAllReduce of 256 MB on the 8 Gaudi 3 of one HLS-3 box, "NW
    # Bandwidth: 512.957298 GB/s" of the 525 GB/s per direction of its 21 scale-up ports (Intel
    # Gaudi documentation, "How to Pick Good Nodes in the Datacenter"); Gaudi 2 has the same
    # network at half the port speed.
    "roce": 512.957298 / 525.0,
}
# A fabric whose collectives no source measures (HCCS) takes the lowest measured share.
FABRIC_BUSBW_SHARE_UNMEASURED = min(FABRIC_BUSBW_SHARES.values())
# PCIe with peer-to-peer: 6x RTX 4090 on PCIe 4.0 x16 with P2P enabled, all_reduce_perf at 32 MB:
# busbw 24.54 GB/s of 31.5 (github.com/tinygrad/open-gpu-kernel-modules README, 2024-04).
PCIE_P2P_BUSBW_SHARE = 24.54 / 31.5
# PCIe staged through host memory: 8x RTX 5090 on PCIe 5.0 x16 (two Xeon 8480+, driver 570):
# busbw 28 GB/s on 8 GPUs and 35 GB/s on 4, of 63 GB/s (NVIDIA/nccl#1639, 2025-03-14). Two GPUs
# take the four-GPU share.
PCIE_HOST_BUSBW_SHARE = {4: 35.0 / 63.0, 8: 28.0 / 63.0}
# Latency of one small all-reduce (or copy), seconds. NVLink: about 6 us on 2 H100s of an HGX
# board (NVIDIA/nccl#1259, 2024-04-22). PCIe: 42.1 us for an 8-byte all_reduce_perf on 8 RTX 4090
# (NVIDIA/nccl#1530, 2024-11); used for every PCIe path.
FABRIC_LATENCY_S = 6e-6
PCIE_LATENCY_S = 42.1e-6

# Where each link kind's figures come from (shown on the method page).
SOURCES = {
    "fabric": (
        "https://github.com/NVIDIA/nccl-tests/issues/212",
        "https://github.com/NVIDIA/nccl/issues/1259",
        "https://rocm.blogs.amd.com/software-tools-optimization/mi300x-rccl-xgmi/README.html",
        "https://docs.habana.ai/en/latest/Management_and_Monitoring/Network_Configuration/Pick_Good_Nodes_in_Datacenter.html",
    ),
    "pcie_p2p": (
        "https://github.com/tinygrad/open-gpu-kernel-modules/blob/main/README.md",
        "https://github.com/NVIDIA/nccl/issues/1530",
    ),
    "pcie_host": (
        "https://github.com/NVIDIA/nccl/issues/1639",
        "https://github.com/NVIDIA/nccl/issues/1530",
    ),
}

ACTIVATION_BYTES = 2.0  # 16-bit activations, also with 8- or 4-bit weights
# Variants whose fabric joins a pair of cards through a bridge, not the whole server (where the
# catalogue does not say how many GPUs the link joins).
BRIDGED_VARIANTS = frozenset({"pcie", "nvl"})
# Form factors that sit on a baseboard with a fabric (SXM, OAM, superchips): without a catalogue
# figure for it, the fabric's bandwidth is unknown and communication is not priced.
FABRIC_VARIANTS = frozenset({"sxm", "oam", "superchip", "mezzanine"})
# Scale-up links that are a fabric (Gpu.scale_up_link); "pcie" is none, and a bridge is one whose
# cards fall back to PCIe beyond the bridged group.
FABRIC_LINKS = frozenset({"nvlink", "nvlink-bridge", "infinity-fabric", "roce", "hccs"})
BRIDGE_LINKS = frozenset({"nvlink-bridge"})
LINK_KINDS = ("single", "fabric", "pcie_p2p", "pcie_host", "unknown")
# The catalogue columns a link is read from (catalogue_link).
LINK_COLUMNS = ("interconnect_gbs", "scale_up_link", "scale_up_gpus", "pcie_peer_to_peer", "bus_interface", "variant")


@dataclass(frozen=True)
class GpuLink:
    """How a GPU reaches its neighbours: bandwidths are GB/s per direction per GPU."""

    fabric_gbs: float | None = None
    fabric_gpus: int = 0  # GPUs the fabric joins; 0 = the whole server
    pcie_gbs: float | None = None
    peer_to_peer: bool = True
    fabric_unknown: bool = False  # a fabric form factor whose bandwidth the catalogue lacks
    fabric_link: str = "nvlink"  # which fabric (FABRIC_BUSBW_SHARES)
    pcie_beyond_fabric: bool = True  # False: a baseboard, whose fabric ends at the server

    def kind(self, gpus: int) -> str:
        """The path the traffic of ``gpus`` GPUs takes (see the module doc)."""
        if gpus <= 1:
            return "single"
        if self.fabric_gbs and (self.fabric_gpus == 0 or gpus <= self.fabric_gpus):
            return "fabric"
        if self.fabric_unknown or (self.fabric_gbs and not self.pcie_beyond_fabric):
            return "unknown"
        if self.pcie_gbs:
            return "pcie_p2p" if self.peer_to_peer else "pcie_host"
        return "unknown"

    def bus_gbs(self, gpus: int) -> float | None:
        """Effective all-reduce bus bandwidth over ``gpus`` GPUs (None: not known)."""
        kind = self.kind(gpus)
        if kind == "fabric" and self.fabric_gbs:
            return self.fabric_gbs * FABRIC_BUSBW_SHARES.get(self.fabric_link, FABRIC_BUSBW_SHARE_UNMEASURED)
        if kind == "pcie_p2p" and self.pcie_gbs:
            return self.pcie_gbs * PCIE_P2P_BUSBW_SHARE
        if kind == "pcie_host" and self.pcie_gbs:
            share = PCIE_HOST_BUSBW_SHARE[4] if gpus <= 4 else PCIE_HOST_BUSBW_SHARE[8]
            return self.pcie_gbs * share
        return None

    def latency_s(self, gpus: int) -> float:
        return FABRIC_LATENCY_S if self.kind(gpus) == "fabric" else PCIE_LATENCY_S


def gpu_link(
    *,
    interconnect_gbs: float | None,
    pcie_gbs: float | None,
    variant: str = "",
    scale_up_link: str = "",
    scale_up_gpus: int | None = None,
    peer_to_peer: bool | None = None,
) -> GpuLink:
    """A catalogue GPU's link (see the module doc): ``interconnect_gbs`` is the catalogue's total
    bidirectional scale-up figure, ``pcie_gbs`` the host link's one-direction peak,
    ``scale_up_link`` the kind of link (``ScaleUpLink``; empty: not curated, the form factor
    decides), ``scale_up_gpus`` the GPUs it joins and ``peer_to_peer`` whether the driver copies
    between GPUs over PCIe (None: not known, priced through host memory)."""
    if scale_up_link == "none":  # one GPU per system: GPUs of two systems meet over the network
        return GpuLink(fabric_unknown=True)
    form = variant.strip().lower()
    fabric = scale_up_link in FABRIC_LINKS or (
        not scale_up_link and (bool(interconnect_gbs) or form in FABRIC_VARIANTS)
    )
    bridged = scale_up_link in BRIDGE_LINKS or (not scale_up_link and form in BRIDGED_VARIANTS)
    return GpuLink(
        fabric_gbs=interconnect_gbs / 2.0 if interconnect_gbs and fabric else None,
        fabric_gpus=scale_up_gpus or (2 if bridged else 0),
        pcie_gbs=pcie_gbs,
        peer_to_peer=bool(peer_to_peer),
        fabric_unknown=fabric and not interconnect_gbs,
        fabric_link=scale_up_link if scale_up_link in FABRIC_LINKS else "nvlink",
        pcie_beyond_fabric=bridged or not fabric,
    )


def catalogue_link(row: Mapping[str, Any]) -> GpuLink:
    """The link of a catalogue GPU given as its ``LINK_COLUMNS`` (a ``values()`` row or the
    model's attributes)."""
    return gpu_link(
        interconnect_gbs=row.get("interconnect_gbs"),
        pcie_gbs=pcie_peak_gbs(row.get("bus_interface") or ""),
        variant=row.get("variant") or "",
        scale_up_link=row.get("scale_up_link") or "",
        scale_up_gpus=row.get("scale_up_gpus"),
        peer_to_peer=row.get("pcie_peer_to_peer"),
    )


def allreduce_seconds(*, link: GpuLink, gpus: int, message_bytes: float) -> float | None:
    """One ring all-reduce of ``message_bytes`` over ``gpus`` GPUs; 0 on one GPU, None when the
    link's bandwidth is unknown."""
    if gpus <= 1:
        return 0.0
    bus = link.bus_gbs(gpus)
    if bus is None:
        return None
    return link.latency_s(gpus) + 2.0 * (gpus - 1) / gpus * message_bytes / (bus * 1e9)


def tensor_parallel_step_seconds(*, link: GpuLink, gpus: int, tokens: int, layers: int, hidden: int) -> float | None:
    """A step of ``tokens`` tokens (the batch in decode, the prompt in prefill) split by tensor
    over ``gpus`` GPUs: two all-reduces per layer of every token's hidden state."""
    one = allreduce_seconds(link=link, gpus=gpus, message_bytes=tokens * hidden * ACTIVATION_BYTES)
    return None if one is None else 2 * layers * one


def layer_split_token_seconds(*, link: GpuLink, gpus: int, hidden: int) -> float | None:
    """One token's hidden state handed along ``gpus - 1`` stage boundaries of a layer split."""
    if gpus <= 1:
        return 0.0
    bus = link.bus_gbs(2)
    if bus is None:
        return None
    # A copy between two GPUs moves the bytes once, at the pair's link rate.
    return (gpus - 1) * (link.latency_s(2) + hidden * ACTIVATION_BYTES / (bus * 1e9))
