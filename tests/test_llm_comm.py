"""Communication between GPUs in the LLM model (llm.serving.comm), the configuration it picks,
and the single stream's hand-over between stages: pure arithmetic on hand-computed cases."""

from __future__ import annotations

import pytest

from llm.serving.comm import (
    FABRIC_LATENCY_S,
    PCIE_LATENCY_S,
    GpuLink,
    allreduce_seconds,
    gpu_link,
    layer_split_token_seconds,
    tensor_parallel_step_seconds,
)
from llm.serving.physics import Hardware, ServingConstants, Workload
from llm.serving.shapes import MODEL_SHAPES
from llm.serving.single_stream import StreamFit, single_stream_compute

PCIE4 = 31.504  # GB/s one way: PCIe 4.0 x16 (catalog.interconnect.pcie_peak_gbs)
PCIE5 = 63.008
MESSAGE = 256 * 8192 * 2  # Llama 3 70B, a batch of 256: 4,194,304 bytes per all-reduce
GEFORCE = gpu_link(interconnect_gbs=None, pcie_gbs=PCIE4, scale_up_link="pcie", peer_to_peer=False)
H100_SXM = gpu_link(interconnect_gbs=900, pcie_gbs=PCIE5, variant="SXM", scale_up_link="nvlink", scale_up_gpus=8)
H100_NVL = gpu_link(interconnect_gbs=600, pcie_gbs=PCIE5, variant="NVL", scale_up_link="nvlink-bridge",
                    scale_up_gpus=2, peer_to_peer=True)  # fmt: skip
L40S = gpu_link(interconnect_gbs=None, pcie_gbs=PCIE4, variant="PCIe", scale_up_link="pcie", peer_to_peer=True)
MI300X = gpu_link(interconnect_gbs=None, pcie_gbs=PCIE5, variant="OAM")
L70 = MODEL_SHAPES["llama-3.1-70b"]
RTX4090 = Hardware(memory_gib=24.0, bandwidth_gbs=1008.0, tensor_tflops={"fp8": 330.3, "fp16": 165.2},
                   hardware_class="consumer")  # fmt: skip
STREAM = StreamFit({"llama.cpp": 0.7}, {"llama.cpp": 0.2}, {"llama.cpp": 10})


def test_links_from_the_catalogue_fields():
    assert GEFORCE.kind(1) == "single" and GEFORCE.kind(8) == "pcie_host" and not GEFORCE.peer_to_peer
    assert L40S.kind(4) == "pcie_p2p"
    assert H100_SXM.kind(8) == "fabric" and H100_SXM.fabric_gbs == 450  # 900 GB/s both ways
    # A bridged pair: NVLink between the two, PCIe beyond them.
    assert H100_NVL.kind(2) == "fabric" and H100_NVL.kind(4) == "pcie_p2p"
    # An OAM board's fabric without a catalogue figure is not priced.
    assert MI300X.kind(8) == "unknown" and MI300X.bus_gbs(8) is None
    assert allreduce_seconds(link=MI300X, gpus=8, message_bytes=MESSAGE) is None
    assert GpuLink().kind(2) == "unknown"
    # A baseboard's fabric ends at its server: 16 H100 SXM are not priced as PCIe cards.
    assert H100_SXM.kind(16) == "unknown"
    # PCIe peer-to-peer the catalogue does not state is priced through host memory, never as P2P.
    unstated = gpu_link(interconnect_gbs=None, pcie_gbs=PCIE4, scale_up_link="pcie")
    assert unstated.kind(4) == "pcie_host" and unstated.bus_gbs(4) == GEFORCE.bus_gbs(4)
    # A fabric with a catalogue type but no bandwidth is unknown, not PCIe.
    assert gpu_link(interconnect_gbs=None, pcie_gbs=PCIE5, scale_up_link="roce").kind(8) == "unknown"


