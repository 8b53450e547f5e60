"""Reads for the rankings: one interface for the pages and /api/v1/.

Stable interface (the API builds on it; change only by adding fields)
--------------------------------------------------------------------
(the parameters: dashboard/selectors/ranking_params.py)

    ========== ================================================ =================

LLM use cases (llm-serving, llm-chat) rank absolute tokens/s: ``perf`` is output tokens/s per GPU
(serving) or of the one stream (chat), measured (llm/selectors/rows.py) or estimated by
llm.estimate; ``cost_per_million_tokens`` is at the current price; ``perf_per_dollar`` is tokens/s
per currency unit per GPU-hour of the GPUs involved.

``rankings_compute(*, params: RankingParams) -> Ranking``
    ``Ranking.rows`` is a list of ``RankingRow`` sorted by ``params.sort`` (rows without the
    sort value last). Raises ``RankingParamError("baseline", ...)`` for an unknown baseline.
    Issues a fixed number of SQL queries (at most 9) whatever the data size, one more for the
    training use cases when a GPU has data-parallel results on several GPUs.

    Training rows carry the measured data-parallel scaling at the largest GPU count that counts in
    the rankings (``scaling_gpu_count``, ``scaling_efficiency``, ``scaling_n``,
    ``scaling_distinct_submitters``, ``scaling_interconnect``, ``scaling_tokens_per_s_per_gpu``,
    ``scaling_one_gpu_tokens_per_s``; None/0/"" where none is measured): shown beside ``perf``, never
    part of it (dashboard/multi_gpu_maths.py).

    With ``show=eligible`` the rows that fail the use case's eligibility are in
    ``Ranking.ineligible_rows`` instead (their count in ``hidden_ineligible``); every row carries

``tiers_compute(*, params: RankingParams) -> TierList``
    S/A/B/C/D over the eligible rows that have a price, relative to ``Ranking.tier_mark`` (the best
    measured performance per price; dashboard.ranking.maths.tiers_from_measurements); an estimated
    row is never above tier A.

Measured and estimated figures are never merged silently: ``RankingRow.perf_basis`` says which
one ``perf`` is, ``perf_measured``/``perf_estimated`` carry both, and ``n``/``distinct_submitters``
are 0 for estimates. The method is documented in dashboard/ranking/maths.py.

Rental prices come from ``catalog.selectors.prices.gpu_rent_prices`` (current, SKU-level
offers only); each row carries the figure's provider, observation date and age, and the spread
over providers (``price_min``/``price_max``, ``price_providers``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from django.db.models import Q
from django.utils.translation import gettext as _

from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from benchmarks_app.models import ResultAggregate, Workload
from catalog.models import Gpu, TensorPeak
from catalog.selectors.prices import (
    GpuRentPrice,
    display_rate,
    exchange_rates,
    gpu_counts_rented,
    gpu_purchase_prices,
    gpu_rent_prices,
)
from catalog.value import per_price
from dashboard.multi_gpu_maths import (
    MeasuredScaling,
    workload_runs_on_a_host,
)
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
from dashboard.ranking.use_cases import ArchitectureSupport, use_case_eligibility
from dashboard.selectors.ranking_params import RankingParamError, RankingParams
from dashboard.selectors.ranking_rows import Ranking, RankingRow
from dashboard.selectors.scaling import scaling_headlines_by_gpu
from dashboard.selectors.submitters import aggregate_fingerprints, distinct_submitters_by_gpu
from gpuatlas.data_version import data_versioned
from llm.interactivity import target_rate
from llm.selectors.figures import llm_model_state, llm_ranking_figures, llm_row_values
from llm.selectors.serving_points import serving_group_figures
from llm.selectors.serving_target import ServingChoice, llm_serving_choices, serving_error_summary

if TYPE_CHECKING:
    from catalog.services.prices.currency import RateBook


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


@data_versioned("rankings_compute")  # perf: cached per params until prices or results change
def rankings_compute(*, params: RankingParams) -> Ranking:
    """Performance, price and value of every GPU with data for the use case (see module doc)."""
    uc = params.use_case_def
    precisions = PRECISION_FAMILIES[params.precision][0]
    warnings: list[str] = []

    workloads = {
        w["id"]: w
        for w in Workload.objects.filter(category__in=uc.categories).values(
            "id", "slug", "category", "higher_is_better", "submission_rules"
        )
        if uc.includes_workload(slug=w["slug"], category=w["category"])
    }
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
    serving_measured = serving_group_figures(precisions=precisions) if uc.serving_points else []
    measured_gpu_ids = {a["gpu_id"] for a in aggregates} | {s.gpu_id for s in serving_measured}

    gpu_filter = Q(is_curated=True) | Q(id__in=list(measured_gpu_ids))
    gpus_qs = Gpu.objects.with_related().filter(gpu_filter)
    if params.vendor:
        gpus_qs = gpus_qs.filter(vendor__slug=params.vendor)
    if params.segment:
        gpus_qs = gpus_qs.filter(segment=params.segment)
    if params.min_vram is not None:
        gpus_qs = gpus_qs.filter(memory_gib__gte=params.min_vram)
    gpus = list(gpus_qs)
    baseline = next((g for g in gpus if g.slug == params.baseline), None)
    if baseline is None:
        baseline = Gpu.objects.with_related().filter(slug=params.baseline).first()
    if baseline is None and params.baseline == uc.default_baseline:
        # A use case's own anchor missing from a smaller catalogue: the site-wide anchor serves.
        baseline = Gpu.objects.with_related().filter(slug=BASELINE_SLUG_DEFAULT).first()
    if baseline is None:
        raise RankingParamError("baseline", _("unknown GPU %(slug)r") % {"slug": params.baseline})

    # The estimate is fitted on every measured GPU, also those the filters leave out.
    ids = {g.id for g in gpus} | {baseline.id} | measured_gpu_ids
    peaks_by_gpu: dict[int, dict[str, float | None]] = defaultdict(dict)
    for peak in TensorPeak.objects.filter(gpu_id__in=ids).values("gpu_id", "precision", "supported", "dense_tflops"):
        peaks_by_gpu[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None

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
        for s in serving_measured
    ]
    measured = {} if uc.is_llm else measured_relative(points, baseline_gpu_id=baseline.id)
    baseline_measured = baseline.id in measured
    if measured_gpu_ids and not baseline_measured and not uc.is_llm:
        warnings.append(
            _(
                "The baseline %(name)s has no qualifying measurement for this use case, so every figure is estimated from specs."
            )
            % {"name": baseline.name}
        )
    fingerprints = aggregate_fingerprints(aggregates)
    distinct_by_gpu = distinct_submitters_by_gpu(
        fingerprints={gpu_id: fingerprints[gpu_id] for gpu_id in measured if gpu_id in fingerprints},
        workload_ids=workloads,
        precisions=precisions,
    )

    # Rented in USD, nothing is converted: the rate table is read only for another currency or to buy.
    rates = exchange_rates() if params.currency != "USD" or params.mode != "rent" else None
    currency, exchange = params.currency, None
    if params.currency != "USD":
        rate = display_rate(currency=params.currency, rates=rates)
        if rate["missing"]:
            currency = "USD"
            warnings.append(
                _("No %(currency)s exchange rate is recorded, so prices are shown in USD.")
                % {"currency": params.currency}
            )
        else:
            exchange = {
                "usd_per_unit": float(1 / rate["units_per_usd"]),
                "units_per_usd": float(rate["units_per_usd"]),
                "date": rate["rate_date"],
                "source": rate["source"],
            }

    def convert(usd: float | None) -> float | None:
        if usd is None or exchange is None:
            return usd
        return usd / exchange["usd_per_unit"]

    rent: dict[int, GpuRentPrice] = {}
    if params.mode == "rent":
        rent = gpu_rent_prices(
            gpu_ids=[g.id for g in gpus], rule=params.price, provider=params.provider, region=params.region
        )
        price_unit, scale = _("per GPU-hour"), 1.0
        source_label = {
            "typical": _("typical on-demand price"),
            "cheapest": _("cheapest on-demand offer"),
            "spot": _("cheapest spot offer"),
        }[params.price]
        prices = {gpu_id: (float(p.price_usd), source_label, p.providers) for gpu_id, p in rent.items()}
        ppd_unit = _("per %(currency)s/GPU-hour") % {"currency": currency}
    else:
        buy = _buy_prices(params, gpus, rates or exchange_rates())
        price_unit, scale = _("per GPU"), 1000.0
        prices = {gpu_id: (usd, label, 0) for gpu_id, (usd, label) in buy.items()}
        ppd_unit = _("per 1,000 %(currency)s") % {"currency": currency}

    user_prices = _user_prices(params, gpus) if params.mode == "rent" else {}

    baseline_specs = _spec_figures(baseline, peaks_by_gpu.get(baseline.id, {}))
    specs = {gpu.id: _spec_figures(gpu, peaks_by_gpu.get(gpu.id, {})) for gpu in gpus}
    names = {gpu.id: gpu.name for gpu in gpus}
    classes = {gpu.id: (gpu.vendor.slug, gpu.segment) for gpu in gpus}
    filtered_out = set(measured) - set(specs)
    if filtered_out:
        for gpu in (
            Gpu.objects.filter(id__in=filtered_out)
            .only("id", "name", "memory_bandwidth_gbs", "fp32_tflops", "segment", "vendor__slug")
            .select_related("vendor")
        ):
            specs[gpu.id] = _spec_figures(gpu, peaks_by_gpu.get(gpu.id, {}))
            names[gpu.id] = gpu.name
            classes[gpu.id] = (gpu.vendor.slug, gpu.segment)
    estimate_model = (
        _estimate_model(
            measured=measured, specs=specs, classes=classes, baseline_specs=baseline_specs, family=params.precision
        )
        if baseline_measured and not uc.is_llm
        else EstimateModel()
    )
    llm_figures, llm_error, llm_outside_error, does_not_fit = None, None, None, 0
    serving: dict[int, ServingChoice] = {}
    if uc.is_llm:
        if uc.llm_mode == "batched":
            llm_error, llm_outside_error = serving_error_summary(target_rate=target_rate(params.interactivity))
            serving = llm_serving_choices(
                size=params.model_size,
                precision_family=params.precision,
                include_all_rows=params.mlperf == "all",
                target=params.interactivity,
                target_rate=target_rate(params.interactivity),
                gpus=gpus,
                peaks_by_gpu=peaks_by_gpu,
                rented=gpu_counts_rented(gpu_ids=[g.id for g in gpus]),
            )
            llm_figures = {gpu_id: choice.figure for gpu_id, choice in serving.items()}
        else:
            state = llm_model_state()
            llm_error = state.constants.typical_error_pct.get("chat")
            llm_outside_error = state.constants.outside_error_pct.get("chat")
            llm_figures = llm_ranking_figures(
                use_case=uc.slug,
                size=params.model_size,
                precision_family=params.precision,
                include_all_rows=params.mlperf == "all",
                gpus=gpus,
                peaks_by_gpu=peaks_by_gpu,
                state=state,
            )
    scaling = scaling_headlines_by_gpu(aggregates=aggregates, workloads=workloads)
    rows: list[RankingRow] = []
    skipped = 0
    for gpu in gpus:
        usd, source, providers = prices.get(gpu.id, (None, "", 0))
        price = convert(usd)
        price_basis = "offer" if price is not None else "none"
        if gpu.slug in user_prices:  # in the page currency already
            price, source, providers, price_basis = user_prices[gpu.slug], _("your price"), 0, "user"
        eligibility = use_case_eligibility(
            uc,
            family=params.precision,
            memory_gib=gpu.memory_gib,
            peaks=peaks_by_gpu.get(gpu.id, {}),
            architecture=_architecture_support(gpu),
        )
        values: dict[str, Any]
        if llm_figures is not None:
            if gpu.id not in llm_figures:
                skipped += 1
                continue
            figure = llm_figures[gpu.id]
            choice = serving.get(gpu.id)
            unreached = choice is not None and choice.measured_unreached and figure.tokens_per_s is None
            if figure.tokens_per_s is None and not unreached:
                not_fitting = (
                    choice.does_not_fit
                    if choice is not None
                    else (figure.estimate is not None and figure.estimate.bound == "does not fit")
                )
                does_not_fit += not_fitting
                skipped += not not_fitting
                continue
            if params.basis == "measured" and figure.basis != "measured" and not unreached:
                continue
            values = llm_row_values(figure=figure, price=price, mode=params.mode, llm_mode=uc.llm_mode, scale=scale)
            if unreached:  # measured, but no point reaches the target: listed, not ranked
                values.update(perf_basis="measured", estimate_error_pct=None, llm_target_unreached=True)
            if choice is not None:
                values.update(llm_target=choice.target, llm_rented_counts=list(choice.rented_counts))
            values["llm_price_basis"] = price_basis if params.mode == "rent" else ""
        else:
            m = measured.get(gpu.id)
            ratios = spec_ratios(specs[gpu.id], baseline_specs, family=params.precision)
            estimate = estimate_model.predict(compute_ratio=ratios[0], bandwidth_ratio=ratios[1]) if ratios else None
            if m is None and estimate is None:
                skipped += 1
                continue
            if params.basis == "measured" and m is None:
                continue
            perf = m.value if m else estimate
            error = estimate_error_for(estimate_model, vendor=gpu.vendor.slug, gpu_class=gpu.segment)
            values = {
                "perf": perf,
                "perf_basis": "measured" if m else "estimated",
                "perf_measured": m.value if m else None,
                "perf_estimated": estimate,
                "n": m.n if m else 0,
                "distinct_submitters": distinct_by_gpu.get(gpu.id, m.distinct_submitters_max) if m else 0,
                "groups": m.groups if m else 0,
                "perf_per_dollar": per_price(perf, price, scale=scale),
                "meets_memory_floor": eligibility.meets_memory_floor,
                "estimate_error_pct": _percent(error.error) if estimate is not None else None,
                "estimate_outside_range": estimate is not None and m is None and error.scope == "outside",
                "estimate_outside_reasons": ["vendor"] if m is None and error.scope == "outside" else [],
                "measured_via": names.get(m.via, "") if m and m.via is not None else "",
                **_scaling_values(scaling.get(gpu.id)),
            }
        values.setdefault("meets_memory_floor", eligibility.meets_memory_floor)
        rows.append(
            _with_provenance(
                RankingRow(
                    gpu_id=gpu.id,
                    gpu_slug=gpu.slug,
                    gpu_name=gpu.name,
                    vendor=gpu.vendor.name,
                    vendor_slug=gpu.vendor.slug,
                    segment=gpu.segment,
                    architecture=gpu.architecture.name if gpu.architecture else "",
                    memory_gib=gpu.memory_gib,
                    tdp_w=gpu.tdp_w,
                    price=price,
                    price_unit=price_unit,
                    price_source=source,
                    price_providers=providers,
                    currency=currency,
                    perf_per_dollar_unit=ppd_unit,
                    perf_per_kw=per_kilowatt(values["perf"], gpu.tdp_w),
                    eligible=eligibility.eligible and values["meets_memory_floor"],
                    ineligible_reasons=list(eligibility.reasons),
                    **values,
                ),
                rent.get(gpu.id),
                convert,
            )
        )

    candidates = [TierCandidate(r.gpu_slug, r.perf_per_dollar, r.perf_basis == "measured") for r in rows if r.eligible]
    tiers = tiers_from_measurements(candidates)
    for row in rows:
        row.tier = tiers.get(row.gpu_slug)
    sort_key = params.sort
    # LLM use cases list measured figures first (issue 17): their estimates extrapolate a fitted
    # model to GPUs and configurations the measurements may not contain.
    measured_first = uc.is_llm
    rows.sort(
        key=lambda r: (
            getattr(r, sort_key) is None,
            measured_first and r.perf_basis != "measured",
            -(getattr(r, sort_key) or 0),
            r.gpu_name,
        )
    )
    hidden = [r for r in rows if not r.eligible] if params.show == "eligible" else []
    if hidden:
        rows = [r for r in rows if r.eligible]
    rank = 0
    for row in rows:
        if getattr(row, sort_key) is not None:
            rank += 1
            row.rank = rank
    return Ranking(
        params=params,
        use_case=uc,
        baseline_slug=baseline.slug,
        baseline_name=baseline.name,
        baseline_measured=baseline_measured,
        rows=rows,
        currency=currency,
        exchange_rate=exchange,
        warnings=warnings,
        skipped_without_data=skipped,
        estimate=estimate_model,
        ineligible_rows=hidden,
        llm_typical_error_pct=llm_error,
        does_not_fit=does_not_fit,
        llm_outside_error_pct=llm_outside_error,
        serving_choices=serving,
        tier_mark=tier_mark(candidates),
    )


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


def _scaling_values(scaling: MeasuredScaling | None) -> dict[str, Any]:
    if scaling is None:
        return {}
    return {
        "scaling_gpu_count": scaling.gpu_count,
        "scaling_efficiency": scaling.efficiency,
        "scaling_n": scaling.n,
        "scaling_distinct_submitters": scaling.distinct_submitters,
        "scaling_interconnect": scaling.interconnect,
        "scaling_tokens_per_s_per_gpu": scaling.tokens_per_s_per_gpu,
        "scaling_one_gpu_tokens_per_s": scaling.one_gpu_tokens_per_s,
    }


def _with_provenance(
    row: RankingRow, rent: GpuRentPrice | None, convert: Callable[[float | None], float | None]
) -> RankingRow:
    """The row with its rental price's provider, date, age and spread (rent mode)."""
    if rent is None:
        return row
    origin = rent.provenance
    return replace(
        row,
        price_provider=origin.provider,
        price_provider_slug=origin.provider_slug,
        price_instance_type=origin.instance_type,
        price_region=origin.region,
        price_observed_at=origin.observed_at,
        price_age_days=origin.age_days,
        price_date_basis=origin.date_basis,
        price_date_estimated=origin.date_is_estimate,
        price_min=convert(float(rent.minimum_usd)),
        price_max=convert(float(rent.maximum_usd)),
    )
