"""The fit calculator's serving answer: what to run a model on for a tokens/s-per-user target.

For a model, its precision(s) and a target in output tokens/s per user (None: maximum
throughput), every curated GPU is tried at every GPU count a current offer rents in one machine
(powers of two up to the most one offer puts in a machine; 1, 2, 4 and 8 for a GPU no offer
rents, shown without a price), every tensor-parallel size that divides the count and every
precision. Each configuration's figure is

* measured first: the trusted ``ServingPoint``s of that GPU, count, model and precision whose
  prompt and output lengths are within 30 % of the job's, read at the target on their curve
  (``llm.serving.measured``);
* else the serving model's (``llm.selectors.serving.serving_curve`` at the stored fit), with the
  held-out error that applies to it and the all-reduce figure it used.

Energy: each configuration's average power per GPU, measured where a point of that GPU, count,
model and precision with a measured energy serves within 25 % of its tokens/s per user (its watts
over the configuration's tokens/s per GPU give the joules per token), else estimated from the GPU
class's fitted power curve at the serving model's load (sequences in flight per GPU), labelled
estimated with its interval and never above the board limit (llm.serving.energy). An owned GPU's
cost per million tokens (``owned_serving_costs``) is its purchase spread over the hours of use
plus that energy at the user's price per kWh.

Cost: the GPUs' hourly rent over the output tokens they make in an hour. The recommendation is
the configuration with the lowest $ per million output tokens (or, with ``fewest_gpus``, the
fewest GPUs that meet the target, cheapest among them); the cost of its GPU across counts is
listed beside it. Memory is checked in GiB with the engine's runtime reserve (the model's).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from catalog.models import Gpu, TensorPeak
from catalog.selectors.prices import gpu_rent_prices
from fitcalc.plan import DAYS_PER_MONTH
from fitcalc.selectors.gpu_facts import max_count_offered
from llm.estimate.shapes import MODEL_SHAPES, model_size_class
from llm.models import ServingPoint
from llm.selectors.energy import power_curves_current
from llm.selectors.serving import (
    ServingEstimate,
    allreduce_measured,
    serving_curve,
    serving_fit_current,
    serving_hardware,
)
from llm.serving.energy import (
    EnergyFigure,
    PowerCurve,
    electricity_per_million_tokens,
    energy_estimate,
    energy_measured,
    owned_cost_per_million_tokens,
    power_curve_key,
)
from llm.serving.fit import ServingFit
from llm.serving.measured import MeasuredOperatingPoint, measured_at_interactivity

DEFAULT_TARGET = 20.0
DEFAULT_LENGTHS = (1000, 1000)
UNRENTED_COUNTS = (1, 2, 4, 8)
MAX_COUNT = 8  # tensor parallelism and its all-reduces stay within one machine
LENGTH_TOLERANCE = 0.3
PRECISIONS = ("fp8", "bf16", "fp16", "fp4", "int4")


@dataclass(frozen=True)
class ServingPlan:
    """One configuration: ``count`` GPUs of ``gpu_slug`` as ``count / tp`` replicas of ``tp``."""

    gpu_slug: str
    gpu_name: str
    count: int
    tp: int
    precision: str
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float | None
    concurrency: int | None  # sequences in flight on all the GPUs (estimates)
    ttft_s: float | None
    basis: str  # measured | estimated
    error_pct: float | None  # estimates: the held-out median error that applies
    inside: bool  # estimates: inside the measured range
    allreduce_source: str
    source: str  # measured: the points read
    price_per_gpu_hour: float | None
    rented: bool  # a current offer rents this many in one machine
    allreduce_priced: bool = True  # False: its all-reduces run over a link with no figure
    energy: EnergyFigure | None = None  # per output token, measured or estimated (module doc)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_s_per_gpu * self.count

    @property
    def cost_per_million(self) -> float | None:
        if not self.price_per_gpu_hour or self.tokens_per_s_per_gpu <= 0:
            return None
        return self.price_per_gpu_hour / (self.tokens_per_s_per_gpu * 3600.0) * 1e6

    def as_dict(self) -> dict[str, object]:
        return {
            "gpu": self.gpu_slug,
            "gpu_name": self.gpu_name,
            "gpu_count": self.count,
            "tensor_parallel": self.tp,
            "replicas": self.count // self.tp,
            "precision": self.precision,
            "tokens_per_s": round(self.tokens_per_s, 1),
            "tokens_per_s_per_gpu": round(self.tokens_per_s_per_gpu, 1),
            "tokens_per_s_per_user": None
            if self.tokens_per_s_per_user is None
            else round(self.tokens_per_s_per_user, 1),
            "concurrency": self.concurrency,
            "ttft_s": None if self.ttft_s is None else round(self.ttft_s, 3),
            "basis": self.basis,
            "error_pct": self.error_pct,
            "inside_measured_range": self.inside,
            "allreduce": self.allreduce_source,
            "measured_from": self.source,
            "price_per_gpu_hour_usd": self.price_per_gpu_hour,
            "cost_per_million_tokens_usd": None if self.cost_per_million is None else round(self.cost_per_million, 4),
            "rented": self.rented,
            "joules_per_token": None if self.energy is None else round(self.energy.joules_per_token, 4),
            "energy_basis": "" if self.energy is None else self.energy.basis,
        }


@dataclass(frozen=True)
class ServingPlans:
    model: str
    precisions: tuple[str, ...]
    target: float | None
    input_len: int
    output_len: int
    engine: str
    fewest_gpus: bool
    recommended: ServingPlan | None
    options: list[ServingPlan]  # the best tensor-parallel size of every GPU, count and precision
    across_counts: list[ServingPlan]  # the recommended GPU and precision at every count
    not_fitting: list[tuple[str, str]] = field(default_factory=list)  # (GPU name, why)
    fitted: str = ""  # when the model's constants were fitted, on how many points


def _counts(max_offered: int | None) -> tuple[tuple[int, bool], ...]:
    if not max_offered:
        return tuple((c, False) for c in UNRENTED_COUNTS)
    out, c = [], 1
    while c <= min(max_offered, MAX_COUNT):
        out.append((c, True))
        c *= 2
    return tuple(out)


def _tp_sizes(count: int) -> list[int]:
    return [t for t in (1, 2, 4, 8) if t <= count and count % t == 0]


def _lengths_match(point: ServingPoint, input_len: int, output_len: int) -> bool:
    if point.input_tokens is None or point.output_tokens is None:
        return False
    return (
        abs(point.input_tokens / input_len - 1) <= LENGTH_TOLERANCE
        and abs(point.output_tokens / output_len - 1) <= LENGTH_TOLERANCE
    )


def serving_plans(
    *,
    model: str,
    precisions: Sequence[str],
    target: float | None = DEFAULT_TARGET,
    input_len: int = DEFAULT_LENGTHS[0],
    output_len: int = DEFAULT_LENGTHS[1],
    engine: str = "vllm-sglang",
    fewest_gpus: bool = False,
    price_rule: str = "typical",
    gpu_slugs: Sequence[str] | None = None,
    fit: ServingFit | None = None,
) -> ServingPlans:
    """The search (module doc). Raises ValueError naming the argument that is wrong."""
    if model not in MODEL_SHAPES:
        raise ValueError(f"model: unknown model {model!r}")
    bad = [p for p in precisions if p not in PRECISIONS]
    if bad or not precisions:
        raise ValueError(f"precision: one or more of {', '.join(PRECISIONS)}, got {', '.join(bad) or 'none'}")
    if target is not None and target <= 0:
        raise ValueError("target: tokens/s per user must be positive")
    fit = fit or serving_fit_current()
    gpus = Gpu.objects.curated().with_related().filter(memory_gib__gt=0, memory_bandwidth_gbs__gt=0)
    if gpu_slugs:
        gpus = gpus.filter(slug__in=list(gpu_slugs))
    gpus_list = list(gpus.order_by("slug"))
    ids = [g.id for g in gpus_list]
    peaks: dict[int, dict[str, float | None]] = defaultdict(dict)
    for peak in TensorPeak.objects.filter(gpu_id__in=ids).values("gpu_id", "precision", "supported", "dense_tflops"):
        peaks[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None
    links = allreduce_measured(gpu_ids=ids)
    offered = max_count_offered(gpu_ids=ids)
    prices = gpu_rent_prices(gpu_ids=ids, rule=price_rule)
    measured: dict[tuple[int, int, str], list[MeasuredOperatingPoint]] = defaultdict(list)
    powers: dict[tuple[int, int, str], list[tuple[float, float]]] = defaultdict(list)
    for point in ServingPoint.objects.trusted().for_model(model).at_precisions(list(precisions)).filter(
        gpu_id__in=ids
    ):  # fmt: skip
        if _lengths_match(point, input_len, output_len):
            label = f"{point.source_title}, {point.get_scenario_display()}, {point.measured_on:%Y-%m-%d}"
            key = (point.gpu_id, point.gpu_count, point.weight_precision)
            measured[key].append(MeasuredOperatingPoint(point.tokens_per_s_per_gpu, point.tokens_per_s_per_user, label))
            if point.joules_per_token is not None and point.power_w and point.tokens_per_s_per_user:
                powers[key].append((point.tokens_per_s_per_user, point.power_w))
    power_curves = power_curves_current()
    power_key_size = model_size_class(model) or ""
    options: list[ServingPlan] = []
    not_fitting: list[tuple[str, str]] = []
    for gpu in gpus_list:
        hw = serving_hardware(gpu, peaks=peaks.get(gpu.id, {}))
        # TensorRT-LLM runs on NVIDIA GPUs only: the others are served by vLLM or SGLang.
        gpu_engine = "vllm-sglang" if engine == "tensorrt-llm" and gpu.vendor.slug != "nvidia" else engine
        price = float(prices[gpu.id].price_usd) if gpu.id in prices else None
        fitted_any = False
        for precision in precisions:
            if precision == "fp4" and not hw.supports("fp4"):
                continue
            for count, rented in _counts(offered.get(gpu.id)):
                best: ServingPlan | None = None
                for tp in _tp_sizes(count):
                    plan = _plan(gpu=gpu, hw=hw, model=model, precision=precision, count=count, tp=tp,
                                 target=target, input_len=input_len, output_len=output_len, engine=gpu_engine, fit=fit,
                                 links=links, measured=measured.get((gpu.id, count, precision), []), price=price,
                                 rented=rented, powers=powers.get((gpu.id, count, precision), []),
                                 power=power_curves.get(power_curve_key(gpu_class=hw.hardware_class,
                                                                       size=power_key_size)))  # fmt: skip
                    if plan is not None and (best is None or plan.tokens_per_s_per_gpu > best.tokens_per_s_per_gpu):
                        best = plan
                if best is not None:
                    options.append(best)
                    fitted_any = True
        if not fitted_any:
            not_fitting.append((gpu.name, _why_not(gpu=gpu, hw=hw, model=model, precisions=precisions, fit=fit,
                                                   target=target, input_len=input_len, output_len=output_len,
                                                   engine=gpu_engine, offered=offered.get(gpu.id))))  # fmt: skip
    recommended = _recommend(options, fewest_gpus=fewest_gpus)
    across = (
        sorted(
            (o for o in options if o.gpu_slug == recommended.gpu_slug and o.precision == recommended.precision),
            key=lambda o: o.count,
        )
        if recommended
        else []
    )
    fitted = f"{fit.points} points" if fit else ""
    return ServingPlans(model, tuple(precisions), target, input_len, output_len, engine, fewest_gpus, recommended,
                        options, across, not_fitting, fitted)  # fmt: skip


def _plan(
    *, gpu: Gpu, hw, model: str, precision: str, count: int, tp: int, target: float | None, input_len: int,
    output_len: int, engine: str, fit: ServingFit | None, links, measured: list[MeasuredOperatingPoint],
    price: float | None, rented: bool, powers: Sequence[tuple[float, float]] = (), power: PowerCurve | None = None,
) -> ServingPlan | None:  # fmt: skip
    estimate: ServingEstimate = serving_curve(gpu=gpu, model=model, precision=precision, gpu_count=count, tp=tp,
                                              input_len=input_len, output_len=output_len, engine=engine, fit=fit,
                                              links=links, hardware=hw,
                                              scenario="offline" if target is None else "server")  # fmt: skip
    if not estimate.fits:
        return None
    at = estimate.at(target)
    found = measured_at_interactivity(measured, target)
    if found is not None:
        # At maximum throughput (no target) the model's per-user rate there picks the measured power.
        per_user = target if target is not None else (at.tokens_per_s_per_user if at else None)
        energy = _plan_energy(powers, power, tokens_per_s_per_gpu=found.tokens_per_s_per_gpu,
                              tokens_per_s_per_user=per_user, load=at.concurrency / tp if at else None,
                              limit_w=gpu.tdp_w)  # fmt: skip
        return ServingPlan(gpu.slug, gpu.name, count, tp, precision, found.tokens_per_s_per_gpu, target, None, None,
                           "measured", None, True, estimate.allreduce_source, "; ".join(found.labels), price,
                           rented, estimate.allreduce_priced, energy)  # fmt: skip
    if at is None:
        return None
    energy = _plan_energy(powers, power, tokens_per_s_per_gpu=at.tokens_per_s_per_gpu,
                          tokens_per_s_per_user=at.tokens_per_s_per_user, load=at.concurrency / tp,
                          limit_w=gpu.tdp_w)  # fmt: skip
    return ServingPlan(gpu.slug, gpu.name, count, tp, precision, at.tokens_per_s_per_gpu, at.tokens_per_s_per_user,
                       at.concurrency * estimate.replicas, at.ttft_s, "estimated", estimate.error_pct,
                       estimate.inside, estimate.allreduce_source, "", price, rented,
                       estimate.allreduce_priced, energy)  # fmt: skip


# A measured power stands for an operating point whose tokens/s per user is within this share of its own.
POWER_MATCH = 0.25


def _plan_energy(
    powers: Sequence[tuple[float, float]],
    power: PowerCurve | None,
    *,
    tokens_per_s_per_gpu: float,
    tokens_per_s_per_user: float | None,
    load: float | None,
    limit_w: float | None,
) -> EnergyFigure | None:
    """A configuration's energy per output token (module doc): measured power of the nearest
    measured point in tokens/s per user, else the GPU class's power curve at the load."""
    if tokens_per_s_per_user and tokens_per_s_per_gpu > 0:
        near = [(abs(user / tokens_per_s_per_user - 1), watts) for user, watts in powers]
        close = min((n for n in near if n[0] <= POWER_MATCH), default=None)
        if close is not None:
            return energy_measured(joules_per_token_=close[1] / tokens_per_s_per_gpu, power_w=close[1])
    if power is None or load is None:
        return None
    return energy_estimate(power, load=load, tokens_per_s_per_gpu=tokens_per_s_per_gpu, limit_w=limit_w)


