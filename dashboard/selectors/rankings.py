"""Reads for the rankings: one interface for the pages and /api/v1/.

Stable interface (the API builds on it; change only by adding fields)
--------------------------------------------------------------------
(the parameters: dashboard/selectors/ranking_params.py; the rows: dashboard/selectors/ranking_rows.py)

``rankings_compute(*, params: RankingParams) -> Ranking``
    ``Ranking.rows`` is a list of ``RankingRow`` sorted by ``params.sort`` (rows without the
    sort value last). Raises ``RankingParamError("baseline", ...)`` for an unknown baseline.
    Issues a fixed number of SQL queries (at most 10: the stored submitter counts are one) whatever the data size, one more for the
    training use cases when a GPU has data-parallel results on several GPUs. It is three steps,
    each callable on its own: ``ranking_inputs_read`` (every query), ``ranking_rows_build`` (one
    row per GPU with data) and ``ranking_rows_order`` (tiers, order, ranks).

    Training rows carry the measured data-parallel scaling at the largest GPU count that counts in
    the rankings (``RankingRow.scaling``, None where none is measured): shown beside ``perf``,
    never part of it (dashboard/multi_gpu_maths.py).

    With ``show=eligible`` the rows that fail the use case's eligibility are in
    ``Ranking.ineligible_rows`` instead (their count in ``hidden_ineligible``); every row carries
    ``eligible`` and ``ineligible_reasons`` whichever ``show`` is asked for.

LLM use cases (llm-serving, llm-chat) rank absolute tokens/s: ``perf`` is output tokens/s per GPU
(serving: the answer to the page's serving question, llm.selectors.answers) or of the one stream
(chat), measured or estimated by the serving model (llm.serving); ``cost_per_million_tokens`` is at the current price; ``perf_per_dollar`` is tokens/s
per currency unit per GPU-hour of the GPUs involved.

In buy mode with ``kwh_price``, LLM serving rows carry the energy per output token of the ranked
operating point (measured, else estimated from the GPU class's power curve with its interval) and
the electricity of a million output tokens at that price (``electricity_per_million_tokens``).

``tiers_compute(*, params: RankingParams) -> TierList`` (dashboard/selectors/tiers.py)
    S/A/B/C/D over the eligible rows that have a price, each row's ranked figure as a share of
    ``Ranking.tier_mark``, the best one (dashboard.ranking.maths.tiers_from_measurements). Rows are
    ordered and graded by one figure, an estimate at its conservative end
    (``RankingRow.ranked_value``), so tiers are monotone along the ranked order.

Measured and estimated figures are never merged silently: ``RankingRow.perf_basis`` says which
one ``perf`` is, ``perf_measured``/``perf_estimated`` carry both, and ``n``/``distinct_submitters``
are 0 for estimates. The method is documented in dashboard/ranking/maths.py.

Rental prices come from ``catalog.selectors.prices.gpu_rent_prices`` (current, SKU-level
offers only); each row's ``RowPrice`` carries the figure's provider, observation date and age,
and the spread over providers (``minimum``/``maximum`` over ``providers``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db.models import Q
from django.utils.translation import gettext as _

from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from benchmarks_app.models import ResultAggregate, Workload
from benchmarks_app.selectors import TrainingMfu, training_mfus
from catalog.models import Gpu, TensorPeak
from catalog.money import Money, display_money
from catalog.selectors.prices import (
    GpuRentPrice,
    exchange_rates,
    gpu_counts_rented,
    gpu_price_gaps,
    gpu_purchase_prices,
    gpu_rent_prices,
)
from catalog.value import per_price
from dashboard.multi_gpu_maths import MeasuredScaling, workload_runs_on_a_host
from dashboard.ranking.maths import (
    BASELINE_SLUG_DEFAULT,
    AggregatePoint,
    EstimateModel,
    EstimateSample,
    MeasuredPerf,
    SpecFigures,
    TierCandidate,
    estimate_error_for,
    estimate_model_fit,
    measured_relative,
    per_kilowatt,
    spec_ratios,
    tier_mark,
    tiers_from_measurements,
)
from dashboard.ranking.use_cases import USE_CASES, ArchitectureSupport, UseCase, use_case_eligibility
from dashboard.selectors.ranking_params import RankingParamError, RankingParams
from dashboard.selectors.ranking_rows import Ranking, RankingRow, RowPrice
from dashboard.selectors.scaling import scaling_headlines_by_gpu
from dashboard.selectors.submitters import aggregate_fingerprints, distinct_submitters_by_gpu
from gpuatlas.data_version import data_versioned
from llm.question import ServingQuestion, target_rate
from llm.selectors.energy import power_curves_current, serving_choice_energy
from llm.selectors.figures import CHAT_ENGINE, LlmFigure, llm_ranking_figures, llm_row_values
from llm.selectors.serving_points import serving_group_figures
from llm.selectors.serving_target import ServingChoice, llm_serving_choices
from llm.selectors.single_stream import stream_fit_current
from llm.serving.answer import UNREACHABLE
from llm.serving.energy import EnergyFigure, PowerCurve, electricity_per_million_tokens
from llm.serving.shapes import SIZE_CLASSES

if TYPE_CHECKING:
    from catalog.services.prices.currency import RateBook


@dataclass
class MeasuredInputs:
    """The use case's results: the aggregates and serving points of its workloads at its precisions,
    each GPU's figure relative to the baseline, and the spec estimate fitted on them."""

    workloads: Mapping[int, Mapping[str, Any]]
    aggregates: Sequence[Mapping[str, Any]]
    gpu_ids: set[int]  # GPUs with a result of the use case, whatever the page's filters
    points: list[AggregatePoint] = field(default_factory=list)
    measured: dict[int, MeasuredPerf] = field(default_factory=dict)
    distinct_by_gpu: dict[int, int] = field(default_factory=dict)
    estimate: EstimateModel = field(default_factory=EstimateModel)
    names: dict[int, str] = field(default_factory=dict)  # every GPU a figure may be chained through


