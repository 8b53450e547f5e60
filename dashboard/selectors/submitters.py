"""Distinct submitters per GPU for a ranking: the stored counts, recounted only for the GPUs whose
results changed since they were stored.

A ranking shows, per measured GPU, how many distinct submitters stand behind its figure: a
``COUNT(DISTINCT submitter_key)`` over the GPU's trusted results of the use case's workloads and
precisions. Counted on read, that reads most trusted results and is most of a cold ranking
(perf/RESULTS.md). The counts are stored after writes (``ScopeSubmitters``, written by
``benchmarks_app.services.scope_submitters``), each with a fingerprint of the GPU's aggregates
in the scope: every change to a GPU's trusted results rewrites an aggregate row of it (its n and
updated_at; ``aggregates_write``), so an unchanged fingerprint proves an unchanged count.

Between a write and the refresh that follows it, the GPUs it touched have stored counts of an
older fingerprint: those alone are counted here, and kept in the cache with their fingerprint so
that the next bumps before the refresh do not count them again. The counts of one scope are one
cache entry, GPU id -> (fingerprint, count), so that a page computing several rankings does not
fill a bounded local-memory cache. Two rankings of one scope computed at once may each write
theirs; the later one wins, and the other's recounts are made again by a later ranking: the
counts are never wrong, at worst recounted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.core.cache import cache
from django.db.models import Count

from benchmarks_app.models import BenchmarkResult, ScopeSubmitters
from benchmarks_app.services.scope_submitters import scope_digest
from benchmarks_app.services.scope_submitters import scope_fingerprints as aggregate_fingerprints
from gpuatlas.data_version import data_version_cache_seconds

__all__ = ["aggregate_fingerprints", "distinct_submitters_by_gpu"]


def distinct_submitters_by_gpu(
    *, fingerprints: Mapping[int, str], workload_ids: Iterable[int], precisions: Iterable[str]
) -> dict[int, int]:
    """Distinct submitter keys of each GPU's trusted results of these workloads and precisions.

    ``fingerprints`` (from ``aggregate_fingerprints``) names the GPUs and tells which stored and
    cached counts are current; the others are counted from the results.
    """
    workloads, precision_list = sorted(set(workload_ids)), sorted(set(precisions))
    scope = scope_digest(workload_ids=workloads, precisions=precision_list)
    counts: dict[int, int | None] = {
        gpu_id: submitters or None
        for gpu_id, fingerprint, submitters in ScopeSubmitters.objects.filter(scope=scope).values_list(
            "gpu_id", "fingerprint", "submitters"
        )
        if fingerprints.get(gpu_id) == fingerprint
    }
    key = f"gpuatlas:distinct-submitters:{scope}"
    seconds = data_version_cache_seconds()
    stored: dict[int, tuple[str, int | None]] = {}
    if len(counts) < len(fingerprints) and seconds > 0:
        stored = cache.get(key) or {}
        counts |= {
            gpu_id: stored[gpu_id][1]
            for gpu_id, print_ in fingerprints.items()
            if gpu_id not in counts and gpu_id in stored and stored[gpu_id][0] == print_
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
