"""Model descriptions for the fit calculator: published presets and custom models.

A :class:`ModelSpec` holds what the memory estimator needs to know about a model: the parameter count
and, for transformers, the shapes that size the KV cache, the activations and the LoRA adapters.

Preset figures are copied from the model's published configuration (Hugging Face ``config.json``)
or paper; each preset names its sources. For the decoder LLMs the parameter count is the exact
count implied by the config's tensor shapes (tests/test_fitcalc_memory.py re-derives it), which
rounds to the figure the model card publishes (8.03B, 70.6B, 7.61B, 7.24B).

Custom models are given by parameter count, optionally with layers / hidden / heads / KV heads /
head dim. Missing shapes are derived as documented in :func:`model_spec_custom`; when they can't
be, the estimator skips the KV cache and activations and says so in its notes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from fitcalc.errors import FitInputError

ModelKind = Literal["decoder", "encoder", "diffusion", "cnn"]
MODEL_KINDS: tuple[str, ...] = ("decoder", "encoder", "diffusion", "cnn")

#: Absurd-size guards. 100 trillion parameters is ~50x the largest models publicly described.
MAX_PARAMS = 100_000_000_000_000
MAX_LAYERS = 10_000
MAX_HIDDEN = 1_000_000
MAX_VOCAB = 10_000_000

#: Head dimension assumed when a custom transformer gives its width but no head count or head dim:
#: 128 is the value of every decoder preset below (Llama 3, Qwen2.5, Mistral).
DEFAULT_HEAD_DIM = 128


@dataclass(frozen=True)
class ModelSpec:
    """What the estimator knows about one model. Shapes are ``None`` when unknown.

    ``intermediate`` is the MLP inner width; ``mlp_matrices`` is 3 for gated MLPs (SwiGLU: gate, up,
    down) and 2 for plain ones (up, down). ``max_context`` is the longest context the published
    config supports (``max_position_embeddings``), used only for a warning note.
    """

    slug: str
    name: str
    kind: ModelKind
    params: int
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    intermediate: int | None = None
    mlp_matrices: int = 3
    vocab: int | None = None
    tied_embeddings: bool = False
    max_context: int | None = None
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def is_transformer(self) -> bool:
        return self.kind in ("decoder", "encoder")

    @property
    def has_attention_shapes(self) -> bool:
        """True when layers, hidden, heads, KV heads and head dim are all known."""
        return None not in (self.layers, self.hidden, self.heads, self.kv_heads, self.head_dim)

    @property
    def embedding_params(self) -> int:
        """Input embedding plus (if untied) output projection parameters: vocab x hidden each."""
        if self.vocab is None or self.hidden is None:
            return 0
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["sources"] = list(self.sources)
        data["notes"] = list(self.notes)
        return data


PRESETS: dict[str, ModelSpec] = {
    # https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json
    #   hidden_size 4096, intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32,
    #   num_key_value_heads 8, vocab_size 128256, max_position_embeddings 8192, tie_word_embeddings false
    # https://huggingface.co/meta-llama/Meta-Llama-3-8B (model card: 8.03B params)
    "llama-3-8b": ModelSpec(
        slug="llama-3-8b",
        name="Llama 3 8B",
        kind="decoder",
        params=8_030_261_248,
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        head_dim=128,
        intermediate=14336,
        mlp_matrices=3,
        vocab=128256,
        tied_embeddings=False,
        max_context=8192,
        sources=(
            "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
            "https://huggingface.co/meta-llama/Meta-Llama-3-8B",
        ),
    ),
    # https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json
    #   hidden_size 8192, intermediate_size 28672, num_hidden_layers 80, num_attention_heads 64,
    #   num_key_value_heads 8, vocab_size 128256, max_position_embeddings 8192, tie_word_embeddings false
    # https://huggingface.co/meta-llama/Meta-Llama-3-70B (model card: 70.6B params)
    "llama-3-70b": ModelSpec(
        slug="llama-3-70b",
        name="Llama 3 70B",
        kind="decoder",
        params=70_553_706_496,
        layers=80,
        hidden=8192,
        heads=64,
        kv_heads=8,
        head_dim=128,
        intermediate=28672,
        mlp_matrices=3,
        vocab=128256,
        tied_embeddings=False,
        max_context=8192,
        sources=(
            "https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json",
            "https://huggingface.co/meta-llama/Meta-Llama-3-70B",
        ),
    ),
    # https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json
    #   hidden_size 3584, intermediate_size 18944, num_hidden_layers 28, num_attention_heads 28,
    #   num_key_value_heads 4, vocab_size 152064, max_position_embeddings 131072, tie_word_embeddings false
    #   (q/k/v projections carry biases)
    # https://huggingface.co/Qwen/Qwen2.5-7B (model card: 7.61B parameters, 6.53B non-embedding)
    "qwen2.5-7b": ModelSpec(
        slug="qwen2.5-7b",
        name="Qwen2.5 7B",
        kind="decoder",
        params=7_615_616_512,
        layers=28,
        hidden=3584,
        heads=28,
        kv_heads=4,
        head_dim=128,
        intermediate=18944,
        mlp_matrices=3,
        vocab=152064,
        tied_embeddings=False,
        max_context=131072,
        sources=(
            "https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json",
            "https://huggingface.co/Qwen/Qwen2.5-7B",
        ),
    ),
    # https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json
    #   hidden_size 4096, intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32,
    #   num_key_value_heads 8, vocab_size 32000, max_position_embeddings 32768, sliding_window 4096
    # https://arxiv.org/abs/2310.06825 (Mistral 7B paper, Table 1: dim 4096, n_layers 32, head_dim 128,
    #   hidden_dim 14336, n_heads 32, n_kv_heads 8, window_size 4096, vocab_size 32000)
    "mistral-7b": ModelSpec(
        slug="mistral-7b",
        name="Mistral 7B (v0.1)",
        kind="decoder",
        params=7_241_732_096,
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        head_dim=128,
        intermediate=14336,
        mlp_matrices=3,
        vocab=32000,
        tied_embeddings=False,
        max_context=32768,
        sources=(
            "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json",
            "https://arxiv.org/abs/2310.06825",
        ),
        notes=(
            "Mistral 7B v0.1 uses a 4096-token sliding attention window; a rolling-buffer KV cache "
            "would cap at 4096 tokens, but the estimate keeps the full-context cache (conservative).",
        ),
    ),
    # https://arxiv.org/abs/2307.01952 (SDXL paper, Podell et al. 2023): UNet 2.6B parameters; text
    #   encoders OpenCLIP ViT-bigG + CLIP ViT-L, 817M parameters in total.
    # https://huggingface.co/stabilityai/stable-diffusion-xl-base-1.0
    "sdxl": ModelSpec(
        slug="sdxl",
        name="Stable Diffusion XL (base 1.0)",
        kind="diffusion",
        params=2_600_000_000 + 817_000_000,
        sources=(
            "https://arxiv.org/abs/2307.01952",
            "https://huggingface.co/stabilityai/stable-diffusion-xl-base-1.0",
        ),
        notes=(
            "Parameters: UNet 2.6B + text encoders 0.817B (SDXL paper); the VAE is not counted.",
            "Activation memory of image models depends on resolution and is not estimated; "
            "pass activation_gib_per_sample if you have a measured figure.",
        ),
    ),
    # https://arxiv.org/abs/1512.03385 (He et al. 2015, ResNet)
    # https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet50.html
    #   (torchvision ResNet50_Weights.IMAGENET1K_V1: num_params 25,557,032)
    "resnet-50": ModelSpec(
        slug="resnet-50",
        name="ResNet-50",
        kind="cnn",
        params=25_557_032,
        sources=(
            "https://arxiv.org/abs/1512.03385",
            "https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet50.html",
        ),
        notes=(
            "Activation memory of CNNs depends on input resolution and is not estimated; "
            "pass activation_gib_per_sample if you have a measured figure.",
        ),
    ),
    # https://arxiv.org/abs/1810.04805 (BERT paper: BERT-LARGE L=24, H=1024, A=16, 340M parameters)
    # https://huggingface.co/google-bert/bert-large-uncased/blob/main/config.json
    #   hidden_size 1024, intermediate_size 4096, num_hidden_layers 24, num_attention_heads 16,
    #   vocab_size 30522, max_position_embeddings 512
    "bert-large": ModelSpec(
        slug="bert-large",
        name="BERT-Large",
        kind="encoder",
        params=340_000_000,
        layers=24,
        hidden=1024,
        heads=16,
        kv_heads=16,
        head_dim=64,
        intermediate=4096,
        mlp_matrices=2,
        vocab=30522,
        tied_embeddings=True,
        max_context=512,
        sources=(
            "https://arxiv.org/abs/1810.04805",
            "https://huggingface.co/google-bert/bert-large-uncased/blob/main/config.json",
        ),
        notes=("340M is the paper's rounded figure; the config's tensor shapes give 335M.",),
    ),
}


def preset_slugs() -> list[str]:
    """The known preset names, sorted."""
    return sorted(PRESETS)


def model_spec_from_preset(*, preset: str) -> ModelSpec:
    """The preset called ``preset`` (case-insensitive); FitInputError listing the known ones if absent."""
    key = preset.strip().lower() if isinstance(preset, str) else ""
    try:
        return PRESETS[key]
    except KeyError:
        raise FitInputError("model", f"unknown preset {preset!r}; known presets: {', '.join(preset_slugs())}") from None


def _check_count(field_name: str, value: int | float | None, *, maximum: int | float) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FitInputError(field_name, f"must be a number, got {value!r}")
    if not math.isfinite(value):
        raise FitInputError(field_name, "must be a finite number")
    if value <= 0:
        raise FitInputError(field_name, f"must be positive, got {value:g}")
    if value > maximum:
        raise FitInputError(field_name, f"{value:g} is beyond the supported maximum of {maximum:g}")
    if isinstance(value, float) and not value.is_integer() and field_name != "params":
        raise FitInputError(field_name, f"must be a whole number, got {value:g}")
    return round(value)


def model_spec_custom(
    *,
    params: int | float,
    kind: str = "decoder",
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    intermediate: int | None = None,
    vocab: int | None = None,
    name: str = "Custom model",
) -> ModelSpec:
    """A model given by parameter count, with optional transformer shapes.

    Missing shapes are derived as follows, each derivation recorded in ``notes``:

    * ``hidden`` = heads x head_dim; ``head_dim`` = hidden / heads; ``heads`` = hidden / head_dim;
      with only ``hidden`` given, head_dim = 128 (:data:`DEFAULT_HEAD_DIM`).
    * ``kv_heads`` = heads (plain multi-head attention: the largest KV cache for those shapes).
    * ``layers`` from params and hidden, or ``hidden`` from params and layers, through the
      standard transformer approximation params ~= 12 x layers x hidden^2 (Kaplan et al. 2020,
      arXiv:2001.08361, section 2.1).
    * ``intermediate`` = 4 x hidden with a plain 2-matrix MLP (the GPT layout the 12 L h^2 rule assumes);
      when ``intermediate`` is given, a gated 3-matrix MLP (SwiGLU, the Llama/Qwen/Mistral layout) is assumed.

    With neither layers nor hidden, nothing can be derived: the estimator then leaves the KV cache
    and transformer activations out and says so.
    """
    if kind not in MODEL_KINDS:
        raise FitInputError("kind", f"unknown model kind {kind!r}; known kinds: {', '.join(MODEL_KINDS)}")
    n_params = _check_count("params", params, maximum=MAX_PARAMS)
    assert n_params is not None
    n_layers = _check_count("layers", layers, maximum=MAX_LAYERS)
    n_hidden = _check_count("hidden", hidden, maximum=MAX_HIDDEN)
    n_heads = _check_count("heads", heads, maximum=MAX_HIDDEN)
    n_kv = _check_count("kv_heads", kv_heads, maximum=MAX_HIDDEN)
    n_head_dim = _check_count("head_dim", head_dim, maximum=MAX_HIDDEN)
    n_inter = _check_count("intermediate", intermediate, maximum=MAX_HIDDEN * 16)
    n_vocab = _check_count("vocab", vocab, maximum=MAX_VOCAB)
    notes: list[str] = []
    mlp_matrices = 3

    if kind in ("decoder", "encoder"):
        if n_hidden is None and n_heads is not None and n_head_dim is not None:
            n_hidden = n_heads * n_head_dim
            notes.append(f"hidden size derived as heads x head_dim = {n_hidden}")
        if n_hidden is None and n_layers is not None:
            derived = math.sqrt(n_params / (12 * n_layers))
            n_hidden = max(DEFAULT_HEAD_DIM, round(derived / DEFAULT_HEAD_DIM) * DEFAULT_HEAD_DIM)
            notes.append(f"hidden size derived from params ~= 12 x layers x hidden^2: {n_hidden}")
        if n_layers is None and n_hidden is not None:
            n_layers = max(1, round(n_params / (12 * n_hidden * n_hidden)))
            notes.append(f"layer count derived from params ~= 12 x layers x hidden^2: {n_layers}")
        if n_hidden is not None:
            if n_heads is None and n_head_dim is None:
                n_head_dim = DEFAULT_HEAD_DIM
                notes.append(f"head dim not given: assumed {DEFAULT_HEAD_DIM}")
            if n_heads is None and n_head_dim is not None:
                n_heads = max(1, n_hidden // n_head_dim)
                notes.append(f"heads derived as hidden / head_dim = {n_heads}")
            if n_head_dim is None and n_heads is not None:
                n_head_dim = max(1, n_hidden // n_heads)
                notes.append(f"head dim derived as hidden / heads = {n_head_dim}")
        if n_heads is not None and n_kv is None:
            n_kv = n_heads
            notes.append("KV heads not given: assumed equal to heads (no grouped-query attention)")
        if n_heads is not None and n_kv is not None and n_kv > n_heads:
            raise FitInputError("kv_heads", f"{n_kv} KV heads is more than the {n_heads} attention heads")
        if n_inter is None and n_hidden is not None:
            n_inter = 4 * n_hidden
            mlp_matrices = 2
            notes.append("MLP width not given: assumed 4 x hidden with a plain two-matrix MLP")
        if n_layers is None or n_hidden is None:
            notes.append(
                "layers and hidden size unknown: KV cache and transformer activations are not estimated; "
                "give layers, hidden, heads, kv_heads and head_dim for a complete estimate"
            )
    else:
        notes.append(
            f"Activation memory of {kind} models depends on the input size and is not estimated; "
            "pass activation_gib_per_sample if you have a measured figure."
        )

    return ModelSpec(
        slug="custom",
        name=name,
        kind=kind,  # type: ignore[arg-type]  # checked against MODEL_KINDS above
        params=n_params,
        layers=n_layers,
        hidden=n_hidden,
        heads=n_heads,
        kv_heads=n_kv,
        head_dim=n_head_dim,
        intermediate=n_inter,
        mlp_matrices=mlp_matrices,
        vocab=n_vocab,
        tied_embeddings=False,
        max_context=None,
        sources=(),
        notes=tuple(notes),
    )
