"""What the rankings answer: one row per GPU (``RankingRow``) and the ranking around them
(``Ranking``); computed by dashboard/selectors/rankings.py, described in its docstring."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from dashboard.multi_gpu_maths import MeasuredScaling
from dashboard.ranking.maths import EstimateModel, conservative_value
from dashboard.ranking.use_cases import UseCase, use_case_requirement
from dashboard.selectors.ranking_params import RankingParams
from llm.question import ServingQuestion
from llm.selectors.serving_target import ServingChoice


@dataclass(frozen=True)
class RowPrice:
    """The price a ranking row is valued at, in the page currency, and where it comes from.

    ``amount`` is None without a price. A rental price is one offer (its provider, instance,
    region, when it was observed, whether that date is an estimate) and the spread over the
    providers' cheapest offers (``minimum``..``maximum`` over ``providers``)."""

    amount: float | None = None
    unit: str = ""  # "per GPU-hour" | "per GPU"
    source: str = ""  # e.g. "cheapest on-demand offer", "launch price", "your price"
    providers: int = 0
    minimum: float | None = None
    maximum: float | None = None
    provider: str = ""
    provider_slug: str = ""
    instance_type: str = ""
    region: str = ""
    observed_at: dt.datetime | None = None
    age_days: float | None = None
    date_basis: str = ""  # PriceSnapshot.DateBasis
    date_estimated: bool = False
    between: tuple[str, ...] = ()  # the two providers a typical price is the mean of
    single_listing: bool = False  # the only offer is one marketplace listing: not a typical price
    missing: str = ""  # without a price: why (catalog.selectors.prices.gpu_price_gaps)


