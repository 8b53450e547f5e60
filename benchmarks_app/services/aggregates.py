"""Comparison keys, robust statistics and the per-GPU aggregates of trusted results.

A comparison key names the results that may be aggregated or drawn on one axis: same
workload, same major.minor version, precision, parameters and GPU count. Aggregates hold
the trusted results only (lab imports and accepted community runs); flagged ones never count.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import QuerySet

from benchmarks_app.models import BenchmarkResult, ResultAggregate, TrustLabel
from catalog.models import Gpu

TRUSTED = (TrustLabel.LAB, TrustLabel.COMMUNITY)
OUTLIER_Z = 3.5
OUTLIER_MIN_PEERS = 5
# Iglewicz and Hoaglin: 0.6745 is the 0.75 quantile of the standard normal, so that
# MAD / 0.6745 estimates the standard deviation; 1.253314 does the same for the mean deviation.
_MAD_SCALE = 0.6745
_MEAN_AD_SCALE = 1.253314


def version_major_minor(version: str) -> str:
    """``1.2.3`` -> ``1.2``; ``2`` -> ``2.0``: patch versions do not change what is measured."""
    text = version if isinstance(version, str) else str(version)
    parts = [p for p in text.strip().lstrip("vV").split(".") if p != ""]
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
    """The sha256 key and a readable label for one workload configuration.

    The key's JSON tells apart values Python calls equal: 1, 1.0 and true, or 0.0 and -0.0.
    """
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


def quantile(ordered: Sequence[float], p: float) -> float:
    """Linear interpolation between order statistics of sorted values (the 'inclusive' method,
    as a box plot draws quartiles)."""
    position = (len(ordered) - 1) * p
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (position - low) * (ordered[high] - ordered[low])


def summary_of_sorted(ordered: Sequence[float], *, distinct_submitters: int) -> Summary:
    """Median, quartiles and range of values already sorted."""
    if not len(ordered):
        raise ValueError("no values to summarise")
    return Summary(
        n=len(ordered),
        median=quantile(ordered, 0.5),
        q1=quantile(ordered, 0.25),
        q3=quantile(ordered, 0.75),
        minimum=ordered[0],
        maximum=ordered[-1],
        distinct_submitters=distinct_submitters,
    )


def summarise(values: Sequence[float], submitters: Iterable[str]) -> Summary:
    return summary_of_sorted(sorted(values), distinct_submitters=len({s for s in submitters if s}))


def _deviation_kth(ordered: np.ndarray, median: float, k: int) -> float:
    """The k-th smallest (0-based) of ``|v - median|`` over sorted values, in one pass.

    The k + 1 values nearest the median are consecutive in sorted order, so this is the
    smallest, over every run of k + 1 consecutive values, of the run's largest deviation.
    """
    return float(np.maximum(median - ordered[: len(ordered) - k], ordered[k:] - median).min())


def modified_z_score(value: float, ordered: Sequence[float]) -> float:
    """Iglewicz-Hoaglin modified z-score of ``value`` against peers sorted ascending.

    When more than half the peers are identical the MAD is zero; the mean absolute deviation
    stands in for it then. Returns 0 when every peer is identical to ``value``, and infinity
    when every peer is identical but ``value`` differs.
    """
    values = np.asarray(ordered, dtype=float)
    n = len(values)
    median = quantile(ordered, 0.5)
    half = n // 2
    mad = (
        _deviation_kth(values, median, half)
        if n % 2
        else (_deviation_kth(values, median, half - 1) + _deviation_kth(values, median, half)) / 2
    )
    if mad > 0:
        return _MAD_SCALE * (value - median) / mad
    mean_ad = float(np.abs(values - median).mean())
    if mean_ad > 0:
        return (value - median) / (_MEAN_AD_SCALE * mean_ad)
    return 0.0 if value == median else math.copysign(math.inf, value - median)


def is_outlier(value: float, ordered: Sequence[float]) -> tuple[bool, float | None]:
    """An outlier has |modified z| > 3.5 against at least five accepted peers (sorted ascending)."""
    if len(ordered) < OUTLIER_MIN_PEERS:
        return False, None
    z = modified_z_score(value, ordered)
    return abs(z) > OUTLIER_Z, z


def aggregate_locks(*, gpu_ids: Iterable[int]) -> None:
    """Serialise writers of these GPUs' results and aggregates until the transaction ends.

    Two ingests of one (GPU, comparison key) would otherwise each compute its aggregate without
    the other's result. The GPU rows are locked in id order, so that two writers never wait on
    each other crosswise; FOR NO KEY UPDATE leaves inserts that reference the GPU free. A no-op
    on SQLite, which runs one writer at a time.
    """
    ids = sorted(set(gpu_ids))
    if ids:
        list(Gpu.objects.select_for_update(no_key=True).filter(pk__in=ids).order_by("pk").values_list("pk"))


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


def aggregates_write(*, items: Sequence[AggregateInput]) -> list[ResultAggregate]:
    """Store these aggregates in one upsert; an item without a summary (no trusted result) loses its row.

    Each summary must cover all trusted results of its pair, computed while holding the
    GPU's lock (``aggregate_locks``), so that the aggregate is exact. The writer that called it
    bumps the data version at the end of its transaction.
    """
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


def _aggregate_inputs(
    results: QuerySet[BenchmarkResult], *, pairs: set[tuple[int, str]] | None
) -> list[AggregateInput]:
    """One input per (GPU, comparison key) among ``results`` (only ``pairs``, when given), from its trusted rows."""
    meta: dict[tuple[int, str], tuple[str, int, str, int]] = {}
    trusted: dict[tuple[int, str], list[tuple[float, str, str]]] = {}
    rows = results.order_by().values_list(
        "gpu_id", "comparison_key", "comparison_label", "workload_id", "precision", "gpu_count", "value",
        "submitter_key", "trust",
    )  # fmt: skip
    for gpu_id, key, label, workload_id, precision, gpu_count, value, submitter_key, trust in rows.iterator(
        chunk_size=5000
    ):
        pair = (gpu_id, key)
        if pairs is not None and pair not in pairs:
            continue
        meta.setdefault(pair, (label, workload_id, precision, gpu_count))
        peers = trusted.setdefault(pair, [])
        if trust in TRUSTED:
            peers.append((value, submitter_key, trust))
    return [
        AggregateInput(
            gpu_id,
            key,
            *meta[(gpu_id, key)],
            summary=summarise([v for v, _, _ in peers], [s for _, s, _ in peers]) if peers else None,
            has_lab=any(t == TrustLabel.LAB for _, _, t in peers),
        )
        for (gpu_id, key), peers in trusted.items()
    ]


def aggregates_refresh_pairs(*, pairs: Iterable[tuple[int, str]]) -> int:
    """Recompute the aggregates of these (GPU, comparison key) pairs from the stored results,
    inside the caller's transaction."""
    wanted = set(pairs)
    if not wanted:
        return 0
    gpu_ids = {gpu_id for gpu_id, _ in wanted}
    aggregate_locks(gpu_ids=gpu_ids)
    results = BenchmarkResult.objects.filter(gpu_id__in=gpu_ids, comparison_key__in={key for _, key in wanted})
    items = _aggregate_inputs(results, pairs=wanted)
    found = {(item.gpu_id, item.comparison_key) for item in items}
    for gpu_id, key in wanted - found:  # no result left at all
        ResultAggregate.objects.filter(gpu_id=gpu_id, comparison_key=key).delete()
    aggregates_write(items=items)
    return len(wanted)


def aggregates_rebuild() -> int:
    """Recompute every aggregate from the stored results; returns how many were written (the
    caller bumps the data version)."""
    items = _aggregate_inputs(BenchmarkResult.objects.trusted(), pairs=None)
    with transaction.atomic():
        ResultAggregate.objects.all().delete()
        aggregates_write(items=items)
    return len(items)