@dataclass
class PriceInputs:
    """Each GPU's price in the page currency (``money``), the unit it is per, and the unit of value."""

    money: Money
    by_gpu: dict[int, RowPrice]
    unit: str
    scale: float  # value is per 1 currency unit (rent) or per 1,000 (buy)
    value_unit: str
    user_priced: frozenset[str] = frozenset()  # GPU slugs priced by the gpu_price parameter


@dataclass
class LlmInputs:
    """The LLM use cases' figures per GPU id, their configuration at the serving target, and the
    model's typical error inside and outside the measured range."""

    figures: dict[int, LlmFigure]
    serving: dict[int, ServingChoice] = field(default_factory=dict)
    error_pct: float | None = None
    outside_error_pct: float | None = None
    question: ServingQuestion | None = None
    power_curves: dict[str, PowerCurve] = field(default_factory=dict)  # llm.selectors.energy.power_curves_current


@dataclass
class RankingInputs:
    """Everything a ranking is computed from, read from the database in a fixed number of queries."""

    use_case: UseCase
    gpus: list[Gpu]  # those the page's filters keep
    baseline: Gpu
    peaks_by_gpu: dict[int, dict[str, float | None]]
    measured: MeasuredInputs
    prices: PriceInputs
    baseline_specs: SpecFigures
    specs: dict[int, SpecFigures]
    scaling: dict[int, MeasuredScaling]
    llm: LlmInputs | None = None
    warnings: list[str] = field(default_factory=list)
    training: TrainingFigures | None = None

    @property
    def baseline_measured(self) -> bool:
        if self.training is not None and self.training.baseline is not None:
            return self.training.baseline.measured
        return self.baseline.id in self.measured.measured


@dataclass(frozen=True)
class TrainingFigure:
    """A GPU's LLM training rate: achieved model TFLOP/s = dense 16-bit peak x MFU."""

    tflops: float
    mfu: TrainingMfu

    @property
    def measured(self) -> bool:
        return self.mfu.measured


@dataclass(frozen=True)
class TrainingFigures:
    by_gpu: dict[int, TrainingFigure]
    baseline: TrainingFigure | None


def _training_read(
    *, use_case: UseCase, gpus: list[Gpu], baseline: Gpu, peaks_by_gpu: Mapping[int, Mapping[str, float | None]]
) -> TrainingFigures:
    """Each GPU's LLM training figure at 16 bits (the BF16 dense peak, else FP16's, x its MFU). One query."""
    mfus = training_mfus()
    benchmark = use_case.llm_training_benchmark or ""

    def figure(gpu: Gpu) -> TrainingFigure | None:
        peaks = peaks_by_gpu.get(gpu.id, {})
        peak = peaks.get("bf16") or peaks.get("fp16")
        mfu = mfus.for_gpu(gpu.id, gpu.architecture.slug if gpu.architecture else None, benchmark)
        return TrainingFigure(peak * mfu.mfu, mfu) if peak and mfu else None

    by_gpu = {gpu.id: f for gpu in gpus if (f := figure(gpu)) is not None}
    return TrainingFigures(by_gpu, by_gpu.get(baseline.id) or figure(baseline))


@dataclass
class BuiltRows:
    rows: list[RankingRow]
    skipped_without_data: int = 0
    does_not_fit: int = 0
    not_measured: int = 0


