"""Reads for the tier lists.

The grading is one rule, dashboard.ranking.maths.tiers_from_measurements: each GPU's ranked
figure (performance per price, an estimate at its conservative end) as a share of the best one,
so no share passes 100 % and tiers follow the ranked order.
Beside an estimate, ``estimate_error_pct`` (in percent) is the leave-one-GPU-out miss on the
measured GPUs of its vendor and class (dashboard.ranking.maths.estimate_error_for).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dashboard.ranking.maths import TIER_NAMES, TIER_THRESHOLDS
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.ranking_rows import Ranking, RankingRow
from dashboard.selectors.rankings import rankings_compute


@dataclass(frozen=True)
class TierGroup:
    name: str  # "S".."D"
    min_relative_value: float | None  # lower bound of value relative to the tiers' mark; None for D
    rows: list[RankingRow]  # best first


@dataclass
class TierList:
    ranking: Ranking
    tiers: dict[str, list[RankingRow]]  # "S".."D" -> rows, best first
    below_floor: list[RankingRow]  # below the memory floor (whatever their tensor formats)
    without_price: list[RankingRow]
    thresholds: dict[str, float]
    memory_floor_gib: float
    lacking_precision: list[RankingRow] = field(default_factory=list)  # enough memory, no tensor format

    @property
    def tier_groups(self) -> list[TierGroup]:
        return [TierGroup(name, self.thresholds.get(name), self.tiers[name]) for name in TIER_NAMES]


def tiers_compute(*, params: RankingParams) -> TierList:
    """The tier list of one use case: S..D among the GPUs eligible for it (dashboard/ranking/maths.py)."""
    ranking = rankings_compute(params=params.with_changes(sort="perf_per_dollar", show="all"))
    tiers: dict[str, list[RankingRow]] = {name: [] for name in TIER_NAMES}
    below, lacking, without_price = [], [], []
    for row in ranking.rows:
        if not row.meets_memory_floor:
            below.append(row)
        elif not row.eligible:
            lacking.append(row)
        elif row.tier is None:
            without_price.append(row)
        else:
            tiers[row.tier].append(row)
    return TierList(
        ranking=ranking,
        tiers=tiers,
        below_floor=below,
        without_price=without_price,
        thresholds=dict(TIER_THRESHOLDS),
        memory_floor_gib=ranking.use_case.memory_floor_gib,
        lacking_precision=lacking,
    )
