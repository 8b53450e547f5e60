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
def test_no_estimate_is_in_tier_s_and_the_mark_is_measured(demo):
    """An estimate set the 100 % mark and took tier S where measured GPUs existed."""
    graded = 0
    for use_case, family, size in _views():
        params = RankingParams(use_case=use_case.slug, precision=family, **({"model_size": size} if size else {}))
        tier_list = tiers_compute(params=params)
        rows = [r for tier in tier_list.tiers.values() for r in tier]
        graded += len(rows)
        view = (use_case.slug, family, size)
        assert all(r.perf_basis == "measured" for r in tier_list.tiers["S"]), view
        measured = [r.perf_per_dollar for r in rows if r.perf_basis == "measured" and r.perf_per_dollar]
        if measured:
            assert tier_list.ranking.tier_mark == pytest.approx(max(measured)), view
            best = max(rows, key=lambda r: r.perf_per_dollar or 0)
            assert best.perf_basis == "measured" or best.tier == "A", view
    assert graded > 100