# Cached: the GPU pages grade their GPU against the whole ranking of each use case, so one
# computation per data version serves every GPU page, its ranking page and its tier list
# (perf/RESULTS.md: without it the page warm-up takes 2.6 times as long at scale, and competes
# with the ingest for the CPU).
@data_versioned("rankings_compute", bounded=True)  # keyed by a request's parameters
def rankings_compute(*, params: RankingParams) -> Ranking:
    """Performance, price and value of every GPU with data for the use case (see module doc)."""
    inputs = ranking_inputs_read(params=params)
    built = ranking_rows_build(params=params, inputs=inputs)
    rows, hidden, mark = ranking_rows_order(params=params, rows=built.rows)
    llm = inputs.llm or LlmInputs(figures={})
    if llm.question is not None:
        # One error sentence, from the rows' own errors: the median of the estimates shown.
        errors = sorted(r.estimate_error_pct for r in rows + hidden
                        if r.perf_basis == "estimated" and r.estimate_error_pct is not None)  # fmt: skip
        llm.error_pct = statistics.median(errors) if errors else None
        llm.outside_error_pct = None
    return Ranking(
        params=params,
        use_case=inputs.use_case,
        baseline_slug=inputs.baseline.slug,
        baseline_name=inputs.baseline.name,
        baseline_measured=inputs.baseline_measured,
        rows=rows,
        currency=inputs.prices.money.currency,
        exchange_rate=inputs.prices.money.exchange_rate,
        warnings=inputs.warnings,
        skipped_without_data=built.skipped_without_data,
        estimate=inputs.measured.estimate,
        ineligible_rows=hidden,
        llm_typical_error_pct=llm.error_pct,
        does_not_fit=built.does_not_fit,
        llm_outside_error_pct=llm.outside_error_pct,
        serving_choices=llm.serving,
        tier_mark=mark,
        not_measured=built.not_measured,
        gpus_considered=len(inputs.gpus),
        workload_label=llm.question.label() if llm.question is not None else "",
        serving_question=llm.question,
    )


def ranking_inputs_read(
    *,
    params: RankingParams,
    rows_for: Collection[int] | None = None,
    rent_prices: Mapping[int, GpuRentPrice] | None = None,
) -> RankingInputs:
    """Every query of a ranking: the use case's results, the GPUs the filters keep, the baseline,
    tensor peaks, prices in the page currency, the LLM figures and measured scaling.

    ``rows_for``: the ids of the only GPUs to read figures and prices for (a GPU's standings);
    the measured figures and the spec estimate are still made from every GPU's results.
    ``rent_prices``: the rental prices by ``params``' rule, provider and region, already read
    (several use cases' standings share one read). Raises RankingParamError for an unknown baseline or a ``gpu_price`` of an unknown GPU."""
    uc = params.use_case_def
    measured = _measured_read(use_case=uc, precision=params.precision)
    gpus = _gpus_read(params=params, measured_gpu_ids=measured.gpu_ids, rows_for=rows_for)
    baseline = _baseline_read(params=params, gpus=gpus)
    peaks_by_gpu = _peaks_read(gpu_ids={g.id for g in gpus} | {baseline.id} | measured.gpu_ids)
    specs = {gpu.id: _spec_figures(gpu, peaks_by_gpu.get(gpu.id, {})) for gpu in gpus}
    baseline_specs = _spec_figures(baseline, peaks_by_gpu.get(baseline.id, {}))
    measured.names = {gpu.id: gpu.display_name for gpu in gpus}
    warnings: list[str] = []
    if not uc.is_llm:
        _measured_relate(
            measured=measured, baseline=baseline, gpus=gpus, specs=specs, peaks_by_gpu=peaks_by_gpu, params=params
        )
        if measured.gpu_ids and baseline.id not in measured.measured:
            warnings.append(
                _(
                    "The baseline %(name)s has no qualifying measurement for this use case, so every figure is estimated from specs."
                )
                % {"name": baseline.name}
            )
    training = None
    if uc.llm_training_benchmark is not None and params.precision == "16bit":
        training = _training_read(use_case=uc, gpus=gpus, baseline=baseline, peaks_by_gpu=peaks_by_gpu)
        if training.baseline is None:  # no MLPerf Training runs imported: the suite ranks alone
            training = None
        else:
            warnings = []  # the suite's baseline warning is not about the ranked figure
    prices = _prices_read(params=params, gpus=gpus, rent_prices=rent_prices, warnings=warnings)
    return RankingInputs(
        use_case=uc,
        gpus=gpus,
        baseline=baseline,
        peaks_by_gpu=peaks_by_gpu,
        measured=measured,
        prices=prices,
        baseline_specs=baseline_specs,
        specs=specs,
        scaling=scaling_headlines_by_gpu(aggregates=measured.aggregates, workloads=measured.workloads),
        llm=_llm_read(params=params, gpus=gpus, peaks_by_gpu=peaks_by_gpu) if uc.is_llm else None,
        warnings=warnings,
        training=training,
    )


def use_case_workloads(*, use_case: UseCase) -> dict[int, Any]:
    """Workload id -> the workload's fields the rankings read, for the use case's workloads."""
    return {
        w["id"]: w
        for w in Workload.objects.filter(category__in=use_case.categories).values(
            "id", "slug", "category", "higher_is_better", "submission_rules"
        )
        if use_case.includes_workload(slug=w["slug"], category=w["category"])
    }


def ranking_submitter_scopes() -> list[tuple[list[int], tuple[str, ...]]]:
    """The (workload ids, precisions) over which the rankings count each GPU's distinct
    submitters: every measured (non-LLM) use case at each of its precision families."""
    scopes = []
    for use_case in USE_CASES.values():
        if use_case.is_llm:
            continue
        workloads = sorted(use_case_workloads(use_case=use_case))
        scopes += [(workloads, PRECISION_FAMILIES[family][0]) for family in use_case.precision_families]
    return scopes


