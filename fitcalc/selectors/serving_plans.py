"""The fit calculator's serving answer: what to run a model on for a serving question.

For a model, its precision(s), the request lengths and a target in output tokens/s per user
(None: maximum throughput), every curated GPU is answered by ``llm.selectors.answers`` (the one
serving answer the rankings, compare and the GPU pages read) in every configuration it is rented
in: the GPU counts up to eight current offers rent in one machine, or 1, 2, 4 and 8 for a GPU no
offer rents (shown without a price unless the user gives one), each at its best tensor-parallel
split. A figure is measured where a point was measured at the workload, else the serving model's,
anchored on the GPU's own measurements, with the held-out error that applies to it.

Energy: each configuration's average power per GPU, measured where a point of that GPU, count,
model and precision with a measured energy serves within 25 % of its tokens/s per user (its watts
over the configuration's tokens/s per GPU give the joules per token), else estimated from the GPU
class's fitted power curve at the serving model's load (sequences in flight per GPU), labelled
estimated with its interval and never above the board limit (llm.serving.energy). An owned GPU's
cost per million tokens (``owned_serving_costs``) is its purchase spread over the hours of use
plus that energy at the user's price per kWh.

Cost: ``llm.question.cost_per_million_output_tokens`` at the GPU's hourly rent (or the user's
``gpu_prices``). The recommendation is the configuration with the lowest $ per million output
tokens (or, with ``fewest_gpus``, the fewest GPUs that meet the target, cheapest among them); the
cost of its GPU across counts is listed beside it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catalog.models import Gpu, GpuPrice, TensorPeak
from catalog.selectors.prices import gpu_counts_rented, gpu_rent_prices
from fitcalc.plan import DAYS_PER_MONTH
from gpuatlas.data_version import data_versioned
from gpuatlas.query_numbers import QueryNumberError
from llm.question import (
    AUTO_ENGINE,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_TARGET_RATE,
    FIXED_PRECISIONS,
    ServingQuestion,
    cost_per_million_output_tokens,
    target_parse,
)
from llm.selectors.answers import serving_answers
from llm.selectors.energy import power_curves_current
from llm.selectors.serving import allreduce_measured, serving_fit_current
from llm.serving.answer import UNREACHABLE, ServingAnswer
from llm.serving.energy import (
    EnergyFigure,
    PowerCurve,
    electricity_per_million_tokens,
    energy_at_power,
    energy_estimate,
    owned_cost_per_million_tokens,
    power_curve_key,
)
from llm.serving.fit import ServingFit
from llm.serving.physics import hardware_class
from llm.serving.shapes import MODEL_SHAPES, model_size_class

DEFAULT_TARGET = DEFAULT_TARGET_RATE
DEFAULT_LENGTHS = (DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS)
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
    anchor: str = ""  # estimates: the GPU's measured points the model is anchored on
    floor: bool = False  # measured faster per user than the target: at least this much
    price_basis: str = ""  # offer | user | none
    energy: EnergyFigure | None = None  # per output token, measured or estimated (module doc)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_s_per_gpu * self.count

    @property
    def cost_per_million(self) -> float | None:
        return cost_per_million_output_tokens(price_per_gpu_hour=self.price_per_gpu_hour,
                                              tokens_per_s_per_gpu=self.tokens_per_s_per_gpu)  # fmt: skip

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
            "anchor": self.anchor,
            "floor": self.floor,
            "price_basis": self.price_basis,
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


def serving_plans(
    *,
    model: str,
    precisions: Sequence[str],
    target: float | None = DEFAULT_TARGET,
    input_len: int = DEFAULT_LENGTHS[0],
    output_len: int = DEFAULT_LENGTHS[1],
    engine: str = AUTO_ENGINE,
    fewest_gpus: bool = False,
    price_rule: str = "typical",
    gpu_slugs: Sequence[str] | None = None,
    priced_only: bool = False,
    fit: ServingFit | None = None,
    gpu_prices: Mapping[str, float] | None = None,
) -> ServingPlans:
    """The search (module doc) over every curated GPU, or those of ``gpu_slugs``; ``priced_only``:
    those with a rental price (by any rule). Raises ValueError naming the argument that is wrong."""
    if model not in MODEL_SHAPES:
        raise ValueError(f"model: unknown model {model!r}")
    bad = [p for p in precisions if p not in PRECISIONS or p not in FIXED_PRECISIONS]
    if bad or not precisions:
        raise ValueError(f"precision: one or more of {', '.join(PRECISIONS)}, got {', '.join(bad) or 'none'}")
    if target is not None and target <= 0:
        raise ValueError("target: tokens/s per user must be positive")
    fit = fit or serving_fit_current()
    gpus = Gpu.objects.curated().with_related().filter(memory_gib__gt=0, memory_bandwidth_gbs__gt=0)
    if gpu_slugs:
        gpus = gpus.filter(slug__in=list(gpu_slugs))
    if priced_only:
        gpus = gpus.filter(id__in=GpuPrice.objects.filter(gpu_count=0).values("gpu_id"))
    gpus_list = list(gpus.order_by("slug"))
    ids = [g.id for g in gpus_list]
    peaks: dict[int, dict[str, float | None]] = defaultdict(dict)
    for peak in TensorPeak.objects.filter(gpu_id__in=ids).values("gpu_id", "precision", "supported", "dense_tflops"):
        peaks[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None
    links = allreduce_measured(gpu_ids=ids)
    rented = gpu_counts_rented(gpu_ids=ids)
    prices = gpu_rent_prices(gpu_ids=ids, rule=price_rule)
    user = dict(gpu_prices or {})
    power_curves = power_curves_current()
    power_key_size = model_size_class(model) or ""
    options: list[ServingPlan] = []
    why: dict[int, str] = {}
    for precision in precisions:
        question = ServingQuestion(model, input_len, output_len, precision, target, engine)
        # A 4-bit float format needs its tensor path (Blackwell); the others convert on the fly.
        able = [g for g in gpus_list if precision != "fp4" or peaks.get(g.id, {}).get("fp4")]
        answers = serving_answers(question=question, gpus=able, rented=rented, peaks_by_gpu=peaks, fit=fit,
                                  links=links)  # fmt: skip
        for gpu in able:
            a = answers[gpu.id]
            rented_counts = set(a.rented_counts)
            if gpu.slug in user:
                price, basis = user[gpu.slug], "user"
            elif gpu.id in prices:
                price, basis = float(prices[gpu.id].price_usd), "offer"
            else:
                price, basis = None, "none"
            power = power_curves.get(power_curve_key(gpu_class=hardware_class(
                architecture=gpu.architecture.slug if gpu.architecture else "", segment=gpu.segment),
                size=power_key_size))  # fmt: skip
            for answer in a.by_count:
                if answer.tokens_per_s_per_gpu is not None:
                    powers = [(p.tokens_per_s_per_user, p.power_w) for p in a.points
                              if p.gpu_count == answer.gpu_count and p.precision == answer.precision
                              and p.power_w and p.tokens_per_s_per_user
                              and question.lengths_match(p.input_tokens, p.output_tokens)]  # fmt: skip
                    energy = _plan_energy(
                        powers,
                        power,
                        tokens_per_s_per_gpu=answer.tokens_per_s_per_gpu,
                        tokens_per_s_per_user=answer.tokens_per_s_per_user or target,
                        load=answer.concurrency / answer.gpu_count if answer.concurrency else None,
                        limit_w=gpu.tdp_w,
                        rate_interval=answer.estimate_factors,
                    )
                    options.append(_plan(gpu, answer, price=price, price_basis=basis,
                                         rented=answer.gpu_count in rented_counts, energy=energy))  # fmt: skip
            if a.best is None:
                why.setdefault(gpu.id, a.not_fitting_reason or "no figure")
            elif a.best.basis == UNREACHABLE:
                why.setdefault(gpu.id, f"cannot reach {target:g} tokens/s per user" if target else "no figure")
    served = {o.gpu_slug for o in options}
    not_fitting = [(g.name, why[g.id]) for g in gpus_list if g.slug not in served and g.id in why]
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
    gpu: Gpu,
    answer: ServingAnswer,
    *,
    price: float | None,
    price_basis: str,
    rented: bool,
    energy: EnergyFigure | None = None,
) -> ServingPlan:
    anchor = ""
    if answer.anchor is not None and answer.basis != "measured":
        anchor = f"anchored on {len(answer.anchor.points)} measured point(s) of this GPU: x{answer.anchor.factor:.2f}"
    return ServingPlan(gpu.slug, gpu.name, answer.gpu_count, answer.tp, answer.precision,
                       answer.tokens_per_s_per_gpu or 0.0, answer.tokens_per_s_per_user, answer.concurrency,
                       answer.ttft_s, answer.basis, answer.error_pct, answer.inside, answer.allreduce_source,
                       answer.source if answer.basis == "measured" else "", price, rented, answer.allreduce_priced,
                       anchor, answer.floor, price_basis, energy)  # fmt: skip


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
    rate_interval: tuple[float, float] | None,
) -> EnergyFigure | None:
    """A configuration's energy per output token (module doc): measured power of the nearest
    measured point in tokens/s per user, else the GPU class's power curve at the load; over an
    estimated rate (``rate_interval``: its interval as factors) the figure is estimated and its
    interval spans the rate's."""
    if tokens_per_s_per_user and tokens_per_s_per_gpu > 0:
        near = [(abs(user / tokens_per_s_per_user - 1), watts) for user, watts in powers]
        close = min((n for n in near if n[0] <= POWER_MATCH), default=None)
        if close is not None:
            return energy_at_power(power_w=close[1], tokens_per_s_per_gpu=tokens_per_s_per_gpu,
                                   rate_interval=rate_interval)  # fmt: skip
    if power is None or load is None:
        return None
    return energy_estimate(power, load=load, tokens_per_s_per_gpu=tokens_per_s_per_gpu, limit_w=limit_w,
                           rate_interval=rate_interval)  # fmt: skip


