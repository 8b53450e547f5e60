"""The trusted results of one (GPU, comparison key), kept sorted, cached per worker process.

The outlier check and the aggregate both need every trusted value of a pair. Fetching them
from the database on each ingest costs O(n) rows per result, which makes a busy pair
quadratic. Instead each worker process keeps the sorted values of the pairs it has seen,
tagged with the version of the pair's aggregate row (n, updated_at). Every writer of trusted
results rewrites that row under the pair's lock, so a matching version proves the cache
holds exactly the committed values; any other writer (another worker, a moderator, the lab
import, a rebuild) changes the version and the pair is read again.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
import threading
from array import array
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from benchmarks_app.models import ResultAggregate, TrustLabel
from benchmarks_app.services.aggregates import (
    _MAD_SCALE,
    _MEAN_AD_SCALE,
    OUTLIER_MIN_PEERS,
    OUTLIER_Z,
    SubmitterPeers,
    Summary,
    trusted_peers_by_submitter,
)

Version = tuple[int, dt.datetime] | None
_INVALID = ("invalid",)
MAX_CACHED_PAIRS = 4096
# Values across all cached pairs: 8 million doubles is 64 MB. The pair bound alone let a worker
# grow with the busiest pairs (hundreds of thousands of values each) as the data grew.
MAX_CACHED_VALUES = 8_000_000


def _deviation_kth(values: Sequence[float], median: float, k: int) -> float:
    """The k-th smallest (0-based) of ``|v - median|`` over sorted ``values``, in O(log^2 n).

    The deviations are two sorted runs: ``median - v`` walking left from the median and
    ``v - median`` walking right; the k-th of their union is found by bisecting how many of
    the left run come first. The values are the same floats ``abs(v - median)`` gives.
    """
    split = bisect.bisect_left(values, median)
    # The i-th smallest deviation below the median is median - values[split - 1 - i]; the j-th
    # at or above it is values[split + j] - median. Written inline: this loop runs for every
    # result ingested, and calls to two small helpers were a third of its time.
    n_left, n_right = split, len(values) - split
    low, high = max(0, k + 1 - n_right), min(k + 1, n_left)  # how many of the first k+1 come from the left
    while low < high:
        take = (low + high) // 2  # candidate: take left[0..take), right[0..k+1-take)
        j = k + 1 - take
        if j > 0 and take < n_left and median - values[split - 1 - take] < values[split + j - 1] - median:
            low = take + 1
        else:
            high = take
    take = low
    j = k + 1 - take
    candidates = []
    if take > 0:
        candidates.append(median - values[split - take])
    if j > 0:
        candidates.append(values[split + j - 1] - median)
    return max(candidates)


@dataclass
class PeerSet:
    """Sorted trusted values of one pair, with who submitted them and how many are lab results.

    Kept so that each ingest costs O(log n) per result (plus the insert's memmove), not O(n):
    a busy pair holds tens of thousands of values. They are kept as an array of doubles, 8
    bytes a value where a list of floats takes 32: the worker holds up to MAX_CACHED_VALUES.
    """

    values: array[float] = field(default_factory=lambda: array("d"))
    submitters: Counter[str] = field(default_factory=Counter)
    lab: int = 0
    version: object = None
    distinct: int = 0  # submitter keys that are non-empty, maintained with ``submitters``

    @classmethod
    def of_submitters(cls, groups: Iterable[SubmitterPeers], version: Version) -> PeerSet:
        """The set of one pair from its trusted values grouped by submitter key (``trusted_peers_by_submitter``)."""
        peer_set = cls(version=version)
        values: list[float] = []
        for group in groups:
            values.extend(group.values)
            peer_set.submitters[group.submitter_key] += len(group.values)
            peer_set.lab += group.lab
        peer_set.values = array("d", sorted(values))
        peer_set.distinct = sum(1 for key in peer_set.submitters if key)
        return peer_set

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

    def quantile(self, p: float) -> float:
        """Linear interpolation between order statistics (statistics.quantiles 'inclusive')."""
        position = (len(self.values) - 1) * p
        low = math.floor(position)
        high = min(low + 1, len(self.values) - 1)
        return self.values[low] + (position - low) * (self.values[high] - self.values[low])

    def summary(self) -> Summary:
        return Summary(
            n=self.n,
            median=self.quantile(0.5),
            q1=self.quantile(0.25),
            q3=self.quantile(0.75),
            minimum=self.values[0],
            maximum=self.values[-1],
            distinct_submitters=self.distinct,
        )

    def mad(self, median: float) -> float:
        """Median absolute deviation from ``median`` (what ``np.median(abs(values - median))`` gives)."""
        n = len(self.values)
        if n % 2:
            return _deviation_kth(self.values, median, n // 2)
        return (_deviation_kth(self.values, median, n // 2 - 1) + _deviation_kth(self.values, median, n // 2)) / 2

    def modified_z(self, value: float) -> float:
        median = self.quantile(0.5)
        mad = self.mad(median)
        if mad > 0:
            return _MAD_SCALE * (value - median) / mad
        # Rare (more than half the peers identical): the O(n) mean deviation stands in.
        mean_ad = float(np.abs(np.asarray(self.values) - median).mean())
        if mean_ad > 0:
            return (value - median) / (_MEAN_AD_SCALE * mean_ad)
        return 0.0 if value == median else math.copysign(math.inf, value - median)

    def outlier(self, value: float) -> tuple[bool, float | None]:
        """|modified z| > 3.5 against at least five trusted peers."""
        if self.n < OUTLIER_MIN_PEERS:
            return False, None
        z = self.modified_z(value)
        return abs(z) > OUTLIER_Z, z


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
        """The peer sets of these keys; call it holding the pairs' locks (aggregate_key_locks)."""
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
            fetched = trusted_peers_by_submitter(gpu_id=gpu_id, comparison_keys=misses)
            with self._lock:
                for key in misses:
                    peer_set = PeerSet.of_submitters(fetched.get(key, []), versions.get(key))
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
