"""Distinct submitters per GPU and scope (a set of workloads and precisions), stored after writes.

A ranking shows, per measured GPU, how many distinct submitters stand behind its figure: the
distinct submitter keys of the GPU's trusted results of the use case's workloads and precisions.
Counted on read, that reads most trusted results of the use case (O(results) on every cold
ranking and GPU page). So the counts are derived after writes into ``ScopeSubmitters``, one row
per (scope, GPU), each with the fingerprint of the GPU's aggregates in the scope it was taken
at; readers use a row only while its fingerprint is the current one.

A refresh recounts only the GPUs whose fingerprint moved (every change to a GPU's trusted results
rewrites one of its aggregates: its n and updated_at), in the scopes where it moved.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Count

from benchmarks_app.models import BenchmarkResult, ResultAggregate, ScopeSubmitters

# GPUs whose results are read per query when recounting (SQLite binds at most 999 or so).
_GPU_BATCH = 200


def scope_digest(*, workload_ids: Iterable[int], precisions: Iterable[str]) -> str:
    """The stored name of a scope: a digest of its sorted workload ids and precisions."""
    return hashlib.sha256(repr((sorted(set(workload_ids)), sorted(set(precisions)))).encode()).hexdigest()[:16]


def scope_fingerprints(aggregates: Iterable[Mapping[str, Any]]) -> dict[int, str]:
    """Per GPU, a digest of its aggregates' (comparison key, n, updated_at)."""
    parts: dict[int, list[str]] = defaultdict(list)
    for row in aggregates:
        parts[row["gpu_id"]].append(f"{row['comparison_key']}:{row['n']}:{row['updated_at'].isoformat()}")
    return {gpu_id: hashlib.sha256("|".join(sorted(rows)).encode()).hexdigest()[:24] for gpu_id, rows in parts.items()}


def scope_submitters_refresh(*, scopes: Sequence[tuple[Iterable[int], Iterable[str]]]) -> int:
    """Bring the stored counts of these scopes (workload ids, precisions) up to date with the
    aggregates: recount the GPUs whose fingerprint moved, drop the GPUs that left a scope, and
    drop scopes not listed. Returns the (scope, GPU) counts written."""
    wanted: dict[str, tuple[frozenset[int], frozenset[str]]] = {}
    for workload_ids, precisions in scopes:
        workloads, precision_set = frozenset(workload_ids), frozenset(precisions)
        wanted[scope_digest(workload_ids=workloads, precisions=precision_set)] = (workloads, precision_set)
    every_workload = set().union(*(w for w, _ in wanted.values())) if wanted else set()
    aggregates = ResultAggregate.objects.filter(workload_id__in=every_workload).values(
        "gpu_id", "workload_id", "precision", "comparison_key", "n", "updated_at"
    )
    in_scope: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in aggregates:
        for digest, (workloads, precisions) in wanted.items():
            if row["workload_id"] in workloads and row["precision"] in precisions:
                in_scope[digest].append(row)
    prints = {digest: scope_fingerprints(in_scope[digest]) for digest in wanted}
    stored: dict[tuple[str, int], str] = {
        (scope, gpu_id): fingerprint
        for scope, gpu_id, fingerprint in ScopeSubmitters.objects.values_list("scope", "gpu_id", "fingerprint")
    }
    stale = {
        (digest, gpu_id)
        for digest, by_gpu in prints.items()
        for gpu_id, fingerprint in by_gpu.items()
        if stored.get((digest, gpu_id)) != fingerprint
    }
    gone = [key for key in stored if key[0] not in prints or key[1] not in prints[key[0]]]
    submitters = _submitters_read(stale=stale, scopes=wanted)
    rows = [
        ScopeSubmitters(scope=digest, gpu_id=gpu_id, fingerprint=prints[digest][gpu_id], submitters=count)
        for (digest, gpu_id), count in submitters.items()
    ]
    with transaction.atomic():
        for scope in {scope for scope, _ in gone}:
            ScopeSubmitters.objects.filter(scope=scope, gpu_id__in=[g for s, g in gone if s == scope]).delete()
        ScopeSubmitters.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["scope", "gpu"],
            update_fields=["fingerprint", "submitters"],
            batch_size=1000,
        )
    return len(rows)


def _submitters_read(
    *, stale: set[tuple[str, int]], scopes: Mapping[str, tuple[frozenset[int], frozenset[str]]]
) -> dict[tuple[str, int], int]:
    """(scope, GPU) -> the distinct submitter keys of the GPU's trusted results in the scope, for
    the stale pairs: one count per scope over its stale GPUs, in the database."""
    found: dict[tuple[str, int], int] = dict.fromkeys(stale, 0)
    stale_gpus: dict[str, list[int]] = defaultdict(list)
    for digest, gpu_id in stale:
        stale_gpus[digest].append(gpu_id)
    for digest, gpu_ids in stale_gpus.items():
        workloads, precisions = scopes[digest]
        for start in range(0, len(gpu_ids), _GPU_BATCH):
            rows = (
                BenchmarkResult.objects.trusted()
                .filter(gpu_id__in=sorted(gpu_ids)[start : start + _GPU_BATCH])
                .filter(workload_id__in=sorted(workloads), precision__in=sorted(precisions))
                .order_by()
                .values_list("gpu_id")
                .annotate(submitters=Count("submitter_key", distinct=True))
            )
            found.update({(digest, gpu_id): submitters for gpu_id, submitters in rows})
    return found
