"""Model shapes the estimate needs, the size classes the use cases offer, bytes per weight.

Shapes are copied from each model's published configuration (Hugging Face ``config.json``,
or the paper's table); every entry names its source. Parameters are in billions.
DeepSeek-R1 caches a compressed latent (multi-head latent attention: 512 + 64 values per token
and layer) instead of per-head keys and values; it is written as one "KV head" of 288 values
so that 2 x kv_heads x head_dim = 576.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelShape:
    slug: str
    name: str
    total_params_b: float
    active_params_b: float
    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    source: str
    heads: int = 0  # attention (query) heads; 0 where the estimate has not needed them
    experts: int = 0  # routed experts of a mixture-of-experts layer (0: dense)
    active_experts: int = 0  # routed experts each token uses
    # The width a query head attends over in decode and in prefill, where it is not head_dim
    # (multi-head latent attention: physics.attention_width); (0, 0): head_dim in both.
    attention_head_width: tuple[int, int] = (0, 0)
    # The 8-bit stored precisions at which the checkpoint that engines run scales its weights per
    # small block (its config.json's quantization_config; physics.block_scaled_emulated). FP4
    # formats always do, and have their own rule (physics.fp4_dequantised).
    # DeepSeek-R1's FP8 is its own checkpoint, 128 x 128 blocks; Qwen3-235B's FP8 rows ran NVIDIA's
    # ModelOpt checkpoint, one scale per tensor (llm/data/trtllm/v1.1/perf-overview.md, "FP8 Models").
    block_scaled: tuple[str, ...] = ()
    # The weight formats the model's published checkpoints come in, where that is one family only
    # (gpt-oss: OpenAI released its experts in MXFP4 alone); empty: any format a GPU runs best.
    # "The best precision each GPU supports" picks among these (llm.question).
    published_formats: tuple[str, ...] = ()
    # Attention over the last ``sliding_window`` tokens only, on ``sliding_layers`` of the layers
    # (gpt-oss alternates 128-token windows with full attention): those layers keep at most the
    # window's keys and values (physics.cached_layer_tokens).
    sliding_window: int = 0
    sliding_layers: int = 0
    # The activations its FP4 checkpoint's matrices take on a GPU with FP4 matrix units, where not
    # 4-bit: gpt-oss's MXFP4 experts run with MXFP8 activations, at the FP8 rate (TensorRT-LLM's
    # default there, W4A8_MXFP4_MXFP8: ModelConfig.get_mxfp4_quant_algo; physics.matrix_peak).
    fp4_activations: str = ""

    @property
    def is_moe(self) -> bool:
        return self.active_params_b < self.total_params_b


def _shape(slug: str, name: str, params: float, layers: int, hidden: int, kv: int, head: int, source: str,
           active: float | None = None, moe: tuple[int, int, int] = (0, 0, 0),
           head_width: tuple[int, int] = (0, 0), block_scaled: tuple[str, ...] = (),
           published: tuple[str, ...] = (), window: tuple[int, int] = (0, 0),
           fp4_activations: str = "") -> ModelShape:  # fmt: skip
    """``moe``: (attention heads, routed experts, experts per token) of a mixture of experts;
    ``head_width``: what a query head attends over in decode and in prefill, where not ``head``;
    ``block_scaled``: the precisions whose checkpoint scales weights per block; ``published``: the
    only formats its checkpoints come in; ``window``: (tokens, layers) of sliding-window attention."""
    return ModelShape(slug, name, params, active if active is not None else params, layers, hidden, kv, head, source,
                      *moe, head_width, block_scaled, published, *window, fp4_activations)  # fmt: skip


_LLAMA1 = "https://arxiv.org/abs/2302.13971 (LLaMA paper, Table 2)"
MODEL_SHAPES: dict[str, ModelShape] = {
    s.slug: s
    for s in (
        _shape("llama-1-7b", "LLaMA 7B", 6.7, 32, 4096, 32, 128, _LLAMA1),
        _shape("llama-1-13b", "LLaMA 13B", 13.0, 40, 5120, 40, 128, _LLAMA1),
        _shape("llama-1-30b", "LLaMA 33B", 32.5, 60, 6656, 52, 128, _LLAMA1),
        _shape("llama-1-65b", "LLaMA 65B", 65.2, 80, 8192, 64, 128, _LLAMA1),
        _shape("llama-2-7b", "Llama 2 7B", 6.74, 32, 4096, 32, 128,
               "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
        _shape("llama-2-13b", "Llama 2 13B", 13.02, 40, 5120, 40, 128,
               "https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json"),
        _shape("llama-2-70b", "Llama 2 70B", 68.98, 80, 8192, 8, 128,
               "https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json"),
        _shape("llama-3-8b", "Llama 3 8B", 8.03, 32, 4096, 8, 128,
               "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"),
        _shape("llama-3-70b", "Llama 3 70B", 70.55, 80, 8192, 8, 128,
               "https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json"),
        _shape("llama-3.1-8b", "Llama 3.1 8B", 8.03, 32, 4096, 8, 128,
               "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"),
        _shape("llama-3.1-70b", "Llama 3.1 70B", 70.55, 80, 8192, 8, 128,
               "https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json"),
        _shape("llama-3.3-70b", "Llama 3.3 70B", 70.55, 80, 8192, 8, 128,
               "https://huggingface.co/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json"),
        _shape("llama-3.1-405b", "Llama 3.1 405B", 405.85, 126, 16384, 8, 128,
               "https://huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json"),
        _shape("llama-3.2-3b", "Llama 3.2 3B", 3.21, 28, 3072, 8, 128,
               "https://huggingface.co/meta-llama/Llama-3.2-3B/blob/main/config.json"),
        _shape("qwen2.5-14b", "DeepSeek-R1-Distill-Qwen-14B (Qwen2.5 14B)", 14.77, 48, 5120, 8, 128,
               "https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Qwen-14B/blob/main/config.json"),
        _shape("gpt-oss-20b", "gpt-oss-20b", 20.91, 24, 2880, 8, 64,
               "https://arxiv.org/abs/2508.10925 (gpt-oss model card: 20.9B total, 3.6B active, 32 experts, 4 "
               "per token; the experts released in MXFP4 only; config.json: a 128-token sliding window on every "
               "other layer, 12 of 24)", active=3.61, moe=(64, 32, 4), published=("fp4",), window=(128, 12),
               fp4_activations="fp8"),
        _shape("gpt-oss-120b", "gpt-oss-120b", 116.83, 36, 2880, 8, 64,
               "https://arxiv.org/abs/2508.10925 (gpt-oss model card: 116.8B total, 5.1B active, 128 experts, 4 "
               "per token; the experts released in MXFP4 only; config.json: a 128-token sliding window on every "
               "other layer, 18 of 36)", active=5.13, moe=(64, 128, 4), published=("fp4",), window=(128, 18),
               fp4_activations="fp8"),
        _shape("mixtral-8x7b", "Mixtral 8x7B", 46.7, 32, 4096, 8, 128,
               "https://arxiv.org/abs/2401.04088 (Mixtral paper: 47B total, 13B active, 8 experts, 2 per token)",
               active=12.9, moe=(32, 8, 2)),
        _shape("deepseek-r1", "DeepSeek-R1 (671B MoE)", 671.0, 61, 7168, 1, 288,
               "https://huggingface.co/deepseek-ai/DeepSeek-R1/blob/main/config.json (671B total, 37B active, MLA; "
               "128 heads, 256 routed experts, 8 per token; kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim "
               "128, v_head_dim 128; its FP8 weights scaled per 128 x 128 block, quantization_config weight_block_size)",
               active=37.0, moe=(128, 256, 8), head_width=(544, 160), block_scaled=("fp8",)),
        _shape("qwen3-235b-a22b", "Qwen3-235B-A22B (MoE)", 235.0, 94, 4096, 4, 128,
               "https://huggingface.co/Qwen/Qwen3-235B-A22B/blob/main/config.json (94 layers, hidden 4096, 64 query "
               "and 4 KV heads of 128, 128 experts, 8 per token; the model card: 235B total, 22B active)",
               active=22.0, moe=(64, 128, 8)),
    )
}  # fmt: skip


@dataclass(frozen=True)
class SizeClass:
    """A model size offered by the LLM use cases: the model the estimate uses, and the models
    whose measurements count for the class."""

    slug: str
    label: str
    reference: str
    members: tuple[str, ...]


SIZE_CLASSES: dict[str, SizeClass] = {
    c.slug: c
    for c in (
        SizeClass("3b", "3B class (Llama 3.2 3B)", "llama-3.2-3b", ("llama-3.2-3b",)),
        SizeClass(
            "8b",
            "8B class (Llama 3.1 8B; 7B-8B dense models)",
            "llama-3.1-8b",
            ("llama-3.1-8b", "llama-3-8b", "llama-2-7b", "llama-1-7b"),
        ),
        SizeClass(
            "14b", "14B class (13B-14B dense models)", "qwen2.5-14b", ("qwen2.5-14b", "llama-2-13b", "llama-1-13b")
        ),
        SizeClass("20b-moe", "gpt-oss-20b (MoE, 3.6B active)", "gpt-oss-20b", ("gpt-oss-20b",)),
        SizeClass("30b", "33B class (LLaMA 33B)", "llama-1-30b", ("llama-1-30b",)),
        SizeClass(
            "70b",
            "70B class (Llama 3.1 70B; 65B-70B dense models)",
            "llama-3.1-70b",
            ("llama-3.1-70b", "llama-3.3-70b", "llama-3-70b", "llama-2-70b", "llama-1-65b"),
        ),
        SizeClass("mixtral", "Mixtral 8x7B (MoE, 13B active)", "mixtral-8x7b", ("mixtral-8x7b",)),
        SizeClass("120b-moe", "gpt-oss-120b (MoE, 5.1B active)", "gpt-oss-120b", ("gpt-oss-120b",)),
        SizeClass("405b", "405B class (Llama 3.1 405B)", "llama-3.1-405b", ("llama-3.1-405b",)),
        SizeClass("deepseek-r1", "DeepSeek-R1 (671B MoE, 37B active)", "deepseek-r1", ("deepseek-r1",)),
    )
}

# Bytes per weight of the stored precisions, scales included: FP4 (NVFP4: an FP8 scale per 16
# values) and INT4 (GGUF Q4_0: an FP16 scale per 32) are 4.5 bits.
BYTES_PER_WEIGHT: dict[str, float] = {
    "fp32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5625,
    "fp4": 0.5625,
}
# GGUF types of the llama.cpp tables. Q4_K_M: 4.58 GiB for Llama 3 8B and 39.59 GiB for 70B in
# XiongjieDai's VRAM table = 0.61 bytes per weight; Q8_0 is 8.5 bits.
GGUF_BYTES_PER_WEIGHT: dict[str, float] = {"F16": 2.0, "Q8_0": 1.0625, "Q4_0": 0.5625, "Q4_K_M": 0.61}


def bytes_per_weight(*, precision: str, quant: str = "") -> float:
    """Bytes per weight of a GGUF type when given, else of the stored precision."""
    if quant and quant.upper() in GGUF_BYTES_PER_WEIGHT:
        return GGUF_BYTES_PER_WEIGHT[quant.upper()]
    return BYTES_PER_WEIGHT[precision]


def model_size_class(model_slug: str) -> str | None:
    """The size class a measured model belongs to, or None."""
    for size in SIZE_CLASSES.values():
        if model_slug in size.members:
            return size.slug
    return None
