"""Distinct submitters per GPU for a ranking, recounted only for the GPUs whose results changed.

A ranking shows, per measured GPU, how many distinct submitters stand behind its figure: a
``COUNT(DISTINCT submitter_key)`` over the GPU's trusted results of the use case's workloads and
precisions. At scale that count reads most trusted results and is most of a cold ranking
(perf/RESULTS.md), and under a stream of submissions every data-version bump makes the rankings
cold again, although a batch touches a handful of GPUs. It is the one cache kept beside the page
and API bodies: without it each bump makes the first visitor of every ranking wait for the count.

So each GPU's count is cached with a fingerprint of its aggregates for those workloads and
precisions: every change to a GPU's trusted results rewrites an aggregate row of it (its n and
updated_at; ``aggregates_write``), so an unchanged fingerprint proves an unchanged count. A
cold ranking then recounts only the GPUs whose fingerprint moved.

The counts of one scope (workloads and precisions) are one cache entry, GPU id -> (fingerprint,
count): a ranking writes one entry, not one per GPU, so that a page computing several rankings
does not fill a bounded local-memory cache and push out what it needs. Two rankings of one scope
computed at once may each write theirs; the later one wins, and the other's recounts are made
again by a later ranking: the counts are never wrong, at worst recounted.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from django.core.cache import cache
from django.db.models import Count

from benchmarks_app.models import BenchmarkResult
from gpuatlas.data_version import data_version_cache_seconds


def aggregate_fingerprints(aggregates: Iterable[Mapping[str, Any]]) -> dict[int, str]:
    """Per GPU, a digest of its aggregates' (comparison key, n, updated_at)."""
    parts: dict[int, list[str]] = defaultdict(list)
    for row in aggregates:
        parts[row["gpu_id"]].append(f"{row['comparison_key']}:{row['n']}:{row['updated_at'].isoformat()}")
    return {gpu_id: hashlib.sha256("|".join(sorted(rows)).encode()).hexdigest()[:24] for gpu_id, rows in parts.items()}


def distinct_submitters_by_gpu(
    *, fingerprints: Mapping[int, str], workload_ids: Iterable[int], precisions: Iterable[str]
) -> dict[int, int]:
    """Distinct submitter keys of each GPU's trusted results of these workloads and precisions.

    ``fingerprints`` (from ``aggregate_fingerprints``) names the GPUs and keys their cached
    counts; without a shared cache every count is taken from the database.
    """
    workloads, precision_list = sorted(set(workload_ids)), sorted(set(precisions))
    scope = hashlib.sha256(repr((workloads, precision_list)).encode()).hexdigest()[:16]
    key = f"gpuatlas:distinct-submitters:{scope}"
    seconds = data_version_cache_seconds()
    stored: dict[int, tuple[str, int | None]] = (cache.get(key) or {}) if seconds > 0 else {}
    counts: dict[int, int | None] = {
        gpu_id: stored[gpu_id][1]
        for gpu_id, print_ in fingerprints.items()
        if gpu_id in stored and stored[gpu_id][0] == print_
    }
    missing = [gpu_id for gpu_id in fingerprints if gpu_id not in counts]
    if missing:
        rows = (
            BenchmarkResult.objects.trusted()
            .filter(gpu_id__in=missing, workload_id__in=workloads, precision__in=precision_list)
            .order_by()
            .values("gpu_id")
            .annotate(submitters=Count("submitter_key", distinct=True))
        )
        # None: no trusted result in scope (the caller falls back); cached like a count.
        fresh: dict[int, int | None] = dict.fromkeys(missing) | {row["gpu_id"]: row["submitters"] for row in rows}
        counts.update(fresh)
        if seconds > 0:  # kept across bumps: an unchanged GPU keeps its fingerprint
            merged = stored | {gpu_id: (fingerprints[gpu_id], count) for gpu_id, count in fresh.items()}
            cache.set(key, merged, seconds)
    return {gpu_id: count for gpu_id, count in counts.items() if count is not None}
