"""Comparison keys, robust statistics and the per-GPU aggregates of trusted results.

A comparison key names the results that may be aggregated or drawn on one axis: same
workload, same major.minor version, precision, parameters and GPU count. Aggregates hold
the trusted results only (lab imports and accepted community runs); flagged ones never count.
"""

from __future__ import annotations

import functools
import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.db.models import Count, Q

from benchmarks_app.models import BenchmarkResult, ResultAggregate, TrustLabel
from gpuatlas.data_version import data_version_bump

TRUSTED = (TrustLabel.LAB, TrustLabel.COMMUNITY)
OUTLIER_Z = 3.5
OUTLIER_MIN_PEERS = 5
# Iglewicz and Hoaglin: 0.6745 is the 0.75 quantile of the standard normal, so that
# MAD / 0.6745 estimates the standard deviation; 1.253314 does the same for the mean deviation.
_MAD_SCALE = 0.6745
_MEAN_AD_SCALE = 1.253314


def version_major_minor(version: str) -> str:
    """``1.2.3`` -> ``1.2``; ``2`` -> ``2.0``: patch versions do not change what is measured."""
    return _major_minor(version if isinstance(version, str) else str(version))


# Every result of every submission asks, several times (intake, rules, key, workload lookup),
# about the same few versions: memoised, as a tenth of the ingest's CPU went here.
@functools.lru_cache(maxsize=1024)
def _major_minor(version: str) -> str:
    parts = [p for p in version.strip().lstrip("vV").split(".") if p != ""]
    if not parts:
        raise ValueError(f"empty version {version!r}")
    for part in parts[:2]:
        if not part.isdigit():
            raise ValueError(f"version {version!r} is not numeric major.minor")
    major = str(int(parts[0]))
    minor = str(int(parts[1])) if len(parts) > 1 else "0"
    return f"{major}.{minor}"


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class ComparisonKey:
    key: str
    label: str


def comparison_key_for(
    *, workload_slug: str, version: str, precision: str, params: dict[str, Any], gpu_count: int
) -> ComparisonKey:
    """The sha256 key and a readable label for one workload configuration."""
    # Memoised, as every result of every submission needs its key (a tenth of the ingest's
    # CPU). Scalars are told apart by type and repr, as the key's JSON tells them apart:
    # 1, 1.0 and true, or 0.0 and -0.0, are equal in Python but give different keys. A nested
    # parameter value is computed each time.
    if not all(type(value) in _SCALARS for value in params.values()):
        return _comparison_key(workload_slug, version, precision, params, gpu_count)
    memo_key = (
        workload_slug,
        repr(version),
        precision,
        gpu_count.__class__,
        gpu_count,
        tuple(sorted((name, value.__class__, repr(value)) for name, value in params.items())),
    )
    found = _COMPARISON_KEYS.get(memo_key)
    if found is None:
        found = _comparison_key(workload_slug, version, precision, params, gpu_count)
        if len(_COMPARISON_KEYS) >= 4096:
            _COMPARISON_KEYS.clear()
        _COMPARISON_KEYS[memo_key] = found
    return found


_SCALARS = frozenset({str, int, float, bool, type(None)})
_COMPARISON_KEYS: dict[tuple[Any, ...], ComparisonKey] = {}


def _comparison_key(
    workload_slug: str, version: str, precision: str, params: dict[str, Any], gpu_count: int
) -> ComparisonKey:
    major_minor = version_major_minor(version)
    material = canonical_json(
        {
            "workload": workload_slug,
            "version": major_minor,
            "precision": precision,
            "params": params,
            "gpu_count": gpu_count,
        }
    )
    digest = hashlib.sha256(material.encode()).hexdigest()
    param_text = ", ".join(f"{k}={canonical_json(params[k]).strip(chr(34))}" for k in sorted(params))
    gpus = "1 GPU" if gpu_count == 1 else f"{gpu_count} GPUs"
    label = f"{workload_slug} v{major_minor} · {precision.upper()} · {gpus}"
    if param_text:
        label = f"{label} · {param_text}"
    return ComparisonKey(digest, label[:300])


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    q1: float
    q3: float
    minimum: float
    maximum: float
    distinct_submitters: int


def summarise(values: Sequence[float], submitters: Iterable[str]) -> Summary:
    """Median, quartiles (inclusive method, as a box plot draws them) and range."""
    if not values:
        raise ValueError("no values to summarise")
    ordered = sorted(values)
    if len(ordered) == 1:
        q1 = q3 = ordered[0]
    else:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return Summary(
        n=len(ordered),
        median=statistics.median(ordered),
        q1=q1,
        q3=q3,
        minimum=ordered[0],
        maximum=ordered[-1],
        distinct_submitters=len({s for s in submitters if s}),
    )


