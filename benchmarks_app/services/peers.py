"""The trusted results of one (GPU, comparison key), kept sorted, cached per worker process.

The outlier check and the aggregate both need every trusted value of a pair. Fetching them
from the database on each ingest costs O(n) rows per result, which makes a busy pair
quadratic. Instead each worker process keeps the sorted values of the pairs it has seen,
tagged with the version of the pair's aggregate row (n, updated_at). Every writer of trusted
results rewrites that row holding the GPU's lock, so a matching version proves the cache
holds exactly the committed values; any other writer (another worker, a moderator, the lab
import, a rebuild) changes the version and the pair is read again.
"""

from __future__ import annotations

import bisect
import datetime as dt
import threading
from array import array
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from benchmarks_app.models import BenchmarkResult, ResultAggregate, TrustLabel
from benchmarks_app.services.robust_statistics import Summary, is_outlier, summary_of_sorted

Version = tuple[int, dt.datetime] | None
_INVALID = ("invalid",)
MAX_CACHED_PAIRS = 4096
# Values across all cached pairs: 8 million doubles is 64 MB, whatever the number of pairs.
MAX_CACHED_VALUES = 8_000_000


@dataclass
class PeerSet:
    """Sorted trusted values of one pair, with who submitted them and how many are lab results.

    Sorted so that the summary reads its quartiles in place; an array of doubles, 8 bytes a
    value where a list of floats takes 32: a worker holds up to MAX_CACHED_VALUES.
    """

    values: array[float] = field(default_factory=lambda: array("d"))
    submitters: Counter[str] = field(default_factory=Counter)
    lab: int = 0
    version: object = None
    distinct: int = 0  # submitter keys that are non-empty, maintained with ``submitters``

    @property
    def n(self) -> int:
        return len(self.values)

    def add(self, value: float, submitter_key: str, trust: str) -> None:
        self.version = _INVALID  # until the caller stores the new aggregate and its version
        bisect.insort(self.values, value)
        if submitter_key and not self.submitters[submitter_key]:
            self.distinct += 1
        self.submitters[submitter_key] += 1
        self.lab += trust == TrustLabel.LAB

    def summary(self) -> Summary:
        return summary_of_sorted(self.values, distinct_submitters=self.distinct)

    def outlier(self, value: float) -> tuple[bool, float | None]:
        return is_outlier(value, self.values)


def _trusted_peer_sets(*, gpu_id: int, comparison_keys: list[str]) -> dict[str, PeerSet]:
    """The peer sets of these keys from the stored trusted results, in one query (unsorted: the
    model's default order would make the database sort every trusted result of the pair)."""
    found = {key: PeerSet() for key in comparison_keys}
    values: dict[str, list[float]] = {key: [] for key in comparison_keys}
    rows = (
        BenchmarkResult.objects.trusted()
        .filter(gpu_id=gpu_id, comparison_key__in=comparison_keys)
        .order_by()
        .values_list("comparison_key", "value", "submitter_key", "trust")
    )
    for key, value, submitter_key, trust in rows.iterator(chunk_size=20_000):
        values[key].append(value)
        peer_set = found[key]
        peer_set.submitters[submitter_key] += 1
        peer_set.lab += trust == TrustLabel.LAB
    for key, peer_set in found.items():
        peer_set.values = array("d", sorted(values[key]))
        peer_set.distinct = sum(1 for submitter_key in peer_set.submitters if submitter_key)
    return found


class PeerCache:
    """Peer sets by (GPU, comparison key), least recently used evicted first.

    Bounded by pairs and by the values they hold together; ``None`` lifts a bound.
    ``validate=False`` is for a single writer (the rebuild).
    """

    def __init__(
        self,
        *,
        validate: bool = True,
        max_pairs: int | None = MAX_CACHED_PAIRS,
        max_values: int | None = MAX_CACHED_VALUES,
    ) -> None:
        self.validate = validate
        self.max_pairs = max_pairs
        self.max_values = max_values
        self._sets: OrderedDict[tuple[int, str], PeerSet] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, *, gpu_id: int, comparison_keys: Iterable[str]) -> dict[str, PeerSet]:
        """The peer sets of these keys; call it holding the GPU's lock (aggregate_locks)."""
        keys = list(dict.fromkeys(comparison_keys))
        versions: dict[str, Version] = {}
        if self.validate:
            for key, n, updated_at in ResultAggregate.objects.filter(
                gpu_id=gpu_id, comparison_key__in=keys
            ).values_list("comparison_key", "n", "updated_at"):
                versions[key] = (n, updated_at)
        found: dict[str, PeerSet] = {}
        misses = []
        with self._lock:
            for key in keys:
                cached = self._sets.get((gpu_id, key))
                if cached is not None and (not self.validate or cached.version == versions.get(key)):
                    self._sets.move_to_end((gpu_id, key))
                    found[key] = cached
                else:
                    misses.append(key)
        if misses:
            fetched = _trusted_peer_sets(gpu_id=gpu_id, comparison_keys=misses)
            with self._lock:
                for key, peer_set in fetched.items():
                    peer_set.version = versions.get(key)
                    self._sets[(gpu_id, key)] = peer_set
                    found[key] = peer_set
                self._evict()
        return found

    def _evict(self) -> None:
        # Called with the lock held, after a load: the only time the cache gains a pair. Sets
        # grow by ingest between loads, so the values are counted afresh (at most a few
        # thousand lengths). A pair evicted here stays valid for the caller that holds it.
        if self.max_pairs is not None:
            while len(self._sets) > self.max_pairs:
                self._sets.popitem(last=False)
        if self.max_values is not None:
            held = self._values_held()
            while held > self.max_values and len(self._sets) > 1:
                _pair, evicted = self._sets.popitem(last=False)
                held -= len(evicted.values)

    def held(self) -> tuple[int, int]:
        """How many pairs the cache holds, and how many values they hold together."""
        with self._lock:
            return len(self._sets), self._values_held()

    def _values_held(self) -> int:
        return sum(len(peer_set.values) for peer_set in self._sets.values())

    def forget(self, *, pairs: Iterable[tuple[int, str]]) -> None:
        with self._lock:
            for pair in pairs:
                self._sets.pop(pair, None)

    def clear(self) -> None:
        with self._lock:
            self._sets.clear()


# The live ingest's cache, one per process.
live_peers = PeerCache()
