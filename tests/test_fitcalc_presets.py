"""Presets from published config.json files, mixtures of experts, weight and KV-cache formats,
batched serving and the ranking. Pure: no database.

Published figures are the model cards' (fitcalc/data/presets.json names each); llama.cpp's sizes
are from its tools/quantize/README.md (Llama 3.1 8B table).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from fitcalc import PRESETS, GpuFacts, fit_plan, memory_estimate
from fitcalc.llm import LlmGpu, LlmModel, llm_rate, llm_shape_of_job
from fitcalc.memory import GIB
from fitcalc.plan import per_gpu_memory_gib
from fitcalc.presets import PUBLISHED_FIGURES
from fitcalc.quant import GPTQ_AWQ_BITS
from fitcalc.throughput import model_flops_per_token
from llm.serving.comm import GpuLink
from llm.serving.physics import Hardware, ServingConstants
from llm.serving.single_stream import StreamFit

# Test figures of an H100-like card (datasheet numbers, chosen for easy arithmetic).
H100_LIKE = LlmGpu(
    Hardware(
        memory_gib=80.0,
        bandwidth_gbs=3350.0,
        tensor_tflops={"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9},
        hardware_class="hopper",
    )
)
MODEL = LlmModel(ServingConstants(), StreamFit({"llama.cpp": 0.7}, {"llama.cpp": 0.25}, {"llama.cpp": 10}))


def _half_unit(printed: str) -> float:
    """Half a unit of the last printed digit: '8.03' -> 0.005, '671' -> 0.5."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return 0.5 * 10**-decimals


# --- presets ----------------------------------------------------------------------------------


def test_at_least_30_llm_presets_cover_the_families_the_issue_names() -> None:
    llms = [spec for spec in PRESETS.values() if spec.kind == "decoder"]
    assert len(llms) >= 30
    slugs = set(PRESETS)
    for needed in (
        "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
        "qwen2.5-7b", "qwen2.5-72b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b",
        "deepseek-v3", "deepseek-r1", "mixtral-8x7b", "mixtral-8x22b", "gemma-2-9b", "gemma-3-1b",
        "mistral-7b", "phi-3-mini", "phi-4", "gpt-oss-20b", "gpt-oss-120b",
    ):  # fmt: skip
        assert needed in slugs, needed
    assert sum(1 for spec in llms if spec.is_moe) >= 8


@pytest.mark.parametrize("slug", sorted(PUBLISHED_FIGURES))
def test_parameter_count_from_the_config_matches_the_published_figure(slug: str) -> None:
    spec = PRESETS[slug]
    published = PUBLISHED_FIGURES[slug]
    # Cards print 3 significant figures (or fewer); allow half a unit of the last digit or 0.1%.
    tolerance = max(_half_unit(published["params"]), float(published["params"]) * 0.001)
    assert abs(spec.params / 1e9 - float(published["params"])) <= tolerance + 1e-9, (spec.params, published)
    if "active" in published:
        active = spec.compute_params
        if slug.startswith("gpt-oss"):
            active -= spec.vocab * spec.hidden  # OpenAI's card leaves the input embedding out of "active"
        # Publishers round active counts down (Qwen3-30B-A3B 3.35 -> "3.3", DeepSeek 37.55 -> "37").
        assert active / 1e9 == pytest.approx(float(published["active"]), rel=0.02)
    # Every preset names its config.json and the published figure, as readable citations.
    titles = [citation.title for citation in spec.citations]
    assert titles[0].endswith("config.json") and spec.citations[0].url.endswith("/config.json")
    assert published["text"] in titles and all(c.date and c.publisher for c in spec.citations)


def test_deepseek_v3_count_by_hand() -> None:
    # MLA attention, 3 dense layers, 58 MoE layers of 256 routed + 1 shared expert (config.json).
    h, heads = 7168, 128
    attention = (h * 1536 + 1536 + 1536 * heads * 192) + (h * 576 + 512 + 512 * heads * 256) + heads * 128 * h
    expert = 3 * h * 2048
    moe = 257 * expert + h * 256 + 256
    total = 61 * (attention + 2 * h) + 3 * 3 * h * 18432 + 58 * moe + 2 * 129280 * h + h
    spec = PRESETS["deepseek-v3"]
    assert spec.params == total
    assert spec.active_params == total - 58 * 248 * expert
    assert spec.kv_values_per_token == 512 + 64 and spec.kv_shards == 1
    assert spec.native_precision == "fp8"


# --- mixtures of experts: memory from total parameters, compute from active ones ---------------