def _why_not(*, gpu: Gpu, hw, model: str, precisions: Sequence[str], fit: ServingFit | None, target: float | None,
             input_len: int, output_len: int, engine: str, offered: int | None) -> str:  # fmt: skip
    """Why no configuration of this GPU serves the model: the weights do not fit its largest
    count, or it fits and no configuration reaches the target."""
    largest = max(c for c, _ in _counts(offered))
    estimate = serving_curve(gpu=gpu, model=model, precision=precisions[0], gpu_count=largest, tp=largest,
                             input_len=input_len, output_len=output_len, engine=engine, fit=fit, hardware=hw)  # fmt: skip
    curve = estimate.curve
    if not curve.fits:
        return (
            f"does not fit on {largest}: {curve.weights_gib_per_gpu:.1f} GiB of weights per GPU, "
            f"{curve.usable_gib_per_gpu:.1f} GiB usable"
        )
    return f"no configuration reaches {target:g} tokens/s per user" if target else "no figure"


def _recommend(options: list[ServingPlan], *, fewest_gpus: bool) -> ServingPlan | None:
    """The cheapest (or fewest GPUs) of the rented, priced configurations; a tensor-parallel one
    only where its all-reduces are priced (a link the catalogue has no figure for is not)."""
    priced = [
        o for o in options
        if o.cost_per_million is not None and o.rented and (o.tp == 1 or o.basis == "measured" or o.allreduce_priced)
    ]  # fmt: skip
    if not priced:
        return None
    if fewest_gpus:
        return min(priced, key=lambda o: (o.count, o.cost_per_million or 0.0))
    return min(priced, key=lambda o: (o.cost_per_million or 0.0, o.count))