def _measured_read(*, use_case: UseCase, precision: str) -> MeasuredInputs:
    """The use case's workloads, their aggregates at the precision family's formats and, for
    serving use cases, the serving points' configurations as groups of their own."""
    precisions = PRECISION_FAMILIES[precision][0]
    workloads = use_case_workloads(use_case=use_case)
    aggregates = list(
        ResultAggregate.objects.filter(workload_id__in=list(workloads), precision__in=precisions).values(
            "gpu_id",
            "workload_id",
            "precision",
            "gpu_count",
            "median",
            "n",
            "distinct_submitters",
            "has_lab",
            "comparison_key",
            "updated_at",
        )  # fmt: skip
    )
    serving = serving_group_figures(precisions=precisions) if use_case.serving_points else []
    points = [
        AggregatePoint(
            gpu_id=a["gpu_id"],
            group=(a["workload_id"], a["precision"], a["gpu_count"]),
            median=a["median"],
            n=a["n"],
            distinct_submitters=a["distinct_submitters"],
            has_lab=a["has_lab"],
            higher_is_better=workloads[a["workload_id"]]["higher_is_better"],
            host_run=workload_runs_on_a_host(workloads[a["workload_id"]]["submission_rules"]),
        )
        for a in aggregates
    ]
    # Serving-point configurations are groups of their own, numbered below every workload id.
    serving_groups: dict[str, int] = {}
    points += [
        AggregatePoint(
            gpu_id=s.gpu_id,
            group=(-serving_groups.setdefault(s.group, len(serving_groups) + 1), s.precision, s.gpu_count),
            median=s.median,
            n=s.n,
            distinct_submitters=s.distinct_submitters,
            has_lab=s.has_lab,
        )
        for s in serving
    ]
    gpu_ids = {a["gpu_id"] for a in aggregates} | {s.gpu_id for s in serving}
    return MeasuredInputs(workloads=workloads, aggregates=aggregates, gpu_ids=gpu_ids, points=points)


def _gpus_read(*, params: RankingParams, measured_gpu_ids: set[int], rows_for: Collection[int] | None) -> list[Gpu]:
    """The curated GPUs and those with a result of the use case, as the page's filters keep them
    (and among them only ``rows_for``, when given)."""
    gpus = Gpu.objects.with_related().filter(Q(is_curated=True) | Q(id__in=list(measured_gpu_ids)))
    if rows_for is not None:
        gpus = gpus.filter(id__in=list(rows_for))
    if params.vendor:
        gpus = gpus.filter(vendor__slug=params.vendor)
    if params.segment:
        gpus = gpus.filter(segment=params.segment)
    if params.min_vram is not None:
        gpus = gpus.filter(memory_gib__gte=params.min_vram)
    return list(gpus)


def _baseline_read(*, params: RankingParams, gpus: list[Gpu]) -> Gpu:
    """The baseline GPU, also when the filters leave it out; RankingParamError when unknown."""
    baseline = next((g for g in gpus if g.slug == params.baseline), None)
    if baseline is None:
        baseline = Gpu.objects.with_related().filter(slug=params.baseline).first()
    if baseline is None and params.baseline == params.use_case_def.default_baseline:
        # A use case's own anchor missing from a smaller catalogue: the site-wide anchor serves.
        baseline = Gpu.objects.with_related().filter(slug=BASELINE_SLUG_DEFAULT).first()
    if baseline is None:
        raise RankingParamError("baseline", _("unknown GPU %(slug)r") % {"slug": params.baseline})
    return baseline


