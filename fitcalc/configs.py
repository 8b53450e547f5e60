"""A model's shapes from its published Hugging Face ``config.json``: parameter count, active
parameters of mixture-of-experts models, KV cache per token. Pure (plain dicts in, ModelSpec out).

The presets (``fitcalc/data/presets.json``) and a model loaded by its Hugging Face id
(:mod:`fitcalc.hub`) both come through :func:`model_spec_from_config`, so a preset is exactly what
loading the same ``config.json`` online would give.

Parameter count
---------------
Counted tensor by tensor from the shapes (``h`` hidden size, ``H`` attention heads, ``K`` KV heads,
``d`` head dim, ``L`` layers, ``V`` vocabulary, ``I`` MLP width):

* embeddings: ``V x h``, and the output head another ``V x h`` unless ``tie_word_embeddings``;
* attention (grouped-query): q ``h x H d``, k and v ``h x K d`` each, o ``H d x h``; biases where the
  architecture has them (Qwen2: q, k, v; gpt-oss: q, k, v, o, plus one "sink" logit per head);
  Qwen3 and Gemma 3 normalise q and k per head (``2 d`` weights);
* attention (DeepSeek's multi-head latent attention, MLA): q down ``h x q_lora`` + norm, q up
  ``q_lora x H (nope + rope)``, kv down ``h x (kv_lora + rope)`` + norm, kv up
  ``kv_lora x H (nope + v)``, o ``H v x h``;
* MLP: gated (gate, up, down) ``3 h I``; a mixture-of-experts layer has ``E`` such experts of width
  ``moe_intermediate_size`` (Mixtral and gpt-oss name it ``intermediate_size``), a router ``h x E``,
  DeepSeek's shared experts and routing bias, gpt-oss's expert and router biases;
* RMSNorm weights: two per layer (four for Gemma 2 and 3) and a final one, ``h`` each.

DeepSeek V3/R1 also ship a multi-token-prediction module (``num_nextn_predict_layers``) used only
for speculative decoding; like the model card's 671B, the count leaves it out.

Active parameters (MoE): the total less the routed experts a token does not use,
``(E - k) x expert size`` per MoE layer.

KV cache per token and layer: ``2 K d`` values for grouped-query attention; MLA caches the
compressed latent and the rotary key, ``kv_lora + rope`` values (as vLLM and SGLang store it), which
tensor parallelism does not split. Layers with sliding-window attention (Gemma 2 and 3, gpt-oss,
named in ``layer_types`` or by the family's published pattern) keep at most ``sliding_window`` tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from fitcalc.errors import FitInputError

#: Families whose tensors the counter knows. Other ``model_type`` values are read as Llama-style
#: decoders (untied unless the config says so, no biases), with a note saying so.
KNOWN_MODEL_TYPES = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "gemma2",
    "gemma3_text",
    "phi3",
    "deepseek_v3",
    "gpt_oss",
)
#: Gemma 3: five sliding-window layers to one global (``sliding_window_pattern`` 6).
GEMMA3_SLIDING_PATTERN = 6

REQUIRED_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


@dataclass(frozen=True)
class ConfigShapes:
    """What :func:`config_shapes` reads from a config.json, counted."""

    model_type: str
    params: int
    active_params: int
    expert_params: int
    embedding_params: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool
    max_context: int | None
    experts: int | None
    experts_active: int | None
    kv_values_per_token_layer: int
    kv_shards: int
    sliding_window: int | None
    sliding_layers: int
    lora_attention_width: int
    lora_mlp_width: int
    latent_attention: bool
    notes: tuple[str, ...]


def _int(config: Mapping[str, Any], key: str, *, default: int | None = None) -> int:
    value = config.get(key, default)
    if value is None:
        raise FitInputError("hf_model", f"config.json has no {key!r}, which the calculator needs")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise FitInputError("hf_model", f"config.json's {key!r} is {value!r}, not a whole number")
    if value != int(value):
        raise FitInputError("hf_model", f"config.json's {key!r} is {value!r}, not a whole number")
    return int(value)


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Multimodal configs (Gemma 3 4B+, Mistral 3) keep the language model under ``text_config``."""
    nested = config.get("text_config")
    if isinstance(nested, Mapping) and "hidden_size" in nested and "hidden_size" not in config:
        return nested
    return config


def _sliding_layers(config: Mapping[str, Any], model_type: str, layers: int) -> tuple[int | None, int]:
    window = config.get("sliding_window")
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        sliding = sum(1 for kind in layer_types if kind == "sliding_attention")
        return (int(window) if sliding and isinstance(window, int) else None), sliding
    if model_type == "gemma2" and isinstance(window, int):
        return window, layers // 2  # Gemma 2 alternates local and global layers, local first
    if model_type == "gemma3_text" and isinstance(window, int):
        pattern = config.get("sliding_window_pattern", GEMMA3_SLIDING_PATTERN)
        pattern = pattern if isinstance(pattern, int) and pattern > 0 else GEMMA3_SLIDING_PATTERN
        return window, layers - layers // pattern
    if model_type == "gpt_oss" and isinstance(window, int):
        return window, (layers + 1) // 2  # gpt-oss alternates, sliding first
    return None, 0