# Presets of the fit calculator served as a model of the estimate with the same architecture
# (DeepSeek-V3 and R1 share one configuration; Llama 3.3 70B is Llama 3.1 70B's).
SERVING_MODEL_OF_PRESET = {"deepseek-v3": "deepseek-r1", "llama-3.3-70b": "llama-3.1-70b"}
# The calculator's weight formats as the serving model runs them.
SERVING_PRECISION_OF = {
    "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "fp8", "q8_0": "fp8", "int4": "int4", "gptq": "int4",
    "awq": "int4", "q4_k_m": "int4", "mxfp4": "fp4",
}  # fmt: skip


def serving_target_parse(text: str | None) -> float | None:
    """A tokens/s-per-user target from the page's ``tokens_per_user`` parameter: a number, "max"
    (the most throughput), or the default when absent or not a positive number."""
    if text is None or not text.strip():
        return DEFAULT_TARGET
    if text.strip().lower() in ("max", "maximum"):
        return None
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_TARGET
    return value if 0 < value <= 10_000 else DEFAULT_TARGET


def fit_serving_answer(*, preset: str, precision: str, target: float | None) -> ServingPlans | None:
    """The serving search for a fit-calculator job (batched LLM inference of a preset the serving
    model knows): its weight format, and FP8 beside a 16-bit format."""
    model = SERVING_MODEL_OF_PRESET.get(preset, preset)
    weights = SERVING_PRECISION_OF.get(precision)
    if model not in MODEL_SHAPES or weights is None:
        return None
    precisions = [weights, "fp8"] if weights in ("bf16", "fp16") else [weights]
    return serving_plans(model=model, precisions=precisions, target=target)


