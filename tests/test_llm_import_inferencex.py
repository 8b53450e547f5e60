"""InferenceX's DeepSeek-R1 runs (llm/data/inferencex/benchmarks.json) as serving points, on the
real rows the serving model's references come from."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from benchmarks_app.models import BenchmarkResult, LabImportRow
from benchmarks_app.services.lab_tables import LabTableError
from llm.models import ServingPoint
from llm.selectors.serving import serving_points_for_fit
from llm.services.inferencex_import import (
    BUNDLED_FILE,
    GPUS_IMPLIED_BOUNDS,
    InferencexRun,
    inferencex_import_file,
)
from tests.world import LLM_WORLD, world_build


def _runs() -> list[InferencexRun]:
    return [InferencexRun.of(row) for row in json.loads(BUNDLED_FILE.read_text(encoding="utf-8"))]


def test_total_throughput_per_gpu_becomes_output_tokens_per_gpu_of_the_whole_run():
    runs = _runs()
    assert len(runs) == 435 and {r.model for r in runs} == {"deepseek-r1"}
    # The B200 reference, run #390: disaggregated, 32 prefill + 8 decode GPUs, MTP, 1088 in flight.
    b200 = runs[389]
    assert (b200.hardware, b200.precision, b200.input_tokens, b200.output_tokens) == ("b200", "fp8", 8192, 1024)
    assert b200.raw["metrics"]["tput_per_gpu"] == pytest.approx(5856.94, abs=0.01)
    assert (b200.gpu_count, b200.disaggregated, b200.speculative, b200.attention_data_parallel) == (
        40,
        True,
        "mtp",
        True,
    )
    assert b200.output_tokens_per_s_per_gpu == pytest.approx(5856.94 * 1024 / 9216, rel=1e-4)  # 650.8
    # In an aggregated run InferenceX's own output figure is the same quantity: the conversion holds.
    mi300x = runs[118]
    assert (mi300x.hardware, mi300x.gpu_count, mi300x.parallelism, mi300x.concurrency) == ("mi300x", 8, "TP8", 32)
    assert mi300x.output_tokens_per_s_per_gpu == pytest.approx(mi300x.raw["metrics"]["output_tput_per_gpu"], rel=0.01)
    aggregated = [r for r in runs if not r.disaggregated and r.raw["metrics"].get("output_tput_per_gpu")]
    assert len(aggregated) > 100
    assert all(r.output_tokens_per_s_per_gpu == pytest.approx(r.raw["metrics"]["output_tput_per_gpu"], rel=0.05)
               for r in aggregated)  # fmt: skip


@pytest.mark.django_db
def test_the_runs_land_as_serving_points_and_only_plain_tensor_parallel_ones_are_fitted(tmp_path):
    world_build(rows=LLM_WORLD)
    summary = inferencex_import_file(refresh_aggregates=False, refit=False)
    assert summary.results_written == 426 and not summary.unmatched and len(summary.skipped) == 9
    inferencex_import_file(refresh_aggregates=False, refit=False)  # idempotent
    points = ServingPoint.objects.filter(source_kind="inferencex")
    assert points.count() == 426 == BenchmarkResult.objects.filter(workload__slug="inferencex-serving").count()
    b200 = points.get(gpu__slug="b200", concurrency=1088, weight_precision="fp8", input_tokens=8192)
    assert b200.gpu_count == 40 and b200.tokens_per_s_per_gpu == pytest.approx(650.77, abs=0.01)
    assert b200.tokens_per_s_per_user == pytest.approx(27.11, abs=0.01) and b200.scenario == "concurrency"
    assert b200.result.environment["p99_interactivity"] == pytest.approx(23.57, abs=0.01)
    assert b200.engine_class == "tensorrt-llm" and b200.source_url.endswith("/actions/runs/23438524239/attempts/5")
    mi300x = points.get(gpu__slug="radeon-instinct-mi300x", concurrency=32, input_tokens=8192)
    assert mi300x.tokens_per_s_per_gpu == pytest.approx(81.8, abs=0.1) and mi300x.engine_class == "vllm-sglang"
    # Plain tensor parallelism and DEP (experts spread, attention data parallel: the model's ``ep``)
    # are fitted; disaggregated, speculative and experts under tensor-parallel attention are not.
    fitted = [p for p in serving_points_for_fit() if p.label.startswith("InferenceX")]
    assert fitted and not any("prefill" in p.label or ",EP" in p.label for p in fitted)
    assert all(p.workload.ep > 1 and p.workload.tp == 1 for p in fitted if "DEP" in p.label)
    assert len(fitted) == sum(1 for r in _runs() if not (r.disaggregated or r.speculative or r.inconsistency) and (
        (r.decode_ep == 1 and not r.attention_data_parallel)
        or (r.decode_ep > 1 and r.attention_data_parallel and r.gpu_count % r.decode_ep == 0)))  # fmt: skip
    bad = tmp_path / "runs.json"
    bad.write_text('[{"hardware": "b200"}]')
    with pytest.raises(LabTableError, match="run #1 lacks a field"):
        inferencex_import_file(path=bad)
    with pytest.raises(CommandError, match="file not found"):
        call_command("import_inferencex", str(tmp_path / "missing.json"))


def test_an_aggregated_dep_run_counts_its_tensor_parallel_gpus_not_tp_times_ep():
    """The B200 DEP8 runs the held-out checks missed by -84 to -87 %: the file names 64 GPUs
    (tp x ep, InferenceX's first mapper) for a run on one 8-GPU node. Their own figures (requests
    in flight x tokens / mean latency / tokens/s per GPU) put them on about 9 GPUs: 8 plus the
    ramp-up and drain of the benchmark's wall time."""
    runs = _runs()
    for index, concurrency, precision, value in ((19, 64, "fp8", 257.8), (79, 128, "fp4", 728.1),
                                                 (89, 128, "fp4", 535.0)):  # fmt: skip
        run = runs[index - 1]
        assert (run.hardware, run.parallelism, run.precision) == ("b200", "DEP8", precision)
        assert run.concurrency == concurrency
        assert run.raw["num_decode_gpu"] == run.raw["num_prefill_gpu"] == 64 and not run.disaggregated
        assert run.gpu_count == 8 and 8.9 < run.gpus_implied < 9.5 and not run.inconsistency
        # tput_per_gpu is already per the 8 GPUs: the value does not move with the count.
        assert run.output_tokens_per_s_per_gpu == pytest.approx(value, abs=0.1)
    tp4 = runs[89]  # b200 TensorRT-LLM DEP4 (tp 4 x ep 4 = 16 named): 4.5 GPUs by its figures
    assert (tp4.raw["num_decode_gpu"], tp4.gpu_count, round(tp4.gpus_implied, 1)) == (16, 4, 4.5)
    # Every run the importer keeps reads 1.10 to 1.27 times its count; the rest are named, with why.
    low, high = GPUS_IMPLIED_BOUNDS
    kept = [r.gpus_implied / r.gpu_count for r in runs if not r.inconsistency]
    assert len(kept) == 426 and low < min(kept) and max(kept) < high
    out = {i + 1: r for i, r in enumerate(runs) if r.inconsistency}
    assert sorted(out) == [151, 153, 156, 158, 159, 164, 166, 170, 205]
    gb200 = out[151]  # one figure (36) on both sides: 72 counted, its figures say 42
    assert (gb200.gpu_count, round(gb200.gpus_implied, 1)) == (72, 41.8)
    assert "put it on 41.8 GPUs, not the 72 it names" in gb200.inconsistency
    assert out[205].gpus_implied > 300 and out[205].gpu_count == 8  # MI355X ATOM: 50 tokens/s per GPU at 512


