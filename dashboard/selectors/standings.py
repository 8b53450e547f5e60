"""A few GPUs' standings in every use case, for the GPU page and the comparison.

A standing is the GPU's ranking row (dashboard/selectors/rankings.py) at the rankings' default
parameters. Without tiers (the comparison) it is read without building the whole ranking: the
figures and prices are read for the GPUs asked for only (the measured figures and the spec
estimate are still made from every GPU's results, so they are the rankings' own), the rental
prices once for every use case. A tier grades the GPU against the best performance per price of
the whole use case, so ``graded`` standings (the GPU page) are the rows of the full ranking,
which is computed once per data version and shared by every GPU page. The graded standings at the
default parameters in USD are also stored on write (``StoredStanding``, refreshed after each
data-version bump): a GPU page and a comparison in USD read their few stored rows when they are
current and compute them otherwise.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from django.utils import timezone

from catalog.models import Gpu
from catalog.selectors.prices import gpu_rent_prices
from dashboard.models import StoredStanding
from dashboard.ranking.maths import BASELINE_SLUG_DEFAULT
from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors.ranking_params import RankingParamError, RankingParams
from dashboard.selectors.ranking_rows import RankingRow
from dashboard.selectors.rankings import ranking_inputs_read, ranking_rows_build, rankings_compute
from gpuatlas.data_version import data_version, data_version_cache_seconds

# The parameters the stored standings are computed at (the GPU page's defaults).
STORED_CURRENCY = "USD"


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
    rent_prices = None if graded else gpu_rent_prices(rule=RankingParams().price)
    standings = {}
    for slug in USE_CASES:
        params = RankingParams(use_case=slug, currency=currency, baseline=baseline, show="all")
        try:
            if rent_prices is None:
                ranking = rankings_compute(params=params)
                rows, baseline_name = ranking.rows + ranking.ineligible_rows, ranking.baseline_name
            else:
                inputs = ranking_inputs_read(params=params, rows_for=ids, rent_prices=rent_prices)
                rows, baseline_name = ranking_rows_build(params=params, inputs=inputs).rows, inputs.baseline.name
        except RankingParamError:
            standings[slug] = UseCaseStandings(slug, {})
            continue
        standings[slug] = UseCaseStandings(slug, {row.gpu_id: row for row in rows if row.gpu_id in ids}, baseline_name)
    return standings


def _row_loads(data: bytes) -> RankingRow:
    # Written by dashboard.services.stored_standings_refresh only, never from a request.
    return pickle.loads(data)  # noqa: S301


def gpu_standings_stored(*, gpu: Gpu) -> dict[str, UseCaseStandings] | None:
    """The GPU's graded standings at the default parameters in USD as stored on write, or None
    when they are not current: another data version or day, a use case missing, or versioned
    caching off (then writes do not bump the version, so a stored version says nothing)."""
    return gpus_standings_stored(gpus=[gpu])


def gpus_standings_stored(*, gpus: list[Gpu]) -> dict[str, UseCaseStandings] | None:
    """The graded standings of ``gpus`` at the default parameters in USD as stored on write, read
    in one query, or None when those of any of them are not current (``gpu_standings_stored``)."""
    if data_version_cache_seconds() <= 0:
        return None
    stored = list(
        StoredStanding.objects.filter(
            gpu_id__in=[gpu.id for gpu in gpus], data_version=data_version(), day=timezone.now().date()
        )
    )
    if {(s.gpu_id, s.use_case) for s in stored} != {(gpu.id, slug) for gpu in gpus for slug in USE_CASES}:
        return None
    standings = {slug: UseCaseStandings(slug, {}) for slug in USE_CASES}
    try:
        for s in stored:
            standings[s.use_case].baseline_name = s.baseline_name
            if s.row is not None:
                standings[s.use_case].rows[s.gpu_id] = _row_loads(bytes(s.row))
    except (pickle.UnpicklingError, AttributeError, TypeError):
        return None  # written by another version of RankingRow: computed until the next refresh
    return standings


def gpu_standings_graded(
    *, gpu: Gpu, currency: str = "USD", baseline: str = BASELINE_SLUG_DEFAULT
) -> dict[str, UseCaseStandings]:
    """The GPU page's standings: stored ones at the default parameters when current, else computed."""
    if currency == STORED_CURRENCY and baseline == BASELINE_SLUG_DEFAULT:
        stored = gpu_standings_stored(gpu=gpu)
        if stored is not None:
            return stored
    return gpu_standings_compute(gpus=[gpu], currency=currency, baseline=baseline, graded=True)


def gpus_standings(*, gpus: list[Gpu], currency: str = "USD") -> dict[str, UseCaseStandings]:
    """The comparison's standings of ``gpus``: the stored ones in USD when current (their tiers
    come with them, unread there), else computed without tiers."""
    if currency == STORED_CURRENCY:
        stored = gpus_standings_stored(gpus=gpus)
        if stored is not None:
            return stored
    return gpu_standings_compute(gpus=gpus, currency=currency)
