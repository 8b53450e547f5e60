"""Reads for the fit calculator: the GPUs as :class:`fitcalc.plan.GpuFacts`, and the whole answer.

``fit_gpu_facts_list`` reads every curated GPU with a memory size, its cheapest current on-demand
price per GPU-hour (``catalog.selectors_prices.cheapest_price_per_gpu``), its purchase price,
TDP, and its throughput in the job's unit, in a fixed number of queries (seven, whatever the
number of GPUs). ``fit_compute`` adds the pure calculation (fit, time, cost, buy versus rent).

"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext as _

from benchmarks_app.models import BenchmarkResult, ResultAggregate
from catalog.models import Gpu, PurchasePrice, TensorPeak
from catalog.selectors_prices import cheapest_price_per_gpu, display_rate
from catalog.services.prices.currency import NoExchangeRate, RateBook
from fitcalc.forms import FitRequest
from fitcalc.memory import TRAINING_MODES, MemoryBreakdown
from fitcalc.plan import MAX_HOURS, SCALING_EFFICIENCY_PER_DOUBLING, BuyVsRent, GpuFacts, GpuPlan, buy_vs_rent, fit_plan
from fitcalc.presets import ModelSpec
from fitcalc.throughput import (
    ACHIEVABLE_BANDWIDTH_FRACTION,
    ACHIEVABLE_COMPUTE_FRACTION,
    LAMBDA_MODES,
    LAMBDA_WORKLOAD_FOR_PRESET,
    MEMBW_COPY,
    TRANSFORMER_INFER,
    TRANSFORMER_TRAIN,
    Basis,
    GpuMeasurements,
    GpuSpecs,
    block_flops_per_token,
    throughput_resolve,
)

MIN_COMMUNITY_N = 3  # as dashboard.metrics: an aggregate counts with a lab result or >= 3 community results

# GpuFacts bounds (fitcalc.plan checks them): values outside are dropped, never passed on.
_MAX_MEMORY_GIB = 1e5
_MAX_THROUGHPUT = 1e15
_MAX_PRICE_PER_HOUR = 1e5
_MAX_PURCHASE = 1e8
_MAX_TDP = 1e5


def _within(value: float | None, *, low: float, high: float, inclusive_low: bool = False) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    if value < low or (value == low and not inclusive_low) or value > high:
        return None
    return value


# --- reads -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuDetail:
    """What the page and the API show beside a GPU's plan: where its figures come from."""

    slug: str
    name: str
    throughput_unit: str
    throughput_basis: Basis
    throughput_note: str
    purchase_price_source: str
    throughput_typical_error: float | None = None

    @property
    def typical_error_percent(self) -> int | None:
        return None if self.throughput_typical_error is None else round(self.throughput_typical_error * 100)


@dataclass(frozen=True)
class FitGpuFacts:
    gpus: list[GpuFacts]
    details: dict[str, GpuDetail]
    currency: str
    exchange_rate: dict[str, Any] | None
    warnings: list[str]


def _measurements(*, gpu_ids: list[int], model: ModelSpec, breakdown: MemoryBreakdown) -> dict[int, GpuMeasurements]:
    """Per GPU: achieved block FLOP rates, copy bandwidth, Lambda rates. Two queries."""
    training = breakdown.mode in TRAINING_MODES
    slugs = [TRANSFORMER_TRAIN] if training else [TRANSFORMER_INFER, MEMBW_COPY]
    lambda_slug = LAMBDA_WORKLOAD_FOR_PRESET.get(model.slug) if breakdown.mode in LAMBDA_MODES else None
    if lambda_slug:
        slugs.append(lambda_slug)
    rows: list[dict[str, Any]] = [
        dict(row)
        for row in ResultAggregate.objects.filter(gpu_id__in=gpu_ids, gpu_count=1, workload__slug__in=slugs)
        .filter(Q(has_lab=True) | Q(n__gte=MIN_COMMUNITY_N))
        .order_by()
        .values("gpu_id", "workload__slug", "workload__version", "precision", "median", "n", "comparison_key")
    ]
    block_keys = {r["comparison_key"] for r in rows if r["workload__slug"] in (TRANSFORMER_TRAIN, TRANSFORMER_INFER)}
    shapes: dict[str, dict[str, Any]] = {}
    if block_keys:
        for key, params in (
            BenchmarkResult.objects.filter(comparison_key__in=block_keys)
            .order_by()
            .values_list("comparison_key", "params")
        ):
            if isinstance(params, dict):
                shapes.setdefault(key, params)

    best: dict[tuple[int, str, str], dict[str, Any]] = {}
    for row in rows:
        slug = row["workload__slug"]
        pick = (row["gpu_id"], slug, row["precision"] if slug == lambda_slug else "")
        if slug in (TRANSFORMER_TRAIN, TRANSFORMER_INFER) and row["precision"] != "bf16":
            continue
        current = best.get(pick)
        rank = (row["workload__version"], row["n"])
        if current is None or rank > (current["workload__version"], current["n"]):
            best[pick] = row

    found: dict[int, dict[str, Any]] = {}
    for (gpu_id, slug, precision), row in best.items():
        entry = found.setdefault(gpu_id, {"lambda_per_s": {}})
        if slug == lambda_slug:
            entry["lambda_per_s"][precision] = row["median"]
        elif slug == MEMBW_COPY:
            entry["bandwidth_gbs"] = row["median"]
        else:
            block = block_flops_per_token(
                params=shapes.get(row["comparison_key"], {}), training=slug == TRANSFORMER_TRAIN
            )
            if block is not None:
                entry["train_flops" if slug == TRANSFORMER_TRAIN else "infer_flops"] = row["median"] * block
    return {gpu_id: GpuMeasurements(**entry) for gpu_id, entry in found.items()}