def test_moe_memory_uses_every_expert_and_compute_only_the_active_ones() -> None:
    mixtral = PRESETS["mixtral-8x7b"]
    breakdown = memory_estimate(model=mixtral, mode="inference", precision="bf16")
    assert breakdown.weights_gib * GIB == 2 * mixtral.params  # 46.7B x 2 bytes: all 8 experts in memory
    assert mixtral.params / 1e9 == pytest.approx(46.7, abs=0.05)
    flops = model_flops_per_token(model=mixtral, context=1, training=False)
    assert flops == pytest.approx(2 * mixtral.active_params + 2 * 32 * 1 * 32 * 128)
    assert mixtral.active_params / 1e9 == pytest.approx(12.9, abs=0.05)


def test_moe_one_stream_reads_only_the_active_experts() -> None:
    spec = PRESETS["qwen3-30b-a3b"]
    one = memory_estimate(model=spec, mode="inference", precision="bf16", batch=1, context=1024)
    shape = llm_shape_of_job(model=spec, breakdown=one)
    assert shape is not None and shape.model.active_params_b == pytest.approx(spec.active_params / 1e9)
    rate = llm_rate(gpu=H100_LIKE, shape=shape, mode="single", count=1, input_len=512, output_len=512, users=None,
                    model=MODEL)  # fmt: skip
    assert rate is not None
    # The shared weights and the token's experts (k of E of the routed ones), and the KV cache at
    # the average context (the prompt plus half the output), at 0.7 of the bandwidth, plus 0.25 ms.
    routed = (spec.params - spec.active_params) / (1 - spec.experts_active / spec.experts)
    touched = (spec.params - routed + routed * spec.experts_active / spec.experts) * shape.bytes_per_weight
    kv = one.kv_cache_gib * GIB / 1024 * 768
    assert rate.per_s == pytest.approx(1 / ((touched + kv) / (0.7 * 3350e9) + 0.25e-3), rel=0.01)
    # A dense model of the same total size reads all of it: the MoE streams several times as fast.
    dense = 1 / (one.weights_gib * GIB / (0.7 * 3350e9) + 0.25e-3)
    assert rate.per_s > 3 * dense


# --- quantisation formats and the KV cache ------------------------------------------------------


def test_weight_formats_cost_their_real_bytes_per_weight() -> None:
    spec = PRESETS["llama-3.1-8b"]
    embedding = 2 * 128256 * 4096
    q4 = memory_estimate(model=spec, mode="inference", precision="q4_k_m")
    # llama.cpp's own table: Llama 3.1 8B at Q4_K_M is 4.8944 bits per weight, 4.58 GiB.
    assert q4.weights_gib * GIB == pytest.approx(spec.params * 4.8944 / 8)
    assert q4.weights_gib == pytest.approx(4.58, abs=0.01)
    q8 = memory_estimate(model=spec, mode="inference", precision="q8_0")
    assert q8.weights_gib == pytest.approx(7.95, abs=0.01)  # same table: 7.95 GiB
    gptq = memory_estimate(model=spec, mode="inference", precision="gptq")
    assert GPTQ_AWQ_BITS == 4 + 16 / 128 + 4 / 128
    assert gptq.weights_gib * GIB == pytest.approx((spec.params - embedding) * GPTQ_AWQ_BITS / 8 + embedding * 2)
    awq = memory_estimate(model=spec, mode="inference", precision="awq")
    assert awq.weights_gib == gptq.weights_gib
    fp8 = memory_estimate(model=spec, mode="inference", precision="fp8")
    assert fp8.weights_gib * GIB == pytest.approx(spec.params - embedding + 2 * embedding)


def test_mxfp4_quantises_the_experts_of_gpt_oss_and_keeps_the_rest_in_bf16() -> None:
    spec = PRESETS["gpt-oss-20b"]
    breakdown = memory_estimate(model=spec, mode="inference")  # the release format is the default
    assert breakdown.precision.value == "mxfp4"
    expected = spec.expert_params * 4.25 / 8 + (spec.params - spec.expert_params) * 2
    assert breakdown.weights_gib * GIB == pytest.approx(expected)
    # OpenAI's model card: the 20b checkpoint is 12.8 GiB.
    assert breakdown.weights_gib == pytest.approx(12.8, abs=0.1)


def test_context_users_and_kv_precision_drive_the_kv_cache() -> None:
    spec = PRESETS["llama-3.1-70b"]
    base = memory_estimate(model=spec, mode="inference", context=4096, batch=1)
    assert base.kv_cache_gib * GIB == 2 * 80 * 8 * 128 * 4096 * 2
    assert memory_estimate(model=spec, mode="inference", context=8192, batch=1).kv_cache_gib == pytest.approx(
        2 * base.kv_cache_gib
    )
    assert memory_estimate(model=spec, mode="inference", context=4096, batch=16).kv_cache_gib == pytest.approx(
        16 * base.kv_cache_gib
    )
    fp8 = memory_estimate(model=spec, mode="inference", context=4096, batch=1, kv_cache_precision="fp8")
    assert fp8.kv_cache_gib == pytest.approx(base.kv_cache_gib / 2)
    q4 = memory_estimate(model=spec, mode="inference", context=4096, batch=1, kv_cache_precision="q4_0")
    assert q4.kv_cache_gib == pytest.approx(base.kv_cache_gib * (18 / 32) / 2)