@dataclass
class RankingRow:
    """One GPU in a ranking: its figure (measured or estimated), its price and value, whether
    it can do the use case, and for LLM use cases the configuration the figure is for."""

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
    price: RowPrice
    currency: str
    perf_per_dollar: float | None
    perf_per_dollar_unit: str
    perf_per_kw: float | None
    meets_memory_floor: bool
    # The power per GPU perf_per_kw divides by, and what it is: "measured" (the average power measured
    # at the ranked LLM serving point), "estimated" (its GPU class's power curve at that load, never
    # above the board limit), "tdp" (the catalogue TDP, the fallback) or "" (no figure).
    perf_per_kw_power_w: float | None = None
    perf_per_kw_basis: str = ""
    tier: str | None = None
    rank: int | None = None
    eligible: bool = True  # meets the use case's memory floor and has the tensor format it needs
    ineligible_reasons: list[str] = field(default_factory=list)
    measured_via: str = ""  # the GPU a measured figure is chained through (no workload shared with the baseline)
    # LLM use cases: perf is tokens/s (per GPU for serving, of the stream for chat) on llm_gpu_count GPUs.
    llm_gpu_count: int | None = None
    cost_per_million_tokens: float | None = None
    # LLM serving, buy mode: the energy of an output token at the ranked operating point, measured
    # or estimated (with its interval), and its electricity per million tokens at ``kwh_price``.
    energy_basis: str = ""  # "measured" | "estimated" | "" (none)
    joules_per_token: float | None = None
    joules_per_token_low: float | None = None
    joules_per_token_high: float | None = None
    electricity_per_million_tokens: float | None = None
    # LLM serving estimates: the 80 % held-out interval of ``perf`` (llm.serving.heldout, the kind
    # of extrapolation in ``interval_kind``) and of the cost per million tokens it gives.
    perf_low: float | None = None
    perf_high: float | None = None
    cost_per_million_tokens_low: float | None = None
    cost_per_million_tokens_high: float | None = None
    interval_kind: str = ""
    llm_source: str = ""
    llm_source_url: str = ""
    llm_precision: str = ""
    # Typical error of perf_estimated, in percent: the median miss when each measured GPU is
    # estimated without its own measurements (the spec estimate, or the LLM model); None when
    # there is no estimate or its error is unknown.
    estimate_error_pct: float | None = None
    # Training use cases ranked by LLM training: the older suite's figure relative to the baseline
    # (Lambda's training benchmarks, the client's transformer-train), shown beside, never ranked;
    # and the MFU behind ``perf`` with the MLPerf Training runs it was fitted on (0: not this GPU's).
    suite_perf: float | None = None
    training_mfu: float | None = None
    training_mfu_runs: int = 0
    # Training use cases: measured data-parallel scaling at the largest GPU count that counts in the
    # rankings (dashboard/multi_gpu_maths.py); None where none is measured. Shown beside the figure, never part of it.
    scaling: MeasuredScaling | None = None
    # LLM estimates outside the model's measured range (llm.serving): the reasons
    # (vendor, architecture, configuration, precision); estimate_error_pct is then the error the
    # model makes when it extrapolates. llm_configuration: single, layer, or the link of a
    # tensor-parallel split (fabric, pcie_p2p, pcie_host, unknown).
    estimate_outside_range: bool = False
    estimate_outside_reasons: list[str] = field(default_factory=list)
    llm_configuration: str = ""
    # LLM serving at a chosen interactivity (dashboard/selectors/llm_serving.py): the target
    # (tokens/s per user, or "max"), the GPU counts current offers rent (empty: none on record),
    # whether measured points exist but none reaches the target (then perf is None), and where
    # the price comes from: "offer", "user" (gpu_price parameter) or "none".
    llm_target: str = ""
    llm_rented_counts: list[int] = field(default_factory=list)
    llm_target_unreached: bool = False
    llm_price_basis: str = ""
    # LLM serving: the workload the figure answers (model, lengths, precision, target), the measured
    # points an estimate is anchored on, whether a measured figure is a floor (measured faster per
    # user than the target), and the engine class the answer assumes.
    llm_workload: str = ""
    llm_anchor: str = ""
    llm_floor: bool = False
    llm_engine: str = ""

    @property
    def measured(self) -> bool:
        return self.perf_basis == "measured"

    def ranked(self, value: float | None) -> float | None:
        """``value`` as the ranking orders and grades it (dashboard.ranking.maths.conservative_value)."""
        return conservative_value(value, measured=self.measured, error_pct=self.estimate_error_pct)

    @property
    def ranked_value(self) -> float | None:
        """Performance per price as ranked and graded: an estimate at its conservative end."""
        return self.ranked(self.perf_per_dollar)

    def value_interval(self, name: str) -> tuple[float, float] | None:
        """The 80 % interval of the figure ``name`` (perf or a figure proportional to it: per price,
        per kW): an estimate's interval, a measured figure as a point; None without the figure."""
        value = getattr(self, name)
        if value is None:
            return None
        if self.perf_low is None or self.perf_high is None or not self.perf:
            return value, value
        return value * self.perf_low / self.perf, value * self.perf_high / self.perf


def uncertain_order_spans(rows: list[RankingRow], sort_key: str) -> list[tuple[int, int]]:
    """Runs of ranked rows (first rank, last rank) in which each row's 80 % interval of the sort
    figure overlaps the next one's: the data cannot say which of them comes first."""
    ranked = [(r.rank, interval) for r in rows if r.rank is not None and (interval := r.value_interval(sort_key))]
    spans: list[tuple[int, int]] = []
    for (rank, (low, high)), (next_rank, (next_low, next_high)) in zip(ranked, ranked[1:], strict=False):
        if max(low, next_low) > min(high, next_high):
            continue
        if spans and spans[-1][1] == rank:
            spans[-1] = (spans[-1][0], next_rank)
        else:
            spans.append((rank, next_rank))
    return spans