def _checked_config(config: Any) -> tuple[Mapping[str, Any], str]:
    """The language model's config (``text_config`` where nested) and its model type, or
    FitInputError when a key every decoder has is missing."""
    if not isinstance(config, Mapping):
        raise FitInputError("hf_model", "config.json is not a JSON object")
    config = text_config(config)
    for key in REQUIRED_KEYS:
        if key not in config:
            raise FitInputError("hf_model", f"config.json has no {key!r}, which the calculator needs")
    return config, str(config.get("model_type") or "")


@dataclass(frozen=True)
class AttentionShape:
    """One layer's attention: its parameters, KV cache values per token, and LoRA in+out widths."""

    params: int
    kv_values: int
    kv_shards: int
    head_dim: int
    lora_width: int
    latent: bool


def _latent_attention(config: Mapping[str, Any], *, h: int, heads: int) -> AttentionShape:
    """DeepSeek's multi-head latent attention: low-rank queries, one compressed latent for K and V."""
    q_lora = _int(config, "q_lora_rank", default=0)
    kv_lora = _int(config, "kv_lora_rank")
    nope = _int(config, "qk_nope_head_dim")
    rope = _int(config, "qk_rope_head_dim")
    v_dim = _int(config, "v_head_dim")
    q = (h * q_lora + q_lora + q_lora * heads * (nope + rope)) if q_lora else h * heads * (nope + rope)
    lora = (h + heads * (nope + rope)) + (h + kv_lora + rope) + (kv_lora + heads * (nope + v_dim))
    return AttentionShape(
        params=q + h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_dim) + heads * v_dim * h,
        kv_values=kv_lora + rope,
        kv_shards=1,
        head_dim=v_dim,
        lora_width=lora + heads * v_dim + h,
        latent=True,
    )


def _attention(
    config: Mapping[str, Any], model_type: str, *, h: int, heads: int, kv_heads: int, head_dim: int
) -> AttentionShape:
    """Grouped-query attention (latent attention where the config has a KV LoRA rank)."""
    if model_type == "deepseek_v3" or "kv_lora_rank" in config:
        return _latent_attention(config, h=h, heads=heads)
    q_out, kv_out = heads * head_dim, kv_heads * head_dim
    params = h * q_out + 2 * h * kv_out + q_out * h
    if model_type == "qwen2" or bool(config.get("attention_bias", False)):
        params += q_out + 2 * kv_out
    if model_type == "gpt_oss":
        params += h + heads  # o bias, and gpt-oss's per-head attention sinks
    if model_type in ("qwen3", "qwen3_moe", "gemma3_text"):
        params += 2 * head_dim  # query and key norms
    return AttentionShape(
        params=params,
        kv_values=2 * kv_out,
        kv_shards=kv_heads,
        head_dim=head_dim,
        lora_width=(h + q_out) + 2 * (h + kv_out) + (q_out + h),
        latent=False,
    )


@dataclass(frozen=True)
class MlpShape:
    """The MLPs of all layers: parameters, those of experts (all, and inactive per token), the
    width a token goes through, and the LoRA in+out widths."""

    params: int
    expert_params: int
    inactive: int
    active_width: int
    lora_width: int
    experts: int | None
    top_k: int | None


def _moe_mlp(
    config: Mapping[str, Any], model_type: str, *, h: int, layers: int, experts: int, dense_width: int, mlp_bias: bool
) -> MlpShape:
    """Mixture-of-experts MLPs, with the dense layers some models keep first (DeepSeek, Qwen)."""
    top_k = _int(config, "num_experts_per_tok", default=config.get("experts_per_token"))
    expert_width = _int(config, "moe_intermediate_size", default=dense_width or None)
    dense_layers = _int(config, "first_k_dense_replace", default=0)
    mlp_only = config.get("mlp_only_layers") or []
    dense_layers += len(mlp_only) if isinstance(mlp_only, list) else 0
    moe_layers = layers - dense_layers
    one_expert = 3 * h * expert_width
    if model_type == "gpt_oss":
        one_expert += 2 * expert_width + h  # gate_up and down biases
    shared = _int(config, "n_shared_experts", default=0)
    router = h * experts + (experts if model_type in ("gpt_oss", "deepseek_v3") else 0)
    moe_layer = experts * one_expert + shared * one_expert + router
    dense_layer = 3 * h * dense_width + (2 * dense_width + h if mlp_bias else 0)
    return MlpShape(
        params=moe_layers * moe_layer + dense_layers * dense_layer,
        expert_params=moe_layers * experts * one_expert,
        inactive=moe_layers * (experts - top_k) * one_expert,
        active_width=(top_k + shared) * expert_width,
        lora_width=moe_layers * (experts + shared) * 3 * (h + expert_width) + dense_layers * 3 * (h + dense_width),
        experts=experts,
        top_k=top_k,
    )


