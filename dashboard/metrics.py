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
  The benchmark client's host runs on 2 GPUs or more (data-parallel training, all-reduce) are
  not compared: they measure the host's interconnect too, and are shown as scaling instead
  (:func:`compared_in_relative_method`, dashboard/scaling.py).
* A GPU that shares no comparison group with the baseline (Lambda's 2025 suite, which the
  baseline never ran) is compared the same way with the directly measured GPU it shares most
  groups with, and the ratio is multiplied by that GPU's figure (one step at most).
* An aggregate qualifies when it holds a lab result or at least ``MIN_COMMUNITY_N`` community
  results; GPUs without a qualifying aggregate matched with the baseline are *estimated*.
* Estimate from the specs: ``scale * (peak / peak_baseline) ** w * (bandwidth / bandwidth_baseline) ** (1 - w)``
  with the dense tensor peak of the use case's precision family. Per use case and precision two
  forms are checked on the measured GPUs (:func:`estimate_model_fit`): equal weights (``w`` = 0.5,
  ``scale`` = 1, nothing fitted) and ``w`` and ``scale`` fitted by least squares on logarithms,
  checked leaving one GPU out; the one with the smaller typical miss is used, and that miss is
  published beside every estimate. With fewer than ``MIN_FIT_GPUS`` measured GPUs nothing can
  be checked: equal weights, error unknown. Always labelled "estimated from specs".
* Eligibility: a use case states a memory floor and the tensor formats it needs (16-bit training:
  BF16; 8-bit inference: INT8 or FP8); GPUs that fail either are hidden by default
  (:func:`use_case_eligibility`).
