"""The memory estimator against the seeds' figures and published memory figures. No database."""

from __future__ import annotations

import math

import pytest

from fitcalc import (
    GIB,
    PRESETS,
    FitInputError,
    LoraTargets,
    Mode,
    Precision,
    lora_trainable_params,
    memory_estimate,
    model_spec_custom,
    model_spec_from_preset,
)
from fitcalc.memory import CUDA_CONTEXT_GIB, FRAGMENTATION_FACTOR

GB = 10**9


def llama_style_param_count(
    *, hidden: int, intermediate: int, layers: int, heads: int, kv_heads: int, head_dim: int, vocab: int, qkv_bias: bool
) -> int:
    """Parameters implied by a Llama-style config.json: attention (q, k, v, o), gated MLP, two
    RMSNorms per layer, untied input embedding and output head, final norm."""
    q = hidden * heads * head_dim + (heads * head_dim if qkv_bias else 0)
    kv = hidden * kv_heads * head_dim + (kv_heads * head_dim if qkv_bias else 0)
    o = heads * head_dim * hidden
    per_layer = q + 2 * kv + o + 3 * hidden * intermediate + 2 * hidden
    return layers * per_layer + 2 * vocab * hidden + hidden


# --- presets: published configuration numbers -------------------------------------------------


@pytest.mark.parametrize(
    ("slug", "published_billions", "qkv_bias"),
    [
        ("llama-3-8b", 8.03, False),  # https://huggingface.co/meta-llama/Meta-Llama-3-8B "8.03B params"
        ("llama-3-70b", 70.6, False),  # https://huggingface.co/meta-llama/Meta-Llama-3-70B "70.6B params"
        ("qwen2.5-7b", 7.61, True),  # https://huggingface.co/Qwen/Qwen2.5-7B "Number of Parameters: 7.61B"
        ("mistral-7b", 7.24, False),  # https://huggingface.co/mistralai/Mistral-7B-v0.1 "7.24B params"
    ],
)
def test_decoder_preset_params_follow_from_their_config(slug: str, published_billions: float, qkv_bias: bool) -> None:
    spec = model_spec_from_preset(preset=slug)
    assert spec.hidden and spec.intermediate and spec.layers and spec.heads and spec.kv_heads and spec.head_dim
    assert spec.vocab
    derived = llama_style_param_count(
        hidden=spec.hidden,
        intermediate=spec.intermediate,
        layers=spec.layers,
        heads=spec.heads,
        kv_heads=spec.kv_heads,
        head_dim=spec.head_dim,
        vocab=spec.vocab,
        qkv_bias=qkv_bias,
    )
    assert spec.params == derived
    # Model cards print 3 significant figures.
    assert spec.params / 1e9 == pytest.approx(published_billions, rel=0.001)
    assert spec.hidden == spec.heads * spec.head_dim


def test_preset_shapes_match_the_published_configs() -> None:
    llama8 = PRESETS["llama-3-8b"]
    assert (llama8.layers, llama8.hidden, llama8.heads, llama8.kv_heads, llama8.head_dim, llama8.vocab) == (
        32,
        4096,
        32,
        8,
        128,
        128256,
    )
    llama70 = PRESETS["llama-3-70b"]
    assert (llama70.layers, llama70.hidden, llama70.heads, llama70.kv_heads) == (80, 8192, 64, 8)
    qwen = PRESETS["qwen2.5-7b"]
    assert (qwen.layers, qwen.hidden, qwen.heads, qwen.kv_heads, qwen.head_dim) == (28, 3584, 28, 4, 128)
    mistral = PRESETS["mistral-7b"]
    assert (mistral.layers, mistral.hidden, mistral.heads, mistral.kv_heads) == (32, 4096, 32, 8)
    bert = PRESETS["bert-large"]
    assert (bert.params, bert.layers, bert.hidden, bert.heads, bert.kind) == (340_000_000, 24, 1024, 16, "encoder")
    assert PRESETS["resnet-50"].params == 25_557_032 and PRESETS["resnet-50"].kind == "cnn"
    assert PRESETS["sdxl"].params == 3_417_000_000 and PRESETS["sdxl"].kind == "diffusion"
    for spec in PRESETS.values():
        assert spec.sources and all(url.startswith("https://") for url in spec.sources)


