"""The use cases the rankings rank for: their benchmarks, precision families, model sizes and
eligibility rules (memory floor, tensor formats). Pure definitions and rules, no database
(tests/test_dashboard_metrics.py); the arithmetic is in dashboard/ranking/maths.py."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

PRECISION_FAMILY_LABELS = {
    "16bit": _("16-bit (FP16/BF16)"),
    "8bit": _("8-bit (INT8/FP8)"),
    "32bit": _("32-bit (FP32/TF32)"),
    "4bit": _("4-bit (INT4/FP4 weights)"),
    "any": _("As submitted (any format meeting the benchmark's accuracy target)"),
}

# The model sizes of the LLM use cases (llm.serving.shapes.SIZE_CLASSES), as the pages name them.
MODEL_SIZE_LABELS = {
    "3b": _("3B class (Llama 3.2 3B)"),
    "8b": _("8B class (Llama 3.1 8B; 7B-8B dense models)"),
    "14b": _("14B class (13B-14B dense models)"),
    "20b-moe": _("gpt-oss-20b (mixture of experts, 3.6B active)"),
    "30b": _("33B class (LLaMA 33B)"),
    "70b": _("70B class (Llama 3.1 70B; 65B-70B dense models)"),
    "mixtral": _("Mixtral 8x7B (mixture of experts, 13B active)"),
    "120b-moe": _("gpt-oss-120b (mixture of experts, 5.1B active)"),
    "405b": _("405B class (Llama 3.1 405B)"),
    "deepseek-r1": _("DeepSeek-R1 (671B mixture of experts, 37B active)"),
}


# The guide behind the memory floors: Tim Dettmers's buying guide as summarised in Chinese
# (catalog/data/curated/sources.toml gives the readable citation).
DETTMERS_GUIDE = "seed:002_4e6dd78a261bc337.txt"

# What each tensor format needs, for the eligibility reasons (the precision -> label shown).
PRECISION_NAMES = {"fp16": "FP16", "bf16": "BF16", "fp8": "FP8", "int8": "INT8", "tf32": "TF32", "fp4": "FP4"}


@dataclass(frozen=True)
class UseCase:
    """A kind of work, the benchmarks that measure it and what a GPU needs to do it."""

    slug: str
    label: str | Promise  # lazily translated
    description: str | Promise
    categories: tuple[str, ...]
    precision_families: tuple[str, ...]  # first = default
    memory_floor_gib: float
    memory_floor_source: str | Promise  # the rule in words, for users (no internal names)
    workload_pattern: str = ""  # regex on workload slugs; empty = every workload of the categories
    memory_floor_citation: str = DETTMERS_GUIDE  # source key of the floor (catalog citations)
    # precision family -> tensor formats of which the GPU needs at least one; absent = none needed
    precision_requirements: tuple[tuple[str, tuple[str, ...]], ...] = ()
    precision_reason: str | Promise = ""  # why, in words, for the method text
    # LLM use cases (kind "llm") rank absolute tokens/s and cost per million tokens per model size
    # (llm/selectors/rows.py); the others rank performance relative to a baseline GPU.
    kind: str = "relative"
    # Relative use cases that also compare the measured LLM serving points (llm.selectors.serving_points):
    # MLPerf, TensorRT-LLM, llama.cpp and the client's llm-decode, each at the precision it ran at.
    serving_points: bool = False
    # The GPU = 1.0 when the query names none (empty: dashboard.ranking.maths.BASELINE_SLUG_DEFAULT).
    default_baseline: str = ""
    llm_mode: str = ""  # "batched" | "one_stream"
    model_sizes: tuple[str, ...] = ()  # llm.serving.shapes.SIZE_CLASSES slugs; first = default
    # Training use cases ranked by LLM training at 16 bits: the MLPerf Training benchmark whose MFU
    # the figure reads ("": every LLM benchmark); None: the relative method on the use case's results.
    llm_training_benchmark: str | None = None

    @property
    def is_llm(self) -> bool:
        return self.kind == "llm"

    @property
    def default_model_size(self) -> str:
        return self.model_sizes[0] if self.model_sizes else ""

    @property
    def default_precision(self) -> str:
        return self.precision_families[0]

    def includes_workload(self, *, slug: str, category: str) -> bool:
        if category not in self.categories:
            return False
        return not self.workload_pattern or re.search(self.workload_pattern, slug, re.IGNORECASE) is not None

    def required_precisions(self, family: str) -> tuple[str, ...]:
        return dict(self.precision_requirements).get(family, ())


_BF16_TRAINING = _(
    "16-bit training today means BF16 mixed precision: BF16 keeps FP32's exponent range, so it trains "
    "without loss scaling. GPUs without BF16 tensor cores (V100, T4, RTX 20 series, Quadro RTX) can only "
    "fall back to FP16 with loss scaling, where gradients that leave FP16's range turn into NaN."
)

# The lab tables of LLM inference (MLPerf, llama.cpp, Ollama) and the client's llm-decode have
# their own use cases: their results differ by model and run parameters, which the relative
# method's comparison groups (workload, precision, GPU count) do not tell apart.
RELATIVE_INFERENCE_PATTERN = r"^(?!mlperf-|llamacpp-|llm-)"

USE_CASES: dict[str, UseCase] = {
    uc.slug: uc
    for uc in (
        UseCase(
            slug="training",
            label=_("Training"),
            description=_(
                "LLM training at 16 bits: the model FLOP/s a GPU sustains training large language models, its "
                "dense BF16 peak × the MFU of its own MLPerf Training runs (Llama 3.1 8B and 405B pretraining, "
                "Llama 2 70B LoRA), else of its architecture's or of every GPU's runs (an estimate). Beside it, "
                "the older suite: Lambda's PyTorch training benchmarks (ResNet-50, SSD, BERT, GNMT, "
                "Transformer-XL, Tacotron 2, WaveGlow, NCF) and the client's transformer-train. At 32 bits, that "
                "suite alone."
            ),
            categories=("training",),
            precision_families=("16bit", "32bit"),
            memory_floor_gib=24,
            memory_floor_source=_("at least 24 GB to work with transformers (Tim Dettmers's GPU buying guide)"),
            precision_requirements=(("16bit", ("bf16",)),),
            precision_reason=_BF16_TRAINING,
            llm_training_benchmark="",
        ),
        UseCase(
            slug="fine-tuning",
            label=_("Fine-tuning"),
            description=_(
                "LLM fine-tuning at 16 bits: the model FLOP/s a GPU sustains fine-tuning a large language model, "
                "its dense BF16 peak × the MFU of its own MLPerf Training Llama 2 70B LoRA runs, else of its "
                "architecture's or of every GPU's (an estimate). Beside it, the older suite: BERT fine-tuned on "
                "SQuAD (Lambda) and the client's transformer-train. At 32 bits, that suite alone."
            ),
            categories=("training",),
            precision_families=("16bit", "32bit"),
            memory_floor_gib=24,
            memory_floor_source=_("at least 24 GB to work with transformers (Tim Dettmers's GPU buying guide)"),
            workload_pattern=r"squad|fine.?tun|lora|transformer.?train|llm-train",
            precision_requirements=(("16bit", ("bf16",)),),
            precision_reason=_BF16_TRAINING,
            llm_training_benchmark="llama2_70b_lora",
        ),
        UseCase(
            slug="inference-16bit",
            label=_("Inference, 16-bit"),
            description=_(
                "Measured inference at FP16/BF16: the client's transformer-infer and llm-decode, and the LLM "
                "throughputs of MLPerf Inference, TensorRT-LLM's performance overview and the llama.cpp tables, "
                "each compared only with runs of the same configuration, at the precision it ran at."
            ),
            categories=("inference",),
            precision_families=("16bit",),
            memory_floor_gib=24,
            memory_floor_source=_("at least 24 GB to work with transformers (Tim Dettmers's GPU buying guide)"),
            precision_requirements=(("16bit", ("fp16", "bf16")),),
            precision_reason=_(
                "16-bit inference runs on FP16 or BF16 tensor cores (Volta and newer); GPUs without tensor "
                "cores run it on their vector units at a small fraction of the speed."
            ),
            workload_pattern=RELATIVE_INFERENCE_PATTERN,
            serving_points=True,
        ),
        UseCase(
            slug="inference-8bit",
            label=_("Inference, 8-bit"),
            description=_(
                "Measured inference at INT8/FP8: the client's llm-decode at FP8, and the LLM throughputs of MLPerf "
                "Inference, TensorRT-LLM's performance overview and the llama.cpp tables (Q8_0), each compared "
                "only with runs of the same configuration, at the precision it ran at."
            ),
            categories=("inference",),
            precision_families=("8bit",),
            memory_floor_gib=12,
            memory_floor_source=_(
                "at least 12 GB: the guide's 24 GB for transformers at 16 bits, halved by 8-bit weights, and its "
                "floor for image generation (Tim Dettmers's GPU buying guide)"
            ),
            precision_requirements=(("8bit", ("int8", "fp8")),),
            precision_reason=_(
                "8-bit inference needs INT8 (Turing and newer) or FP8 (Ada, Hopper and newer) tensor cores; "
                "without them 8-bit weights are converted back to 16 bits and run no faster than 16-bit inference."
            ),
            workload_pattern=RELATIVE_INFERENCE_PATTERN,
            serving_points=True,
            # The A100 has no FP8 and no measured 8-bit run: the H100 SXM is measured at FP8 by every source.
            default_baseline="h100-sxm5-80-gb",
        ),
        UseCase(
            slug="llm-serving",
            label=_("LLM serving (throughput, batched)"),
            description=_(
                "Output tokens per second per GPU while every user gets at least the chosen tokens per second, "
                "in each GPU's best rentable configuration: measured points first (MLPerf Server and Interactive "
                "at their per-token latency limits, Offline for maximum throughput, TensorRT-LLM's tables, the "
                "benchmark client's sweeps), else the serving model with its error; cost per million output "
                "tokens at current prices or yours."
            ),
            categories=("inference",),
            precision_families=("any", "8bit", "4bit", "16bit"),
            memory_floor_gib=0,
            memory_floor_source=_(
                "the chosen model must fit in the memory of the GPUs it runs on (the measured GPU count, "
                "or up to 8 GPUs for an estimate)"
            ),
            workload_pattern=r"^(mlperf-.*-offline-tokens$|llm-decode$)",
            kind="llm",
            llm_mode="batched",
            model_sizes=("70b", "8b", "120b-moe", "mixtral", "405b", "deepseek-r1"),
        ),
        UseCase(
            slug="llm-chat",
            label=_("LLM chat (one stream)"),
            description=_(
                "Tokens per second of one conversation: llama.cpp and Ollama generation rates (batch 1) and the "
                "benchmark client's batch-1 decode; cost per million tokens when the GPUs serve that one stream."
            ),
            categories=("inference",),
            precision_families=("4bit", "16bit", "8bit"),
            memory_floor_gib=0,
            memory_floor_source=_(
                "the chosen model must fit in the memory of the GPUs it runs on (the measured GPU count, "
                "or up to 8 GPUs for an estimate)"
            ),
            workload_pattern=r"^(llamacpp-tg|llm-eval-rate|llm-decode)$",
            kind="llm",
            llm_mode="one_stream",
            model_sizes=("8b", "3b", "14b", "20b-moe", "30b", "70b"),
        ),
    )
}


def use_case_requirement(use_case: UseCase, *, family: str) -> str:
    """What a GPU needs for the use case at this precision, in words."""
    if use_case.is_llm:  # no memory floor: the chosen model must fit
        return str(use_case.memory_floor_source)
    required = use_case.required_precisions(family)
    floor = f"{use_case.memory_floor_gib:g}"
    if not required:
        return _("at least %(floor)s GB of memory") % {"floor": floor}
    names = _(" or ").join(PRECISION_NAMES.get(p, p.upper()) for p in required)
    return _("at least %(floor)s GB of memory and %(formats)s tensor cores") % {"floor": floor, "formats": names}


@dataclass(frozen=True)
class ArchitectureSupport:
    """What an architecture row says about tensor formats, for GPUs without a curated figure."""

    vendor_slug: str
    tensor_core_generation: int | None
    bf16: bool
    fp8: bool


def precision_supported(
    precision: str, *, peaks: Mapping[str, float | None], architecture: ArchitectureSupport | None
) -> bool | None:
    """Whether the GPU has a tensor path for ``precision``: its curated figure first (None there
    means "not supported"), else its architecture; None when nothing is on record."""
    if precision in peaks:
        return peaks[precision] is not None
    if architecture is None:
        return None
    if precision == "bf16":
        return architecture.bf16
    if precision == "fp8":
        return architecture.fp8
    if precision == "fp16":
        return architecture.tensor_core_generation is not None
    if precision == "int8" and architecture.vendor_slug == "nvidia":
        # NVIDIA's second tensor-core generation (Turing) added INT8; Volta's first has none.
        return architecture.tensor_core_generation is not None and architecture.tensor_core_generation >= 2
    return None


@dataclass(frozen=True)
class Eligibility:
    eligible: bool
    meets_memory_floor: bool
    has_precision: bool
    reasons: tuple[str, ...]  # why not, for users; empty when eligible


def use_case_eligibility(
    use_case: UseCase,
    *,
    family: str,
    memory_gib: float | None,
    peaks: Mapping[str, float | None],
    architecture: ArchitectureSupport | None,
) -> Eligibility:
    """Whether a GPU can do the use case at all: enough memory and a tensor path for the format."""
    reasons: list[str] = []
    meets_floor = memory_gib is not None and memory_gib >= use_case.memory_floor_gib
    if memory_gib is None:
        reasons.append(str(_("memory size not on record")))
    elif not meets_floor:
        reasons.append(
            _("%(memory)s GB is below the %(floor)s GB floor")
            % {"memory": f"{memory_gib:g}", "floor": f"{use_case.memory_floor_gib:g}"}
        )
    required = use_case.required_precisions(family)
    has_precision = True
    if required:
        support = [precision_supported(p, peaks=peaks, architecture=architecture) for p in required]
        names = _(" or ").join(PRECISION_NAMES.get(p, p.upper()) for p in required)
        if any(support):
            has_precision = True
        elif all(s is False for s in support):
            has_precision = False
            reasons.append(_("no %(formats)s tensor cores") % {"formats": names})
        else:
            has_precision = False
            reasons.append(_("%(formats)s tensor support not on record") % {"formats": names})
    return Eligibility(meets_floor and has_precision, meets_floor, has_precision, tuple(reasons))
