"""Communication between GPUs in the LLM model (llm.serving.comm), the configuration it picks,
and its measured range (llm.estimate.coverage): pure arithmetic on hand-computed cases."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llm.estimate.constants import LlmConstants
from llm.estimate.coverage import Regime, coverage_build
from llm.estimate.fit import Observation, constants_fit, predict
from llm.estimate.loo import leave_one_gpu_out
from llm.estimate.model import kv_bytes_per_token, llm_throughput_estimate
from llm.serving.comm import (
    FABRIC_LATENCY_S,
    PCIE_LATENCY_S,
    GpuLink,
    allreduce_seconds,
    gpu_link,
    layer_split_token_seconds,
    tensor_parallel_step_seconds,
)
from llm.serving.shapes import MODEL_SHAPES

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
SHAPE = {"total_params_b": L70.total_params_b, "active_params_b": L70.active_params_b, "layers": L70.layers,
         "kv_heads": L70.kv_heads, "head_dim": L70.head_dim, "hidden": L70.hidden}  # fmt: skip
C = LlmConstants(
    serving_compute_efficiency=0.4,
    serving_compute_efficiency_by_benchmark={"llama2-70b": 0.6},
    serving_bandwidth_efficiency=0.7,
    serving_context_tokens=1024,
)
RTX4090 = {"memory_gib": 24.0, "bandwidth_gbs": 1008.0, "tensor_tflops": {"fp8": 330.3, "fp16": 165.2}}


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
    common = {**RTX4090, **SHAPE, "bytes_per_weight": 0.61, "weight_precision": "int4", "mode": "one_stream",
              "context_tokens": 2048, "constants": C}  # fmt: skip
    alone = llm_throughput_estimate(**common)
    linked = llm_throughput_estimate(**common, link=GEFORCE)
    assert alone.gpu_count == linked.gpu_count == 2 and linked.link_kind == "pcie_host"
    assert linked.communication_s == pytest.approx(43.04e-6, rel=1e-3)
    assert 1 / linked.tokens_per_s - 1 / alone.tokens_per_s == pytest.approx(43.04e-6, rel=1e-3)  # type: ignore[operator]


def test_serving_over_geforce_pcie_picks_four_gpus_and_pays_for_its_all_reduces():
    """8x RTX 4090 serving Llama 3 70B in FP8 was estimated at ~900 tokens/s per GPU with no
    communication cost. By hand, with the test constants (bandwidth share 0.7, compute share 0.6,
    1,024 tokens of FP8 KV cache = 167.77 MB per stream, 24 GiB x 0.9 - 1.34 GiB = 21.75 GB per
    GPU for weights and KV cache):

    4 GPUs: 87.02 GB - 70.55 GB of weights leaves 16.47 GB = 98 streams.
      weights + KV 86.99 GB / (0.7 x 1008 GB/s x 4) = 30.82 ms
      2 x 70.55e9 x 98 FLOP / (0.6 x 330.3 TFLOPS x 4) = 17.44 ms
      160 all-reduces of 98 x 8192 x 2 = 1.61 MB through host memory (17.50 GB/s):
      160 x (42.1 us + 1.5 x 1.61 MB / 17.50 GB/s) = 28.75 ms
      98 / 77.0 ms = 1,272 tokens/s, 318 per GPU
    8 GPUs: 616 streams; 30.81 + 54.82 ms, and 160 x (42.1 us + 1.75 x 10.09 MB / 14.00 GB/s) =
      208.6 ms of all-reduces: 616 / 294 ms = 262 per GPU. Four GPUs (two replicas of four in an
      8-GPU server) win; the degree is picked at peak rates (403 against 293 per GPU).
    """
    common = {**RTX4090, **SHAPE, "bytes_per_weight": 1.0, "weight_precision": "fp8", "mode": "batched",
              "context_tokens": 1024, "benchmark": "llama2-70b", "constants": C}  # fmt: skip
    silent = llm_throughput_estimate(**common)
    assert (
        silent.gpu_count == 8 and silent.link_kind == "" and silent.tokens_per_s_per_gpu == pytest.approx(899, rel=0.01)
    )
    estimate = llm_throughput_estimate(**common, link=GEFORCE)
    assert (estimate.gpu_count, estimate.batch, estimate.link_kind) == (4, 98, "pcie_host")
    kv = kv_bytes_per_token(layers=80, kv_heads=8, head_dim=128, bytes_per_value=1.0) * 1024
    memory = (70.55e9 + 98 * kv) / (0.7 * 1008e9 * 4)
    compute = 2 * 70.55e9 * 98 / (0.6 * 330.3e12 * 4)
    talk = 160 * (42.1e-6 + 1.5 * 98 * 8192 * 2 / (PCIE4 * 35 / 63 * 1e9))
    assert estimate.communication_s == pytest.approx(talk)
    assert estimate.tokens_per_s == pytest.approx(98 / (memory + compute + talk))
    assert estimate.tokens_per_s_per_gpu == pytest.approx(318, rel=0.01)
    eight = llm_throughput_estimate(**common, link=GEFORCE, gpu_count=8)
    assert eight.batch == 616 and eight.tokens_per_s_per_gpu == pytest.approx(262, rel=0.01)
    # The fitted factor on a link scales its all-reduce time.
    halved = llm_throughput_estimate(**{**common, "constants": replace(C, communication_factor={"pcie_host": 0.5})},
                                     link=GEFORCE, gpu_count=4)  # fmt: skip
    assert halved.communication_s == pytest.approx(talk / 2)
    # Ten-gigabyte cards: 8 x (10 x 0.9 - 1.34) GiB = 65.8 GB cannot hold 70.55 GB of INT8 weights.
    rtx3080 = {"memory_gib": 10.0, "bandwidth_gbs": 760.0, "tensor_tflops": {"int8": 238.0}}
    too_small = llm_throughput_estimate(**{**common, **rtx3080, "weight_precision": "int8"}, link=GEFORCE)
    assert not too_small.fits and too_small.bound == "does not fit"


def test_h100s_on_nvlink_serve_70b_in_pairs_and_an_unknown_link_is_noted():
    common = {"memory_gib": 80.0, "bandwidth_gbs": 3350.0, "tensor_tflops": {"fp8": 1979.0}, **SHAPE,
              "bytes_per_weight": 1.0, "weight_precision": "fp8", "mode": "batched", "context_tokens": 1024,
              "benchmark": "llama2-70b", "constants": C}  # fmt: skip
    # Two GPUs hold 70.55 GB of FP8 weights and 483 streams (2 x 75.87 GB - 70.55 GB = 81.2 GB of
    # KV cache); four hold a full batch of 1,024, but their all-reduces (11.8 ms a step against
    # 4.4) cost more than the larger batch gains: 5,311 against 5,464 tokens/s per GPU at peak
    # rates.
    nvlink = llm_throughput_estimate(**common, link=H100_SXM)
    assert (nvlink.gpu_count, nvlink.batch, nvlink.link_kind) == (2, 483, "fabric")
    # 160 all-reduces of 483 x 8192 x 2 = 7.9 MB at 370 GB/s: 160 x (6 + 21.4) us = 4.4 ms.
    assert nvlink.communication_s == pytest.approx(160 * (6e-6 + 1.0 * 483 * 16384 / 370e9), rel=1e-6)
    unknown = llm_throughput_estimate(**common, link=MI300X)
    assert unknown.link_kind == "unknown" and unknown.communication_s == 0
    assert any("not in the catalogue" in note for note in unknown.notes)


def test_the_measured_range_and_its_reasons():
    rows = [
        Regime("serving", "nvidia", "hopper", "fabric", "fp8"),
        Regime("serving", "nvidia", "ada-lovelace", "pcie_p2p", "fp8"),
        Regime("serving", "amd", "cdna3", "single", "fp8"),
        Regime("decode", "nvidia", "ampere", "layer"),
    ]
    coverage = coverage_build(rows)
    assert coverage.outside(Regime("serving", "nvidia", "hopper", "single", "fp8")) == ()
    # 8x RTX 4090: Ada is measured, FP8 too, but not tensor parallelism through host memory.
    assert coverage.outside(Regime("serving", "nvidia", "ada-lovelace", "pcie_host", "fp8")) == ("configuration",)
    # RTX 3090 in INT8: neither Ampere serving rows nor NVIDIA INT8 rows.
    assert coverage.outside(Regime("serving", "nvidia", "ampere", "single", "int8")) == ("architecture", "precision")
    # A vendor without rows is said once, not as its architecture and format as well.
    assert coverage.outside(Regime("serving", "intel", "gaudi", "single", "fp8")) == ("vendor",)
    # A link the catalogue has no figure for is never inside, even beside measured unknown links.
    assert coverage_build([*rows, Regime("serving", "amd", "cdna3", "unknown", "fp8")]).outside(
        Regime("serving", "amd", "cdna3", "unknown", "fp8")
    ) == ("configuration",)
    assert coverage.outside(Regime("decode", "nvidia", "ampere", "single")) == ()


def _gpu(key: str, architecture: str, bandwidth: float, peak: float, memory: float, link: GpuLink) -> dict[str, object]:
    return {"gpu_key": key, "memory_gib": memory, "bandwidth_gbs": bandwidth, "vendor": "nvidia",
            "architecture": architecture, "link": link,
            "tensor_tflops": {"fp16": peak, "bf16": peak, "fp8": 2 * peak}}  # fmt: skip


TRUE = LlmConstants(
    decode_bandwidth_efficiency={"4bit": 0.55, "16bit": 0.8},
    decode_overhead_ms_per_layer=0.02,
    serving_compute_efficiency_by_benchmark={"llama-2-70b": 0.5, "llama-3.1-8b": 0.2},
    serving_bandwidth_efficiency=0.65,
    serving_context_tokens=1024,
    communication_factor={"pcie_p2p": 0.4, "fabric": 0.2},
)


def _synthetic() -> list[Observation]:
    """Serving and decode rows made by TRUE: 80 GB GPUs on NVLink, 48 GB cards on PCIe (70B in
    FP8 needs two of them; one card of architecture "solo" only)."""
    gpus = [
        _gpu("a", "hopper", 3350, 990, 80, H100_SXM), _gpu("b", "hopper", 2000, 750, 80, H100_SXM),
        _gpu("c", "ada", 864, 362, 48, L40S), _gpu("d", "ada", 960, 364, 48, L40S),
        _gpu("e", "ada", 700, 300, 48, L40S), _gpu("f", "solo", 1000, 400, 48, L40S),
    ]  # fmt: skip
    out = []
    for g in gpus:
        for model in ("llama-2-70b", "llama-3.1-8b"):
            o = Observation(kind="serving", measured=1.0, model=MODEL_SHAPES[model], bytes_per_weight=1.0,
                            weight_precision="fp8", context_tokens=0, benchmark=model, **g)  # type: ignore[arg-type]  # fmt: skip
            value = predict(replace(o, context_tokens=1024), TRUE)
            assert value
            out.append(replace(o, measured=value))
        for model, size in (("llama-3-8b", 0.61), ("llama-2-13b", 2.0)):
            o = Observation(kind="decode", measured=1.0, model=MODEL_SHAPES[model], context_tokens=256,
                            bytes_per_weight=size, weight_precision="int4" if size < 1 else "fp16", **g)  # type: ignore[arg-type]  # fmt: skip
            out.append(replace(o, measured=predict(o, TRUE)))
    return out


def test_the_fit_recovers_the_communication_factor_of_each_link():
    rows = _synthetic()
    assert any(r.kind == "serving" and r.gpu_key == "c" for r in rows)
    fitted = constants_fit(rows, base=replace(LlmConstants(), serving_context_tokens=1024))
    assert fitted.communication_factor["pcie_p2p"] == pytest.approx(0.4, rel=0.02)
    assert fitted.serving_bandwidth_efficiency == pytest.approx(0.65, rel=0.02)


def test_leave_one_gpu_out_marks_figures_outside_the_range_of_the_other_gpus():
    report = leave_one_gpu_out(_synthetic(), base=replace(LlmConstants(), serving_context_tokens=1024))
    by_gpu = {(e.gpu_key, e.use_case): e for e in report.by_gpu}
    # "f" is the only GPU of its architecture: scored without it, its rows are extrapolations.
    assert by_gpu[("f", "serving")].outside_rows == 2 and by_gpu[("f", "serving")].outside_reasons == ("architecture",)
    assert by_gpu[("c", "serving")].outside_rows == 0
    serving = report.by_use_case["serving"]
    # Classes left out: vendor nvidia, architectures hopper/ada/solo, links fabric and pcie_p2p.
    assert serving.outside_classes == 6 and serving.outside_median_error_pct is not None
    assert serving.outside_error_pct >= serving.median_error_pct
    assert report.coverage.outside(Regime("serving", "nvidia", "ada", "pcie_host", "fp8")) == ("configuration",)