def modified_z_score(value: float, peers: Sequence[float]) -> float:
    """Iglewicz-Hoaglin modified z-score of ``value`` against ``peers``.

    When more than half the peers are identical the MAD is zero; the mean absolute deviation
    stands in for it then. Returns 0 when every peer is identical to ``value``, and infinity
    when every peer is identical but ``value`` differs.
    """
    median = statistics.median(peers)
    deviations = [abs(p - median) for p in peers]
    mad = statistics.median(deviations)
    if mad > 0:
        return _MAD_SCALE * (value - median) / mad
    mean_ad = statistics.fmean(deviations)
    if mean_ad > 0:
        return (value - median) / (_MEAN_AD_SCALE * mean_ad)
    return 0.0 if value == median else float("inf") * (1 if value > median else -1)


def is_outlier(value: float, peers: Sequence[float]) -> tuple[bool, float | None]:
    """An outlier has |modified z| > 3.5 against at least five accepted peers."""
    if len(peers) < OUTLIER_MIN_PEERS:
        return False, None
    z = modified_z_score(value, peers)
    return abs(z) > OUTLIER_Z, z


def aggregate_key_lock(*, gpu_id: int, comparison_key: str) -> None:
    """Serialise writers of one (GPU, comparison key) until the transaction ends."""
    aggregate_key_locks(pairs=[(gpu_id, comparison_key)])


def aggregate_key_locks(*, pairs: Iterable[tuple[int, str]]) -> None:
    """Serialise writers of these (GPU, comparison key) pairs until the transaction ends.

    Two ingests of the same pair would otherwise each compute the aggregate without the
    other's result. PostgreSQL: transaction-scoped advisory locks, taken in one statement
    and in sorted order so that two ingests never wait on each other crosswise. SQLite
    serialises writers anyway.
    """
    if connection.vendor != "postgresql":
        return
    ordered = sorted({(gpu_id, int(key[:7], 16)) for gpu_id, key in pairs})
    if not ordered:
        return
    calls = ", ".join("pg_advisory_xact_lock(%s, %s)" for _ in ordered)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {calls}", [v for pair in ordered for v in pair])  # noqa: S608 - placeholders only


class Peer(NamedTuple):
    """One trusted result as the outlier test and the aggregates see it.

    A tuple, not a frozen dataclass: a worker that starts builds hundreds of thousands of
    them for the busiest pairs, and a tuple is cheaper to build and transposes with zip.
    """

    value: float
    submitter_key: str
    trust: str


class SubmitterPeers(NamedTuple):
    """The trusted values of one pair from one submitter key, and how many are lab results."""

    submitter_key: str
    values: list[float]
    lab: int


def trusted_peers_by_submitter(*, gpu_id: int, comparison_keys: Iterable[str]) -> dict[str, list[SubmitterPeers]]:
    """Trusted values of one GPU for several comparison keys, grouped by submitter key, in one query.

    What a worker loads when it first meets a pair: hundreds of thousands of values for a
    busy GPU. On PostgreSQL the database groups them (``array_agg`` per submitter key), so
    Python handles a row per submitter rather than per result: 0.43 s of CPU instead of 2.3 s
    for 545,825 values. Elsewhere the rows are grouped here.
    """
    keys = list(comparison_keys)
    found: dict[str, list[SubmitterPeers]] = {}
    trusted = BenchmarkResult.objects.trusted().filter(gpu_id=gpu_id, comparison_key__in=keys).order_by()
    if connection.vendor == "postgresql":
        from django.contrib.postgres.aggregates import ArrayAgg

        grouped = (
            trusted.values("comparison_key", "submitter_key")
            .annotate(grouped_values=ArrayAgg("value"), lab=Count("id", filter=Q(trust=TrustLabel.LAB)))
            .values_list("comparison_key", "submitter_key", "grouped_values", "lab")
        )
        for key, submitter_key, submitter_values, lab in grouped:
            found.setdefault(key, []).append(SubmitterPeers(submitter_key, submitter_values, lab))
        return found
    values: dict[tuple[str, str], list[float]] = {}
    labs: Counter[tuple[str, str]] = Counter()
    for key, value, submitter_key, trust in trusted.values_list("comparison_key", "value", "submitter_key", "trust"):
        values.setdefault((key, submitter_key), []).append(value)
        labs[(key, submitter_key)] += trust == TrustLabel.LAB
    for (key, submitter_key), group in values.items():
        found.setdefault(key, []).append(SubmitterPeers(submitter_key, group, labs[(key, submitter_key)]))
    return found


# What the aggregate refresh and rebuild read of each result, in the order they unpack it.
_RESULT_ROW_COLUMNS = (
    "gpu_id",
    "comparison_key",
    "comparison_label",
    "workload_id",
    "precision",
    "gpu_count",
    "value",
    "submitter_key",
    "trust",
)


_AGGREGATE_FIELDS = [
    "workload",
    "precision",
    "gpu_count",
    "comparison_label",
    "n",
    "distinct_submitters",
    "median",
    "q1",
    "q3",
    "minimum",
    "maximum",
    "has_lab",
    "updated_at",
]


