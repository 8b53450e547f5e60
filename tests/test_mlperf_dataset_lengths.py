"""The MLPerf datasets' published lengths (llm/data/mlperf_datasets) agree with the benchmark
families the import reads, and a length without a citation is absent, never guessed."""

from __future__ import annotations

from llm.mlperf_rules import BENCHMARKS
from llm.serving.datasets import mlperf_dataset_lengths


def test_every_family_has_a_row_and_its_output_mean_matches_the_cited_figure() -> None:
    lengths = mlperf_dataset_lengths()
    for _, family in BENCHMARKS:
        row = lengths[family.key]
        if family.output_tokens is None:
            assert row.mean_output_tokens is None
        else:
            assert row.mean_output_tokens is not None and round(row.mean_output_tokens) == family.output_tokens
            assert str(row.mean_output_tokens) in row.output_source.replace("1278.20", "1278.2")


def test_an_input_mean_is_present_only_with_its_source() -> None:
    for row in mlperf_dataset_lengths().values():
        assert row.source_url.startswith("https://github.com/mlcommons/inference/tree/")
        if row.mean_input_tokens is not None:
            assert str(round(row.mean_input_tokens)) in row.input_source.replace(",", "")
        else:
            assert "no mean" in row.input_source or "not a mean" in row.input_source or "no figure" in row.input_source
