"""Reads for the rankings and tier lists: one interface for the pages and /api/v1/.

Stable interface (the API builds on it; change only by adding fields)
--------------------------------------------------------------------
``ranking_params_from_query(query: Mapping[str, str]) -> RankingParams``
    Parses GET parameters; raises ``RankingParamError(field, message)`` on a bad value.
    Parameters (all optional):

    ========== ================================================ =================
    name       values                                           default
    ========== ================================================ =================
    use_case   training | fine-tuning | inference-16bit |       training
               inference-8bit
    precision  16bit | 8bit | 32bit (those the use case allows) the use case's first
    min_vram   number of GiB >= 0                               none
    vendor     vendor slug (nvidia, amd ...)                    all
    segment    consumer | workstation | datacenter | ...        all
    mode       rent | buy                                       rent
    price      cheapest | median | spot  (rent: cheapest        cheapest
               current on-demand offer, median of providers'
               cheapest on-demand offers, cheapest spot offer)
    condition  new | used  (buy)                                new
    provider   provider slug (rent)                             all
    region     substring of the offer region (rent)             all
    currency   USD | CNY                                        USD
    baseline   GPU slug = 1.0                                   a100-sxm4-80-gb
    basis      all | measured                                   all
    sort       perf_per_dollar | perf | perf_per_kw             perf_per_dollar
    model_size the LLM use cases' model sizes (70b, 8b ...)     the use case's first
    mlperf     closed-available | all  (LLM serving: include    closed-available
               MLPerf open-division, preview and rdi rows)
    ========== ================================================ =================

LLM use cases (llm-serving, llm-chat) rank absolute tokens/s: ``perf`` is output tokens/s per GPU
(serving) or of the one stream (chat), measured (dashboard/selectors_llm.py) or estimated by
llm_estimate; ``cost_per_million_tokens`` is at the current price; ``perf_per_dollar`` is tokens/s
per currency unit per GPU-hour of the GPUs involved.

``rankings_compute(*, params: RankingParams) -> Ranking``
    ``Ranking.rows`` is a list of ``RankingRow`` sorted by ``params.sort`` (rows without the
    sort value last). Raises ``RankingParamError("baseline", ...)`` for an unknown baseline.
    Issues a fixed number of SQL queries (at most 9) whatever the data size.

``tiers_compute(*, params: RankingParams) -> TierList``
    S/A/B/C/D over the rows that meet the use case's memory floor and have a price.

Measured and estimated figures are never merged silently: ``RankingRow.perf_basis`` says which
one ``perf`` is, ``perf_measured``/``perf_estimated`` carry both, and ``n``/``distinct_submitters``
are 0 for estimates. The method is documented in dashboard/metrics.py.

Offers are read here directly from ``Offer.objects.current()`` (the shared price selectors did
not exist when this was written).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from typing import Any

from django.db.models import Min, Q
from django.utils.translation import gettext as _

from benchmarks_app.models import ResultAggregate, Workload
from catalog.models import ExchangeRate, Gpu, Offer, PurchasePrice, Segment, TensorPeak
from dashboard import metrics
from dashboard.metrics import USE_CASES, UseCase
from dashboard.selectors_llm import llm_model_state, llm_ranking_figures, llm_row_values
from dashboard.selectors_submitters import aggregate_fingerprints, distinct_submitters_by_gpu
from gpuatlas.data_version import data_versioned

CURRENCIES = ("USD", "CNY")
MODES = ("rent", "buy")
PRICE_HOW = ("cheapest", "median", "spot")
CONDITIONS = ("new", "used")
BASES = ("all", "measured")
SORTS = ("perf_per_dollar", "perf", "perf_per_kw")
MLPERF_ROWS = ("closed-available", "all")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,119}$")


class RankingParamError(ValueError):
    """A query parameter with an invalid value; ``field`` names the parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class RankingParams:
    use_case: str = "training"
    precision: str = ""
    min_vram: float | None = None
    vendor: str = ""
    segment: str = ""
    mode: str = "rent"
    price: str = "cheapest"
    condition: str = "new"
    provider: str = ""
    region: str = ""
    currency: str = "USD"
    baseline: str = metrics.BASELINE_SLUG_DEFAULT
    basis: str = "all"
    sort: str = "perf_per_dollar"
    model_size: str = ""
    mlperf: str = "closed-available"

    def __post_init__(self) -> None:
        if not self.precision:
            object.__setattr__(self, "precision", USE_CASES[self.use_case].default_precision)
        if not self.model_size and USE_CASES[self.use_case].is_llm:
            object.__setattr__(self, "model_size", USE_CASES[self.use_case].default_model_size)

    @property
    def use_case_def(self) -> UseCase:
        return USE_CASES[self.use_case]

    def to_query(self) -> dict[str, str]:
        """The non-default parameters, for shareable links."""
        default = RankingParams(use_case=self.use_case)
        out = {} if self.use_case == "training" else {"use_case": self.use_case}
        for name, value in asdict(self).items():
            if name != "use_case" and value != getattr(default, name) and value not in (None, ""):
                out[name] = f"{value:g}" if isinstance(value, float) else str(value)
        return out

    def with_changes(self, **changes: Any) -> RankingParams:
        if "use_case" in changes and "precision" not in changes:
            changes["precision"] = ""
        if "use_case" in changes and "model_size" not in changes:
            changes["model_size"] = ""
        return replace(self, **changes)