* Value: performance per GPU-hour price, per 1,000 of purchase price, and per kilowatt of TDP.
* Tiers: among GPUs eligible for the use case that have a price, performance per
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
    # (dashboard/selectors/llm_rows.py); the others rank performance relative to a baseline GPU.
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
                "Every training workload: Lambda's PyTorch training suite (ResNet-50, SSD, BERT, GNMT, "
                "Transformer-XL, Tacotron 2, WaveGlow, NCF) and the client's transformer-train."
            ),
            categories=("training",),
            precision_families=("16bit", "32bit"),
            memory_floor_gib=24,
            memory_floor_source=_("at least 24 GB to work with transformers (Tim Dettmers's GPU buying guide)"),
            precision_requirements=(("16bit", ("bf16",)),),
            precision_reason=_BF16_TRAINING,
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
            memory_floor_gib=24,
            memory_floor_source=_("at least 24 GB to work with transformers (Tim Dettmers's GPU buying guide)"),
            workload_pattern=r"squad|fine.?tun|lora|transformer.?train",
            precision_requirements=(("16bit", ("bf16",)),),
            precision_reason=_BF16_TRAINING,
        ),
        UseCase(
            slug="inference-16bit",
            label=_("Inference, 16-bit"),
            description=_("Inference workloads at FP16/BF16, such as the client's transformer-infer (tokens/s)."),
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
        ),
        UseCase(
            slug="inference-8bit",
            label=_("Inference, 8-bit"),
            description=_("Inference workloads at INT8/FP8."),
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
    # A workload the benchmark client runs over several GPUs of one host (transformer-train-ddp,
    # allreduce-busbw: results that carry the interconnect). See compared_in_relative_method.
    host_run: bool = False


def compared_in_relative_method(point: AggregatePoint) -> bool:
    """Whether an aggregate enters the relative figure. A host run on 2 GPUs or more measures how the
    host joins its GPUs (NVLink or PCIe, its NCCL) as much as the GPU, and its 1-GPU result of the same
    run is already compared: it is shown as scaling (dashboard/scaling.py), never in the ratio."""
    return not (point.host_run and point.group[2] > 1)


@dataclass(frozen=True)
class MeasuredPerf:
    value: float
    groups: int
    n: int
    distinct_submitters_max: int
    via: int | None = None  # the GPU the figure is chained through, when not compared directly


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
        if not aggregate_qualifies(point) or not compared_in_relative_method(point):
            continue
        groups = chosen.setdefault(point.gpu_id, {})
        current = groups.get(point.group)
        if current is None or (point.n, point.has_lab, point.median) > (current.n, current.has_lab, current.median):
            groups[point.group] = point
    return chosen


def _ratios_to(
    groups: Mapping[tuple[int, str, int], AggregatePoint], reference: Mapping[tuple[int, str, int], AggregatePoint]
) -> tuple[list[float], int, int]:
    """Ratios to ``reference`` over the shared groups, the GPU's results in them, max submitters."""
    ratios, n, distinct = [], 0, 0
    for group, point in groups.items():
        ref = reference.get(group)
        if ref is None:
            continue
        ratios.append(point.median / ref.median if point.higher_is_better else ref.median / point.median)
        n += point.n
        distinct = max(distinct, point.distinct_submitters)
    return ratios, n, distinct


def measured_relative(points: Iterable[AggregatePoint], *, baseline_gpu_id: int | None) -> dict[int, MeasuredPerf]:
    """Measured use-case performance of every GPU relative to the baseline (baseline = 1.0).

    A GPU that shares no comparison group with the baseline (a newer benchmark suite the baseline
    never ran) is compared with the directly measured GPU it shares the most groups with, and
    chained: its ratio to that bridge times the bridge's figure. ``via`` names the bridge.
    """
    chosen = best_per_group(points)
    if baseline_gpu_id is None or baseline_gpu_id not in chosen:
        return {}
    reference = chosen[baseline_gpu_id]
    out: dict[int, MeasuredPerf] = {}
    for gpu_id, groups in chosen.items():
        ratios, n, distinct = _ratios_to(groups, reference)
        if ratios:
            out[gpu_id] = MeasuredPerf(geometric_mean(ratios), len(ratios), n, distinct)
    direct = dict(out)
    for gpu_id, groups in chosen.items():
        if gpu_id in out:
            continue
        best: tuple[tuple[int, int, int], int, list[float], int, int] | None = None
        for bridge_id, bridge in direct.items():
            ratios, n, distinct = _ratios_to(groups, chosen[bridge_id])
            # most shared groups, then the best-backed bridge, then a stable order
            rank = (len(ratios), bridge.n, -bridge_id)
            if ratios and (best is None or rank > best[0]):
                best = (rank, bridge_id, ratios, n, distinct)
        if best is not None:
            _rank, bridge_id, ratios, n, distinct = best
            value = geometric_mean(ratios) * direct[bridge_id].value
            out[gpu_id] = MeasuredPerf(value, len(ratios), n, distinct, via=bridge_id)
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


def spec_ratios(specs: SpecFigures, baseline: SpecFigures, *, family: str) -> tuple[float, float] | None:
    """(compute ratio, bandwidth ratio) to the baseline; None when a needed figure is missing."""
    peak, ref_peak = spec_peak(specs, family=family), spec_peak(baseline, family=family)
    if not (peak and ref_peak and specs.bandwidth_gbs and baseline.bandwidth_gbs):
        return None
    return peak / ref_peak, specs.bandwidth_gbs / baseline.bandwidth_gbs


MIN_FIT_GPUS = 5  # measured GPUs needed to fit the estimate (two parameters, then leave-one-out)


@dataclass(frozen=True)
class EstimateSample:
    """A measured GPU for the fit: its measured performance and spec ratios to the baseline."""

    key: str
    measured: float
    compute_ratio: float
    bandwidth_ratio: float


@dataclass(frozen=True)
class EstimateModel:
    """``scale * compute_ratio ** compute_weight * bandwidth_ratio ** (1 - compute_weight)``.

    Two forms are checked against the measured GPUs and the one that misses less is used: equal
    weights with no scale (nothing fitted, so its misses on the measured GPUs are out of sample
    as they are), and ``compute_weight`` and ``scale`` fitted by least squares on the logarithms,
    checked by leaving one GPU out (each measured GPU predicted by a fit without it).
    ``typical_error`` is the median and ``worst_error`` the largest relative miss of the form
    used, ``other_error`` the median miss of the other form; all None when fewer than
    ``MIN_FIT_GPUS`` GPUs were measured (``checked_on`` = 0).
    """

    compute_weight: float = ESTIMATE_COMPUTE_WEIGHT
    scale: float = 1.0
    least_squares: bool = False  # False: the equal-weight form
    checked_on: int = 0  # measured GPUs behind the check; 0 = not checked
    typical_error: float | None = None
    worst_error: float | None = None
    other_error: float | None = None

    @property
    def checked(self) -> bool:
        return self.checked_on > 0

    def predict(self, *, compute_ratio: float, bandwidth_ratio: float) -> float:
        w = self.compute_weight
        return self.scale * compute_ratio**w * bandwidth_ratio ** (1 - w)


def _least_squares(samples: Sequence[EstimateSample]) -> tuple[float, float] | None:
    """(weight, log scale) of log m - log b = log s + w (log c - log b), w kept within [0, 1]."""
    xs = [math.log(s.compute_ratio) - math.log(s.bandwidth_ratio) for s in samples]
    ys = [math.log(s.measured) - math.log(s.bandwidth_ratio) for s in samples]
    if len(samples) < 2 or max(xs) - min(xs) < 1e-9:
        return None
    slope, intercept = statistics.linear_regression(xs, ys)
    weight = min(1.0, max(0.0, slope))
    if weight != slope:  # clamped: refit the scale alone for the bound weight
        intercept = statistics.fmean(y - weight * x for x, y in zip(xs, ys, strict=True))
    return weight, intercept


def _miss(model: EstimateModel, sample: EstimateSample) -> float:
    predicted = model.predict(compute_ratio=sample.compute_ratio, bandwidth_ratio=sample.bandwidth_ratio)
    return abs(predicted / sample.measured - 1)


def estimate_model_fit(samples: Sequence[EstimateSample], *, min_gpus: int = MIN_FIT_GPUS) -> EstimateModel:
    """The spec estimate that misses the measured GPUs least (see EstimateModel).

    Least squares on logarithms weighs a 20 % miss the same for a cheap and an expensive GPU.
    Fewer than ``min_gpus`` samples: the equal-weight form, unchecked.
    """
    usable = [s for s in samples if s.measured > 0 and s.compute_ratio > 0 and s.bandwidth_ratio > 0]
    if len(usable) < min_gpus:
        return EstimateModel()
    equal = EstimateModel()
    equal_errors = [_miss(equal, s) for s in usable]
    whole = _least_squares(usable)
    fitted_errors: list[float] = []
    for i, held_out in enumerate(usable):
        fit = _least_squares(usable[:i] + usable[i + 1 :])
        if whole is None or fit is None:
            fitted_errors = []
            break
        fitted_errors.append(_miss(EstimateModel(compute_weight=fit[0], scale=math.exp(fit[1])), held_out))
    equal_typical = statistics.median(equal_errors)
    if whole is None or not fitted_errors or statistics.median(fitted_errors) >= equal_typical:
        return EstimateModel(
            checked_on=len(usable),
            typical_error=equal_typical,
            worst_error=max(equal_errors),
            other_error=statistics.median(fitted_errors) if fitted_errors else None,
        )
    weight, log_scale = whole
    return EstimateModel(
        compute_weight=weight,
        scale=math.exp(log_scale),
        least_squares=True,
        checked_on=len(usable),
        typical_error=statistics.median(fitted_errors),
        worst_error=max(fitted_errors),
        other_error=equal_typical,
    )


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
    """A micro-benchmark against the datasheet figure it can be compared with: tensor peaks for
    matmuls, memory bandwidth for in-memory copies, the host link for PCIe transfers."""

    precision: str
    measured: float
    peak: float | None
    unit: str
    kind: str = "compute"  # "compute" | "memory" | "host link"
    label: str = ""

    @property
    def efficiency(self) -> float | None:
        return self.measured / self.peak if self.peak else None


# GB/s per lane and direction: the transfer rate after 128b/130b encoding (PCI-SIG: PCIe 3.0 runs
# 8 GT/s, 4.0 16 GT/s, 5.0 32 GT/s; 6.0 64 GT/s with FLIT encoding, about 7.56 GB/s usable).
PCIE_LANE_GBS = {3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
_PCIE = re.compile(r"pcie\s*(\d)(?:\.\d)?\s*x\s*(\d+)", re.IGNORECASE)


def pcie_peak_gbs(bus_interface: str) -> float | None:
    """Theoretical one-direction bandwidth of a PCIe link such as "PCIe 5.0 x16" (63 GB/s)."""
    found = _PCIE.search(bus_interface or "")
    if not found or int(found.group(1)) not in PCIE_LANE_GBS:
        return None
    return PCIE_LANE_GBS[int(found.group(1))] * int(found.group(2))


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
