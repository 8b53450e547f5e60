"""The mean prompt and output lengths of the MLPerf Inference LLM datasets, as MLCommons publishes
them (``llm/data/mlperf_datasets/lengths.json``; its SOURCES.md says where each figure is
printed). A length MLCommons does not publish is None, never a guess."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

LENGTHS_PATH = Path(__file__).resolve().parent.parent / "data" / "mlperf_datasets" / "lengths.json"


@dataclass(frozen=True)
class DatasetLengths:
    benchmark: str  # the mlperf.conf benchmark key
    mean_input_tokens: float | None
    mean_output_tokens: float | None
    input_source: str
    output_source: str
    source_url: str


@cache
def mlperf_dataset_lengths() -> dict[str, DatasetLengths]:
    data = json.loads(LENGTHS_PATH.read_text())
    url = f"{data['source_repository']}/tree/{data['source_commit']}"
    return {
        key: DatasetLengths(
            key,
            row["mean_input_tokens"],
            row["mean_output_tokens"],
            row["input_source"],
            row["mean_output_source"],
            url,
        )  # fmt: skip
        for key, row in data["benchmarks"].items()
    }
