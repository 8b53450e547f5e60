"""Mixtures of experts as engines serve them: experts spread over the GPUs with attention data
parallel on each (DEPn), the all-to-all priced over the link, MLA's cache per rank; and one
stream's rate set by bandwidth (pure physics)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llm.serving.physics import (
    AllReduce,
    Hardware,
    ServingConstants,
    Workload,
    decode_step,
    kv_bytes_per_token_per_gpu,
    one_stream_compute,
    routed_expert_params_b,
    weights_bytes_per_gpu,
)
from llm.serving.shapes import MODEL_SHAPES

H200 = Hardware(memory_gib=141, bandwidth_gbs=4800, tensor_tflops={"fp8": 1979, "bf16": 989}, hardware_class="hopper")
NVLINK = AllReduce(bus_gbs=360.0, source="test link")


def _r1(**kw: object) -> Workload:
    return Workload(MODEL_SHAPES["deepseek-r1"], "fp8", 1.0, 1000, 1000, engine="tensorrt-llm", **kw)  # type: ignore[arg-type]


def test_dep_holds_the_shared_weights_whole_and_an_eighth_of_the_experts() -> None:
    routed = routed_expert_params_b(MODEL_SHAPES["deepseek-r1"])
    assert 640 < routed < 660  # (671 - 37) / (1 - 8 / 256)
    per_gpu = weights_bytes_per_gpu(_r1(ep=8)) / 1e9
    assert per_gpu == pytest.approx(671 - routed + routed / 8, rel=1e-6)
    assert weights_bytes_per_gpu(_r1(tp=8)) / 1e9 == pytest.approx(671 / 8)


def test_mla_cache_is_per_rank_under_attention_data_parallel_and_replicated_under_tp() -> None:
    per_rank = kv_bytes_per_token_per_gpu(_r1(ep=8), H200)
    assert kv_bytes_per_token_per_gpu(_r1(tp=8), H200) == per_rank  # one latent head: every TP rank keeps it
    # Under DEP a rank holds only its own sequences: 8 ranks hold 8x the sequences of one TP group.
    c = ServingConstants()
    step_dep = decode_step(w=_r1(ep=8), hw=H200, c=c, batch=64, link=NVLINK)
    step_tp = decode_step(w=_r1(tp=8), hw=H200, c=c, batch=64, link=NVLINK)
    assert step_dep.memory_s > 0 and step_tp.memory_s > 0


def test_the_all_to_all_is_priced_over_the_link_and_free_only_on_one_gpu() -> None:
    c = ServingConstants()
    with_link = decode_step(w=_r1(ep=8), hw=H200, c=c, batch=64, link=NVLINK)
    slower = decode_step(w=_r1(ep=8), hw=H200, c=c, batch=64, link=replace(NVLINK, bus_gbs=36.0))
    assert with_link.allreduce_s > 0
    assert slower.allreduce_s > 5 * with_link.allreduce_s
    assert decode_step(w=_r1(), hw=H200, c=c, batch=64, link=NVLINK).allreduce_s == 0


@pytest.mark.parametrize("bandwidth", [448.0, 1008.0, 1792.0])
def test_two_gpus_of_one_class_and_bandwidth_stream_alike_whatever_their_tensor_figures(bandwidth: float) -> None:
    c = ServingConstants(bandwidth_share={"blackwell": 0.8}, compute_share={"blackwell": 0.5})
    slow = Hardware(96, bandwidth, {"fp16": 100.0, "int8": 200.0}, "blackwell")
    fast = Hardware(96, bandwidth, {"fp16": 500.0, "int8": 1000.0, "fp8": 1000.0}, "blackwell")
    w = Workload(MODEL_SHAPES["llama-3-8b"], "int4", 0.6, 0, 128, engine="llama.cpp")
    a = one_stream_compute(w=w, hw=slow, c=c, handover_s=lambda n: 0.0)
    b = one_stream_compute(w=w, hw=fast, c=c, handover_s=lambda n: 0.0)
    assert a and b
    assert a.tokens_per_s == pytest.approx(b.tokens_per_s, rel=0.10)


def test_a_mixture_of_experts_pays_its_per_layer_overhead_once_per_layer_and_a_dense_model_none() -> None:
    from llm.serving.physics import AllReduce, Hardware, ServingConstants, Workload, decode_step

    hw = Hardware(141.0, 4800.0, {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}, "hopper")
    c = ServingConstants(overhead_ms={"vllm-sglang": 0.5}, moe_layer_overhead_us={"vllm-sglang": 50.0})
    dense = MODEL_SHAPES["llama-3.1-70b"]
    moe = MODEL_SHAPES["deepseek-r1"]
    step = decode_step(w=Workload(dense, "fp8", 1.0, 1000, 1000, tp=8), hw=hw, c=c, batch=1, link=AllReduce())
    assert step.overhead_s == pytest.approx(0.5e-3)
    step = decode_step(w=Workload(moe, "fp8", 1.0, 1000, 1000, tp=8), hw=hw, c=c, batch=1, link=AllReduce())
    assert step.overhead_s == pytest.approx(0.5e-3 + moe.layers * 50e-6)
    # An engine class with no fitted per-layer figure takes the mean of the fitted ones, never a made-up 1 us.
    bare = ServingConstants(overhead_ms={"vllm-sglang": 0.5})
    assert bare.overhead_s("tensorrt-llm", moe) == pytest.approx(0.5e-3)
    # An engine class without its own figure takes the mean of the fitted ones.
    assert c.overhead_s("tensorrt-llm", moe) == pytest.approx(0.5e-3 + moe.layers * 50e-6)


def _matrices_s(w: Workload, hw: Hardware, share: float, batch: int) -> float:
    """A decode step's weight matrices at ``share`` of the weights' peak (its attention apart)."""
    peak = hw.compute_peak(w.weight_precision)
    assert peak is not None
    return 2.0 * w.model.active_params_b * 1e9 * batch / w.tp / (peak[0] * share * 1e12)


def test_block_scaled_weights_decode_at_their_share_without_a_native_path_and_prefill_at_the_full_rate() -> None:
    """The share prices the scales of the weights' blocks: it slows a decode step's matrices, not its
    attention (the cache is not block-scaled), and not the prefill."""
    from llm.serving.physics import prefill_seconds

    c = ServingConstants(compute_share={"hopper": 0.5, "blackwell": 0.5}, block_scale_decode_share=0.4)
    plain = replace(c, block_scale_decode_share=1.0)
    r1 = _r1(ep=8)
    step = decode_step(w=r1, hw=H200, c=c, batch=512, link=NVLINK)
    unscaled = decode_step(w=r1, hw=H200, c=plain, batch=512, link=NVLINK).compute_s
    matrices = _matrices_s(r1, H200, 0.5, 512)
    assert 0 < matrices < unscaled
    assert step.compute_s == pytest.approx(unscaled + matrices * (1 / 0.4 - 1))
    assert prefill_seconds(w=r1, hw=H200, c=c, requests=64, link=NVLINK) == pytest.approx(
        prefill_seconds(w=r1, hw=H200, c=plain, requests=64, link=NVLINK)
    )
    # A GPU whose matrix units apply block scales (an FP4 path) computes at the full rate.
    b200 = Hardware(179, 8000, {"fp4": 9000, "fp8": 4500, "bf16": 2250}, "blackwell")
    native = decode_step(w=r1, hw=b200, c=c, batch=512, link=NVLINK)
    assert native.compute_s == pytest.approx(decode_step(w=r1, hw=b200, c=plain, batch=512, link=NVLINK).compute_s)
    # Weights with one scale per tensor (Qwen3's FP8 rows, Llama's) keep the rate on Hopper too.
    qwen = Workload(MODEL_SHAPES["qwen3-235b-a22b"], "fp8", 1.0, 1000, 1000, engine="tensorrt-llm", ep=4)
    assert decode_step(w=qwen, hw=H200, c=c, batch=512, link=NVLINK).compute_s == pytest.approx(
        decode_step(w=qwen, hw=H200, c=plain, batch=512, link=NVLINK).compute_s
    )


def test_fp4_weights_without_an_fp4_path_compute_at_16_bits_with_a_16_bit_cache_at_their_own_share() -> None:
    """gpt-oss's MXFP4 checkpoint on Hopper (W4A16): its 4.5 bits are read, its matrices computed at
    the 16-bit rate and, in decode, at the dequantisation share; the cache stays 16-bit. On an
    FP4 GPU the same weights compute at the FP4 rate with an 8-bit cache and no share."""
    from llm.serving.physics import prefill_seconds

    c = ServingConstants(compute_share={"hopper": 0.5, "blackwell": 0.5}, fp4_dequant_decode_share=0.3,
                         block_scale_decode_share=0.9)  # fmt: skip
    plain = replace(c, fp4_dequant_decode_share=1.0)
    gpt_oss = Workload(MODEL_SHAPES["gpt-oss-120b"], "fp4", 0.5625, 1000, 1000, engine="tensorrt-llm", ep=4)
    assert H200.compute_peak("fp4") == (989, "bf16")  # no FP8 shortcut for 4-bit weights
    assert gpt_oss.kv_value_bytes(H200) == 2.0
    step = decode_step(w=gpt_oss, hw=H200, c=c, batch=512, link=NVLINK)
    unscaled = decode_step(w=gpt_oss, hw=H200, c=plain, batch=512, link=NVLINK).compute_s
    assert step.compute_s == pytest.approx(unscaled + _matrices_s(gpt_oss, H200, 0.5, 512) * (1 / 0.3 - 1))
    assert prefill_seconds(w=gpt_oss, hw=H200, c=c, requests=64, link=NVLINK) == pytest.approx(
        prefill_seconds(w=gpt_oss, hw=H200, c=plain, requests=64, link=NVLINK)
    )
    b200 = Hardware(179, 8000, {"fp4": 9000, "fp8": 4500, "bf16": 2250}, "blackwell")
    assert b200.compute_peak("fp4") == (9000, "fp4") and gpt_oss.kv_value_bytes(b200) == 1.0
    native = decode_step(w=gpt_oss, hw=b200, c=c, batch=512, link=NVLINK)
    assert native.compute_s == pytest.approx(decode_step(w=gpt_oss, hw=b200, c=plain, batch=512, link=NVLINK).compute_s)
    # FP8 blocks on Hopper keep the block-scale share, not this one.
    r1 = _r1(ep=8)
    assert decode_step(w=r1, hw=H200, c=c, batch=512, link=NVLINK).compute_s == pytest.approx(
        decode_step(w=r1, hw=H200, c=replace(c, block_scale_decode_share=1.0), batch=512, link=NVLINK).compute_s
        + _matrices_s(r1, H200, 0.5, 512) * (1 / 0.9 - 1)
    )