@dataclass
class Ranking:
    """The rows of one use case for one set of parameters, and what the page says around them."""

    params: RankingParams
    use_case: UseCase
    baseline_slug: str
    baseline_name: str
    baseline_measured: bool  # whether the baseline has measurements for this use case
    rows: list[RankingRow]
    currency: str  # the currency prices are shown in (USD when the one asked for has no rate)
    exchange_rate: dict[str, Any] | None  # catalog.money.Money.exchange_rate; None in USD
    warnings: list[str] = field(default_factory=list)
    skipped_without_data: int = 0  # GPUs with neither a measurement nor the specs to estimate
    estimate: EstimateModel = field(default_factory=EstimateModel)
    ineligible_rows: list[RankingRow] = field(default_factory=list)  # hidden with show=eligible
    llm_typical_error_pct: float | None = None  # LLM use cases: the estimate model's median LOO error
    does_not_fit: int = 0  # LLM use cases: GPUs the model does not fit on (up to 8 of them)
    not_measured: int = 0  # GPUs left out because the page asks for measured figures only
    gpus_considered: int = 0  # GPUs the page's filters keep (shown + every reason for leaving one out)
    workload_label: str = ""  # LLM serving: the question every row answers, in words
    serving_question: ServingQuestion | None = None  # LLM serving: the same question
    llm_outside_error_pct: float | None = None  # LLM use cases: its error outside the measured range
    # The 100 % mark of the tiers: the best measured performance per price among the eligible rows
    # (the best estimate only where none is measured); dashboard.ranking.maths.tiers_from_measurements.
    tier_mark: float | None = None
    # LLM serving: per GPU id, its configuration at the target with the measured points and the
    # model's curve behind it (the curves chart).
    serving_choices: dict[int, ServingChoice] = field(default_factory=dict)

    @property
    def uncertain_order(self) -> list[tuple[int, int]]:
        """Runs of adjacent ranks whose 80 % intervals overlap (uncertain_order_spans)."""
        return uncertain_order_spans(self.rows, self.params.sort)

    @property
    def uncertain_order_text(self) -> str:
        """The runs in words for the line under the table: "#2–#4, #7–#8"."""
        return ", ".join(f"#{first}–#{last}" for first, last in self.uncertain_order)

    @property
    def hidden_ineligible(self) -> int:
        return len(self.ineligible_rows)

    @property
    def rows_count(self) -> int:
        return len(self.rows)

    @property
    def rows_priced(self) -> int:
        return sum(1 for r in self.rows if r.price.amount is not None)

    @property
    def rows_unpriced(self) -> int:
        return self.rows_count - self.rows_priced

    @property
    def rows_unreachable(self) -> int:
        return sum(1 for r in self.rows if r.llm_target_unreached)

    @property
    def gpus_accounted(self) -> int:
        """Every GPU the filters keep, each counted once: shown, or left out for one reason."""
        return (
            self.rows_count + self.does_not_fit + self.hidden_ineligible + self.skipped_without_data + self.not_measured
        )

    @property
    def ranking(self) -> Ranking:
        """Itself: a ranking and a tier list (which holds one) are read alike by the API's header."""
        return self

    @property
    def required_tensor_formats(self) -> list[str]:
        return list(self.use_case.required_precisions(self.params.precision))

    @property
    def requirement(self) -> str:
        """What a GPU needs for the use case at the ranking's precision, in words."""
        return use_case_requirement(self.use_case, family=self.params.precision)


