"""The fit calculator's whole answer: fit, time and cost on every GPU, and buy versus rent.

The GPUs' facts come from :func:`fitcalc.selectors.gpu_facts.fit_gpu_facts_list`; the rest is the
pure calculation of :mod:`fitcalc.plan`. LLM training is also planned past one node, on whole
nodes within the request's deadline (:func:`fitcalc.selectors.training_plans.training_plans_for_days`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from fitcalc.memory import Mode
from fitcalc.plan import MAX_HOURS, SCALING_EFFICIENCY_PER_DOUBLING, BuyVsRent, GpuPlan, buy_vs_rent, fit_plan
from fitcalc.request import FitRequest
from fitcalc.selectors.gpu_facts import GpuDetail, PriceOrigin, fit_gpu_facts_list, serving_question_of
from fitcalc.selectors.llm_jobs import LlmJobContext
from fitcalc.selectors.training_plans import TrainingPlan, training_plans_for_days
from fitcalc.throughput import ACHIEVABLE_COMPUTE_FRACTION
from gpuatlas.data_version import data_versioned
from llm.question import ServingQuestion


@dataclass(frozen=True)
class BuyRentRow:
    """Buy versus rent of one GPU (per GPU; a plan on n GPUs costs n times both)."""

    slug: str
    name: str
    gpus_needed: int | None
    result: BuyVsRent | None
    notes: tuple[str, ...]
    price: PriceOrigin | None = None


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
    llm: LlmJobContext | None = None
    # Batched LLM serving: the question its figures answer (the rankings' figures); None otherwise.
    serving_question: ServingQuestion | None = None
    # LLM training: the deadline the plans past one node answer (None: not planned) and the plans.
    training_days: float | None = None
    training_plans: list[TrainingPlan] = field(default_factory=list)

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
    def assumptions(self) -> dict[str, Any]:
        """The figures the answer rests on that are not measured for this job."""
        llm = self.llm
        return {
            "achievable_compute_fraction": ACHIEVABLE_COMPUTE_FRACTION,
            "scaling_efficiency_per_doubling": SCALING_EFFICIENCY_PER_DOUBLING,
            "max_hours": MAX_HOURS,
            "llm_model_fitted": llm.fitted if llm else None,
            "llm_typical_error": llm.typical_error if llm else None,
            "llm_outside_error": (llm.error.serving or {}).get(False) if llm else None,
        }


def _buy_vs_rent_rows(
    *, request: FitRequest, plans: list[GpuPlan], details: dict[str, GpuDetail]
) -> tuple[list[BuyRentRow], list[BuyRentRow]]:
    """Buy versus rent for every GPU that fits and has both a purchase and a rental price, in the
    ranking's order; and the fitting GPUs without one of them, each saying which is missing."""
    rows: list[BuyRentRow] = []
    missing: list[BuyRentRow] = []
    for plan in plans:
        if plan.gpus_needed is None:
            continue
        gpu = plan.gpu
        price = details[gpu.slug].price
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
            missing.append(BuyRentRow(gpu.slug, gpu.name, plan.gpus_needed, None, tuple(notes), price))
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
        rows.append(BuyRentRow(gpu.slug, gpu.name, plan.gpus_needed, result, tuple(notes), price))
    return rows, missing


def _training_plans(*, request: FitRequest, plans: list[GpuPlan]) -> tuple[float | None, list[TrainingPlan], str]:
    """The deadline and the plans past one node of a transformer training job with its work in
    tokens, on every GPU of ``plans`` priced as they are; (None, [], why) for other jobs, the
    reason empty where there is nothing to say."""
    work = request.work
    if request.mode == Mode.INFERENCE or work is None or work.unit != "tokens":
        return None, [], ""
    if request.model.active_params:
        # The time model counts every parameter's FLOPs; a mixture of experts computes only the
        # active ones, and its all-to-all traffic is not what the fitted dense runs measured.
        return None, [], _("Training past one node is not planned for mixture-of-experts models.")
    prices = {plan.gpu.slug: plan.gpu.price_per_gpu_hour for plan in plans}
    training = training_plans_for_days(
        prices=prices,
        params=float(request.model.params),
        tokens=work.work_units,
        lora=request.mode in (Mode.LORA, Mode.QLORA),
        days=request.days,
        precision=request.breakdown.precision.value,
        checkpointing=request.breakdown.activation_checkpointing,
    )
    return request.days, training, ""


# Keyed by the validated request (the form's or the API's parameters after defaults): the answer
# evaluates the serving model on every curated GPU, so a repeated question is read, not computed.
@data_versioned("fit_compute", bounded=True)
def fit_compute(*, request: FitRequest) -> FitResult:
    """Fit, time and cost of ``request`` on every curated GPU at 1, 2, 4 and 8 GPUs, ranked,
    with buy versus rent for every fitting GPU with both prices. A fixed number of queries (see fit_gpu_facts_list).
    Raises FitInputError only for inputs the form could not check alone (not cached)."""
    facts = fit_gpu_facts_list(request=request)
    plans = fit_plan(
        breakdown=request.breakdown,
        gpus=facts.gpus,
        work_units=request.work.work_units if request.work else None,
    )
    buy_rows, missing_rows = _buy_vs_rent_rows(request=request, plans=plans, details=facts.details)
    training_days, training, training_note = _training_plans(request=request, plans=plans)
    return FitResult(
        request=request,
        plans=plans,
        details=facts.details,
        buy_vs_rent=buy_rows,
        buy_vs_rent_missing=missing_rows,
        currency=facts.currency,
        exchange_rate=facts.exchange_rate,
        warnings=[*facts.warnings, training_note] if training_note else facts.warnings,
        llm=facts.llm,
        serving_question=serving_question_of(request),
        training_days=training_days,
        training_plans=training,
    )
