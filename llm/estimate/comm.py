"""What GPUs pay to talk to each other when one model runs on several of them (pure arithmetic).

Tensor parallelism over ``t`` GPUs splits every layer: each layer ends in two all-reduces (after
the attention output projection and after the MLP) of the activations of every token in the
step, ``tokens x hidden x 2`` bytes (16-bit activations). An all-reduce is priced with the usual
latency-bandwidth model of a ring, in nccl-tests' terms::

    seconds = latency + 2 (t - 1) / t x message bytes / bus bandwidth

A layer split (llama.cpp's default, pipeline stages) hands one token's hidden state from one GPU
to the next: ``t - 1`` copies of ``hidden x 2`` bytes per token.

Links, from the catalogue's figures:

* ``fabric``: NVLink, Infinity Fabric or HCCS (``Gpu.interconnect_gbs``, total bidirectional per
  GPU, so half of it each way). A PCIe card with a bridge (A100 PCIe, H100 NVL) joins only its
  pair: beyond two GPUs the traffic crosses PCIe.
* ``pcie_p2p``: the host link (``Gpu.bus_interface``, e.g. PCIe 4.0 x16 = 31.5 GB/s each way)
  with GPU-to-GPU transfers: data-centre and workstation cards.
* ``pcie_host``: consumer cards, whose drivers do not allow peer-to-peer transfers over PCIe
  (GeForce RTX 2080 Ti: "CANNOT Access Peer" in p2pBandwidthLatencyTest, NVIDIA/nccl-tests#117;
  RTX 4090: the mailbox P2P hardware is absent, github.com/tinygrad/open-gpu-kernel-modules
  README): NCCL stages every transfer through host memory.

The bus-bandwidth shares and latencies below are measured nccl-tests figures, not fitted; each
constant names its source. Other vendors' consumer cards are treated like GeForce (host-staged),
a cautious assumption the estimate marks as outside the measured range when it matters.
"""

from __future__ import annotations

from dataclasses import dataclass

# Ring all-reduce bus bandwidth as a share of the per-direction line rate.
# NVLink: "450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an effective
# NVLink bandwidth of 370GB/s" (NCCL maintainer, H100, NVIDIA/nccl-tests#212, 2024-05-06).
FABRIC_BUSBW_SHARE = 370.0 / 450.0
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
# Variants whose fabric joins a pair of cards through a bridge, not the whole server.
BRIDGED_VARIANTS = frozenset({"pcie", "nvl"})
# Form factors that sit on a baseboard with a fabric (SXM, OAM, superchips): without a catalogue
# figure for it, the fabric's bandwidth is unknown and communication is not priced.
FABRIC_VARIANTS = frozenset({"sxm", "oam", "superchip", "mezzanine"})
LINK_KINDS = ("single", "fabric", "pcie_p2p", "pcie_host", "unknown")


@dataclass(frozen=True)
class GpuLink:
    """How a GPU reaches its neighbours: bandwidths are GB/s per direction per GPU."""

    fabric_gbs: float | None = None
    fabric_gpus: int = 0  # GPUs the fabric joins; 0 = the whole server
    pcie_gbs: float | None = None
    peer_to_peer: bool = True
    fabric_unknown: bool = False  # a fabric form factor whose bandwidth the catalogue lacks

    def kind(self, gpus: int) -> str:
        """The path the traffic of ``gpus`` GPUs takes (see the module doc)."""
        if gpus <= 1:
            return "single"
        if self.fabric_gbs and (self.fabric_gpus == 0 or gpus <= self.fabric_gpus):
            return "fabric"
        if self.fabric_unknown:
            return "unknown"
        if self.pcie_gbs:
            return "pcie_p2p" if self.peer_to_peer else "pcie_host"
        return "unknown"

    def bus_gbs(self, gpus: int) -> float | None:
        """Effective all-reduce bus bandwidth over ``gpus`` GPUs (None: not known)."""
        kind = self.kind(gpus)
        if kind == "fabric" and self.fabric_gbs:
            return self.fabric_gbs * FABRIC_BUSBW_SHARE
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
    segment: str = "",
    variant: str = "",
) -> GpuLink:
    """A catalogue GPU's link (see the module doc): ``interconnect_gbs`` is the catalogue's total
    bidirectional fabric figure, ``pcie_gbs`` the host link's one-direction peak."""
    form = variant.strip().lower()
    return GpuLink(
        fabric_gbs=interconnect_gbs / 2.0 if interconnect_gbs else None,
        fabric_gpus=2 if form in BRIDGED_VARIANTS else 0,
        pcie_gbs=pcie_gbs,
        peer_to_peer=segment != "consumer",
        fabric_unknown=not interconnect_gbs and form in FABRIC_VARIANTS,
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
