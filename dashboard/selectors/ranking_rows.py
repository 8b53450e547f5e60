"""What the rankings answer: one row per GPU (``RankingRow``) and the ranking around them
(``Ranking``); computed by dashboard/selectors/rankings.py, described in its docstring."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any

from dashboard.multi_gpu_maths import interconnect_label
from dashboard.ranking.maths import EstimateModel
from dashboard.ranking.use_cases import UseCase
from dashboard.selectors.ranking_params import RankingParams
from llm.selectors.serving_target import ServingChoice


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
    eligible: bool = True  # meets the use case's memory floor and has the tensor format it needs
    ineligible_reasons: list[str] = field(default_factory=list)
    measured_via: str = ""  # the GPU a measured figure is chained through (no workload shared with the baseline)
    # Provenance of a rental price: the offer it is, its provider, when it was observed (the
    # newest snapshot that listed it) and whether that date is an estimate; the spread over
    # providers' cheapest offers in the page currency.
    price_provider: str = ""
    price_provider_slug: str = ""
    price_instance_type: str = ""
    price_region: str = ""
    price_observed_at: dt.datetime | None = None
    price_age_days: float | None = None
    price_date_basis: str = ""
    price_date_estimated: bool = False
    price_min: float | None = None
    price_max: float | None = None
    # LLM use cases: perf is tokens/s (per GPU for serving, of the stream for chat) on llm_gpu_count GPUs.
    llm_gpu_count: int | None = None
    cost_per_million_tokens: float | None = None
    llm_source: str = ""
    llm_source_url: str = ""
    llm_precision: str = ""
    # Typical error of perf_estimated, in percent: the median miss when each measured GPU is
    # estimated without its own measurements (the spec estimate, or the LLM model); None when
    # there is no estimate or its error is unknown.
    estimate_error_pct: float | None = None
    # Training use cases: measured data-parallel scaling at the largest GPU count that counts in the
    # rankings (dashboard/multi_gpu_maths.py): throughput at N / (N x throughput at 1 GPU) of the same run,
    # the median over scaling_n runs. Shown beside the figure, never part of it.
    scaling_gpu_count: int | None = None
    scaling_efficiency: float | None = None
    scaling_n: int = 0
    scaling_distinct_submitters: int = 0
    scaling_interconnect: str = ""
    scaling_tokens_per_s_per_gpu: float | None = None
    scaling_one_gpu_tokens_per_s: float | None = None

    # LLM estimates outside the model's measured range (llm.estimate.coverage): the reasons
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

    @property
    def scaling_interconnect_label(self) -> str:
        return interconnect_label(self.scaling_interconnect)

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
    estimate: EstimateModel = field(default_factory=EstimateModel)
    ineligible_rows: list[RankingRow] = field(default_factory=list)  # hidden with show=eligible

    @property
    def hidden_ineligible(self) -> int:
        return len(self.ineligible_rows)

    llm_typical_error_pct: float | None = None  # LLM use cases: the estimate model's median LOO error
    does_not_fit: int = 0  # LLM use cases: GPUs the model does not fit on (up to 8 of them)
    llm_outside_error_pct: float | None = None  # LLM use cases: its error outside the measured range
    # The 100 % mark of the tiers: the best measured performance per price among the eligible rows
    # (the best estimate only where none is measured); dashboard.ranking.maths.tiers_from_measurements.
    tier_mark: float | None = None
    # LLM serving: per GPU id, its configuration at the target with the measured points and the
    # model's curve behind it (the curves chart).
    serving_choices: dict[int, ServingChoice] = field(default_factory=dict)
    # LLM use cases: estimates outside the measured range ranked above a measured figure.
