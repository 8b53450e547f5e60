"""Pure ranking arithmetic: use-case definitions, normalisation, estimates, value metrics, tiers.

Nothing here touches the database: selectors gather plain values and call these functions, so
every rule below is tested with literals (tests/test_dashboard_metrics.py).

Method, as shown on the pages
-----------------------------
* Measured performance of a GPU for a use case: for every *comparison group* (workload and
  version, precision, GPU count) where both the GPU and the baseline GPU have a qualifying
  aggregate, take the ratio of medians (inverted for lower-is-better workloads); the use-case
  performance is the geometric mean of those ratios, so the baseline scores exactly 1.0.
  A comparison group ignores run parameters such as batch size on purpose: throughput benchmarks
  (Lambda's among them) run each GPU at the largest batch that fits, and that is what is compared.
  When a GPU has several aggregates in one group, the one with most results is used.
* An aggregate qualifies when it holds a lab result or at least ``MIN_COMMUNITY_N`` community
  results; GPUs without a qualifying aggregate matched with the baseline are *estimated*.
* Estimate from the specs: ``(peak / peak_baseline) ** w * (bandwidth / bandwidth_baseline) ** (1 - w)``
  with the dense tensor peak of the use case's precision family and ``w`` = 0.5 (a geometric
  mean of the compute and the memory-bandwidth ratios). Always labelled "estimated from specs".
* Value: performance per GPU-hour price, per 1,000 of purchase price, and per kilowatt of TDP.
* Tiers: among GPUs that meet the use case's memory floor and have a price, performance per
  dollar relative to the best of them: S >= 70 %, A >= 45 %, B >= 25 %, C >= 12 %, D below.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

BASELINE_SLUG_DEFAULT = "a100-sxm4-80-gb"
MIN_COMMUNITY_N = 3
ESTIMATE_COMPUTE_WEIGHT = 0.5

# Precision families: which stored precisions count, and which dense tensor peaks estimate them
# (first supported one with a figure wins; "fp32_nontensor" is Gpu.fp32_tflops).
PRECISION_FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "16bit": (("fp16", "bf16"), ("bf16", "fp16")),
    "8bit": (("int8", "fp8"), ("fp8", "int8")),
    "32bit": (("fp32", "tf32"), ("tf32", "fp32_nontensor")),
    "4bit": (("int4", "fp4"), ("fp4", "int8")),
    # LLM serving: each submission's own weight format, as long as it met the benchmark's accuracy target.
    "any": (("fp4", "int4", "fp8", "int8", "fp16", "bf16", "tf32", "fp32"), ("fp8", "int8", "bf16", "fp16")),
}
PRECISION_FAMILY_LABELS = {
    "16bit": _("16-bit (FP16/BF16)"),
    "8bit": _("8-bit (INT8/FP8)"),
    "32bit": _("32-bit (FP32/TF32)"),
    "4bit": _("4-bit (INT4/FP4 weights)"),
    "any": _("As submitted (any format meeting the benchmark's accuracy target)"),
}

# The model sizes of the LLM use cases (llm_estimate.shapes.SIZE_CLASSES), as the pages name them.
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

TIER_NAMES = ("S", "A", "B", "C", "D")
# Lower bounds of perf-per-dollar relative to the best eligible GPU; D takes the rest.
TIER_THRESHOLDS = {"S": 0.70, "A": 0.45, "B": 0.25, "C": 0.12}


@dataclass(frozen=True)
class UseCase:
    """A kind of work, the benchmarks that measure it and the memory it needs."""

    slug: str
    label: str | Promise  # lazily translated
    description: str | Promise
    categories: tuple[str, ...]
    precision_families: tuple[str, ...]  # first = default
    memory_floor_gib: float
    memory_floor_source: str | Promise
    workload_pattern: str = ""  # regex on workload slugs; empty = every workload of the categories
    # LLM use cases (kind "llm") rank absolute tokens/s and cost per million tokens per model size
    # (dashboard/selectors_llm.py); the others rank performance relative to a baseline GPU.
    kind: str = "relative"
    llm_mode: str = ""  # "batched" | "one_stream"
    model_sizes: tuple[str, ...] = ()  # llm_estimate.shapes.SIZE_CLASSES slugs; first = default

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
                "Every training workload: Lambda's PyTorch training suite (ResNet-50, SSD, BERT, GNMT, "
                "Transformer-XL, Tacotron 2, WaveGlow, NCF) and the client's transformer-train."
            ),
            categories=("training",),
            precision_families=("16bit", "32bit"),
            memory_floor_gib=24,
            memory_floor_source=_("seed 002: at least 24 GB for transformers"),
        ),
        UseCase(
            slug="fine-tuning",
            label=_("Fine-tuning"),
            description=_(
                "Training workloads that fine-tune or train transformers: BERT fine-tuned on SQuAD "
                "(Lambda) and the client's transformer-train."
            ),
            categories=("training",),
            precision_families=("16bit", "32bit"),
            memory_floor_gib=14,
            memory_floor_source=_("seed 001: fine-tuning needs at least 14 GB"),
            workload_pattern=r"squad|fine.?tun|lora|transformer.?train",
        ),
        UseCase(
            slug="inference-16bit",
            label=_("Inference, 16-bit"),
            description=_("Inference workloads at FP16/BF16, such as the client's transformer-infer (tokens/s)."),
            categories=("inference",),
            precision_families=("16bit",),
            memory_floor_gib=12,
            memory_floor_source=_("seed 002: at least 12 GB for image generation"),
            workload_pattern=RELATIVE_INFERENCE_PATTERN,
        ),
        UseCase(
            slug="inference-8bit",
            label=_("Inference, 8-bit"),
            description=_("Inference workloads at INT8/FP8."),
            categories=("inference",),
            precision_families=("8bit",),
            memory_floor_gib=12,
            memory_floor_source=_("seed 002: at least 12 GB for image generation"),
            workload_pattern=RELATIVE_INFERENCE_PATTERN,
        ),
        UseCase(
            slug="llm-serving",
            label=_("LLM serving (throughput, batched)"),
            description=_(
                "Output tokens per second per GPU when serving many requests at once: MLPerf Inference Offline "
                "results (closed division, available systems) divided by the system's GPUs, and the benchmark "
                "client's large-batch decode; cost per million output tokens at current prices."
            ),
            categories=("inference",),
            precision_families=("any", "8bit", "4bit", "16bit"),
            memory_floor_gib=0,
            memory_floor_source=_("the model must fit in the memory of the GPUs it runs on (the measured GPU count)"),
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
            memory_floor_source=_("the model must fit in the memory of the GPUs it runs on (the measured GPU count)"),
            workload_pattern=r"^(llamacpp-tg|llm-eval-rate|llm-decode)$",
            kind="llm",
            llm_mode="one_stream",
            model_sizes=("8b", "3b", "14b", "20b-moe", "30b", "70b"),
        ),
    )
}


@dataclass(frozen=True)
class AggregatePoint:
    """One ResultAggregate reduced to what the arithmetic needs."""

    gpu_id: int
    group: tuple[int, str, int]  # (workload id, precision, GPU count)
    median: float
    n: int
    distinct_submitters: int
    has_lab: bool
    higher_is_better: bool = True


@dataclass(frozen=True)
class MeasuredPerf:
    value: float
    groups: int
    n: int
    distinct_submitters_max: int


@dataclass(frozen=True)
class SpecFigures:
    """Datasheet figures used by the estimate; ``peaks`` maps precision -> dense TFLOPS or None
    when the hardware does not support the format."""

    peaks: Mapping[str, float | None]
    bandwidth_gbs: float | None
    fp32_tflops: float | None = None


def geometric_mean(values: Iterable[float]) -> float:
    """Geometric mean of positive numbers; ValueError on an empty or non-positive input."""
    items = list(values)
    if not items:
        raise ValueError("geometric mean of nothing")
    if any(v <= 0 or math.isnan(v) for v in items):
        raise ValueError("geometric mean needs positive values")
    return math.exp(math.fsum(math.log(v) for v in items) / len(items))


def aggregate_qualifies(point: AggregatePoint, *, min_community_n: int = MIN_COMMUNITY_N) -> bool:
    return point.has_lab or point.n >= min_community_n


def best_per_group(points: Iterable[AggregatePoint]) -> dict[int, dict[tuple[int, str, int], AggregatePoint]]:
    """gpu id -> group -> the qualifying aggregate with the most results (lab first on ties)."""
    chosen: dict[int, dict[tuple[int, str, int], AggregatePoint]] = {}
    for point in points:
        if not aggregate_qualifies(point):
            continue
        groups = chosen.setdefault(point.gpu_id, {})
        current = groups.get(point.group)
        if current is None or (point.n, point.has_lab, point.median) > (current.n, current.has_lab, current.median):
            groups[point.group] = point
    return chosen


def measured_relative(points: Iterable[AggregatePoint], *, baseline_gpu_id: int | None) -> dict[int, MeasuredPerf]:
    """Measured use-case performance of every GPU relative to the baseline (baseline = 1.0)."""
    chosen = best_per_group(points)
    if baseline_gpu_id is None or baseline_gpu_id not in chosen:
        return {}
    reference = chosen[baseline_gpu_id]
    out: dict[int, MeasuredPerf] = {}
    for gpu_id, groups in chosen.items():
        ratios, n, distinct = [], 0, 0
        for group, point in groups.items():
            ref = reference.get(group)
            if ref is None:
                continue
            ratio = point.median / ref.median if point.higher_is_better else ref.median / point.median
            ratios.append(ratio)
            n += point.n
            distinct = max(distinct, point.distinct_submitters)
        if ratios:
            out[gpu_id] = MeasuredPerf(geometric_mean(ratios), len(ratios), n, distinct)
    return out


def spec_peak(specs: SpecFigures, *, family: str) -> float | None:
    """Dense peak for a precision family: the first supported precision with a figure."""
    for precision in PRECISION_FAMILIES[family][1]:
        if precision == "fp32_nontensor":
            if specs.fp32_tflops:
                return specs.fp32_tflops
            continue
        value = specs.peaks.get(precision)
        if value:
            return value
    return None


def estimate_relative(
    specs: SpecFigures, baseline: SpecFigures, *, family: str, compute_weight: float = ESTIMATE_COMPUTE_WEIGHT
) -> float | None:
    """Spec-based estimate relative to the baseline; None when a needed figure is missing."""
    peak, ref_peak = spec_peak(specs, family=family), spec_peak(baseline, family=family)
    if not (peak and ref_peak and specs.bandwidth_gbs and baseline.bandwidth_gbs):
        return None
    compute_ratio = peak / ref_peak
    bandwidth_ratio = specs.bandwidth_gbs / baseline.bandwidth_gbs
    return compute_ratio**compute_weight * bandwidth_ratio ** (1 - compute_weight)


def per_price(perf: float | None, price: float | None, *, scale: float = 1.0) -> float | None:
    """Performance per unit of price (per ``scale`` units: 1,000 for purchase prices)."""
    if perf is None or price is None or price <= 0:
        return None
    return perf / (price / scale)


def per_kilowatt(perf: float | None, tdp_w: float | None) -> float | None:
    if perf is None or not tdp_w or tdp_w <= 0:
        return None
    return perf / (tdp_w / 1000)


def price_summary(provider_minimums: Sequence[float], *, how: str) -> float | None:
    """One price from each provider's cheapest offer: the cheapest overall, or their median."""
    if not provider_minimums:
        return None
    if how == "median":
        return statistics.median(provider_minimums)
    return min(provider_minimums)