def test_preset_lookup_is_case_insensitive() -> None:
    assert model_spec_from_preset(preset=" Llama-3-8B ") is PRESETS["llama-3-8b"]


# --- seed figures -----------------------------------------------------------------------------


def test_gpu_notes_seven_billion_params_at_fp32_need_26_08_gib_of_weights() -> None:
    # Seed 001: "全精度加载7B模型参数, 需要显存约为26.08G": 7e9 x 4 bytes / 2^30.
    breakdown = memory_estimate(model=model_spec_custom(params=7e9), mode="inference", precision="fp32")
    assert breakdown.weights_gib == pytest.approx(7e9 * 4 / 2**30)
    assert round(breakdown.weights_gib, 2) == 26.08
    assert breakdown.total_gib > 26.08


@pytest.mark.parametrize("mode", ["lora", "full_finetune", "train"])
def test_gpu_notes_fine_tuning_seven_billion_in_16_bit_needs_at_least_14_gb(mode: str) -> None:
    # Seed 001: "对于微调,则需要至少需要14GB显存": the 16-bit weights alone are 7e9 x 2 bytes.
    breakdown = memory_estimate(model=model_spec_custom(params=7e9), mode=mode, precision="bf16")
    assert breakdown.weights_gib * GIB >= 14 * GB
    assert breakdown.total_bytes > 14 * GB
    if mode != "lora":
        assert breakdown.weights_gib * GIB == pytest.approx(14 * GB)


def test_qlora_brings_a_seven_billion_fine_tune_under_14_gb() -> None:
    breakdown = memory_estimate(model=model_spec_custom(params=7e9), mode="qlora")
    assert breakdown.precision is Precision.INT4
    assert breakdown.total_bytes < 14 * GB


# --- published memory figures -----------------------------------------------------------------


def test_llama_3_8b_bf16_weights_match_the_published_checkpoint_size() -> None:
    # https://huggingface.co/meta-llama/Meta-Llama-3-8B/tree/main: the bf16 safetensors shards are
    # 4.98 + 5.00 + 4.92 + 1.17 = 16.07 GB; 8.03e9 params x 2 bytes = 16.06 GB.
    breakdown = memory_estimate(model=PRESETS["llama-3-8b"], mode="inference", precision="bf16")
    weights_bytes = breakdown.weights_gib * GIB
    assert weights_bytes == pytest.approx(16.06 * GB, rel=0.005)
    assert weights_bytes == pytest.approx(16.07 * GB, rel=0.005)


def test_llama_3_70b_kv_cache_at_8k_context_is_2_5_gib() -> None:
    # From the published config (80 layers, 8 KV heads, head dim 128):
    # 2 x 80 x 8 x 128 x 8192 tokens x 1 sequence x 2 bytes = 2,684,354,560 bytes = 2.5 GiB.
    breakdown = memory_estimate(model=PRESETS["llama-3-70b"], mode="inference", context=8192, batch=1)
    assert breakdown.kv_cache_gib * GIB == 2 * 80 * 8 * 128 * 8192 * 2
    assert breakdown.kv_cache_gib == pytest.approx(2.5)
    doubled = memory_estimate(model=PRESETS["llama-3-70b"], mode="inference", context=8192, batch=2)
    assert doubled.kv_cache_gib == pytest.approx(5.0)
    int8_cache = memory_estimate(
        model=PRESETS["llama-3-70b"], mode="inference", context=8192, batch=1, kv_cache_precision="int8"
    )
    assert int8_cache.kv_cache_gib == pytest.approx(1.25)