def _purchase_prices_usd(*, gpu_ids: list[int], condition: str, rates: RateBook) -> dict[int, tuple[float, str]]:
    """gpu id -> (USD at the newest rate, source): the newest purchase price of that condition. One query."""
    out: dict[int, tuple[float, str]] = {}
    rows = (
        PurchasePrice.objects.filter(gpu_id__in=gpu_ids, condition=condition)
        .order_by("gpu_id", "-observed_on")
        .values("gpu_id", "price", "currency", "observed_on", "source")
    )
    for row in rows:
        if row["gpu_id"] in out:
            continue
        try:
            usd = rates.to_usd(row["price"], row["currency"])
        except NoExchangeRate:
            continue
        out[row["gpu_id"]] = (float(usd), f"{condition} price {row['observed_on']:%Y-%m-%d}, {row['source']}")
    return out


def fit_gpu_facts_list(
    *, model: ModelSpec, breakdown: MemoryBreakdown, condition: str = "new", currency: str = "USD"
) -> FitGpuFacts:
    """Every curated GPU with a memory size, as plain facts in ``currency``, in seven queries.

    Money: the cheapest current on-demand price per GPU-hour and the newest ``condition``
    purchase price (new cards without one: the launch price), converted from USD at the newest
    exchange rate. Without a rate for ``currency``, prices are left out and ``warnings`` says so.
    Throughput: see the module docstring.
    """
    gpus = list(
        Gpu.objects.curated()
        .filter(memory_gib__gt=0)
        .order_by("name")
        .values("id", "slug", "name", "memory_gib", "memory_bandwidth_gbs", "tdp_w", "fp32_tflops", "launch_price_usd")
    )
    gpu_ids = [g["id"] for g in gpus]
    peaks: dict[int, dict[str, float | None]] = {}
    for row in (
        TensorPeak.objects.filter(gpu_id__in=gpu_ids)
        .order_by()
        .values("gpu_id", "precision", "supported", "dense_tflops")
    ):
        peaks.setdefault(row["gpu_id"], {})[row["precision"]] = row["dense_tflops"] if row["supported"] else None
    rent_usd = cheapest_price_per_gpu(spot=False)
    rates = RateBook.load()
    purchase_usd = _purchase_prices_usd(gpu_ids=gpu_ids, condition=condition, rates=rates)
    measured = _measurements(gpu_ids=gpu_ids, model=model, breakdown=breakdown)

    warnings: list[str] = []
    rate = display_rate(currency=currency, rates=rates)
    units_per_usd: float | None = None if rate["missing"] else float(rate["units_per_usd"])
    if units_per_usd is None:
        warnings.append(f"no exchange rate for {currency}: prices and costs are left out")
    exchange = (
        None
        if currency == "USD" or units_per_usd is None
        else {"units_per_usd": units_per_usd, "date": rate["rate_date"], "source": rate["source"]}
    )

    def money(usd: float | Decimal | None, high: float) -> float | None:
        if usd is None or units_per_usd is None:
            return None
        return _within(float(usd) * units_per_usd, low=0, high=high)

    facts: list[GpuFacts] = []
    details: dict[str, GpuDetail] = {}
    for gpu in gpus:
        memory = _within(gpu["memory_gib"], low=0, high=_MAX_MEMORY_GIB)
        if memory is None:
            continue
        specs = GpuSpecs(
            peaks=peaks.get(gpu["id"], {}), fp32_tflops=gpu["fp32_tflops"], bandwidth_gbs=gpu["memory_bandwidth_gbs"]
        )
        throughput = throughput_resolve(
            model=model, breakdown=breakdown, specs=specs, measured=measured.get(gpu["id"], GpuMeasurements())
        )
        per_s = _within(throughput.per_s, low=0, high=_MAX_THROUGHPUT)
        purchase, purchase_source = purchase_usd.get(gpu["id"], (None, ""))
        if purchase is None and condition == "new" and gpu["launch_price_usd"]:
            purchase, purchase_source = float(gpu["launch_price_usd"]), "launch price"
        facts.append(
            GpuFacts(
                slug=gpu["slug"],
                name=gpu["name"],
                memory_gib=memory,
                throughput_per_s=per_s,
                throughput_is_estimate=throughput.is_estimate,
                price_per_gpu_hour=money(rent_usd.get(gpu["id"]), _MAX_PRICE_PER_HOUR),
                purchase_price=money(purchase, _MAX_PURCHASE),
                tdp_w=_within(float(gpu["tdp_w"]) if gpu["tdp_w"] else None, low=0, high=_MAX_TDP),
            )
        )
        details[gpu["slug"]] = GpuDetail(
            slug=gpu["slug"],
            name=gpu["name"],
            throughput_unit=throughput.unit,
            throughput_basis=throughput.basis if per_s is not None else "none",
            throughput_note=throughput.note,
            purchase_price_source=purchase_source,
            throughput_typical_error=throughput.typical_error,
        )
    return FitGpuFacts(gpus=facts, details=details, currency=currency, exchange_rate=exchange, warnings=warnings)