@pytest.mark.django_db
def test_runs_whose_figures_contradict_their_gpu_count_are_kept_out_with_the_reason():
    world_build(rows=LLM_WORLD)
    summary = inferencex_import_file(refresh_aggregates=False, refit=False)
    skipped = LabImportRow.objects.filter(dataset__startswith="inferencex-", outcome=LabImportRow.Outcome.SKIPPED)
    assert sorted(r.row["index"] for r in skipped) == [151, 153, 156, 158, 159, 164, 166, 170, 205]
    assert all("GPUs, not the" in r.reason for r in skipped) and summary.outcomes["skipped"] == 9
    assert any(line.startswith("  skipped run #205 (mi355x") for line in summary.as_lines())
    for index in (151, 205):
        assert not BenchmarkResult.objects.filter(source__endswith=f", run #{index}").exists()
        assert not ServingPoint.objects.filter(source__endswith=f", run #{index}").exists()
    assert ServingPoint.objects.filter(source__endswith=", run #152").exists()
    dep8 = ServingPoint.objects.get(source__endswith=", run #19")  # B200 DEP8, 64 in flight
    assert (dep8.gpu.slug, dep8.concurrency, dep8.result.params["expert_parallel"]) == ("b200", 64, 8)
    assert dep8.gpu_count == 8 and dep8.tokens_per_s_per_gpu == pytest.approx(257.8, abs=0.1)
    fitted = next(p for p in serving_points_for_fit() if "b200 DEP8" in p.label and p.concurrency == 64)
    assert fitted.gpu_count == 8 and fitted.workload.ep == 8