def llama_65b():
    # LLaMA-65B: 65.2B parameters, 80 layers, dim 8192, 64 heads (Touvron et al. 2023, arXiv:2302.13971,
    # Table 2); MLP width 22016 and vocab 32000 from its Hugging Face config. The count below is the
    # one those shapes imply (65.29B).
    return model_spec_custom(
        params=65_285_660_672,
        layers=80,
        hidden=8192,
        heads=64,
        kv_heads=64,
        head_dim=128,
        intermediate=22016,
        vocab=32000,
        name="LLaMA 65B",
    )


def test_qlora_paper_65b_fine_tunes_on_one_48_gb_gpu() -> None:
    # QLoRA paper (Dettmers et al. 2023, arXiv:2305.14314, abstract): QLoRA "reduces memory usage enough
    # to finetune a 65B parameter model on a single 48GB GPU". Recipe as in the paper and its
    # scripts/finetune_guanaco_65b.sh: NF4 with double quantisation, LoRA r=64 on all linear layers,
    # bf16, gradient checkpointing. We check the smallest step (batch 1, 512 tokens); the script's
    # batch of 4 relies on paged optimizers to absorb the peaks.
    breakdown = memory_estimate(
        model=llama_65b(), mode="qlora", context=512, batch=1, lora_rank=64, lora_targets="all_linear"
    )
    assert breakdown.activation_checkpointing
    assert breakdown.total_bytes <= 48 * GB
    # The 4-bit base alone is ~33 GB: the estimate must not fit a 24 GB card either.
    assert breakdown.weights_gib * GIB > 33 * GB
    assert breakdown.total_bytes > 40 * GB


def test_qlora_paper_full_16_bit_fine_tune_of_65b_needs_more_than_780_gb() -> None:
    # QLoRA paper, introduction: "regular 16-bit finetuning of a LLaMA 65B parameter model requires
    # more than 780 GB of GPU memory". Our mixed-precision Adam (16 bytes/param) gives ~1.04 TB.
    breakdown = memory_estimate(model=llama_65b(), mode="full_finetune", precision="bf16", context=512)
    assert breakdown.total_bytes > 780 * GB
    assert breakdown.total_bytes < 1.5 * 780 * GB


def test_zero_paper_mixed_precision_adam_needs_16_bytes_per_param() -> None:
    # ZeRO paper (Rajbhandari et al. 2019, arXiv:1910.02054, section 3.1): mixed-precision Adam keeps
    # 2 + 2 + 12 = 16 bytes per parameter; "a GPT-2 model with 1.5B parameters ... requires at least
    # 24 GB of memory" for its model states.
    breakdown = memory_estimate(model=model_spec_custom(params=1.5e9), mode="full_finetune", precision="fp16")
    model_states = (breakdown.weights_gib + breakdown.gradients_gib + breakdown.optimizer_gib) * GIB
    assert model_states == pytest.approx(24 * GB)
    assert breakdown.weights_gib * GIB == pytest.approx(3 * GB)
    assert breakdown.gradients_gib * GIB == pytest.approx(3 * GB)
    assert breakdown.optimizer_gib * GIB == pytest.approx(18 * GB)


def gpt3_175b():
    # GPT-3 175B: 96 layers, d_model 12288, 96 heads, d_head 128 (Brown et al. 2020, arXiv:2005.14165,
    # Table 2.1).
    return model_spec_custom(params=175e9, layers=96, hidden=12288, heads=96, kv_heads=96, head_dim=128)


def test_lora_paper_gpt3_checkpoint_shrinks_from_350_gb_to_35_mb() -> None:
    # LoRA paper (Hu et al. 2021, arXiv:2106.09685, section 4.2): on GPT-3 175B, "with r = 4 and only
    # the query and value projection matrices being adapted, the checkpoint size is reduced by roughly
    # 10,000x (from 350GB to 35MB)".
    spec = gpt3_175b()
    trainable = lora_trainable_params(model=spec, rank=4, targets=LoraTargets.QV)
    assert trainable == 96 * 2 * 4 * (12288 + 12288)
    assert trainable * 2 == pytest.approx(35e6, rel=0.10)
    breakdown = memory_estimate(model=spec, mode="lora", precision="fp16", lora_rank=4, lora_targets="qv")
    assert breakdown.trainable_params == trainable
    assert breakdown.weights_gib * GIB == pytest.approx(350 * GB, rel=0.01)