def tier_for(ratio_to_best: float) -> str:
    for name in TIER_NAMES[:-1]:
        if ratio_to_best >= TIER_THRESHOLDS[name]:
            return name
    return "D"


def tiers_assign(values: Mapping[str, float | None]) -> dict[str, str]:
    """key -> tier for every key with a positive value, relative to the best value."""
    usable = {k: v for k, v in values.items() if v is not None and v > 0}
    if not usable:
        return {}
    best = max(usable.values())
    return {k: tier_for(v / best) for k, v in usable.items()}


def pareto_frontier(points: Sequence[tuple[str, float, float]]) -> list[str]:
    """Keys of points not dominated on (lower price, higher performance), sorted by price.

    ``points`` are (key, price, performance); a point is dominated when another is at most as
    expensive and at least as fast, and strictly better on one of the two.
    """
    frontier: list[str] = []
    best_perf = -math.inf
    for key, _price, perf in sorted(points, key=lambda p: (p[1], -p[2])):
        if perf > best_perf:
            frontier.append(key)
            best_perf = perf
    return frontier


@dataclass(frozen=True)
class EfficiencyRow:
    precision: str
    measured: float
    peak: float | None
    unit: str

    @property
    def efficiency(self) -> float | None:
        return self.measured / self.peak if self.peak else None


@dataclass
class BoxStats:
    label: str
    median: float
    q1: float
    q3: float
    minimum: float
    maximum: float
    n: int
    unit: str
    extra: dict[str, object] = field(default_factory=dict)
