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

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from django.utils.translation import gettext as _

from fitcalc.configs import config_shapes
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
class Citation:
    """A readable source: title, publisher or author, date (``YYYY-MM`` or ``YYYY-MM-DD``), link."""

    title: str
    publisher: str
    date: str
    url: str
    site: str = ""  # where the publisher put it ("Hugging Face"), when not on its own site

    def to_dict(self) -> dict[str, str]:
        fields = asdict(self)
        del fields["site"]
        return fields | {"publisher": self.publisher_with_site}

    @property
    def publisher_with_site(self) -> str:
        """The publisher and the site in English, as the API names them ("Meta on Hugging Face")."""
        return f"{self.publisher} on {self.site}" if self.site else self.publisher

    @property
    def publisher_display(self) -> str:
        """The publisher and the site, in the page's language ("Meta on Hugging Face")."""
        if not self.site:
            return self.publisher
        return _("%(publisher)s on %(site)s") % {"publisher": self.publisher, "site": self.site}


@dataclass(frozen=True)
class ModelSpec:
    """What the estimator knows about one model. Shapes are ``None`` when unknown.

    ``intermediate`` is the MLP width one token passes through (for a mixture of experts: the active
    experts' widths added up); ``mlp_matrices`` is 3 for gated MLPs (SwiGLU: gate, up, down) and 2 for
    plain ones (up, down). ``max_context`` is the longest context the published config supports
    (``max_position_embeddings``), used only for a warning note.

    Mixture of experts: ``params`` counts every expert (memory), ``active_params`` only those a token
    uses (compute); ``expert_params`` is the routed experts' share of ``params``.

    KV cache: ``kv_values_per_token_layer`` values per token and layer (``2 x kv_heads x head_dim``
    unless the attention caches a compressed latent, as DeepSeek's MLA does); ``kv_shards`` is how
    many ways tensor parallelism can split it (the KV heads; 1 for MLA); ``sliding_layers`` layers
    keep at most ``sliding_window`` tokens. ``native_precision`` is the weight format the publisher
    ships (DeepSeek V3 FP8, gpt-oss MXFP4), the default for inference.
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
    active_params: int | None = None
    experts: int | None = None
    experts_active: int | None = None
    expert_params: int = 0
    kv_values_per_token_layer: int | None = None
    kv_shards: int | None = None
    sliding_window: int | None = None
    sliding_layers: int = 0
    lora_attention_width: int | None = None
    lora_mlp_width: int | None = None
    native_precision: str | None = None
    hf_repo: str | None = None
    citations: tuple[Citation, ...] = ()

    @property
    def is_transformer(self) -> bool:
        return self.kind in ("decoder", "encoder")

    @property
    def is_moe(self) -> bool:
        return bool(self.experts)

    @property
    def compute_params(self) -> int:
        """Parameters one token runs through: the active ones of a mixture of experts."""
        return self.active_params if self.active_params is not None else self.params

    @property
    def has_attention_shapes(self) -> bool:
        """True when layers, hidden, heads, KV heads and head dim are all known."""
        return None not in (self.layers, self.hidden, self.heads, self.kv_heads, self.head_dim)

    @property
    def kv_values_per_token(self) -> int | None:
        """KV cache values per token and layer; None when the shapes are unknown."""
        if self.kv_values_per_token_layer is not None:
            return self.kv_values_per_token_layer
        if self.kv_heads and self.head_dim:
            return 2 * self.kv_heads * self.head_dim
        return None

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
        data["citations"] = [citation.to_dict() for citation in self.citations]
        return data


PRESETS_FILE = Path(__file__).resolve().parent / "data" / "presets.json"


def hf_config_url(repo: str) -> str:
    return f"https://huggingface.co/{repo}/blob/main/config.json"


def model_spec_from_config(
    *,
    config: Mapping[str, Any],
    slug: str,
    name: str,
    hf_repo: str | None = None,
    citations: tuple[Citation, ...] = (),
    native_precision: str | None = None,
    notes: tuple[str, ...] = (),
) -> ModelSpec:
    """A decoder ModelSpec from a config.json's keys (counted by :func:`fitcalc.configs.config_shapes`).

    Raises :class:`FitInputError` (field ``hf_model``) when a needed key is missing or malformed."""
    shapes = config_shapes(config)
    return ModelSpec(
        slug=slug,
        name=name,
        kind="decoder",
        params=shapes.params,
        layers=shapes.layers,
        hidden=shapes.hidden,
        heads=shapes.heads,
        kv_heads=shapes.kv_heads,
        head_dim=shapes.head_dim,
        intermediate=shapes.intermediate,
        mlp_matrices=3,
        vocab=shapes.vocab,
        tied_embeddings=shapes.tied_embeddings,
        max_context=shapes.max_context,
        sources=tuple(citation.url for citation in citations),
        notes=notes + shapes.notes,
        active_params=shapes.active_params if shapes.experts else None,
        experts=shapes.experts,
        experts_active=shapes.experts_active,
        expert_params=shapes.expert_params,
        kv_values_per_token_layer=shapes.kv_values_per_token_layer,
        kv_shards=shapes.kv_shards,
        sliding_window=shapes.sliding_window,
        sliding_layers=shapes.sliding_layers,
        lora_attention_width=shapes.lora_attention_width,
        lora_mlp_width=shapes.lora_mlp_width,
        native_precision=native_precision,
        hf_repo=hf_repo,
        citations=citations,
    )


def _preset_citations(entry: Mapping[str, Any]) -> tuple[Citation, ...]:
    repo, publisher, released = entry["hf_repo"], entry["publisher"], entry["released"]
    return (
        Citation(
            title=f"{repo}: config.json",
            publisher=publisher,
            site="Hugging Face",
            date=released,
            url=hf_config_url(repo),
        ),
        Citation(
            title=entry["published"]["text"], publisher=publisher, date=released, url=f"https://huggingface.co/{repo}"
        ),
    )


def _load_config_presets() -> dict[str, ModelSpec]:
    data = json.loads(PRESETS_FILE.read_text(encoding="utf-8"))
    specs: dict[str, ModelSpec] = {}
    for entry in data["presets"]:
        specs[entry["slug"]] = model_spec_from_config(
            config=entry["config"],
            slug=entry["slug"],
            name=entry["name"],
            hf_repo=entry["hf_repo"],
            citations=_preset_citations(entry),
            native_precision=entry.get("native_precision"),
            notes=tuple(entry.get("notes", ())),
        )
    return specs


#: Published figures of each config preset (``{"params": "8.03", "active": ..., "text": ...}``),
#: for the tests and the page.
PUBLISHED_FIGURES: dict[str, dict[str, str]] = {
    entry["slug"]: entry["published"] for entry in json.loads(PRESETS_FILE.read_text(encoding="utf-8"))["presets"]
}

_OTHER_PRESETS: dict[str, ModelSpec] = {
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

PRESETS: dict[str, ModelSpec] = {**_load_config_presets(), **_OTHER_PRESETS}


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


@dataclass
class CustomShapes:
    """A custom transformer's shapes while they are derived one from another (None: unknown yet),
    with a note for each derivation."""

    layers: int | None
    hidden: int | None
    heads: int | None
    kv_heads: int | None
    head_dim: int | None
    intermediate: int | None
    mlp_matrices: int = 3
    notes: list[str] = field(default_factory=list)


def _derive_depth_and_width(shapes: CustomShapes, *, params: int) -> None:
    """hidden from heads x head_dim; else hidden or layers from params ~= 12 x layers x hidden^2."""
    if shapes.hidden is None and shapes.heads is not None and shapes.head_dim is not None:
        shapes.hidden = shapes.heads * shapes.head_dim
        shapes.notes.append(f"hidden size derived as heads x head_dim = {shapes.hidden}")
    if shapes.hidden is None and shapes.layers is not None:
        derived = math.sqrt(params / (12 * shapes.layers))
        shapes.hidden = max(DEFAULT_HEAD_DIM, round(derived / DEFAULT_HEAD_DIM) * DEFAULT_HEAD_DIM)
        shapes.notes.append(f"hidden size derived from params ~= 12 x layers x hidden^2: {shapes.hidden}")
    if shapes.layers is None and shapes.hidden is not None:
        shapes.layers = max(1, round(params / (12 * shapes.hidden * shapes.hidden)))
        shapes.notes.append(f"layer count derived from params ~= 12 x layers x hidden^2: {shapes.layers}")


def _derive_heads(shapes: CustomShapes) -> None:
    """heads and head dim from the hidden size (head dim 128 when neither is given); KV heads = heads."""
    if shapes.hidden is not None:
        if shapes.heads is None and shapes.head_dim is None:
            shapes.head_dim = DEFAULT_HEAD_DIM
            shapes.notes.append(f"head dim not given: assumed {DEFAULT_HEAD_DIM}")
        if shapes.heads is None and shapes.head_dim is not None:
            shapes.heads = max(1, shapes.hidden // shapes.head_dim)
            shapes.notes.append(f"heads derived as hidden / head_dim = {shapes.heads}")
        if shapes.head_dim is None and shapes.heads is not None:
            shapes.head_dim = max(1, shapes.hidden // shapes.heads)
            shapes.notes.append(f"head dim derived as hidden / heads = {shapes.head_dim}")
    if shapes.heads is not None and shapes.kv_heads is None:
        shapes.kv_heads = shapes.heads
        shapes.notes.append("KV heads not given: assumed equal to heads (no grouped-query attention)")
    if shapes.heads is not None and shapes.kv_heads is not None and shapes.kv_heads > shapes.heads:
        raise FitInputError("kv_heads", f"{shapes.kv_heads} KV heads is more than the {shapes.heads} attention heads")


def _derive_transformer(shapes: CustomShapes, *, params: int) -> None:
    """Every shape the given ones determine (see model_spec_custom), and what stays unknown."""
    _derive_depth_and_width(shapes, params=params)
    _derive_heads(shapes)
    if shapes.intermediate is None and shapes.hidden is not None:
        shapes.intermediate = 4 * shapes.hidden
        shapes.mlp_matrices = 2
        shapes.notes.append("MLP width not given: assumed 4 x hidden with a plain two-matrix MLP")
    if shapes.layers is None or shapes.hidden is None:
        shapes.notes.append(
            "layers and hidden size unknown: KV cache and transformer activations are not estimated; "
            "give layers, hidden, heads, kv_heads and head_dim for a complete estimate"
        )


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
    shapes = CustomShapes(
        layers=_check_count("layers", layers, maximum=MAX_LAYERS),
        hidden=_check_count("hidden", hidden, maximum=MAX_HIDDEN),
        heads=_check_count("heads", heads, maximum=MAX_HIDDEN),
        kv_heads=_check_count("kv_heads", kv_heads, maximum=MAX_HIDDEN),
        head_dim=_check_count("head_dim", head_dim, maximum=MAX_HIDDEN),
        intermediate=_check_count("intermediate", intermediate, maximum=MAX_HIDDEN * 16),
    )
    n_vocab = _check_count("vocab", vocab, maximum=MAX_VOCAB)
    if kind in ("decoder", "encoder"):
        _derive_transformer(shapes, params=n_params)
    else:
        shapes.notes.append(
            f"Activation memory of {kind} models depends on the input size and is not estimated; "
            "pass activation_gib_per_sample if you have a measured figure."
        )
    return ModelSpec(
        slug="custom",
        name=name,
        kind=kind,  # type: ignore[arg-type]  # checked against MODEL_KINDS above
        params=n_params,
        layers=shapes.layers,
        hidden=shapes.hidden,
        heads=shapes.heads,
        kv_heads=shapes.kv_heads,
        head_dim=shapes.head_dim,
        intermediate=shapes.intermediate,
        mlp_matrices=shapes.mlp_matrices,
        vocab=n_vocab,
        tied_embeddings=False,
        max_context=None,
        sources=(),
        notes=tuple(shapes.notes),
    )