# --- the formulas -----------------------------------------------------------------------------


def test_training_activations_follow_korthikanti() -> None:
    spec = PRESETS["llama-3-8b"]
    s, b, h, a, layers, vocab = 2048, 2, 4096, 32, 32, 128256
    per_layer = s * b * h * (34 + 5 * a * s / h)
    logits = 4 * s * b * vocab
    full = memory_estimate(model=spec, mode="train", context=s, batch=b)
    assert not full.activation_checkpointing
    assert full.activations_gib * GIB == pytest.approx(layers * per_layer + logits)
    checkpointed = memory_estimate(model=spec, mode="train", context=s, batch=b, activation_checkpointing=True)
    assert checkpointed.activations_gib * GIB == pytest.approx(layers * 2 * s * b * h + per_layer + logits)
    flash = memory_estimate(model=spec, mode="train", context=s, batch=b, flash_attention=True)
    assert flash.activations_gib * GIB == pytest.approx(layers * s * b * h * 34 + logits)
    # Fine-tuning recipes checkpoint by default; training at full batch doesn't.
    assert memory_estimate(model=spec, mode="full_finetune", context=s, batch=b).activations_gib == pytest.approx(
        checkpointed.activations_gib
    )


def test_train_and_full_finetune_share_the_16_bytes_per_param_model_states() -> None:
    spec = PRESETS["mistral-7b"]
    train = memory_estimate(model=spec, mode="train")
    finetune = memory_estimate(model=spec, mode="full_finetune")
    for breakdown in (train, finetune):
        states = (breakdown.weights_gib + breakdown.gradients_gib + breakdown.optimizer_gib) * GIB
        assert states == pytest.approx(16 * spec.params)
    assert train.activations_gib > finetune.activations_gib
    fp32 = memory_estimate(model=spec, mode="train", precision="fp32")
    assert fp32.weights_gib * GIB == pytest.approx(4 * spec.params)
    assert (fp32.gradients_gib + fp32.optimizer_gib) * GIB == pytest.approx(12 * spec.params)
    assert fp32.activations_gib == pytest.approx(2 * train.activations_gib)


def test_quantised_weights_keep_embeddings_in_16_bit_and_add_scales() -> None:
    spec = PRESETS["llama-3-8b"]
    embedding = 2 * 128256 * 4096
    int4 = memory_estimate(model=spec, mode="inference", precision="int4")
    assert int4.weights_gib * GIB == pytest.approx((spec.params - embedding) * (0.5 + 0.5 / 8) + embedding * 2)
    int8 = memory_estimate(model=spec, mode="inference", precision="int8")
    assert int8.weights_gib * GIB == pytest.approx((spec.params - embedding) * 1 + embedding * 2)
    qlora = memory_estimate(model=spec, mode="qlora")
    adapters = qlora.trainable_params * 2
    assert qlora.weights_gib * GIB == pytest.approx(
        (spec.params - embedding) * (0.5 + 0.127 / 8) + embedding * 2 + adapters
    )


def test_lora_adapters_cost_12_bytes_per_trainable_param() -> None:
    spec = PRESETS["qwen2.5-7b"]
    base = memory_estimate(model=spec, mode="inference", precision="bf16")
    lora = memory_estimate(model=spec, mode="lora", precision="bf16", lora_rank=8, lora_targets="attention")
    # q and o: r(h + 28*128) each; k and v: r(h + 4*128) each, 28 layers.
    expected = 28 * 8 * (2 * (3584 + 3584) + 2 * (3584 + 512))
    assert lora.trainable_params == expected
    assert (lora.weights_gib - base.weights_gib) * GIB == pytest.approx(2 * expected)
    assert lora.gradients_gib * GIB == pytest.approx(2 * expected)
    assert lora.optimizer_gib * GIB == pytest.approx(8 * expected)


