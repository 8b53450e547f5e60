"""Fit across GPU counts, time and cost to finish, and buy versus rent. Pure arithmetic on plain data.

Memory on n GPUs
----------------
Weights, gradients and optimizer states are split evenly across the n GPUs (FSDP / ZeRO-3 for
training, tensor or pipeline parallelism for inference). The KV cache and activations are *not*
split: each GPU holds them for its own batch (data parallelism with ``batch`` sequences per GPU).
For tensor-parallel inference this overstates the KV cache, which is split by KV head; the figure
is an upper bound. Every GPU pays the CUDA context (:data:`fitcalc.memory.CUDA_CONTEXT_GIB`) and
the fragmentation allowance on its own share of the per-step allocations::

    per_gpu(n) = (weights + gradients + optimizer) / n + kv_cache + activations
                 + fragmentation_factor x (gradients / n + kv_cache + activations) + cuda_context

``per_gpu(1)`` equals the breakdown's ``total_gib``. A count fits when ``per_gpu(n) <=
memory_gib`` (the GPU's total memory as the caller states it; nothing else is subtracted).

Time and cost
-------------
The rate of n GPUs is the caller's figure for that count where it gives one
(``GpuFacts.count_rates``: LLM inference from the serving model, whose one stream gains
nothing from more GPUs; training with its communication priced over the GPU's link, measured
where the client measured it: fitcalc.parallel). Otherwise
``throughput_per_s`` is one GPU's rate (tokens or samples per second; measured, or the
spec-sheet estimate flagged ``throughput_is_estimate``) and n GPUs run ``n x e^log2(n)`` times as
fast, with ``e`` = :data:`SCALING_EFFICIENCY_PER_DOUBLING` = 0.9: each doubling of the GPU count
keeps 90% of the per-GPU rate (speed-ups 1, 1.8, 3.24, 5.83 for 1, 2, 4, 8 GPUs). That is an
assumption for data-parallel training within one host, not a measurement; the GPU selection help page reports that a
16-GPU DGX-2 did not reach twice the 8-GPU throughput, so real scaling can be worse.

``hours = work_units / rate(n) / 3600``; ``cost = hours x price_per_gpu_hour x n``. Plans over :data:`MAX_HOURS` = 24 h are flagged (the GPU selection help page: one training
run should finish within 24 hours, so the next day's run can use what it taught).

Buy versus rent
---------------
See :func:`buy_vs_rent`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from django.utils.translation import gettext as _

from fitcalc.errors import FitInputError
from fitcalc.memory import MemoryBreakdown

DEFAULT_COUNTS: tuple[int, ...] = (1, 2, 4, 8)
MAX_COUNT = 1024
SCALING_EFFICIENCY_PER_DOUBLING = 0.9
MAX_HOURS = 24.0
MAX_WORK_UNITS = 1e18

#: Average days per month (365.25 / 12).
DAYS_PER_MONTH = 365.25 / 12
#: Default useful life over which a bought GPU's price is spread: 3 years, a common
#: depreciation period for computer hardware.
DEFAULT_AMORTISATION_MONTHS = 36.0


#: How the rate of n GPUs was reached: one GPU; training communication priced with the all-reduce
#: bandwidth measured on that GPU, count and link (fitcalc.parallel); priced from the link's datasheet
#: figures ("modelled"); the assumed 90% per doubling (link unknown); one stream split by layers (no
#: speed-up); batched serving by the serving model.
SCALINGS = ("single", "measured", "modelled", "assumed", "layer-split", "tensor-parallel")


@dataclass(frozen=True)
class CountRate:
    """The rate of a whole configuration of ``count`` GPUs where the caller knows it better than
    ``throughput_per_s x speedup``. ``basis``: measured / measured-scaled / estimated / none;
    ``scaling``: one of :data:`SCALINGS`; ``note``: how it was reached, for people;
    ``typical_error`` of an estimate (0.2 = 20%), larger when ``outside`` gives reasons it lies
    outside the range the model was fitted on (architecture, engine, configuration)."""

    per_s: float | None
    basis: str
    scaling: str
    note: str = ""
    typical_error: float | None = None
    outside: tuple[str, ...] = ()  # why an estimate lies outside the model's measured range
    configuration: str = ""  # LLM: single, layer, or the link kind of a tensor-parallel group


@dataclass(frozen=True)
class GpuFacts:
    """Plain facts about one GPU model, as the caller knows them (no database objects).

    ``throughput_per_s``: one GPU's rate in the caller's work unit (tokens/s, samples/s ...); for
    LLM inference, one GPU's share at the fewest GPUs with a figure (one stream: the stream's rate).
    ``count_rates``: the rate of n GPUs together where the caller has it (else ``throughput_per_s``
    x the assumed speed-up). ``max_count_offered``: the most of these GPUs one current rental
    offer puts in one machine (None: not known); larger counts are not rentable as one machine. ``price_per_gpu_hour``: the rental per GPU-hour. ``purchase_price``:
    new or used price of one GPU. ``tdp_w``: board power in watts. Money is in one currency, the
    caller's.
    """

    slug: str
    name: str
    memory_gib: float
    throughput_per_s: float | None = None
    throughput_is_estimate: bool = False
    price_per_gpu_hour: float | None = None
    purchase_price: float | None = None
    tdp_w: float | None = None
    throughput_basis: str = ""
    count_rates: Mapping[int, CountRate] = field(default_factory=dict)
    max_count_offered: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CountPlan:
    """One GPU model at one count: memory per GPU, fit, and time and cost (None when it doesn't fit,
    or without work units, throughput or price)."""

    count: int
    per_gpu_gib: float
    memory_gib: float
    fits: bool
    speedup: float
    hours: float | None
    cost: float | None
    over_max_hours: bool | None
    throughput_is_estimate: bool
    reason: str
    throughput_per_s: float | None = None
    throughput_basis: str = "none"
    scaling: str = "single"
    throughput_note: str = ""
    typical_error: float | None = None
    rentable: bool | None = None
    outside: tuple[str, ...] = ()
    configuration: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["per_gpu_gib"] = round(self.per_gpu_gib, 3)
        return data

    @property
    def per_gpu_per_s(self) -> float | None:
        return None if self.throughput_per_s is None else self.throughput_per_s / self.count

    @property
    def typical_error_percent(self) -> int | None:
        return None if self.typical_error is None else round(self.typical_error * 100)


@dataclass(frozen=True)
class GpuPlan:
    """One GPU model across counts. ``gpus_needed`` is the smallest count that fits (None: none
    does, ``reason`` says why). ``recommended`` is the fitting count that a current offer rents as
    one machine and that finishes within the time limit at the lowest cost (fewest GPUs when no
    price or time is known); a count no offer rents is recommended only when no rentable one fits."""

    gpu: GpuFacts
    counts: tuple[CountPlan, ...]
    gpus_needed: int | None
    recommended: CountPlan | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu.to_dict(),
            "counts": [plan.to_dict() for plan in self.counts],
            "gpus_needed": self.gpus_needed,
            "recommended": self.recommended.to_dict() if self.recommended else None,
            "reason": self.reason,
        }


def _check_number(
    field_name: str, value: float | None, *, minimum: float, maximum: float, allow_equal_min: bool = True
) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FitInputError(field_name, f"must be a finite number, got {value!r}")
    if value < minimum or (not allow_equal_min and value == minimum):
        relation = "at least" if allow_equal_min else "more than"
        raise FitInputError(field_name, f"must be {relation} {minimum:g}, got {value:g}")
    if value > maximum:
        raise FitInputError(field_name, f"{value:g} is beyond the supported maximum of {maximum:g}")


def _check_gpu(gpu: GpuFacts, index: int) -> None:
    prefix = f"gpus[{index}]"
    _check_number(f"{prefix}.memory_gib", gpu.memory_gib, minimum=0, maximum=1e5, allow_equal_min=False)
    _check_number(f"{prefix}.throughput_per_s", gpu.throughput_per_s, minimum=0, maximum=1e15, allow_equal_min=False)
    _check_number(f"{prefix}.price_per_gpu_hour", gpu.price_per_gpu_hour, minimum=0, maximum=1e5)
    _check_number(f"{prefix}.purchase_price", gpu.purchase_price, minimum=0, maximum=1e8)
    _check_number(f"{prefix}.tdp_w", gpu.tdp_w, minimum=0, maximum=1e5)


def _check_counts(counts: Sequence[int]) -> None:
    if isinstance(counts, str | bytes) or not counts:
        raise FitInputError("counts", "give at least one GPU count")
    for count in counts:
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
            raise FitInputError("counts", f"GPU counts must be whole numbers from 1 to {MAX_COUNT}, got {count!r}")


def scaling_speedup(*, count: int, efficiency_per_doubling: float = SCALING_EFFICIENCY_PER_DOUBLING) -> float:
    """Speed-up of ``count`` GPUs over one: ``count x efficiency_per_doubling ** log2(count)``."""
    return count * efficiency_per_doubling ** math.log2(count)


def count_rate(
    *, gpu: GpuFacts, count: int, efficiency_per_doubling: float = SCALING_EFFICIENCY_PER_DOUBLING
) -> CountRate:
    """The rate of ``count`` GPUs: the caller's figure for that count, else one GPU's rate times
    the assumed speed-up (module docstring)."""
    given = gpu.count_rates.get(count)
    if given is not None:
        return given
    basis = gpu.throughput_basis or ("estimated" if gpu.throughput_is_estimate else "measured")
    if not gpu.throughput_per_s:
        return CountRate(None, "none", "single" if count == 1 else "assumed")
    speedup = scaling_speedup(count=count, efficiency_per_doubling=efficiency_per_doubling)
    return CountRate(gpu.throughput_per_s * speedup, basis, "single" if count == 1 else "assumed")


def kv_cache_per_gpu_gib(*, breakdown: MemoryBreakdown, count: int) -> float:
    """KV cache each of ``count`` GPUs holds. Inference serves one batch across the GPUs with tensor
    parallelism, which splits the cache by KV head: each GPU keeps ``ceil(kv_shards / count)`` of
    ``kv_shards`` heads (MLA's latent cache has one "head" and is held whole by every GPU). Training
    is data-parallel: each GPU keeps its own batch's cache (none, in practice)."""
    if not breakdown.is_inference or breakdown.kv_shards <= 1:
        return breakdown.kv_cache_gib
    return breakdown.kv_cache_gib * math.ceil(breakdown.kv_shards / count) / breakdown.kv_shards


def per_gpu_memory_gib(*, breakdown: MemoryBreakdown, count: int) -> float:
    """Memory each of ``count`` GPUs needs (GiB), per the module docstring's formula."""
    replicated = kv_cache_per_gpu_gib(breakdown=breakdown, count=count) + breakdown.activations_gib
    fragmentation = breakdown.fragmentation_factor * (breakdown.gradients_gib / count + replicated)
    return breakdown.sharded_gib / count + replicated + fragmentation + breakdown.cuda_context_gib


def _gib_label(value: float) -> str:
    """24564 MiB -> "24", 79.6 -> "79.6": GPU sizes as people say them."""
    return format(round(value, 1), "g")


def _not_fit_reason(*, breakdown: MemoryBreakdown, count: int, need: float, memory: float) -> str:
    replicated = kv_cache_per_gpu_gib(breakdown=breakdown, count=count) + breakdown.activations_gib
    overhead = need - breakdown.sharded_gib / count - replicated
    return _(
        "needs %(need).1f GiB per GPU on %(count)d x %(memory)s GiB: %(sharded).1f GiB of "
        "weights/gradients/optimizer split %(count)d way(s) + %(replicated).1f GiB of KV cache and "
        "activations + %(overhead).1f GiB overhead per GPU"
    ) % {
        "need": need,
        "count": count,
        "memory": _gib_label(memory),
        "sharded": breakdown.sharded_gib,
        "replicated": replicated,
        "overhead": overhead,
    }


def gpu_plan(
    *,
    breakdown: MemoryBreakdown,
    gpu: GpuFacts,
    work_units: float | None = None,
    counts: Sequence[int] = DEFAULT_COUNTS,
    scaling_efficiency_per_doubling: float = SCALING_EFFICIENCY_PER_DOUBLING,
    max_hours: float = MAX_HOURS,
) -> GpuPlan:
    """Fit, time and cost of ``breakdown`` on ``gpu`` at each of ``counts``; see :func:`fit_plan`."""
    _check_gpu(gpu, 0)
    _check_counts(counts)
    _check_number("work_units", work_units, minimum=0, maximum=MAX_WORK_UNITS, allow_equal_min=False)
    plans: list[CountPlan] = []
    for count in counts:
        need = per_gpu_memory_gib(breakdown=breakdown, count=count)
        fits = need <= gpu.memory_gib
        rate = count_rate(gpu=gpu, count=count, efficiency_per_doubling=scaling_efficiency_per_doubling)
        speedup = scaling_speedup(count=count, efficiency_per_doubling=scaling_efficiency_per_doubling)
        if rate.per_s and gpu.throughput_per_s:
            speedup = rate.per_s / gpu.throughput_per_s
        hours: float | None = None
        cost: float | None = None
        if fits and work_units is not None and rate.per_s:
            hours = work_units / rate.per_s / 3600
            if gpu.price_per_gpu_hour is not None:
                cost = hours * gpu.price_per_gpu_hour * count
        plans.append(
            CountPlan(
                count=count,
                per_gpu_gib=need,
                memory_gib=gpu.memory_gib,
                fits=fits,
                speedup=speedup,
                hours=hours,
                cost=cost,
                over_max_hours=None if hours is None else hours > max_hours,
                throughput_is_estimate=rate.basis == "estimated",
                reason=""
                if fits
                else _not_fit_reason(breakdown=breakdown, count=count, need=need, memory=gpu.memory_gib),
                throughput_per_s=rate.per_s,
                throughput_basis=rate.basis,
                scaling=rate.scaling,
                throughput_note=rate.note,
                typical_error=rate.typical_error,
                rentable=None if gpu.max_count_offered is None else count <= gpu.max_count_offered,
                outside=rate.outside,
                configuration=rate.configuration,
            )
        )
    fitting = [plan for plan in plans if plan.fits]
    if fitting:
        needed = min(fitting, key=lambda plan: plan.count)
        recommended = min(
            fitting,
            key=lambda plan: (
                plan.rentable is False,
                bool(plan.over_max_hours),
                plan.cost if plan.cost is not None else math.inf,
                plan.count,
            ),
        )
        reason = _("fits on %(count)d x %(memory)s GiB (%(need).1f GiB per GPU)") % {
            "count": needed.count,
            "memory": _gib_label(gpu.memory_gib),
            "need": needed.per_gpu_gib,
        }
        if recommended.over_max_hours:
            reason += _("; every fitting count takes longer than %(hours)s h") % {"hours": f"{max_hours:g}"}
        if recommended.rentable is False:
            reason += _("; no current offer rents %(count)d of these in one machine (at most %(offered)d)") % {
                "count": recommended.count,
                "offered": gpu.max_count_offered,
            }
        return GpuPlan(gpu=gpu, counts=tuple(plans), gpus_needed=needed.count, recommended=recommended, reason=reason)

    largest = max(counts)
    floor = (kv_cache_per_gpu_gib(breakdown=breakdown, count=largest) + breakdown.activations_gib) * (
        1 + breakdown.fragmentation_factor
    ) + breakdown.cuda_context_gib
    if floor > gpu.memory_gib:
        reason = _(
            "KV cache, activations and overhead alone need %(floor).1f GiB per GPU, more than the "
            "%(memory)s GiB each has; more GPUs don't help: lower the batch, the users or the context"
        ) % {"floor": floor, "memory": _gib_label(gpu.memory_gib)}
    else:
        largest_plan = next(plan for plan in plans if plan.count == largest)
        reason = _("too big even on %(count)d: %(reason)s") % {"count": largest, "reason": largest_plan.reason}
    return GpuPlan(gpu=gpu, counts=tuple(plans), gpus_needed=None, recommended=None, reason=reason)


def fit_plan(
    *,
    breakdown: MemoryBreakdown,
    gpus: Sequence[GpuFacts],
    work_units: float | None = None,
    counts: Sequence[int] = DEFAULT_COUNTS,
    scaling_efficiency_per_doubling: float = SCALING_EFFICIENCY_PER_DOUBLING,
    max_hours: float = MAX_HOURS,
) -> list[GpuPlan]:
    """Plan ``breakdown`` on every GPU in ``gpus`` at 1, 2, 4 and 8 GPUs (or ``counts``), ranked.

    ``work_units``: the job's size in the unit of the GPUs' throughput (tokens, samples; for
    epochs pass epochs x dataset size). Ranking: GPUs that fit first; then by the recommended
    plan's cost (unknown last), its hours, the GPU count, and the name.
    """
    _check_number("work_units", work_units, minimum=0, maximum=MAX_WORK_UNITS, allow_equal_min=False)
    _check_number(
        "scaling_efficiency_per_doubling",
        scaling_efficiency_per_doubling,
        minimum=0,
        maximum=1,
        allow_equal_min=False,
    )
    _check_number("max_hours", max_hours, minimum=0, maximum=1e6, allow_equal_min=False)
    _check_counts(counts)
    for index, gpu in enumerate(gpus):
        _check_gpu(gpu, index)
    plans = [
        gpu_plan(
            breakdown=breakdown,
            gpu=gpu,
            work_units=work_units,
            counts=counts,
            scaling_efficiency_per_doubling=scaling_efficiency_per_doubling,
            max_hours=max_hours,
        )
        for gpu in gpus
    ]

    return sorted(plans, key=plan_rank)


def plan_completeness(gpu: GpuFacts, best: CountPlan | None = None) -> int:
    """0: throughput (at ``best``'s count, if given) and price known; 1: one of them; 2: neither."""
    rate = gpu.throughput_per_s if best is None else best.throughput_per_s
    return (rate is None) + (gpu.price_per_gpu_hour is None)


def plan_rank(plan: GpuPlan) -> tuple[bool, int, bool, bool, float, float, int, str]:
    """Sort key of :func:`fit_plan`: GPUs that fit first; among them, those with both a throughput and
    a price before those missing one, and those before those missing both (an unknown is never ranked
    above a known figure); then plans a current offer can rent as one machine, then plans within the
    time limit, by cost per unit of work at the recommended count, hours, GPU count and name."""
    best = plan.recommended
    if best is None:
        return (True, 2, True, True, math.inf, math.inf, MAX_COUNT + 1, plan.gpu.name)
    gpu = plan.gpu
    per_unit = math.inf
    if best.throughput_per_s and gpu.price_per_gpu_hour is not None:
        per_unit = gpu.price_per_gpu_hour * best.count / best.throughput_per_s
    return (
        False,
        plan_completeness(gpu, best),
        best.rentable is False,
        bool(best.over_max_hours),
        per_unit,
        -(best.throughput_per_s or 0),
        best.count,
        gpu.name,
    )


@dataclass(frozen=True)
class BuyVsRent:
    """Monthly costs of owning and of renting one GPU at a usage level, and the break-even."""

    purchase_price: float
    resale_fraction: float
    amortisation_months: float
    rent_price_per_hour: float
    power_w: float
    electricity_price_per_kwh: float
    hours_per_day: float
    rent_cost_per_month: float
    electricity_cost_per_month: float
    depreciation_per_month: float
    own_cost_per_month: float
    break_even_days: float | None
    break_even_hours_per_day: float | None
    recommendation: Literal["buy", "rent"]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def buy_vs_rent(
    *,
    purchase_price: float,
    power_w: float,
    electricity_price_per_kwh: float,
    hours_per_day: float,
    rent_prices_per_hour: Sequence[float],
    amortisation_months: float = DEFAULT_AMORTISATION_MONTHS,
    resale_fraction: float = 0.0,
) -> BuyVsRent:
    """Buy one GPU or rent it, at ``hours_per_day`` of use, against the cheapest of ``rent_prices_per_hour``.

    With ``r`` the cheapest rent per GPU-hour, ``H`` hours a day, ``W`` watts, ``e`` the electricity
    price per kWh, ``C = purchase_price x (1 - resale_fraction)`` the net cost of owning, ``M`` the
    amortisation months and ``D`` = 30.44 days a month:

    * rent per month = ``r x H x D``
    * electricity per month = ``W / 1000 x H x e x D`` (``power_w`` is whatever draw you want
      counted: the GPU's TDP, or the whole machine's)
    * own per month = ``C / M`` + electricity per month
    * break-even days = ``C / (r x H - W/1000 x H x e)``: days of use after which buying has cost
      less than renting (None if electricity alone costs more than the rent)
    * break-even hours per day = ``(C / M / D) / (r - W/1000 x e)``: the daily use above which
      owning is cheaper per month over the amortisation period
    * recommendation: "buy" when own per month < rent per month (the same as break-even days
      within the amortisation period), else "rent".

    Seed 002's rule of thumb (rent for occasional use, buy when busy ~12 h a day for a month) falls
    out for consumer cards: the tests check it for an RTX 4090.
    """
    _check_number("purchase_price", purchase_price, minimum=0, maximum=1e8, allow_equal_min=False)
    _check_number("power_w", power_w, minimum=0, maximum=1e5)
    _check_number("electricity_price_per_kwh", electricity_price_per_kwh, minimum=0, maximum=100)
    _check_number("hours_per_day", hours_per_day, minimum=0, maximum=24, allow_equal_min=False)
    _check_number("amortisation_months", amortisation_months, minimum=0, maximum=600, allow_equal_min=False)
    _check_number("resale_fraction", resale_fraction, minimum=0, maximum=0.99)
    if isinstance(rent_prices_per_hour, str | bytes) or not rent_prices_per_hour:
        raise FitInputError("rent_prices_per_hour", "give at least one rental price per GPU-hour")
    for price in rent_prices_per_hour:
        _check_number("rent_prices_per_hour", price, minimum=0, maximum=1e5, allow_equal_min=False)
    rent = min(rent_prices_per_hour)
    net_cost = purchase_price * (1 - resale_fraction)
    power_kw = power_w / 1000
    rent_month = rent * hours_per_day * DAYS_PER_MONTH
    electricity_month = power_kw * hours_per_day * electricity_price_per_kwh * DAYS_PER_MONTH
    depreciation_month = net_cost / amortisation_months
    own_month = depreciation_month + electricity_month
    hourly_saving = rent - power_kw * electricity_price_per_kwh
    break_even_days = net_cost / (hourly_saving * hours_per_day) if hourly_saving > 0 else None
    break_even_hours = depreciation_month / DAYS_PER_MONTH / hourly_saving if hourly_saving > 0 else None
    recommendation: Literal["buy", "rent"] = "buy" if own_month < rent_month else "rent"
    if break_even_days is None:
        reason = _("electricity alone costs more per hour than renting: rent")
    else:
        reason = _(
            "at %(hours)s h a day renting costs %(rent)s a month and owning %(own)s (price spread over "
            "%(months)s months + electricity); buying pays for itself after %(days)s days of such use"
        ) % {
            "hours": f"{hours_per_day:g}",
            "rent": f"{rent_month:,.0f}",
            "own": f"{own_month:,.0f}",
            "months": f"{amortisation_months:g}",
            "days": f"{break_even_days:,.0f}",
        }
        if break_even_hours is not None:
            reason += _("; owning is cheaper above %(hours).1f h a day") % {"hours": break_even_hours}
    return BuyVsRent(
        purchase_price=purchase_price,
        resale_fraction=resale_fraction,
        amortisation_months=amortisation_months,
        rent_price_per_hour=rent,
        power_w=power_w,
        electricity_price_per_kwh=electricity_price_per_kwh,
        hours_per_day=hours_per_day,
        rent_cost_per_month=rent_month,
        electricity_cost_per_month=electricity_month,
        depreciation_per_month=depreciation_month,
        own_cost_per_month=own_month,
        break_even_days=break_even_days,
        break_even_hours_per_day=break_even_hours,
        recommendation=recommendation,
        reason=reason,
    )