def test_each_fabric_takes_its_own_measured_share_of_the_line_rate():
    # Gaudi 2: 21 x 100 GbE = 262.5 GB/s each way, HCCL reaches 512.96/525 of it (Intel's Gaudi 3 run).
    gaudi2 = gpu_link(interconnect_gbs=525, pcie_gbs=None, variant="OAM", scale_up_link="roce", scale_up_gpus=8)
    assert gaudi2.bus_gbs(8) == pytest.approx(262.5 * 512.957298 / 525, rel=1e-6)
    # MI300X: 7 x 128 GB/s = 896 both ways, 448 each way, 48 of every 64 GB/s usable (AMD).
    mi300x = gpu_link(interconnect_gbs=896, pcie_gbs=PCIE5, variant="OAM", scale_up_link="infinity-fabric",
                      scale_up_gpus=8)  # fmt: skip
    assert mi300x.bus_gbs(8) == pytest.approx(336.0)
    assert H100_SXM.bus_gbs(8) == pytest.approx(370.0)
    # A fabric no source measures takes the lowest measured share, not NVLink's.
    hccs = gpu_link(interconnect_gbs=392, pcie_gbs=None, scale_up_link="hccs", scale_up_gpus=8)
    assert hccs.bus_gbs(8) == pytest.approx(196 * 0.75)


def test_allreduce_is_latency_plus_ring_bytes_over_the_bus_bandwidth():
    # H100 SXM, 8 GPUs: 6 us + 2*7/8 * 4,194,304 B / (450 GB/s * 370/450) = 6 + 19.84 = 25.84 us.
    assert allreduce_seconds(link=H100_SXM, gpus=8, message_bytes=MESSAGE) == pytest.approx(25.84e-6, rel=1e-3)
    # GeForce on PCIe 4.0, 4 GPUs, staged through host memory: bus 31.504 * 35/63 = 17.50 GB/s;
    # 42.1 us + 1.5 * 4,194,304 / 17.50e9 = 42.1 + 359.5 = 401.6 us. On 8 GPUs the share is 28/63.
    assert allreduce_seconds(link=GEFORCE, gpus=4, message_bytes=MESSAGE) == pytest.approx(401.6e-6, rel=1e-3)
    assert allreduce_seconds(link=GEFORCE, gpus=8, message_bytes=MESSAGE) == pytest.approx(
        PCIE_LATENCY_S + 1.75 * MESSAGE / (PCIE4 * 28 / 63 * 1e9)
    )
    # L40S, peer to peer: bus 31.504 * 24.54/31.5 = 24.54 GB/s; 42.1 + 1.5 * 4,194,304 / 24.54e9 = 298.5 us.
    assert allreduce_seconds(link=L40S, gpus=4, message_bytes=MESSAGE) == pytest.approx(298.5e-6, rel=1e-3)
    assert allreduce_seconds(link=L40S, gpus=1, message_bytes=MESSAGE) == 0.0
    # A tensor-parallel step of Llama 3 70B: 80 layers x 2 all-reduces = 160, ~64 ms on 4 GeForce.
    step = tensor_parallel_step_seconds(link=GEFORCE, gpus=4, tokens=256, layers=80, hidden=8192)
    assert step == pytest.approx(160 * 401.6e-6, rel=1e-3)


def test_a_layer_split_copies_one_hidden_state_per_boundary():
    # 4 GeForce in a layer split: 3 boundaries x (42.1 us + 16,384 B / 17.50 GB/s) = 3 x 43.04 us.
    assert layer_split_token_seconds(link=GEFORCE, gpus=4, hidden=8192) == pytest.approx(3 * 43.04e-6, rel=1e-3)
    assert layer_split_token_seconds(link=H100_SXM, gpus=2, hidden=8192) == pytest.approx(
        FABRIC_LATENCY_S + 16384 / (370e9)
    )
    # Against a 70B token's ~30 ms of weight reads, the hand-over is negligible (one stream).
    w = Workload(L70, "int4", 0.61, 1024, 1024, engine="llama.cpp")
    common = {"w": w, "hw": RTX4090, "fit": STREAM, "serving": ServingConstants(), "memory": "gddr"}

    def free(gpus: int) -> float:
        return 0.0

    def linked_handover(gpus: int) -> float | None:
        return layer_split_token_seconds(link=GEFORCE, gpus=gpus, hidden=L70.hidden)

    alone = single_stream_compute(**common, handover_s=free)  # type: ignore[arg-type]
    linked = single_stream_compute(**common, handover_s=linked_handover)  # type: ignore[arg-type]
    assert alone is not None and linked is not None
    assert alone.gpus == linked.gpus == 2
    assert linked.handover_s == pytest.approx(43.04e-6, rel=1e-3)
    assert 1 / linked.tokens_per_s - 1 / alone.tokens_per_s == pytest.approx(43.04e-6, rel=1e-3)
    # A split over a link with no figure gives no estimate (a hand-over is never free).
    assert single_stream_compute(**common, handover_s=lambda gpus: None) is None  # type: ignore[arg-type]
