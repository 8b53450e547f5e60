"""The per-worker peer sets give the same answers as the plain computations, within their memory bounds."""

from __future__ import annotations

import random
import statistics

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmarks_app.models import TrustLabel
from benchmarks_app.services.errors import SubmissionInvalid
from benchmarks_app.services.payload import json_parse_strict
from benchmarks_app.services.peers import PeerCache, PeerSet
from benchmarks_app.services.robust_statistics import is_outlier, modified_z_score, summarise
from tests.factories import BenchmarkResultFactory, GpuFactory, WorkloadFactory


def test_a_peer_set_holds_sorted_values_submitters_and_lab_results():
    peer_set = PeerSet()
    for value, submitter_key, trust in ((3.0, "user:1", "community"), (1.0, "", "lab"), (2.0, "user:1", "lab")):
        peer_set.add(value, submitter_key, trust)
    peer_set.add(5.0, "user:2", "community")
    assert list(peer_set.values) == [1.0, 2.0, 3.0, 5.0]
    assert dict(peer_set.submitters) == {"user:1": 2, "": 1, "user:2": 1}
    assert (peer_set.n, peer_set.lab, peer_set.distinct) == (4, 2, 2)
    assert peer_set.outlier(100.0) == (False, None)  # four peers: too few to call anything an outlier


def test_peer_set_summary_and_outliers_follow_additions_like_a_recomputation():
    rng = random.Random(3)
    peers = [(rng.uniform(1, 2), f"user:{rng.randint(1, 5)}") for _ in range(10)]
    peer_set = PeerSet()
    for value, submitter_key in peers:
        peer_set.add(value, submitter_key, "community")
    for _ in range(200):
        peer = (rng.uniform(1, 2), rng.choice(["", "user:1", f"user:{rng.randint(6, 40)}"]))
        probe = rng.uniform(0, 3)
        assert peer_set.outlier(probe) == is_outlier(probe, sorted(v for v, _ in peers))
        peer_set.add(*peer, "community")
        peers.append(peer)
        expected = summarise([v for v, _ in peers], [s for _, s in peers])
        got = peer_set.summary()
        assert got == expected
        assert got.median == pytest.approx(statistics.median(v for v, _ in peers), rel=1e-12)
        assert (got.q1, got.q3) == pytest.approx(
            statistics.quantiles([v for v, _ in peers], n=4, method="inclusive")[::2]
        )


def _plain_modified_z(value: float, peers: list[float]) -> float:
    """Iglewicz and Hoaglin's formula as written, with the mean deviation when the MAD is zero."""
    median = statistics.median(peers)
    deviations = [abs(p - median) for p in peers]
    mad = statistics.median(deviations)
    if mad > 0:
        return 0.6745 * (value - median) / mad
    mean_ad = statistics.fmean(deviations)
    if mean_ad > 0:
        return (value - median) / (1.253314 * mean_ad)
    return 0.0 if value == median else float("inf") * (1 if value > median else -1)


def test_modified_z_score_matches_the_plain_formula():
    rng = random.Random(11)
    for _ in range(3000):
        pool = [rng.uniform(1, 10) for _ in range(3)]
        # Ties on purpose: several identical values make the median absolute deviation degenerate.
        peers = sorted(
            rng.choice(pool) if rng.random() < 0.4 else rng.uniform(1, 10) for _ in range(rng.randint(1, 60))
        )
        probe = rng.choice([rng.uniform(0, 12), *peers])
        assert modified_z_score(probe, peers) == pytest.approx(_plain_modified_z(probe, peers), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"a": [1, 2, 1e999]}', "$.a[2]"),
        ('{"b": {"c": -1e400}}', "$.b.c"),
        ('{"d": ' + "9" * 40 + "}", "$.d"),
    ],
)
def test_numbers_that_overflow_are_refused_with_their_path(text, field):
    with pytest.raises(SubmissionInvalid) as caught:
        json_parse_strict(text)
    assert [e.field for e in caught.value.errors] == [field]