def test_breakdown_is_itemised_and_sums() -> None:
    breakdown = memory_estimate(model=PRESETS["llama-3-8b"], mode="lora", context=4096, batch=2)
    items = (
        breakdown.weights_gib,
        breakdown.kv_cache_gib,
        breakdown.activations_gib,
        breakdown.gradients_gib,
        breakdown.optimizer_gib,
        breakdown.overhead_gib,
    )
    assert breakdown.total_gib == pytest.approx(sum(items))
    assert breakdown.overhead_gib == pytest.approx(
        CUDA_CONTEXT_GIB
        + FRAGMENTATION_FACTOR * (breakdown.activations_gib + breakdown.gradients_gib + breakdown.kv_cache_gib)
    )
    data = breakdown.to_dict()
    for key in ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead", "total"):
        assert isinstance(data[key], float)
    assert data["unit"] == "GiB"
    assert data["mode"] == "lora" and data["precision"] == "bf16"
    assert data["total"] == pytest.approx(breakdown.total_gib, abs=0.001)


def test_inference_total_by_hand() -> None:
    # Llama 3 8B, bf16, 2048 tokens, batch 1, every term written out with the documented constants:
    # 1 GiB CUDA context and 10% fragmentation on the per-step allocations (KV cache, activations).
    params = 8_030_261_248
    weights = params * 2
    kv_cache = 2 * 32 * 8 * 128 * 2048 * 1 * 2
    activations = 2048 * 1 * (4 * 4096 + 2 * 14336) * 2 + 4 * 1 * 128256
    overhead = 1 * GIB + 0.10 * (kv_cache + activations)
    breakdown = memory_estimate(model=PRESETS["llama-3-8b"], mode="inference", context=2048, batch=1)
    assert breakdown.activations_gib * GIB == pytest.approx(activations)
    assert breakdown.total_bytes == pytest.approx(weights + kv_cache + activations + overhead, abs=2)


def test_encoders_and_image_models_keep_no_kv_cache() -> None:
    bert = memory_estimate(model=PRESETS["bert-large"], mode="inference", context=512)
    assert bert.kv_cache_gib == 0
    assert any("no KV cache" in note for note in bert.notes)
    sdxl = memory_estimate(model=PRESETS["sdxl"], mode="inference", precision="fp16")
    assert sdxl.kv_cache_gib == 0 and sdxl.activations_gib == 0
    assert any("not estimated" in note for note in sdxl.notes)
    measured = memory_estimate(
        model=PRESETS["resnet-50"], mode="train", batch=64, activation_gib_per_sample=0.05, precision="fp32"
    )
    assert measured.activations_gib == pytest.approx(3.2)


def test_custom_model_without_shapes_skips_kv_and_says_so() -> None:
    spec = model_spec_custom(params=13e9)
    breakdown = memory_estimate(model=spec, mode="inference", context=4096)
    assert breakdown.kv_cache_gib == 0
    assert any("KV cache not estimated" in note for note in breakdown.notes)
    lora = memory_estimate(model=spec, mode="lora")
    assert lora.trainable_params == round(13e9 * 0.01)


