"""Reads of multi-GPU results: the GPU page's section, the API's, the rankings' and the fit calculator's figures.

Stable interface (others build on it; change only by adding fields)
------------------------------------------------------------------
``scaling_measured_by_gpu(*, gpu_ids: Iterable[int]) -> dict[int, dict[int, MeasuredScaling]]``
    gpu id -> GPU count (2 or more) -> the measured data-parallel training scaling there
    (``dashboard.multi_gpu_maths.MeasuredScaling``: ``efficiency`` = throughput at N / (N x throughput at
    1 GPU) of the same run, median over runs; ``n`` runs, ``distinct_submitters``,
    ``interconnect``, ``tokens_per_s_per_gpu``, ``one_gpu_tokens_per_s``, ``ranked`` = enough
    results to count in the rankings). GPUs without a measured multi-GPU run are absent. Two queries.

``gpu_multi_gpu(*, gpu_id: int) -> MultiGpuFigures``
    Every line of one GPU (every count, interconnect and message size); two queries.

``multi_gpu_by_gpu(*, gpu_ids: Iterable[int]) -> dict[int, MultiGpuFigures]``
    The same for several GPUs (the compare page, the fit calculator); GPUs without a multi-GPU
    result are absent. Two queries (``host_results``).

The arithmetic and the method are in dashboard/multi_gpu_maths.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmarks_app.comparison_rules import MIN_COMMUNITY_N
from benchmarks_app.models import BenchmarkResult, TrustLabel, Workload
from dashboard.multi_gpu_maths import (
    ALLREDUCE_METHOD,
    DDP_WORKLOAD,
    HOST_WORKLOADS,
    SCALING_METHOD,
    AllreduceLine,
    HostFacts,
    HostResult,
    MeasuredScaling,
    ScalingLine,
    allreduce_lines,
    scaling_by_count,
    scaling_headline,
    scaling_lines,
)


def _per_gpu(entries: object) -> tuple[float, ...]:
    if not isinstance(entries, list):
        return ()
    return tuple(
        float(e["median"]) for e in entries if isinstance(e, dict) and isinstance(e.get("median"), int | float)
    )


def host_results(*, gpu_ids: Iterable[int], workloads: Iterable[str] = HOST_WORKLOADS) -> dict[int, list[HostResult]]:
    """gpu id -> its trusted results of the multi-GPU workloads (two queries: the workloads' ids
    first, so that the planner reads the (workload, GPU) index rather than every result of the GPUs)."""
    workload_ids = list(Workload.objects.filter(slug__in=list(workloads)).values_list("id", flat=True))
    rows = (
        BenchmarkResult.objects.trusted()
        .filter(gpu_id__in=list(gpu_ids), workload_id__in=workload_ids)
        .order_by()
        .values(
            "gpu_id",
            "submission_id",
            "id",
            "workload__slug",
            "workload__version",
            "precision",
            "gpu_count",
            "params",
            "value",
            "submitter_key",
            "measured_at",
            "trust",
            "environment",
        )
    )
    out: dict[int, list[HostResult]] = defaultdict(list)
    for row in rows:
        environment = row["environment"] if isinstance(row["environment"], dict) else {}
        host, extra = environment.get("host"), environment.get("extra")
        out[row["gpu_id"]].append(
            HostResult(
                # A lab row has no submission: each row is then its own run.
                run_id=row["submission_id"] if row["submission_id"] is not None else -row["id"],
                workload=row["workload__slug"],
                version=row["workload__version"],
                precision=row["precision"],
                gpu_count=row["gpu_count"],
                params=row["params"] if isinstance(row["params"], dict) else {},
                value=row["value"],
                submitter_key=row["submitter_key"],
                measured_at=row["measured_at"],
                per_gpu=_per_gpu(environment.get("per_gpu")),
                host=host if isinstance(host, dict) else {},
                extra=extra if isinstance(extra, dict) else {},
                lab=row["trust"] == TrustLabel.LAB,
            )
        )
    return out


@dataclass
class MultiGpuFigures:
    training: list[ScalingLine] = field(default_factory=list)
    allreduce: list[AllreduceLine] = field(default_factory=list)
    by_count: dict[int, MeasuredScaling] = field(default_factory=dict)
    min_results: int = MIN_COMMUNITY_N

    @property
    def measured_on_several(self) -> bool:
        """Whether any result used 2 GPUs or more (else only the 1-GPU DDP figure is known)."""
        return bool(self.allreduce) or any(line.gpu_count > 1 for line in self.training)

    @property
    def hosts(self) -> list[HostFacts]:
        """The distinct hosts behind the lines, numbered on the page in this order."""
        found: dict[tuple[object, ...], HostFacts] = {}
        for host in [line.host for line in self.training] + [line.host for line in self.allreduce]:
            found.setdefault(host.key, host)
        return list(found.values())

    @property
    def training_rows(self) -> list[tuple[ScalingLine, int]]:
        """Each training line with the number of its host in ``hosts`` (from 1)."""
        numbers = {host.key: i for i, host in enumerate(self.hosts, start=1)}
        return [(line, numbers[line.host.key]) for line in self.training]

    @property
    def allreduce_rows(self) -> list[tuple[AllreduceLine, int]]:
        numbers = {host.key: i for i, host in enumerate(self.hosts, start=1)}
        return [(line, numbers[line.host.key]) for line in self.allreduce]

    @property
    def scaling_method(self) -> str:
        return str(SCALING_METHOD)

    @property
    def allreduce_method(self) -> str:
        return str(ALLREDUCE_METHOD)

    def __bool__(self) -> bool:
        return bool(self.training or self.allreduce)


def _figures(results: list[HostResult]) -> MultiGpuFigures:
    training = scaling_lines(results, min_results=MIN_COMMUNITY_N)
    return MultiGpuFigures(
        training=training,
        allreduce=allreduce_lines(results),
        by_count=scaling_by_count(training),
    )


def gpu_multi_gpu(*, gpu_id: int) -> MultiGpuFigures:
    """Every multi-GPU figure of one GPU (see dashboard/multi_gpu_maths.py for the method)."""
    return _figures(host_results(gpu_ids=[gpu_id]).get(gpu_id, []))


def multi_gpu_by_gpu(*, gpu_ids: Iterable[int]) -> dict[int, MultiGpuFigures]:
    """gpu id -> every multi-GPU figure of that GPU, for the GPUs that have any (two queries)."""
    return {gpu_id: _figures(results) for gpu_id, results in host_results(gpu_ids=gpu_ids).items()}


def scaling_measured_by_gpu(*, gpu_ids: Iterable[int]) -> dict[int, dict[int, MeasuredScaling]]:
    """gpu id -> GPU count -> measured data-parallel training scaling (see the module doc)."""
    results = host_results(gpu_ids=gpu_ids, workloads=[DDP_WORKLOAD])
    out = {}
    for gpu_id, rows in results.items():
        by_count = scaling_by_count(scaling_lines(rows, min_results=MIN_COMMUNITY_N))
        if by_count:
            out[gpu_id] = by_count
    return out


def scaling_headlines_by_gpu(
    *, aggregates: Iterable[Mapping[str, Any]], workloads: Mapping[int, Mapping[str, Any]]
) -> dict[int, MeasuredScaling]:
    """gpu id -> its measured training scaling at the largest ranked GPU count; two queries, and only
    when a GPU of this use case has data-parallel results on 2 GPUs or more."""
    ddp = {wid for wid, w in workloads.items() if w["slug"] == DDP_WORKLOAD}
    gpu_ids = {a["gpu_id"] for a in aggregates if a["workload_id"] in ddp and a["gpu_count"] > 1}
    if not gpu_ids:
        return {}
    headlines = {}
    for gpu_id, by_count in scaling_measured_by_gpu(gpu_ids=gpu_ids).items():
        headline = scaling_headline(by_count)
        if headline is not None:
            headlines[gpu_id] = headline
    return headlines