def test_ordinary_numbers_and_look_alike_strings_parse():
    document = json_parse_strict('{"run_uuid": "0e123456-e999", "x": 1.5e-300, "n": 9223372036854775807, "f": 1e308}')
    assert document["x"] == 1.5e-300 and document["n"] == 2**63 - 1 and document["f"] == 1e308


@pytest.mark.django_db
def test_peer_sets_load_the_trusted_results_of_the_asked_keys():
    gpu, other_gpu, workload = GpuFactory(), GpuFactory(), WorkloadFactory()
    rows = [
        ("k1", 10.0, "user:1", TrustLabel.COMMUNITY),
        ("k1", 11.0, "user:1", TrustLabel.LAB),
        ("k1", 12.0, "", TrustLabel.LAB),
        ("k1", 13.0, "user:2", TrustLabel.COMMUNITY),
        ("k1", 99.0, "user:2", TrustLabel.FLAGGED),  # never a peer
        ("k2", 5.0, "user:1", TrustLabel.COMMUNITY),
        ("k3", 7.0, "user:3", TrustLabel.COMMUNITY),  # a key that was not asked for
    ]
    for key, value, submitter_key, trust in rows:
        BenchmarkResultFactory(
            gpu=gpu, workload=workload, comparison_key=key, value=value, submitter_key=submitter_key, trust=trust
        )
    BenchmarkResultFactory(gpu=other_gpu, workload=workload, comparison_key="k1", value=1.0, trust=TrustLabel.LAB)

    found = PeerCache(validate=False).load(gpu_id=gpu.pk, comparison_keys=["k1", "k2", "missing"])

    as_tuples = {key: (list(s.values), dict(s.submitters), s.lab, s.distinct, s.version) for key, s in found.items()}
    assert as_tuples == {
        "k1": ([10.0, 11.0, 12.0, 13.0], {"user:1": 2, "": 1, "user:2": 1}, 2, 2, None),
        "k2": ([5.0], {"user:1": 1}, 0, 1, None),
        "missing": ([], {}, 0, 0, None),
    }


@pytest.mark.django_db
def test_the_peer_cache_evicts_the_least_recent_pairs_beyond_its_value_budget():
    gpu, workload = GpuFactory(), WorkloadFactory()
    for key, count in (("small", 2), ("medium", 3), ("large", 4)):
        for i in range(count):
            BenchmarkResultFactory(
                gpu=gpu, workload=workload, comparison_key=key, value=float(i + 1), trust=TrustLabel.COMMUNITY
            )

    def queries_to_load(cache: PeerCache, key: str) -> int:
        # One query checks the cached versions; a second reads the values of a pair not held.
        with CaptureQueriesContext(connection) as queries:
            assert cache.load(gpu_id=gpu.pk, comparison_keys=[key])[key].n == {"small": 2, "medium": 3, "large": 4}[key]
        return len(queries)

    cache = PeerCache(max_values=6)
    assert [queries_to_load(cache, key) for key in ("small", "medium", "small")] == [2, 2, 1]
    # 2 + 3 + 4 values exceed 6: the least recently used pair (medium) goes, then 2 + 4 fit.
    assert queries_to_load(cache, "large") == 2
    assert cache.held() == (2, 6)
    assert [queries_to_load(cache, key) for key in ("small", "large", "medium")] == [1, 1, 2]
    # Medium came back (9 values): small, then large went, least recent first, until it fits.
    assert cache.held() == (1, 3)
    # A pair larger than the whole budget is still handed over, and held alone.
    lone = PeerCache(max_values=3)
    assert [queries_to_load(lone, key) for key in ("large", "large", "small", "large")] == [2, 1, 2, 2]
    unbounded = PeerCache(max_pairs=None, max_values=None)
    assert [queries_to_load(unbounded, key) for key in ("small", "medium", "large", "small", "medium")] == [
        2,
        2,
        2,
        1,
        1,
    ]