@dataclass(frozen=True)
class AggregateInput:
    gpu_id: int
    comparison_key: str
    comparison_label: str
    workload_id: int
    precision: str
    gpu_count: int
    summary: Summary | None
    has_lab: bool = False

    @classmethod
    def of_peers(
        cls, *, gpu_id: int, comparison_key: str, meta: dict[str, Any], peers: Sequence[Peer]
    ) -> AggregateInput:
        summary = summarise([p.value for p in peers], [p.submitter_key for p in peers]) if peers else None
        return cls(
            gpu_id,
            comparison_key,
            meta["label"],
            meta["workload_id"],
            meta["precision"],
            meta["gpu_count"],
            summary,
            any(p.trust == TrustLabel.LAB for p in peers),
        )


def aggregates_write(*, items: Sequence[AggregateInput], bump_debounce_seconds: float = 0) -> list[ResultAggregate]:
    """Store these aggregates in one upsert; an item without a summary (no trusted result) loses its row.

    Each summary must cover all trusted results of its pair, computed while holding the
    pair's lock, so that the aggregate is exact. The data version is bumped when this
    commits (the live ingest debounces it: ``data_version_bump``).
    """
    data_version_bump(debounce_seconds=bump_debounce_seconds)  # cached rankings and GPU pages read these
    for item in items:
        if item.summary is None:
            ResultAggregate.objects.filter(gpu_id=item.gpu_id, comparison_key=item.comparison_key).delete()
    rows = [
        ResultAggregate(
            gpu_id=item.gpu_id,
            comparison_key=item.comparison_key,
            comparison_label=item.comparison_label,
            workload_id=item.workload_id,
            precision=item.precision,
            gpu_count=item.gpu_count,
            n=item.summary.n,
            distinct_submitters=item.summary.distinct_submitters,
            median=item.summary.median,
            q1=item.summary.q1,
            q3=item.summary.q3,
            minimum=item.summary.minimum,
            maximum=item.summary.maximum,
            has_lab=item.has_lab,
        )
        for item in items
        if item.summary is not None
    ]
    if rows:
        ResultAggregate.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["gpu", "comparison_key"],
            update_fields=_AGGREGATE_FIELDS,
            batch_size=500,
        )
    return rows


def aggregate_refresh(*, gpu_id: int, comparison_key: str) -> int:
    """Recompute one aggregate from the stored results (see aggregates_refresh_pairs)."""
    return aggregates_refresh_pairs(pairs=[(gpu_id, comparison_key)])


def aggregates_refresh_pairs(*, pairs: Iterable[tuple[int, str]]) -> int:
    """Recompute the aggregates of these (GPU, comparison key) pairs from the stored results."""
    from benchmarks_app.services.peers import live_peers

    wanted = set(pairs)
    if not wanted:
        return 0
    aggregate_key_locks(pairs=wanted)
    live_peers.forget(pairs=wanted)
    gpu_ids = {gpu_id for gpu_id, _ in wanted}
    keys = {key for _, key in wanted}
    meta: dict[tuple[int, str], dict[str, Any]] = {}
    peers: dict[tuple[int, str], list[Peer]] = {pair: [] for pair in wanted}
    rows = (
        BenchmarkResult.objects.filter(gpu_id__in=gpu_ids, comparison_key__in=keys)
        .order_by()
        .values_list(*_RESULT_ROW_COLUMNS)
    )
    for gpu_id, key, label, workload_id, precision, gpu_count, value, submitter_key, trust in rows.iterator(
        chunk_size=5000
    ):
        pair = (gpu_id, key)
        if pair not in wanted:
            continue
        meta.setdefault(
            pair, {"label": label, "workload_id": workload_id, "precision": precision, "gpu_count": gpu_count}
        )
        if trust in TRUSTED:
            peers[pair].append(Peer(value, submitter_key, trust))
    items = []
    for pair in wanted:
        if pair not in meta:  # no result left at all
            ResultAggregate.objects.filter(gpu_id=pair[0], comparison_key=pair[1]).delete()
            continue
        items.append(
            AggregateInput.of_peers(gpu_id=pair[0], comparison_key=pair[1], meta=meta[pair], peers=peers[pair])
        )
    aggregates_write(items=items)
    return len(wanted)


def aggregates_rebuild() -> int:
    """Recompute every aggregate from the stored results; returns how many were written."""
    from benchmarks_app.services.peers import live_peers

    groups: dict[tuple[int, str], dict[str, Any]] = {}
    peers: dict[tuple[int, str], list[Peer]] = {}
    rows = BenchmarkResult.objects.trusted().order_by().values_list(*_RESULT_ROW_COLUMNS)
    for gpu_id, key, label, workload_id, precision, gpu_count, value, submitter_key, trust in rows.iterator(
        chunk_size=5000
    ):
        pair = (gpu_id, key)
        groups.setdefault(
            pair, {"label": label, "workload_id": workload_id, "precision": precision, "gpu_count": gpu_count}
        )
        peers.setdefault(pair, []).append(Peer(value, submitter_key, trust))
    with transaction.atomic():
        ResultAggregate.objects.all().delete()
        live_peers.clear()
        aggregates_write(
            items=[
                AggregateInput.of_peers(gpu_id=gpu_id, comparison_key=key, meta=meta, peers=peers[(gpu_id, key)])
                for (gpu_id, key), meta in groups.items()
            ]
        )
    return len(groups)
