"""Every link between GPUs has a cost: the catalogue's scale-up links (catalog/data/curated/gpus.toml)
as the serving model prices them (llm.selectors.serving), on the real curated catalogue and the
real TensorRT-LLM row the Gaudi 2 estimate used to exceed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from catalog.models import Gpu, SpecCitation, TensorPeak
from catalog.services.catalog_import import gpu_import_curated
from llm.selectors.serving import gpu_link_for, serving_curve, serving_hardware, serving_link, weight_format
from llm.services.trtllm_import import BUNDLED_DIR
from llm.serving.comm import allreduce_seconds
from llm.serving.physics import AllReduce, ServingConstants, Workload, one_stream_compute, serving_curve_compute
from llm.serving.shapes import MODEL_SHAPES
from llm.trtllm import trtllm_parse
from tests.world import LLM_WORLD, world_build

pytestmark = pytest.mark.django_db
L70 = "llama-3.1-70b"
# GPUs whose scale-up link no cited source gives: no estimate above one GPU.
UNKNOWN_LINKS = {
    "radeon-instinct-mi250", "radeon-instinct-mi350p", "arc-pro-b70", "ascend-910", "gaudi-hl-205", "jetson-agx-thor",
    "rtx-pro-4500-blackwell-server", "tesla-p100-sxm2", "gb10",
}  # fmt: skip


@pytest.fixture
def catalogue() -> dict[str, Gpu]:
    world_build(rows=LLM_WORLD)
    return {g.slug: g for g in Gpu.objects.curated().select_related("architecture", "vendor")}


def _curve(gpu: Gpu, *, model: str = L70, precision: str = "fp8", tp: int = 8, free: bool = False):
    """The serving curve at 1000/1000 and default constants; ``free``: the same with the
    all-reduces costing nothing (what the estimate did when the link had no figure)."""
    if not free:
        return serving_curve(gpu=gpu, model=model, precision=precision, gpu_count=tp, tp=tp, input_len=1000,
                             output_len=1000, fit=None)  # fmt: skip
    weights, bpw = weight_format(precision)
    w = Workload(MODEL_SHAPES[model], weights, bpw, 1000, 1000, tp=tp, engine="vllm-sglang")
    return serving_curve_compute(w=w, hw=serving_hardware(gpu), c=ServingConstants(), link=AllReduce())


def test_gaudi2_70b_on_eight_no_longer_beats_the_h100_measurement_on_free_communication(catalogue):
    # TensorRT-LLM 0.17's table: Llama 3.1 70B FP8, 8 x H100 (TP8), 1000/1000 -> 1,431 tokens/s per GPU.
    rows = trtllm_parse((BUNDLED_DIR / "v0.17" / "perf-overview.md").read_text(encoding="utf-8"))
    (h100,) = [r for r in rows if r.model == L70 and r.gpu_name.startswith("H100") and r.tensor_parallel == 8
               and (r.input_tokens, r.output_tokens) == (1000, 1000) and r.precision == "fp8"]  # fmt: skip
    assert h100.tokens_per_s_per_gpu == pytest.approx(1431, abs=1)
    gaudi2 = catalogue["gaudi2"]
    estimate = _curve(gaudi2)
    top = estimate.at(None)
    assert estimate.allreduce_priced and "RoCE" in estimate.allreduce_source
    free = _curve(gaudi2, free=True)
    free_top = max(p.tokens_per_s_per_gpu for p in free.points)
    # Free communication put it above the measurement; its 21 x 100 GbE ports bring it under.
    assert free_top > h100.tokens_per_s_per_gpu > top.tokens_per_s_per_gpu


@pytest.mark.parametrize("slug, links_gbs", [("radeon-instinct-mi300x", 896), ("radeon-instinct-mi355x", 1075.2)])
def test_amd_70b_tp8_single_user_rate_pays_160_all_reduces_over_infinity_fabric(catalogue, slug, links_gbs):
    gpu = catalogue[slug]
    assert gpu.interconnect_gbs == links_gbs and gpu.scale_up_link == "infinity-fabric" and gpu.scale_up_gpus == 8
    one_user = _curve(gpu).points[0]
    free = _curve(gpu, free=True).points[0]
    assert one_user.concurrency == free.concurrency == 1
    # 80 layers x 2 all-reduces of one token's hidden state (8192 x 2 bytes), each at AMD's usable
    # 48 of 64 GB/s per link: the step grows by exactly their time.
    per_call = allreduce_seconds(link=gpu_link_for(gpu), gpus=8, message_bytes=8192 * 2)
    assert per_call is not None
    added = 1.0 / one_user.tokens_per_s_per_user - 1.0 / free.tokens_per_s_per_user
    assert added == pytest.approx(160 * per_call, rel=0.02)
    assert added > 0.9e-3  # about a millisecond per token, the latency of 160 calls


def test_a_gpu_whose_link_is_unknown_gets_no_estimate_above_one_gpu(catalogue):
    unknown = {slug for slug, gpu in catalogue.items() if gpu_link_for(gpu).kind(2) == "unknown"}
    assert unknown == UNKNOWN_LINKS
    mi250 = catalogue["radeon-instinct-mi250"]
    eight = _curve(mi250, precision="bf16")
    assert eight.fits and eight.points == () and not eight.allreduce_priced
    assert "no figure" in eight.allreduce_source
    # One GPU needs no link: Llama 3.1 8B on one MI250 is estimated.
    assert _curve(mi250, model="llama-3.1-8b", precision="bf16", tp=1).points
    # A stream whose layers must be split over GPUs with no link figure has no rate either.
    hw = replace(serving_hardware(mi250), memory_gib=24.0)
    w = Workload(MODEL_SHAPES[L70], "fp8", 1.0, 1000, 1000, engine="llama.cpp")
    assert one_stream_compute(w=w, hw=hw, c=ServingConstants(), handover_s=lambda gpus: None) is None


def test_every_priced_link_is_cited_and_pcie_cards_say_whether_they_copy_peer_to_peer(catalogue):
    cited = {(c.gpu.slug, c.field) for c in SpecCitation.objects.select_related("gpu")}
    for slug, gpu in catalogue.items():
        if slug in UNKNOWN_LINKS:
            continue
        assert (slug, "scale_up_link") in cited, slug
        link = gpu_link_for(gpu)
        if gpu.scale_up_link == "pcie" or gpu.scale_up_link == "nvlink-bridge":
            assert gpu.pcie_peer_to_peer is not None and (slug, "pcie_peer_to_peer") in cited, slug
        # Every count up to a server's eight costs something.
        assert all(serving_link(gpu, tp=n).known for n in (2, 4, 8)), slug
        assert link.kind(8) != "unknown", slug
    # GeForce cards stage through host memory, Titans and data-centre cards copy peer to peer.
    assert gpu_link_for(catalogue["geforce-rtx-4090"]).kind(2) == "pcie_host"
    assert gpu_link_for(catalogue["geforce-rtx-5090"]).kind(4) == "pcie_host"
    assert gpu_link_for(catalogue["l40s"]).kind(4) == "pcie_p2p"
    assert gpu_link_for(catalogue["rtx-pro-6000-blackwell-server"]).kind(8) == "pcie_p2p"
    # H200 NVL bridges four cards; eight of them meet over PCIe.
    nvl = gpu_link_for(catalogue["h200-nvl"])
    assert nvl.kind(4) == "fabric" and nvl.kind(8) == "pcie_p2p"
    # Gaudi 3: 21 x 200 GbE = 525 GB/s each way, at HCCL's measured 512.96 of 525.
    assert gpu_link_for(catalogue["gaudi3"]).bus_gbs(8) == pytest.approx(512.957298)


def test_the_curated_links_import_idempotently(catalogue):
    again = gpu_import_curated()
    assert again.updated == 0 and again.citations_written == 0
    h20 = catalogue["h20"]
    assert (h20.interconnect_gbs, h20.scale_up_link, h20.scale_up_gpus) == (900, "nvlink", 8)


def test_rtx_pro_6000_blackwell_editions_have_dense_tensor_figures_halved_from_sparse(catalogue):
    server, workstation = catalogue["rtx-pro-6000-blackwell-server"], catalogue["rtx-pro-6000-blackwell"]
    peaks = {gpu.slug: {p.precision: p for p in TensorPeak.objects.filter(gpu=gpu)} for gpu in (server, workstation)}
    # NVIDIA's Server Edition figures (4 / 2 / 1 PFLOPS FP4 / FP8 / FP16 with sparsity), halved.
    assert {k: p.dense_tflops for k, p in peaks[server.slug].items()} == {
        "fp4": 2000, "fp8": 1000, "fp16": 500, "bf16": 500}  # fmt: skip
    assert "halved" in peaks[server.slug]["fp8"].note and "sparsity" in peaks[server.slug]["fp16"].note
    # The Workstation Edition: the same GB202, 4.03 PFLOPS FP4 with sparsity on its specification page.
    assert peaks[workstation.slug]["fp4"].dense_tflops == 2020 and peaks[workstation.slug]["fp8"].dense_tflops == 1010
    # The serving model now has a tensor path for both (it had none: 70B FP8 fell back to vector FP16).
    assert serving_hardware(server).compute_peak("fp8") == (1000.0, "fp8")
