"""Reads of the measured serving points for the relative inference use cases (8-bit, 16-bit).

A GPU's measured LLM throughput enters the relative method like any workload: a group is one
configuration every compared GPU ran the same way (source and its release or round, model,
engine class, scenario, lengths, GPU count, concurrency and the precision the runs were at,
corrected where a cited source says so), and a GPU's figure in a group is the median of its
points' output tokens/s per GPU. Only trusted points (``ServingPoint.objects.trusted()``) count.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from benchmarks_app.models import TrustLabel
from llm.models import ServingPoint


@dataclass(frozen=True)
class ServingGroupFigure:
    gpu_id: int
    group: str  # the configuration, readable
    precision: str
    gpu_count: int
    median: float
    n: int
    distinct_submitters: int
    has_lab: bool


def serving_group_figures(*, precisions: Iterable[str]) -> list[ServingGroupFigure]:
    """Per GPU and configuration, the median measured output tokens/s per GPU (see the module doc)."""
    grouped: dict[tuple[int, str, str, int], list[dict[str, Any]]] = defaultdict(list)
    rows = (
        ServingPoint.objects.trusted()
        .at_precisions(list(precisions))
        .values(
            "gpu_id",
            "source_kind",
            "result__workload__slug",
            "result__workload__version",
            "model",
            "engine_class",
            "scenario",
            "input_tokens",
            "output_tokens",
            "gpu_count",
            "concurrency",
            "weight_precision",
            "quant",
            "tokens_per_s_per_gpu",
            "result__trust",
            "result__submitter_key",
            "result__params",
        )  # fmt: skip
    )
    for row in rows:
        params = row["result__params"] or {}
        group = " · ".join(
            str(v)
            for v in (
                row["result__workload__slug"], row["result__workload__version"], row["model"], row["engine_class"],
                row["scenario"], f"{row['input_tokens']}/{row['output_tokens']}", row["quant"],
                f"c{row['concurrency']}", params.get("division", ""), params.get("availability", ""),
                params.get("qps", ""), params.get("pipeline_parallel", ""),
            )
        )  # fmt: skip
        grouped[(row["gpu_id"], group, row["weight_precision"], row["gpu_count"])].append(dict(row))
    return [
        ServingGroupFigure(
            gpu_id=gpu_id,
            group=group,
            precision=precision,
            gpu_count=gpu_count,
            median=statistics.median(r["tokens_per_s_per_gpu"] for r in rows),
            n=len(rows),
            distinct_submitters=len({r["result__submitter_key"] for r in rows}),
            has_lab=any(r["result__trust"] == TrustLabel.LAB for r in rows),
        )
        for (gpu_id, group, precision, gpu_count), rows in grouped.items()
    ]
