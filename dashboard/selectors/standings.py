"""A few GPUs' standings in every use case, for the GPU page and the comparison.

A standing is the GPU's ranking row (dashboard/selectors/rankings.py) at the rankings' default
parameters, read without building the whole ranking: the figures and prices are read for the
GPUs asked for only (the measured figures and the spec estimate are still made from every GPU's
results, so they are the rankings' own). A tier needs the best performance per price of the use
case, which only a GPU with a price can have: ``graded`` reads those GPUs too. The rental
prices are read once for every use case. Ranks are not given.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.models import Gpu
from catalog.selectors.prices import gpu_rent_prices
from dashboard.ranking.maths import BASELINE_SLUG_DEFAULT
from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors.ranking_params import RankingParamError, RankingParams
from dashboard.selectors.ranking_rows import RankingRow
from dashboard.selectors.rankings import ranking_inputs_read, ranking_rows_build, ranking_rows_grade


@dataclass
class UseCaseStandings:
    """The GPUs' rows in one use case (a GPU without data for it has none)."""

    use_case: str
    rows: dict[int, RankingRow]  # gpu id -> its row
    baseline_name: str = ""  # "" when the baseline is unknown (then there are no rows)


def gpu_standings_compute(
    *, gpus: list[Gpu], currency: str = "USD", baseline: str = BASELINE_SLUG_DEFAULT, graded: bool = False
) -> dict[str, UseCaseStandings]:
    """Use case slug -> the standings of ``gpus`` in it, at the rankings' default parameters in
    ``currency`` with every GPU listed whether eligible or not. ``graded``: with their tiers."""
    ids = {gpu.id for gpu in gpus}
    rent_prices = gpu_rent_prices(rule=RankingParams().price)
    rows_for = ids | set(rent_prices) if graded else ids
    standings = {}
    for slug in USE_CASES:
        params = RankingParams(use_case=slug, currency=currency, baseline=baseline, show="all")
        try:
            inputs = ranking_inputs_read(params=params, rows_for=rows_for, rent_prices=rent_prices)
        except RankingParamError:
            standings[slug] = UseCaseStandings(slug, {})
            continue
        rows = ranking_rows_build(params=params, inputs=inputs).rows
        if graded:
            ranking_rows_grade(rows=rows)
        standings[slug] = UseCaseStandings(
            slug, {row.gpu_id: row for row in rows if row.gpu_id in ids}, inputs.baseline.name
        )
    return standings