def _mlp(config: Mapping[str, Any], model_type: str, *, h: int, layers: int) -> MlpShape:
    """Gated MLPs (three matrices), dense or mixture of experts."""
    experts = config.get("num_local_experts") or config.get("num_experts") or config.get("n_routed_experts")
    mlp_bias = bool(config.get("mlp_bias", False))
    dense_width = _int(config, "intermediate_size", default=0)
    if isinstance(experts, int) and experts > 1:
        return _moe_mlp(
            config, model_type, h=h, layers=layers, experts=experts, dense_width=dense_width, mlp_bias=mlp_bias
        )
    if not dense_width:
        raise FitInputError("hf_model", "config.json has no 'intermediate_size', which the calculator needs")
    return MlpShape(
        params=layers * (3 * h * dense_width + (2 * dense_width + h if mlp_bias else 0)),
        expert_params=0,
        inactive=0,
        active_width=dense_width,
        lora_width=layers * 3 * (h + dense_width),
        experts=None,
        top_k=None,
    )


def _shape_notes(
    config: Mapping[str, Any],
    model_type: str,
    *,
    attention: AttentionShape,
    layers: int,
    window: int | None,
    sliding: int,
) -> tuple[Any, ...]:
    """What a reader should know about how the shapes were read (lazy translations: presets are
    read at import time)."""
    notes: list[Any] = []
    if model_type not in KNOWN_MODEL_TYPES:
        notes.append(
            format_lazy(
                _(
                    "model type {type} is read as a Llama-style decoder (gated MLP, no biases): the parameter count may be off"
                ),
                type=model_type or "unknown",
            )
        )
    if model_type == "deepseek_v3" and config.get("num_nextn_predict_layers"):
        notes.append(_("the multi-token-prediction module (speculative decoding only) is not counted"))
    if attention.latent:
        notes.append(
            format_lazy(
                _(
                    "multi-head latent attention: the KV cache holds the compressed latent and rotary key "
                    "({values} values per token and layer), not full keys and values"
                ),
                values=attention.kv_values,
            )
        )
    if window and sliding:
        notes.append(
            format_lazy(
                _(
                    "{sliding} of {layers} layers attend to a {window}-token sliding window: their KV cache stops growing there"
                ),
                sliding=sliding,
                layers=layers,
                window=f"{window:,}",
            )
        )
    return tuple(notes)


def config_shapes(config: Mapping[str, Any]) -> ConfigShapes:
    """Count a decoder's parameters and KV cache from its config.json (see the module docstring).

    Raises :class:`FitInputError` on field ``hf_model`` when a needed key is missing or not a number.
    """
    config, model_type = _checked_config(config)
    h = _int(config, "hidden_size")
    layers = _int(config, "num_hidden_layers")
    heads = _int(config, "num_attention_heads")
    kv_heads = _int(config, "num_key_value_heads", default=heads)
    if min(h, layers, heads, kv_heads) <= 0:
        raise FitInputError("hf_model", "config.json gives a zero size")
    head_dim = _int(config, "head_dim", default=h // heads)
    vocab = _int(config, "vocab_size")
    tied = bool(config.get("tie_word_embeddings", model_type in ("gemma2", "gemma3_text")))
    max_context = config.get("max_position_embeddings")
    norms_per_layer = 4 if model_type in ("gemma2", "gemma3_text") else 2
    attention = _attention(config, model_type, h=h, heads=heads, kv_heads=kv_heads, head_dim=head_dim)
    mlp = _mlp(config, model_type, h=h, layers=layers)
    embedding = vocab * h * (1 if tied else 2)
    params = layers * (attention.params + norms_per_layer * h) + mlp.params + embedding + h
    window, sliding = _sliding_layers(config, model_type, layers)
    return ConfigShapes(
        model_type=model_type,
        params=params,
        active_params=params - mlp.inactive,
        expert_params=mlp.expert_params,
        embedding_params=embedding,
        layers=layers,
        hidden=h,
        heads=heads,
        kv_heads=kv_heads if not attention.latent else 1,
        head_dim=attention.head_dim,
        intermediate=mlp.active_width,
        vocab=vocab,
        tied_embeddings=tied,
        max_context=int(max_context) if isinstance(max_context, int) and max_context > 0 else None,
        experts=mlp.experts,
        experts_active=mlp.top_k,
        kv_values_per_token_layer=attention.kv_values,
        kv_shards=attention.kv_shards,
        sliding_window=window if sliding else None,
        sliding_layers=sliding,
        lora_attention_width=attention.lora_width,
        lora_mlp_width=mlp.lora_width,
        latent_attention=attention.latent,
        notes=_shape_notes(config, model_type, attention=attention, layers=layers, window=window, sliding=sliding),
    )
