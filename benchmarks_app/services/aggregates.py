"""The per-GPU aggregates of trusted results: one row per (GPU, comparison key), upserted.

Aggregates hold the trusted results only (lab imports and accepted community runs); flagged
ones never count. Writers hold the GPU's lock (``locks.aggregate_locks``) while they compute and
store them, and bump the data version at the end of their transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from benchmarks_app.models import BenchmarkResult, ResultAggregate, TrustLabel
from benchmarks_app.services.locks import aggregate_locks
from benchmarks_app.services.robust_statistics import Summary, summarise

TRUSTED = (TrustLabel.LAB, TrustLabel.COMMUNITY)
# Result ids per query when reading comparison keys' parameters (SQLite binds at most 999 or so).
_PARAMS_BATCH = 500


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
    "params",
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
    params: Mapping[str, Any] | None = None  # the comparison key's parameters


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
            params=dict(item.params or {}),
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
    one_result: dict[str, int] = {}  # comparison key -> one of its results, whose parameters are the key's
    rows = results.order_by().values_list(
        "id", "gpu_id", "comparison_key", "comparison_label", "workload_id", "precision", "gpu_count", "value",
        "submitter_key", "trust",
    )  # fmt: skip
    for result_id, gpu_id, key, label, workload_id, precision, gpu_count, value, submitter_key, trust in rows.iterator(
        chunk_size=5000
    ):
        pair = (gpu_id, key)
        if pairs is not None and pair not in pairs:
            continue
        meta.setdefault(pair, (label, workload_id, precision, gpu_count))
        one_result.setdefault(key, result_id)
        peers = trusted.setdefault(pair, [])
        if trust in TRUSTED:
            peers.append((value, submitter_key, trust))
    params = comparison_params(result_ids=one_result)
    return [
        AggregateInput(
            gpu_id,
            key,
            *meta[(gpu_id, key)],
            summary=summarise([v for v, _, _ in peers], [s for _, s, _ in peers]) if peers else None,
            has_lab=any(t == TrustLabel.LAB for _, _, t in peers),
            params=params.get(key, {}),
        )
        for (gpu_id, key), peers in trusted.items()
    ]


def comparison_params(*, result_ids: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """Comparison key -> its parameters, read from the one result named per key: a key's results
    share their parameters, so one decoded JSON per key, not per result."""
    found: dict[str, dict[str, Any]] = {}
    ids = list(result_ids.values())
    for start in range(0, len(ids), _PARAMS_BATCH):
        for key, params in BenchmarkResult.objects.filter(id__in=ids[start : start + _PARAMS_BATCH]).values_list(
            "comparison_key", "params"
        ):
            found[key] = params if isinstance(params, dict) else {}
    return found


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