# --- the whole answer ------------------------------------------------------------------------


@dataclass(frozen=True)
class BuyRentRow:
    """Buy versus rent of one GPU (per GPU; a plan on n GPUs costs n times both)."""

    slug: str
    name: str
    gpus_needed: int | None
    result: BuyVsRent | None
    notes: tuple[str, ...]


@dataclass(frozen=True)
class FitResult:
    request: FitRequest
    plans: list[GpuPlan]
    details: dict[str, GpuDetail]
    buy_vs_rent: list[BuyRentRow]
    currency: str
    exchange_rate: dict[str, Any] | None
    warnings: list[str]
    buy_vs_rent_missing: list[BuyRentRow] = field(default_factory=list)

    @property
    def fitting(self) -> list[GpuPlan]:
        return [plan for plan in self.plans if plan.gpus_needed is not None]

    @property
    def not_fitting(self) -> list[GpuPlan]:
        return [plan for plan in self.plans if plan.gpus_needed is None]

    @property
    def fitting_rows(self) -> list[tuple[GpuPlan, GpuDetail]]:
        """Fitting plans in rank order, each with its GPU's detail (for templates)."""
        return [(plan, self.details[plan.gpu.slug]) for plan in self.fitting]

    @property
    def assumptions(self) -> dict[str, float]:
        return {
            "achievable_compute_fraction": ACHIEVABLE_COMPUTE_FRACTION,
            "achievable_bandwidth_fraction": ACHIEVABLE_BANDWIDTH_FRACTION,
            "scaling_efficiency_per_doubling": SCALING_EFFICIENCY_PER_DOUBLING,
            "max_hours": MAX_HOURS,
        }


def _buy_vs_rent_rows(*, request: FitRequest, plans: list[GpuPlan]) -> tuple[list[BuyRentRow], list[BuyRentRow]]:
    """Buy versus rent for every GPU that fits and has both a purchase and a rental price, in the
    ranking's order; and the fitting GPUs without one of them, each saying which is missing."""
    rows: list[BuyRentRow] = []
    missing: list[BuyRentRow] = []
    for plan in plans:
        if plan.gpus_needed is None:
            continue
        gpu = plan.gpu
        notes: list[str] = []
        if gpu.purchase_price is None:
            notes.append(
                _("no new purchase price on record")
                if request.condition == "new"
                else _("no used purchase price on record")
            )
        if gpu.price_per_gpu_hour is None or gpu.price_per_gpu_hour <= 0:
            notes.append(_("no current on-demand rental price"))
        if notes:
            missing.append(BuyRentRow(gpu.slug, gpu.name, plan.gpus_needed, None, tuple(notes)))
            continue
        assert gpu.purchase_price is not None and gpu.price_per_gpu_hour is not None
        if gpu.tdp_w is None:
            notes.append(_("no TDP on record: power is not counted"))
        if request.electricity_price_per_kwh is None:
            notes.append(_("no electricity price given: power is not counted"))
        result = buy_vs_rent(
            purchase_price=gpu.purchase_price,
            power_w=gpu.tdp_w or 0.0,
            electricity_price_per_kwh=request.electricity_price_per_kwh or 0.0,
            hours_per_day=request.hours_per_day,
            rent_prices_per_hour=[gpu.price_per_gpu_hour],
        )
        rows.append(BuyRentRow(gpu.slug, gpu.name, plan.gpus_needed, result, tuple(notes)))
    return rows, missing


def fit_compute(*, request: FitRequest) -> FitResult:
    """Fit, time and cost of ``request`` on every curated GPU at 1, 2, 4 and 8 GPUs, ranked,
    with buy versus rent for every fitting GPU with both prices. A fixed number of queries (see fit_gpu_facts_list).
    Raises FitInputError only for inputs the form could not check alone."""
    facts = fit_gpu_facts_list(
        model=request.model, breakdown=request.breakdown, condition=request.condition, currency=request.currency
    )
    plans = fit_plan(
        breakdown=request.breakdown,
        gpus=facts.gpus,
        work_units=request.work.work_units if request.work else None,
    )
    buy_rows, missing_rows = _buy_vs_rent_rows(request=request, plans=plans)
    return FitResult(
        request=request,
        plans=plans,
        details=facts.details,
        buy_vs_rent=buy_rows,
        buy_vs_rent_missing=missing_rows,
        currency=facts.currency,
        exchange_rate=facts.exchange_rate,
        warnings=facts.warnings,
    )