@dataclass(frozen=True)
class OwnedServingCost:
    """What a million output tokens cost on one owned GPU of a buy-or-rent row, in the row's
    currency, at the serving answer's configuration of that GPU with the most tokens/s per GPU."""

    slug: str
    plan: ServingPlan
    energy: EnergyFigure | None
    capital_per_million: float  # the purchase spread over the hours of use
    electricity_per_million: float | None  # None: no price per kWh given, or no energy figure
    owned_per_million: float | None  # capital + electricity; None where electricity cannot be counted
    rented_per_million: float  # the row's rent over the same tokens


def owned_serving_costs(
    *, rows: Sequence[Any], serving: ServingPlans | None, price_per_kwh: float | None, hours_per_day: float
) -> dict[str, OwnedServingCost]:
    """gpu slug -> its owned cost per million output tokens (``OwnedServingCost``) for every
    buy-or-rent row (``fitcalc.selectors.fit.BuyRentRow``) whose GPU the serving answer has a
    configuration for. Electricity at ``price_per_kwh`` where given and an energy is known."""
    if serving is None or hours_per_day <= 0:
        return {}
    best: dict[str, ServingPlan] = {}
    for option in serving.options:
        held = best.get(option.gpu_slug)
        if held is None or option.tokens_per_s_per_gpu > held.tokens_per_s_per_gpu:
            best[option.gpu_slug] = option
    out: dict[str, OwnedServingCost] = {}
    for row in rows:
        plan = best.get(row.slug)
        if plan is None or row.result is None or plan.tokens_per_s_per_gpu <= 0:
            continue
        capital_per_hour = row.result.depreciation_per_month / (hours_per_day * DAYS_PER_MONTH)
        per_hour_tokens = plan.tokens_per_s_per_gpu * 3600.0 / 1e6
        capital = capital_per_hour / per_hour_tokens
        rented = row.result.rent_price_per_hour / per_hour_tokens
        electricity = owned = None
        if price_per_kwh is not None and plan.energy is not None:
            electricity = electricity_per_million_tokens(
                energy_per_token_j=plan.energy.joules_per_token, price_per_kwh=price_per_kwh
            )
            owned = owned_cost_per_million_tokens(
                capital_per_hour=capital_per_hour,
                tokens_per_s_per_gpu=plan.tokens_per_s_per_gpu,
                energy_per_token_j=plan.energy.joules_per_token,
                price_per_kwh=price_per_kwh,
            )
        out[row.slug] = OwnedServingCost(row.slug, plan, plan.energy, capital, electricity, owned, rented)
    return out