def test_custom_model_derives_missing_shapes() -> None:
    spec = model_spec_custom(params=7e9, layers=32, hidden=4096)
    assert (spec.head_dim, spec.heads, spec.kv_heads) == (128, 32, 32)
    assert spec.intermediate == 4 * 4096 and spec.mlp_matrices == 2
    breakdown = memory_estimate(model=spec, mode="inference", context=1000)
    assert breakdown.kv_cache_gib * GIB == 2 * 32 * 32 * 128 * 1000 * 2
    only_hidden = model_spec_custom(params=7e9, hidden=4096)
    assert only_hidden.layers == round(7e9 / (12 * 4096 * 4096))
    from_heads = model_spec_custom(params=7e9, heads=32, head_dim=128, kv_heads=8)
    assert (from_heads.hidden, from_heads.layers, from_heads.kv_heads) == (4096, 35, 8)
    assert memory_estimate(model=from_heads, mode="inference", context=1000).kv_cache_gib * GIB == (
        2 * 35 * 8 * 128 * 1000 * 2
    )
    from_layers = model_spec_custom(params=7e9, layers=32)
    assert from_layers.hidden == 4224  # sqrt(7e9 / (12 x 32)) = 4270, to the nearest multiple of 128


def test_context_beyond_the_published_maximum_is_noted() -> None:
    breakdown = memory_estimate(model=PRESETS["llama-3-8b"], mode="inference", context=32768)
    assert any("exceeds the model's published maximum" in note for note in breakdown.notes)


def test_modes_and_precisions_accept_enums_and_strings() -> None:
    spec = PRESETS["mistral-7b"]
    assert memory_estimate(model=spec, mode=Mode.INFERENCE, precision=Precision.INT8) == memory_estimate(
        model=spec, mode="INFERENCE", precision="int8"
    )


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"params": -7e9}, "params", "positive"),
        ({"params": 0}, "params", "positive"),
        ({"params": 2e14}, "params", "maximum"),
        ({"params": math.nan}, "params", "finite"),
        ({"params": "7B"}, "params", "number"),
        ({"params": 7e9, "layers": 0}, "layers", "positive"),
        ({"params": 7e9, "heads": 8, "kv_heads": 16, "hidden": 4096}, "kv_heads", "more than"),
        ({"params": 7e9, "kind": "rnn"}, "kind", "decoder"),
    ],
)
def test_impossible_custom_models_are_refused(kwargs: dict, field: str, fragment: str) -> None:
    with pytest.raises(FitInputError) as caught:
        model_spec_custom(**kwargs)
    assert caught.value.field == field
    assert fragment in caught.value.message


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(FitInputError) as caught:
        model_spec_from_preset(preset="gpt-5")
    assert caught.value.field == "model"
    for slug in PRESETS:
        assert slug in caught.value.message
    assert isinstance(caught.value, ValueError)
    assert caught.value.to_dict() == {"field": "model", "detail": caught.value.message}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"mode": "pretrain"}, "mode"),
        ({"mode": "inference", "precision": "fp6"}, "precision"),
        ({"mode": "inference", "context": 0}, "context"),
        ({"mode": "inference", "context": -5}, "context"),
        ({"mode": "inference", "context": 10_000_001}, "context"),
        ({"mode": "inference", "context": 2048.5}, "context"),
        ({"mode": "inference", "batch": 0}, "batch"),
        ({"mode": "inference", "batch": 65_537}, "batch"),
        ({"mode": "inference", "kv_cache_precision": "fp64"}, "kv_cache_precision"),
        ({"mode": "qlora", "precision": "bf16"}, "precision"),
        ({"mode": "full_finetune", "precision": "int4"}, "precision"),
        ({"mode": "train", "precision": "int8"}, "precision"),
        ({"mode": "lora", "lora_rank": 0}, "lora_rank"),
        ({"mode": "lora", "lora_targets": "everything"}, "lora_targets"),
        ({"mode": "train", "activation_gib_per_sample": -1.0}, "activation_gib_per_sample"),
    ],
)
def test_impossible_estimates_are_refused_with_the_field_named(kwargs: dict, field: str) -> None:
    with pytest.raises(FitInputError) as caught:
        memory_estimate(model=PRESETS["llama-3-8b"], **kwargs)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_unknown_mode_message_lists_the_modes() -> None:
    with pytest.raises(FitInputError) as caught:
        memory_estimate(model=PRESETS["llama-3-8b"], mode="pretrain")
    for mode in Mode:
        assert mode.value in caught.value.message
