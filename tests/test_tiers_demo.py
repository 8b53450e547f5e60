"""Tiers on the demo data (`make run`'s load_demo): every use case, precision and model size."""

from __future__ import annotations

import pytest

from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.tiers import tiers_compute


def _views():
    for use_case in USE_CASES.values():
        for family in use_case.precision_families:
            for size in use_case.model_sizes or ("",):
                yield use_case, family, size


@pytest.mark.slow  # the whole demo and about 50 tier lists: a minute on two shared cores
@pytest.mark.django_db
def test_tiers_follow_the_ranked_figure_and_no_share_passes_the_best(demo):
    """Every view's tiers grade the ranked figure (an estimate at its conservative end) as a share
    of the best: monotone along the ranked order, never above 100 %."""
    graded = 0
    for use_case, family, size in _views():
        params = RankingParams(use_case=use_case.slug, precision=family, **({"model_size": size} if size else {}))
        tier_list = tiers_compute(params=params)
        rows = [r for tier in tier_list.tiers.values() for r in tier]
        graded += len(rows)
        view = (use_case.slug, family, size)
        ranked = sorted(rows, key=lambda r: -(r.ranked_value or 0))
        if ranked:
            assert tier_list.ranking.tier_mark == pytest.approx(ranked[0].ranked_value), view
            ranks = ["SABCD".index(r.tier) for r in ranked]
            assert ranks == sorted(ranks), view
    assert graded > 100