def test_sliding_window_layers_stop_growing_their_cache() -> None:
    spec = PRESETS["gpt-oss-120b"]
    breakdown = memory_estimate(model=spec, mode="inference", context=131072, batch=1)
    per_token_layer = 2 * 8 * 64 * 2
    assert breakdown.kv_cache_gib * GIB == per_token_layer * (18 * 131072 + 18 * 128)


def test_tensor_parallelism_splits_the_kv_cache_by_head_but_not_mla() -> None:
    llama = memory_estimate(model=PRESETS["llama-3.1-70b"], mode="inference", context=8192, batch=32)
    two = per_gpu_memory_gib(breakdown=llama, count=2)
    expected = llama.sharded_gib / 2 + llama.kv_cache_gib / 2 + llama.activations_gib
    expected += 0.1 * (llama.kv_cache_gib / 2 + llama.activations_gib) + 1.0
    assert two == pytest.approx(expected)
    deepseek = memory_estimate(model=PRESETS["deepseek-v3"], mode="inference", context=8192, batch=32)
    eight = per_gpu_memory_gib(breakdown=deepseek, count=8)
    assert eight > deepseek.kv_cache_gib + deepseek.sharded_gib / 8


# --- batched serving ----------------------------------------------------------------------------


def test_batched_serving_shares_each_weight_read_among_the_users() -> None:
    spec = PRESETS["llama-3-70b"]
    breakdown = memory_estimate(model=spec, mode="inference", precision="fp8", batch=1, context=2048)
    shape = llm_shape_of_job(model=spec, breakdown=breakdown)
    assert shape is not None
    # Two cards on NVLink: the weights and 32 users' caches fit in a tensor-parallel pair.
    fabric = GpuLink(pcie_gbs=63.0, fabric_gbs=900.0, fabric_gpus=8, fabric_link="nvlink")
    gpu = LlmGpu(H100_LIKE.hardware, link=fabric, vendor="nvidia")
    common = {"gpu": gpu, "shape": shape, "count": 2, "input_len": 1024, "output_len": 1024, "model": MODEL}
    single = llm_rate(mode="single", users=None, **common)  # type: ignore[arg-type]
    batched = llm_rate(mode="batched", users=32, **common)  # type: ignore[arg-type]
    assert single is not None and batched is not None
    assert (batched.batch, batched.group, batched.replicas) == (32, 2, 1)
    # 32 users share each step's read of the 70.6 GB of FP8 weights, and tensor parallelism adds the
    # two cards' bandwidths where one stream split by layers runs at one card's: at most 32 x 2 as fast.
    assert 16 < batched.per_s / single.per_s < 64
    # One stream: 72.6 GB of FP8 weights (16-bit embeddings) read per token at 0.7 of 3.35 TB/s,
    # plus 0.25 ms a step: about 32 tokens/s.
    assert 25 < single.per_s < 35


# --- ranking ------------------------------------------------------------------------------------


def test_gpus_without_throughput_or_price_rank_after_those_with_both() -> None:
    # The defect: a priced, measured GPU whose plan ran over 24 h sorted below every GPU with an
    # unknown throughput or no price, because unknowns never count as "over the limit".
    breakdown = memory_estimate(model=PRESETS["llama-3-70b"], mode="inference", precision="bf16", batch=1)
    gpus = [
        GpuFacts(slug="unknown-speed", name="A unknown speed", memory_gib=96, price_per_gpu_hour=1.0),
        GpuFacts(slug="unpriced", name="B unpriced", memory_gib=80, throughput_per_s=50.0),
        GpuFacts(slug="bare", name="C bare", memory_gib=80),
        GpuFacts(slug="slow-priced", name="D priced", memory_gib=80, throughput_per_s=20.0, price_per_gpu_hour=2.0),
    ]
    ranked = [plan.gpu.slug for plan in fit_plan(breakdown=breakdown, gpus=gpus, work_units=1e8)]
    assert ranked[0] == "slow-priced"
    assert ranked[-1] == "bare"
    assert set(ranked[1:3]) == {"unknown-speed", "unpriced"}


def test_complete_rows_rank_by_cost_per_unit_of_work_even_without_work_given() -> None:
    breakdown = memory_estimate(model=PRESETS["llama-3.1-8b"], mode="inference", batch=1)
    gpus = [
        GpuFacts(slug="dear", name="Dear", memory_gib=80, throughput_per_s=100.0, price_per_gpu_hour=3.0),
        GpuFacts(
            slug="cheap", name="Cheap", memory_gib=24, throughput_per_s=50.0, price_per_gpu_hour=float(Decimal("0.5"))
        ),
    ]
    assert [plan.gpu.slug for plan in fit_plan(breakdown=breakdown, gpus=gpus)] == ["cheap", "dear"]