def _peaks_read(*, gpu_ids: set[int]) -> dict[int, dict[str, float | None]]:
    """gpu id -> precision -> dense tensor TFLOPS (None: the format is not supported)."""
    peaks: dict[int, dict[str, float | None]] = defaultdict(dict)
    for peak in TensorPeak.objects.filter(gpu_id__in=gpu_ids).values(
        "gpu_id", "precision", "supported", "dense_tflops"
    ):
        peaks[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None
    return peaks


def _measured_relate(
    *,
    measured: MeasuredInputs,
    baseline: Gpu,
    gpus: list[Gpu],
    specs: dict[int, SpecFigures],
    peaks_by_gpu: Mapping[int, Mapping[str, float | None]],
    params: RankingParams,
) -> None:
    """Fills in each measured GPU's figure relative to the baseline, its distinct submitters and
    the spec estimate. The estimate is fitted on every measured GPU, also those the filters leave
    out: their specs and names are read here and added to ``specs`` and ``measured.names``."""
    measured.measured = measured_relative(measured.points, baseline_gpu_id=baseline.id)
    fingerprints = aggregate_fingerprints(measured.aggregates)
    measured.distinct_by_gpu = distinct_submitters_by_gpu(
        fingerprints={gpu_id: fingerprints[gpu_id] for gpu_id in measured.measured if gpu_id in fingerprints},
        workload_ids=measured.workloads,
        precisions=PRECISION_FAMILIES[params.precision][0],
    )
    classes = {gpu.id: (gpu.vendor.slug, gpu.segment) for gpu in gpus}
    filtered_out = set(measured.measured) - set(specs)
    if filtered_out:
        for gpu in (
            Gpu.objects.filter(id__in=filtered_out)
            .only("id", "name", "name_zh", "memory_bandwidth_gbs", "fp32_tflops", "segment", "vendor__slug")
            .select_related("vendor")
        ):
            specs[gpu.id] = _spec_figures(gpu, peaks_by_gpu.get(gpu.id, {}))
            measured.names[gpu.id] = gpu.display_name
            classes[gpu.id] = (gpu.vendor.slug, gpu.segment)
    if baseline.id in measured.measured:
        measured.estimate = _estimate_model(
            measured=measured.measured,
            specs=specs,
            classes=classes,
            baseline_specs=_spec_figures(baseline, peaks_by_gpu.get(baseline.id, {})),
            family=params.precision,
        )


def _prices_read(
    *,
    params: RankingParams,
    gpus: list[Gpu],
    rent_prices: Mapping[int, GpuRentPrice] | None,
    warnings: list[str],
) -> PriceInputs:
    """Each GPU's price by the page's rule (rent) or condition (buy), in the page currency, with
    the user's own prices (``gpu_price``) in place of the offers'. Appends a warning when the
    page currency has no rate (prices are then in USD)."""
    # Rented in USD, nothing is converted: the rate table is read only for another currency or to buy.
    rates = exchange_rates() if params.currency != "USD" or params.mode != "rent" else None
    money = display_money(currency=params.currency, rates=rates)
    if money.missing:
        warnings.append(
            _("No %(currency)s exchange rate is recorded, so prices are shown in USD.") % {"currency": params.currency}
        )
    if params.mode == "buy":
        unit = _("per GPU")
        by_gpu = {
            gpu_id: RowPrice(amount=money(usd), unit=unit, source=label)
            for gpu_id, (usd, label) in _buy_prices(params, gpus, rates or exchange_rates()).items()
        }
        value_unit = _("per 1,000 %(currency)s") % {"currency": money.currency}
        return PriceInputs(money=money, by_gpu=by_gpu, unit=unit, scale=1000.0, value_unit=value_unit)
    unit = _("per GPU-hour")
    source = {
        "typical": _("typical on-demand price"),
        "cheapest": _("cheapest on-demand offer"),
        "spot": _("cheapest spot offer"),
    }[params.price]
    if rent_prices is None:
        rent_prices = gpu_rent_prices(
            gpu_ids=[g.id for g in gpus], rule=params.price, provider=params.provider, region=params.region
        )
    by_gpu = {
        gpu.id: _rent_row_price(rent_prices[gpu.id], money=money, unit=unit, source=source)
        for gpu in gpus
        if gpu.id in rent_prices
    }
    if not (params.provider or params.region):  # with a filter, the filter is why
        unpriced = [gpu.id for gpu in gpus if gpu.id not in rent_prices]
        for gpu_id, gap in gpu_price_gaps(gpu_ids=unpriced).items():
            by_gpu[gpu_id] = RowPrice(unit=unit, missing=gap.text)
    user = _user_prices(params, gpus)
    for gpu in gpus:
        if gpu.slug in user:  # in the page currency already; no offer's provider, date or spread is its
            by_gpu[gpu.id] = RowPrice(unit=unit, amount=user[gpu.slug], source=_("your price"))
    value_unit = _("per %(currency)s/GPU-hour") % {"currency": money.currency}
    return PriceInputs(
        money=money, by_gpu=by_gpu, unit=unit, scale=1.0, value_unit=value_unit, user_priced=frozenset(user)
    )


def _rent_row_price(rent: GpuRentPrice, *, money: Money, unit: str, source: str) -> RowPrice:
    """A rental price in the page currency with its offer's provenance and the providers' spread."""
    origin = rent.provenance
    return RowPrice(
        amount=money(float(rent.price_usd)),
        unit=unit,
        source=_("price of one marketplace listing") if rent.single_listing else source,
        providers=rent.providers,
        minimum=money(float(rent.minimum_usd)),
        maximum=money(float(rent.maximum_usd)),
        provider=origin.provider,
        provider_slug=origin.provider_slug,
        instance_type=origin.instance_type,
        region=origin.region,
        observed_at=origin.observed_at,
        age_days=origin.age_days,
        date_basis=origin.date_basis,
        date_estimated=origin.date_is_estimate,
        between=rent.typical_between,
        single_listing=rent.single_listing,
    )


def serving_question(params: RankingParams) -> ServingQuestion:
    """The serving question of an llm-serving ranking: the size class's reference model, the
    page's lengths, precision family and target, the engine each GPU's vendor publishes with."""
    return ServingQuestion(
        model=SIZE_CLASSES[params.model_size].reference,
        input_len=params.input_len or 1000,
        output_len=params.output_len or 1000,
        precision=params.precision,
        target=target_rate(params.interactivity),
    )


def _llm_read(
    *, params: RankingParams, gpus: list[Gpu], peaks_by_gpu: Mapping[int, Mapping[str, float | None]]
) -> LlmInputs:
    """The LLM figure of each GPU: serving at the interactivity target in the configurations
    current offers rent (batched), or the chat model's estimate beside the measured rows."""
    uc = params.use_case_def
    if uc.llm_mode == "batched":
        question = serving_question(params)
        serving = llm_serving_choices(
            question=question,
            include_all_rows=params.mlperf == "all",
            gpus=gpus,
            peaks_by_gpu=peaks_by_gpu,
            rented=gpu_counts_rented(gpu_ids=[g.id for g in gpus]),
        )
        figures = {gpu_id: choice.figure for gpu_id, choice in serving.items()}
        return LlmInputs(figures=figures, serving=serving, question=question, power_curves=power_curves_current())
    stream = stream_fit_current()
    figures = llm_ranking_figures(
        size=params.model_size,
        precision_family=params.precision,
        include_all_rows=params.mlperf == "all",
        gpus=gpus,
        peaks_by_gpu=peaks_by_gpu,
        stream=stream,
    )
    return LlmInputs(figures=figures, error_pct=stream.error_pct(CHAT_ENGINE), outside_error_pct=stream.error_pct("*"))


# Why a GPU has no row: no figure at all, or (LLM) the model does not fit on it; or the page asks
# for measured figures only.
_NO_DATA, _DOES_NOT_FIT, _NOT_MEASURED = "no data", "does not fit", "not measured"


def ranking_rows_build(*, params: RankingParams, inputs: RankingInputs) -> BuiltRows:
    """One row per GPU the filters keep that has a figure (measured, or estimated unless the page
    asks for measured figures only), with its price, value and eligibility; counts the GPUs left
    out for want of data and (LLM) those the model does not fit on."""
    built = BuiltRows(rows=[])
    prices = inputs.prices
    for gpu in inputs.gpus:
        price = prices.by_gpu.get(gpu.id) or RowPrice(unit=prices.unit)
        eligibility = use_case_eligibility(
            inputs.use_case,
            family=params.precision,
            memory_gib=gpu.memory_gib,
            peaks=inputs.peaks_by_gpu.get(gpu.id, {}),
            architecture=_architecture_support(gpu),
        )
        if inputs.llm is not None:
            values = _llm_values(params=params, gpu=gpu, llm=inputs.llm, price=price, prices=prices)
        elif inputs.training is not None:
            values = _training_values(params=params, gpu=gpu, inputs=inputs, price=price)
        else:
            values = _spec_values(params=params, gpu=gpu, inputs=inputs, price=price)
        if isinstance(values, str):
            built.skipped_without_data += values == _NO_DATA
            built.does_not_fit += values == _DOES_NOT_FIT
            built.not_measured += values == _NOT_MEASURED
            continue
        values.setdefault("meets_memory_floor", eligibility.meets_memory_floor)
        # Per kW of the power drawn at the ranked point where it is measured or estimated; else of the TDP.
        values.setdefault("perf_per_kw_power_w", gpu.tdp_w)
        values.setdefault("perf_per_kw_basis", "tdp")
        perf_per_kw = per_kilowatt(values["perf"], values["perf_per_kw_power_w"])
        if perf_per_kw is None:
            values.update(perf_per_kw_power_w=None, perf_per_kw_basis="")
        built.rows.append(
            RankingRow(
                gpu_id=gpu.id,
                gpu_slug=gpu.slug,
                gpu_name=gpu.display_name,
                vendor=gpu.vendor.name,
                vendor_slug=gpu.vendor.slug,
                segment=gpu.segment,
                architecture=gpu.architecture.name if gpu.architecture else "",
                memory_gib=gpu.memory_gib,
                tdp_w=gpu.tdp_w,
                price=price,
                currency=prices.money.currency,
                perf_per_dollar_unit=prices.value_unit,
                perf_per_kw=perf_per_kw,
                eligible=eligibility.eligible and values["meets_memory_floor"],
                ineligible_reasons=list(eligibility.reasons),
                **values,
            )
        )
    return built


def _spec_values(*, params: RankingParams, gpu: Gpu, inputs: RankingInputs, price: RowPrice) -> dict[str, Any] | str:
    """The row fields of a GPU in a non-LLM use case: its measured figure relative to the
    baseline, else the spec estimate; or why it has no row."""
    m = inputs.measured.measured.get(gpu.id)
    estimate_model = inputs.measured.estimate
    ratios = spec_ratios(inputs.specs[gpu.id], inputs.baseline_specs, family=params.precision)
    estimate = estimate_model.predict(compute_ratio=ratios[0], bandwidth_ratio=ratios[1]) if ratios else None
    if m is None and estimate is None:
        return _NO_DATA
    if params.basis == "measured" and m is None:
        return _NOT_MEASURED
    perf = m.value if m else estimate
    error = estimate_error_for(estimate_model, vendor=gpu.vendor.slug, gpu_class=gpu.segment)
    outside = m is None and error.scope == "outside"
    return {
        "perf": perf,
        "perf_basis": "measured" if m else "estimated",
        "perf_measured": m.value if m else None,
        "perf_estimated": estimate,
        "n": m.n if m else 0,
        "distinct_submitters": inputs.measured.distinct_by_gpu.get(gpu.id, m.distinct_submitters_max) if m else 0,
        "groups": m.groups if m else 0,
        "perf_per_dollar": per_price(perf, price.amount, scale=inputs.prices.scale),
        "estimate_error_pct": _percent(error.error) if estimate is not None else None,
        "estimate_outside_range": estimate is not None and outside,
        "estimate_outside_reasons": ["vendor"] if outside else [],
        "measured_via": inputs.measured.names.get(m.via, "") if m and m.via is not None else "",
        "scaling": inputs.scaling.get(gpu.id),
    }


def _training_values(
    *, params: RankingParams, gpu: Gpu, inputs: RankingInputs, price: RowPrice
) -> dict[str, Any] | str:
    """The row fields of a GPU in a use case ranked by LLM training: its training figure relative
    to the baseline's, measured where the MFU is of its own MLPerf Training runs; the older
    suite's measured figure beside it."""
    assert inputs.training is not None and inputs.training.baseline is not None
    figure = inputs.training.by_gpu.get(gpu.id)
    if figure is None:
        return _NO_DATA
    if params.basis == "measured" and not figure.measured:
        return _NOT_MEASURED
    perf = figure.tflops / inputs.training.baseline.tflops
    suite = inputs.measured.measured.get(gpu.id)
    return {
        "perf": perf,
        "perf_basis": "measured" if figure.measured else "estimated",
        "perf_measured": perf if figure.measured else None,
        "perf_estimated": None if figure.measured else perf,
        "n": figure.mfu.runs if figure.measured else 0,
        "distinct_submitters": 0,
        "groups": 0,
        "perf_per_dollar": per_price(perf, price.amount, scale=inputs.prices.scale),
        "estimate_error_pct": None if figure.measured else _percent(figure.mfu.error),
        # No MLPerf Training run on the GPU's architecture: every GPU's MFU stands in for it.
        "estimate_outside_range": figure.mfu.basis == "pooled",
        "estimate_outside_reasons": ["architecture"] if figure.mfu.basis == "pooled" else [],
        "suite_perf": suite.value if suite else None,
        "training_mfu": figure.mfu.mfu,
        "training_mfu_runs": figure.mfu.runs if figure.measured else 0,
        "scaling": inputs.scaling.get(gpu.id),
    }


def _llm_values(
    *, params: RankingParams, gpu: Gpu, llm: LlmInputs, price: RowPrice, prices: PriceInputs
) -> dict[str, Any] | str:
    """The row fields of a GPU in an LLM use case: tokens/s measured or estimated in its
    configuration (at the serving target), or why it has no row. A GPU measured but reaching the
    target in no rentable configuration is listed without a figure, not ranked."""
    figure = llm.figures.get(gpu.id)
    if figure is None:
        return _NO_DATA
    choice = llm.serving.get(gpu.id)
    unreached = figure.basis == UNREACHABLE
    if figure.tokens_per_s is None and not unreached:
        not_fitting = choice.does_not_fit if choice is not None else figure.bound == "does not fit"
        return _DOES_NOT_FIT if not_fitting else _NO_DATA
    if params.basis == "measured" and figure.basis != "measured":
        return _NOT_MEASURED
    values = llm_row_values(
        figure=figure, price=price.amount, mode=params.mode, llm_mode=params.use_case_def.llm_mode, scale=prices.scale
    )
    if unreached:
        values.update(llm_target_unreached=True)
    if choice is not None:
        values.update(llm_target=params.interactivity, llm_rented_counts=list(choice.rented_counts),
                      llm_workload=choice.question.label(), llm_anchor=figure.anchor, llm_floor=figure.floor,
                      llm_engine=choice.answers.engine)  # fmt: skip
    energy = (
        serving_choice_energy(choice, tokens_per_s_per_gpu=figure.tokens_per_s, power_curves=llm.power_curves)
        if choice is not None and figure.tokens_per_s
        else None
    )
    if energy is not None:
        values.update(perf_per_kw_power_w=energy.power_w, perf_per_kw_basis=energy.basis)
    if params.mode == "rent":
        priced = "offer" if price.amount is not None else "none"
        values["llm_price_basis"] = "user" if gpu.slug in prices.user_priced else priced
    else:
        values["llm_price_basis"] = ""
        if energy is not None and params.kwh_price is not None:
            values.update(_electricity_values(energy, params.kwh_price))
    return values


def _electricity_values(energy: EnergyFigure, kwh_price: float) -> dict[str, Any]:
    """Buy mode: the ranked operating point's energy per output token and the electricity of a
    million output tokens at the owner's price per kWh (llm.serving.energy)."""
    return {
        "energy_basis": energy.basis,
        "joules_per_token": energy.joules_per_token,
        "joules_per_token_low": energy.low_j,
        "joules_per_token_high": energy.high_j,
        "electricity_per_million_tokens": electricity_per_million_tokens(
            energy_per_token_j=energy.joules_per_token, price_per_kwh=kwh_price
        ),
    }


def ranking_rows_order(
    *, params: RankingParams, rows: list[RankingRow]
) -> tuple[list[RankingRow], list[RankingRow], float | None]:
    """Grades the eligible rows into tiers, sorts by ``params.sort`` (rows without it last) and
    numbers the ranks. Returns the rows shown, the ineligible rows ``show=eligible`` hides, and
    the tiers' 100 % mark."""
    mark = ranking_rows_grade(rows=rows)
    sort_key = params.sort
    # Measured and estimated rows are ordered by one figure: an estimate at its conservative end
    # (dashboard.ranking.maths.conservative_value), the figure the tiers grade.
    rows = sorted(
        rows,
        key=lambda r: (
            getattr(r, sort_key) is None,
            -(r.ranked(getattr(r, sort_key)) or 0),
            r.gpu_name,
        ),
    )
    hidden = [r for r in rows if not r.eligible] if params.show == "eligible" else []
    if hidden:
        rows = [r for r in rows if r.eligible]
    rank = 0
    for row in rows:
        if getattr(row, sort_key) is not None:
            rank += 1
            row.rank = rank
    return rows, hidden, mark


def ranking_rows_grade(*, rows: list[RankingRow]) -> float | None:
    """Sets each eligible row's tier against the best performance per price among them
    (dashboard.ranking.maths.tiers_from_measurements); returns that 100 % mark. Only rows with a
    price can be graded or set the mark, so rows without one may be left out."""
    candidates = [TierCandidate(r.gpu_slug, r.ranked_value, r.measured) for r in rows if r.eligible]
    tiers = tiers_from_measurements(candidates)
    for row in rows:
        row.tier = tiers.get(row.gpu_slug)
    return tier_mark(candidates)


def _percent(fraction: float | None) -> float | None:
    return None if fraction is None else fraction * 100


def _buy_prices(params: RankingParams, gpus: list[Gpu], rates: RateBook) -> dict[int, tuple[float, str]]:
    """gpu id -> (USD purchase price, source label): the newest observation per GPU at the rate of
    its day; for new cards without one, the launch price."""
    out: dict[int, tuple[float, str]] = {}
    label = _("newest %(condition)s purchase price") % {"condition": params.condition}
    for gpu_id, price in gpu_purchase_prices(
        gpu_ids=[g.id for g in gpus], condition=params.condition, rates=rates
    ).items():
        if price.usd_then is not None:
            out[gpu_id] = (price.usd_then, label)
    if params.condition == "new":
        for gpu in gpus:
            if gpu.id not in out and gpu.launch_price_usd:
                out[gpu.id] = (float(gpu.launch_price_usd), _("launch price"))
    return out


def _spec_figures(gpu: Gpu, peaks: Mapping[str, float | None]) -> SpecFigures:
    return SpecFigures(peaks=peaks, bandwidth_gbs=gpu.memory_bandwidth_gbs, fp32_tflops=gpu.fp32_tflops)


def _architecture_support(gpu: Gpu) -> ArchitectureSupport | None:
    arch = gpu.architecture
    if arch is None:
        return None
    return ArchitectureSupport(
        vendor_slug=gpu.vendor.slug,
        tensor_core_generation=arch.tensor_core_generation,
        bf16=arch.supports_bf16,
        fp8=arch.supports_fp8,
    )


def _estimate_model(
    *,
    measured: Mapping[int, MeasuredPerf],
    specs: Mapping[int, SpecFigures],
    classes: Mapping[int, tuple[str, str]],
    baseline_specs: SpecFigures,
    family: str,
) -> EstimateModel:
    """The spec estimate fitted on every measured GPU (whatever the page's filters)."""
    samples = []
    for gpu_id, perf in measured.items():
        ratios = spec_ratios(specs[gpu_id], baseline_specs, family=family) if gpu_id in specs else None
        if ratios is not None:
            vendor, gpu_class = classes.get(gpu_id, ("", ""))
            samples.append(EstimateSample(str(gpu_id), perf.value, *ratios, vendor=vendor, gpu_class=gpu_class))
    return estimate_model_fit(samples)


def _user_prices(params: RankingParams, gpus: list[Gpu]) -> dict[str, float]:
    """gpu slug -> the user's price per GPU-hour (page currency); RankingParamError names a
    ``gpu_price[...]`` parameter whose GPU is not in the catalogue."""
    wanted = params.gpu_price_map
    if not wanted:
        return {}
    known = {g.slug for g in gpus} | set(Gpu.objects.filter(slug__in=list(wanted)).values_list("slug", flat=True))
    for slug in wanted:
        if slug not in known:
            raise RankingParamError(f"gpu_price[{slug}]", _("unknown GPU %(slug)r") % {"slug": slug})
    return wanted
