"""The pieces that make the ingest fast give the same answers as the plain computations."""

from __future__ import annotations

import random
import statistics
from typing import Any

import numpy as np
import pytest

from benchmarks_app.services.aggregates import Peer, SubmitterPeers, modified_z_score, summarise
from benchmarks_app.services.errors import SubmissionInvalid
from benchmarks_app.services.ingest import _TakenInBatch
from benchmarks_app.services.payload import json_parse_strict
from benchmarks_app.services.peers import PeerSet


def _peer_set(peers: list[Peer], version: Any) -> PeerSet:
    """A peer set from results one by one, grouped by submitter as the database hands them over."""
    groups: dict[str, SubmitterPeers] = {}
    for peer in peers:
        group = groups.setdefault(peer.submitter_key, SubmitterPeers(peer.submitter_key, [], 0))
        group.values.append(peer.value)
        groups[peer.submitter_key] = group._replace(lab=group.lab + (peer.trust == "lab"))
    return PeerSet.of_submitters(groups.values(), version)


def _random_values(rng: random.Random) -> list[float]:
    n = rng.randint(1, 60)
    pool = [rng.uniform(1, 10) for _ in range(3)]
    # Ties on purpose: several identical values make the median absolute deviation degenerate.
    return [rng.choice(pool) if rng.random() < 0.4 else rng.uniform(1, 10) for _ in range(n)]


def test_median_absolute_deviation_matches_numpy_exactly():
    rng = random.Random(7)
    for _ in range(3000):
        values = _random_values(rng)
        peer_set = _peer_set([Peer(v, "u", "community") for v in values], None)
        median = peer_set.quantile(0.5)
        assert peer_set.mad(median) == float(np.median(np.abs(np.asarray(values) - median)))


def test_modified_z_matches_the_reference_formula():
    rng = random.Random(11)
    for _ in range(2000):
        values = _random_values(rng)
        peer_set = _peer_set([Peer(v, "u", "community") for v in values], None)
        probe = rng.uniform(0, 12)
        expected = modified_z_score(probe, values)
        got = peer_set.modified_z(probe)
        assert got == pytest.approx(expected, rel=1e-12) or (got == expected)


def test_a_peer_set_holds_sorted_values_submitters_and_lab_results():
    peers = [
        Peer(3.0, "user:1", "community"),
        Peer(1.0, "", "lab"),
        Peer(2.0, "user:1", "lab"),
        Peer(5.0, "user:2", "community"),
    ]
    peer_set = _peer_set(peers, ("n", "at"))
    assert list(peer_set.values) == [1.0, 2.0, 3.0, 5.0]
    assert dict(peer_set.submitters) == {"user:1": 2, "": 1, "user:2": 1}
    assert (peer_set.lab, peer_set.distinct, peer_set.version) == (2, 2, ("n", "at"))
    empty = _peer_set([], None)
    assert (empty.n, empty.lab, empty.distinct, dict(empty.submitters)) == (0, 0, 0, {})


def test_peer_set_summary_follows_additions_like_a_recomputation():
    rng = random.Random(3)
    peers = [Peer(rng.uniform(1, 2), f"user:{rng.randint(1, 5)}", "community") for _ in range(10)]
    peer_set = _peer_set(peers, None)
    for _ in range(200):
        peer = Peer(rng.uniform(1, 2), rng.choice(["", "user:1", f"user:{rng.randint(6, 40)}"]), "community")
        peer_set.add(peer.value, peer.submitter_key, peer.trust)
        peers.append(peer)
        expected = summarise([p.value for p in peers], [p.submitter_key for p in peers])
        got = peer_set.summary()
        assert (got.n, got.distinct_submitters, got.minimum, got.maximum) == (
            expected.n,
            expected.distinct_submitters,
            expected.minimum,
            expected.maximum,
        )
        assert got.median == pytest.approx(statistics.median(p.value for p in peers), rel=1e-12)


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


def test_an_id_taken_in_a_batch_is_skipped_once_and_memory_is_bounded():
    taken = _TakenInBatch(limit=3)
    taken.add([1, 2])
    assert taken.consume(1) and not taken.consume(1)  # a later task (a re-ingest) asks the database
    taken.add([3, 4, 5])
    assert not taken.consume(2)  # the oldest was dropped past the limit
    assert taken.consume(5)


def test_stored_payloads_parse_as_the_strict_parser_reads_them():
    from benchmarks_app.services.payload import json_parse_stored
    from tests.factories_ingest import body, submission_document

    text = body(submission_document()).decode()
    assert json_parse_stored(text) == json_parse_strict(text)
    for bad, field in (('{"a": NaN}', "$"), ('{"s": "\\u0000"}', "$.s"), ('{"a": [1e999]}', "$.a[0]")):
        with pytest.raises(SubmissionInvalid) as caught:
            json_parse_stored(bad)
        assert [e.field for e in caught.value.errors] == [field]


@pytest.mark.django_db
@pytest.mark.parametrize("grouped_by_the_database", [True, False], ids=["this database", "grouped in python"])
def test_peer_sets_load_grouped_by_submitter_as_they_are_stored(grouped_by_the_database, monkeypatch):
    from django.db import connection

    from benchmarks_app.models import TrustLabel
    from benchmarks_app.services.aggregates import trusted_peers_by_submitter
    from tests.factories import GpuFactory
    from tests.factories_dashboard import BenchmarkResultFactory, WorkloadFactory

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
    if not grouped_by_the_database:
        monkeypatch.setattr(connection, "vendor", "other")

    found = trusted_peers_by_submitter(gpu_id=gpu.pk, comparison_keys=["k1", "k2", "missing"])

    as_sets = {
        key: {(g.submitter_key, tuple(sorted(g.values)), g.lab) for g in groups} for key, groups in found.items()
    }
    assert as_sets == {
        "k1": {("user:1", (10.0, 11.0), 1), ("", (12.0,), 1), ("user:2", (13.0,), 0)},
        "k2": {("user:1", (5.0,), 0)},
    }
    # The cache's peer set from groups is the one built from the results one by one.
    grouped = PeerSet.of_submitters(found["k1"], None)
    one_by_one = _peer_set([Peer(v, s, t) for k, v, s, t in rows[:4]], None)
    assert (list(grouped.values), dict(grouped.submitters), grouped.lab, grouped.distinct) == (
        list(one_by_one.values),
        dict(one_by_one.submitters),
        one_by_one.lab,
        one_by_one.distinct,
    )


@pytest.mark.django_db
def test_the_peer_cache_evicts_the_least_recent_pairs_beyond_its_value_budget():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from benchmarks_app.models import TrustLabel
    from benchmarks_app.services.peers import PeerCache
    from tests.factories import GpuFactory
    from tests.factories_dashboard import BenchmarkResultFactory, WorkloadFactory

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