def _recommend(options: list[ServingPlan], *, fewest_gpus: bool) -> ServingPlan | None:
    """The cheapest (or fewest GPUs) of the priced configurations a current offer rents (or the
    user priced); a tensor-parallel one only where its all-reduces are priced (a link the
    catalogue has no figure for is not)."""
    priced = [
        o for o in options
        if o.cost_per_million is not None and (o.rented or o.price_basis == "user")
        and (o.tp == 1 or o.basis == "measured" or o.allreduce_priced)
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
    (the most throughput), or the default when absent or not a number in range."""
    try:
        return target_parse(text)
    except QueryNumberError:
        return DEFAULT_TARGET


@data_versioned("serving_plans_asked", bounded=True)  # keyed by a request's parameters
def serving_plans_asked(*, gpu_prices: tuple[tuple[str, float], ...], **question: Any) -> ServingPlans:
    """``serving_plans`` for a request's validated parameters (the stored fit, every GPU; typed
    prices as sorted pairs), cached by data version: the search evaluates the serving model on
    every GPU."""
    return serving_plans(**question, gpu_prices=dict(gpu_prices))


@data_versioned("fit_serving_answer", bounded=True)  # keyed by a request's parameters
def fit_serving_answer(
    *,
    preset: str,
    precision: str,
    target: float | None,
    input_len: int = DEFAULT_INPUT_TOKENS,
    output_len: int = DEFAULT_OUTPUT_TOKENS,
) -> ServingPlans | None:
    """The serving search for a fit-calculator job (batched LLM inference of a preset the serving
    model knows) at the job's request lengths: its weight format, and FP8 beside a 16-bit format.

    Over the GPUs with a rental price only: the page shows the recommendation (a rented, priced
    configuration), its GPU across counts and the owned cost of each buy-or-rent row (a GPU with a
    rental price by the job's rule), so an unpriced GPU's configurations could never reach it.
    Every GPU's configurations are the serving API's (``serving_plans_asked``)."""
    model = SERVING_MODEL_OF_PRESET.get(preset, preset)
    weights = SERVING_PRECISION_OF.get(precision)
    if model not in MODEL_SHAPES or weights is None:
        return None
    precisions = [weights, "fp8"] if weights in ("bf16", "fp16") else [weights]
    return serving_plans(model=model, precisions=precisions, target=target, input_len=input_len,
                         output_len=output_len, priced_only=True)  # fmt: skip


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