# The published columns of a ranking row (the API's rows, the CSV's columns): name -> where on
# RankingRow it is read. The API's serializer declares each column's type and meaning under the
# same names; the CSV chooses among them.
ROW_COLUMNS: dict[str, str] = {
    "rank": "rank",
    "gpu": "gpu_slug",
    "gpu_name": "gpu_name",
    "vendor": "vendor_slug",
    "vendor_name": "vendor",
    "segment": "segment",
    "architecture_name": "architecture",
    "memory_gib": "memory_gib",
    "tdp_w": "tdp_w",
    "perf": "perf",
    "perf_basis": "perf_basis",
    "measured": "measured",
    "perf_measured": "perf_measured",
    "perf_estimated": "perf_estimated",
    "n": "n",
    "distinct_submitters": "distinct_submitters",
    "groups": "groups",
    "price": "price.amount",
    "price_unit": "price.unit",
    "price_source": "price.source",
    "price_providers": "price.providers",
    "price_min": "price.minimum",
    "price_max": "price.maximum",
    "price_provider": "price.provider",
    "price_provider_slug": "price.provider_slug",
    "price_instance_type": "price.instance_type",
    "price_region": "price.region",
    "price_observed_at": "price.observed_at",
    "price_age_days": "price.age_days",
    "price_date_basis": "price.date_basis",
    "price_date_estimated": "price.date_estimated",
    "currency": "currency",
    "perf_per_dollar": "perf_per_dollar",
    "perf_per_dollar_unit": "perf_per_dollar_unit",
    "perf_per_kw": "perf_per_kw",
    "perf_per_kw_power_w": "perf_per_kw_power_w",
    "perf_per_kw_basis": "perf_per_kw_basis",
    "meets_memory_floor": "meets_memory_floor",
    "tier": "tier",
    "eligible": "eligible",
    "ineligible_reasons": "ineligible_reasons",
    "measured_via": "measured_via",
    "llm_gpu_count": "llm_gpu_count",
    "cost_per_million_tokens": "cost_per_million_tokens",
    "llm_source": "llm_source",
    "llm_source_url": "llm_source_url",
    "llm_precision": "llm_precision",
    "scaling_gpu_count": "scaling.gpu_count",
    "scaling_efficiency": "scaling.efficiency",
    "scaling_n": "scaling.n",
    "scaling_distinct_submitters": "scaling.distinct_submitters",
    "scaling_interconnect": "scaling.interconnect",
    "scaling_tokens_per_s_per_gpu": "scaling.tokens_per_s_per_gpu",
    "scaling_one_gpu_tokens_per_s": "scaling.one_gpu_tokens_per_s",
    "estimate_error_pct": "estimate_error_pct",
    "suite_perf": "suite_perf",
    "training_mfu": "training_mfu",
    "training_mfu_runs": "training_mfu_runs",
    "estimate_outside_range": "estimate_outside_range",
    "estimate_outside_reasons": "estimate_outside_reasons",
    "llm_configuration": "llm_configuration",
    "llm_target": "llm_target",
    "llm_rented_counts": "llm_rented_counts",
    "llm_target_unreached": "llm_target_unreached",
    "llm_price_basis": "llm_price_basis",
    "llm_workload": "llm_workload",
    "llm_anchor": "llm_anchor",
    "llm_floor": "llm_floor",
    "llm_engine": "llm_engine",
    "perf_low": "perf_low",
    "perf_high": "perf_high",
    "cost_per_million_tokens_low": "cost_per_million_tokens_low",
    "cost_per_million_tokens_high": "cost_per_million_tokens_high",
    "interval_kind": "interval_kind",
    "energy_basis": "energy_basis",
    "joules_per_token": "joules_per_token",
    "joules_per_token_low": "joules_per_token_low",
    "joules_per_token_high": "joules_per_token_high",
    "electricity_per_million_tokens": "electricity_per_million_tokens",
    "ranked_value": "ranked_value",
}
# What a column reads when the object it is read through is absent (a row without measured scaling).
_ABSENT: dict[str, Any] = {"scaling_n": 0, "scaling_distinct_submitters": 0, "scaling_interconnect": ""}


def ranking_row_column(row: RankingRow, name: str) -> Any:
    """The value of the published column ``name`` of ``row`` (ROW_COLUMNS)."""
    value: Any = row
    for attribute in ROW_COLUMNS[name].split("."):
        if value is None:
            return _ABSENT.get(name)
        value = getattr(value, attribute)
    return value


def ranking_row_columns(row: RankingRow) -> dict[str, Any]:
    """Every published column of ``row``, by name (ROW_COLUMNS)."""
    return {name: ranking_row_column(row, name) for name in ROW_COLUMNS}