def _choice(query: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = (query.get(name) or "").strip()
    if not value:
        return default
    if value not in allowed:
        raise RankingParamError(
            name,
            _("unknown value %(value)r; expected one of: %(allowed)s")
            % {"value": value[:40], "allowed": ", ".join(allowed)},
        )
    return value


def _slug(query: Mapping[str, str], name: str) -> str:
    value = (query.get(name) or "").strip().lower()
    if value and not _SLUG.match(value):
        raise RankingParamError(name, _("not a valid identifier (lower-case letters, digits, dashes)"))
    return value


def ranking_params_from_query(query: Mapping[str, str]) -> RankingParams:
    """Validated ranking parameters from a GET query; RankingParamError names the bad field."""
    use_case = _choice(query, "use_case", tuple(USE_CASES), "training")
    uc = USE_CASES[use_case]
    precision = _choice(query, "precision", uc.precision_families, uc.default_precision)
    raw_vram = (query.get("min_vram") or "").strip()
    min_vram: float | None = None
    if raw_vram:
        try:
            min_vram = float(raw_vram)
        except ValueError:
            raise RankingParamError("min_vram", _("not a number")) from None
        if not (0 <= min_vram <= 100_000):
            raise RankingParamError("min_vram", _("must be between 0 and 100000 GiB"))
    currency = (query.get("currency") or "USD").strip().upper()
    if currency not in CURRENCIES:
        raise RankingParamError(
            "currency", _("unknown currency %(value)r; expected USD or CNY") % {"value": currency[:10]}
        )
    region = (query.get("region") or "").strip()
    if len(region) > 64:
        raise RankingParamError("region", _("at most 64 characters"))
    if "\x00" in region:
        raise RankingParamError("region", _("NUL characters are not allowed"))
    return RankingParams(
        use_case=use_case,
        precision=precision,
        min_vram=min_vram,
        vendor=_slug(query, "vendor"),
        segment=_choice(query, "segment", tuple(Segment.values), ""),
        mode=_choice(query, "mode", MODES, "rent"),
        price=_choice(query, "price", PRICE_HOW, "cheapest"),
        condition=_choice(query, "condition", CONDITIONS, "new"),
        provider=_slug(query, "provider"),
        region=region,
        currency=currency,
        baseline=_slug(query, "baseline") or metrics.BASELINE_SLUG_DEFAULT,
        basis=_choice(query, "basis", BASES, "all"),
        sort=_choice(query, "sort", SORTS, "perf_per_dollar"),
        model_size=_choice(query, "model_size", uc.model_sizes, uc.default_model_size) if uc.is_llm else "",
        mlperf=_choice(query, "mlperf", MLPERF_ROWS, "closed-available"),
    )


@dataclass
class RankingRow:
    gpu_id: int
    gpu_slug: str
    gpu_name: str
    vendor: str
    vendor_slug: str
    segment: str
    architecture: str
    memory_gib: float | None
    tdp_w: int | None
    perf: float | None
    perf_basis: str  # "measured" | "estimated"
    perf_measured: float | None
    perf_estimated: float | None
    n: int
    distinct_submitters: int
    groups: int  # comparison groups behind the measured figure
    price: float | None
    price_unit: str  # "per GPU-hour" | "per GPU"
    price_source: str  # e.g. "cheapest on-demand offer", "launch price (new)"
    price_providers: int
    currency: str
    perf_per_dollar: float | None
    perf_per_dollar_unit: str
    perf_per_kw: float | None
    meets_memory_floor: bool
    tier: str | None = None
    rank: int | None = None
    # LLM use cases: perf is tokens/s (per GPU for serving, of the stream for chat) on llm_gpu_count GPUs.
    llm_gpu_count: int | None = None
    cost_per_million_tokens: float | None = None
    llm_source: str = ""
    llm_source_url: str = ""
    llm_precision: str = ""
    estimate_error_pct: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Ranking:
    params: RankingParams
    use_case: UseCase
    baseline_slug: str
    baseline_name: str
    baseline_measured: bool  # whether the baseline has measurements for this use case
    rows: list[RankingRow]
    currency: str  # the currency prices are shown in (USD when no CNY rate exists)
    exchange_rate: dict[str, Any] | None  # {"usd_per_unit", "date", "source"} for CNY
    warnings: list[str] = field(default_factory=list)
    skipped_without_data: int = 0  # GPUs with neither a measurement nor the specs to estimate
    llm_typical_error_pct: float | None = None  # LLM use cases: the estimate model's median LOO error
    does_not_fit: int = 0  # LLM use cases: GPUs the model does not fit on (up to 8 of them)


@dataclass
class TierList:
    ranking: Ranking
    tiers: dict[str, list[RankingRow]]  # "S".."D" -> rows, best first
    below_floor: list[RankingRow]
    without_price: list[RankingRow]
    thresholds: dict[str, float]
    memory_floor_gib: float


def _latest_rates() -> dict[str, dict[str, Any]]:
    rates: dict[str, dict[str, Any]] = {}
    for rate in ExchangeRate.objects.order_by("currency", "-date").values("currency", "date", "usd_per_unit", "source"):
        rates.setdefault(rate["currency"], dict(rate))
    return rates


def _to_usd(amount: Decimal, currency: str, rates: Mapping[str, Mapping[str, Any]]) -> float | None:
    if currency == "USD":
        return float(amount)
    rate = rates.get(currency)
    return float(amount * rate["usd_per_unit"]) if rate else None


def _rent_prices(params: RankingParams, gpu_ids: list[int]) -> dict[int, tuple[float, int]]:
    """gpu id -> (USD per GPU-hour by the chosen rule, providers behind it)."""
    offers = Offer.objects.current().filter(gpu_id__in=gpu_ids)
    offers = offers.spot() if params.price == "spot" else offers.on_demand()
    if params.provider:
        offers = offers.filter(provider__slug=params.provider)
    if params.region:
        offers = offers.filter(region__icontains=params.region)
    per_provider: dict[int, list[float]] = defaultdict(list)
    for row in offers.order_by().values("gpu_id", "provider_id").annotate(low=Min("current_price_per_gpu_hour_usd")):
        per_provider[row["gpu_id"]].append(float(row["low"]))
    how = "median" if params.price == "median" else "cheapest"
    out = {}
    for gpu_id, lows in per_provider.items():
        value = metrics.price_summary(lows, how=how)
        if value is not None:
            out[gpu_id] = (value, len(lows))
    return out


def _buy_prices(
    params: RankingParams, gpus: list[Gpu], rates: Mapping[str, Mapping[str, Any]]
) -> dict[int, tuple[float, str]]:
    """gpu id -> (USD purchase price, source label): newest observation per GPU; for new cards
    without one, the launch price."""
    out: dict[int, tuple[float, str]] = {}
    prices = PurchasePrice.objects.filter(gpu_id__in=[g.id for g in gpus], condition=params.condition)
    for row in prices.order_by("gpu_id", "-observed_on").values("gpu_id", "price", "currency"):
        if row["gpu_id"] in out:
            continue
        usd = _to_usd(row["price"], row["currency"], rates)
        if usd is not None:
            out[row["gpu_id"]] = (usd, _("newest %(condition)s purchase price") % {"condition": params.condition})
    if params.condition == "new":
        for gpu in gpus:
            if gpu.id not in out and gpu.launch_price_usd:
                out[gpu.id] = (float(gpu.launch_price_usd), _("launch price"))
    return out


def _spec_figures(gpu: Gpu, peaks: Mapping[str, float | None]) -> metrics.SpecFigures:
    return metrics.SpecFigures(peaks=peaks, bandwidth_gbs=gpu.memory_bandwidth_gbs, fp32_tflops=gpu.fp32_tflops)


@data_versioned("rankings_compute")  # perf: cached per params until prices or results change
def rankings_compute(*, params: RankingParams) -> Ranking:
    """Performance, price and value of every GPU with data for the use case (see module doc)."""
    uc = params.use_case_def
    precisions = metrics.PRECISION_FAMILIES[params.precision][0]
    warnings: list[str] = []

    workloads = {
        w["id"]: w
        for w in Workload.objects.filter(category__in=uc.categories).values(
            "id", "slug", "category", "higher_is_better"
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
    measured_gpu_ids = {a["gpu_id"] for a in aggregates}

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
        if baseline is None:
            raise RankingParamError("baseline", _("unknown GPU %(slug)r") % {"slug": params.baseline})

    ids = [g.id for g in gpus] + [baseline.id]
    peaks_by_gpu: dict[int, dict[str, float | None]] = defaultdict(dict)
    for peak in TensorPeak.objects.filter(gpu_id__in=ids).values("gpu_id", "precision", "supported", "dense_tflops"):
        peaks_by_gpu[peak["gpu_id"]][peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None

    points = [
        metrics.AggregatePoint(
            gpu_id=a["gpu_id"],
            group=(a["workload_id"], a["precision"], a["gpu_count"]),
            median=a["median"],
            n=a["n"],
            distinct_submitters=a["distinct_submitters"],
            has_lab=a["has_lab"],
            higher_is_better=workloads[a["workload_id"]]["higher_is_better"],
        )
        for a in aggregates
    ]
    measured = {} if uc.is_llm else metrics.measured_relative(points, baseline_gpu_id=baseline.id)
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

    rates = _latest_rates()
    currency, exchange = params.currency, None
    if params.currency != "USD":
        rate = rates.get(params.currency)
        if rate is None:
            currency = "USD"
            warnings.append(
                _("No %(currency)s exchange rate is recorded, so prices are shown in USD.")
                % {"currency": params.currency}
            )
        else:
            exchange = {"usd_per_unit": float(rate["usd_per_unit"]), "date": rate["date"], "source": rate["source"]}

    def convert(usd: float | None) -> float | None:
        if usd is None or exchange is None:
            return usd
        return usd / exchange["usd_per_unit"]

    if params.mode == "rent":
        rent = _rent_prices(params, [g.id for g in gpus])
        price_unit, scale = _("per GPU-hour"), 1.0
        source_label = {
            "cheapest": _("cheapest on-demand offer"),
            "median": _("median of providers' cheapest on-demand offers"),
            "spot": _("cheapest spot offer"),
        }[params.price]
        prices = {gpu_id: (usd, source_label, providers) for gpu_id, (usd, providers) in rent.items()}
        ppd_unit = _("per %(currency)s/GPU-hour") % {"currency": currency}
    else:
        buy = _buy_prices(params, gpus, rates)
        price_unit, scale = _("per GPU"), 1000.0
        prices = {gpu_id: (usd, label, 0) for gpu_id, (usd, label) in buy.items()}
        ppd_unit = _("per 1,000 %(currency)s") % {"currency": currency}

    baseline_specs = _spec_figures(baseline, peaks_by_gpu.get(baseline.id, {}))
    llm_figures, llm_error, does_not_fit = None, None, 0
    if uc.is_llm:
        state = llm_model_state()
        llm_error = state.constants.typical_error_pct.get("serving" if uc.llm_mode == "batched" else "chat")
        llm_figures = llm_ranking_figures(
            use_case=uc.slug,
            size=params.model_size,
            precision_family=params.precision,
            include_all_rows=params.mlperf == "all",
            gpus=gpus,
            peaks_by_gpu=peaks_by_gpu,
            state=state,
        )
    rows: list[RankingRow] = []
    skipped = 0
    for gpu in gpus:
        usd, source, providers = prices.get(gpu.id, (None, "", 0))
        price = convert(usd)
        if llm_figures is not None:
            figure = llm_figures[gpu.id]
            if figure.tokens_per_s is None:
                does_not_fit += figure.estimate is not None and figure.estimate.bound == "does not fit"
                skipped += figure.estimate is None or figure.estimate.bound != "does not fit"
                continue
            if params.basis == "measured" and figure.basis != "measured":
                continue
            values = llm_row_values(figure=figure, price=price, mode=params.mode, llm_mode=uc.llm_mode, scale=scale)
        else:
            m = measured.get(gpu.id)
            estimate = metrics.estimate_relative(
                _spec_figures(gpu, peaks_by_gpu.get(gpu.id, {})), baseline_specs, family=params.precision
            )
            if m is None and estimate is None:
                skipped += 1
                continue
            if params.basis == "measured" and m is None:
                continue
            perf = m.value if m else estimate
            values = {
                "perf": perf,
                "perf_basis": "measured" if m else "estimated",
                "perf_measured": m.value if m else None,
                "perf_estimated": estimate,
                "n": m.n if m else 0,
                "distinct_submitters": distinct_by_gpu.get(gpu.id, m.distinct_submitters_max) if m else 0,
                "groups": m.groups if m else 0,
                "perf_per_dollar": metrics.per_price(perf, price, scale=scale),
                "meets_memory_floor": gpu.memory_gib is not None and gpu.memory_gib >= uc.memory_floor_gib,
            }
        rows.append(
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
                perf_per_kw=metrics.per_kilowatt(values["perf"], gpu.tdp_w),
                **values,
            )
        )

    tiers = metrics.tiers_assign({r.gpu_slug: r.perf_per_dollar for r in rows if r.meets_memory_floor})
    for row in rows:
        row.tier = tiers.get(row.gpu_slug)
    sort_key = params.sort
    rows.sort(key=lambda r: (getattr(r, sort_key) is None, -(getattr(r, sort_key) or 0), r.gpu_name))
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
        llm_typical_error_pct=llm_error,
        does_not_fit=does_not_fit,
    )


def tiers_compute(*, params: RankingParams) -> TierList:
    """The tier list of one use case: S..D among GPUs meeting its memory floor (metrics doc)."""
    ranking = rankings_compute(params=params.with_changes(sort="perf_per_dollar"))
    tiers: dict[str, list[RankingRow]] = {name: [] for name in metrics.TIER_NAMES}
    below, without_price = [], []
    for row in ranking.rows:
        if not row.meets_memory_floor:
            below.append(row)
        elif row.tier is None:
            without_price.append(row)
        else:
            tiers[row.tier].append(row)
    return TierList(
        ranking=ranking,
        tiers=tiers,
        below_floor=below,
        without_price=without_price,
        thresholds=dict(metrics.TIER_THRESHOLDS),
        memory_floor_gib=ranking.use_case.memory_floor_gib,
    )
