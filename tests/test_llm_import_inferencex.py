"""InferenceX's DeepSeek-R1 runs (llm/data/inferencex/benchmarks.json) as serving points, on the
real rows the serving model's references come from."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from benchmarks_app.models import BenchmarkResult
from benchmarks_app.services.lab_tables import LabTableError
from llm.models import ServingPoint
from llm.selectors.serving import serving_points_for_fit
from llm.services.inferencex_import import BUNDLED_FILE, InferencexRun, inferencex_import_file
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
    assert summary.results_written == 435 and not summary.unmatched
    inferencex_import_file(refresh_aggregates=False, refit=False)  # idempotent
    points = ServingPoint.objects.filter(source_kind="inferencex")
    assert points.count() == 435 == BenchmarkResult.objects.filter(workload__slug="inferencex-serving").count()
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
    assert len(fitted) == sum(1 for r in _runs() if not (r.disaggregated or r.speculative) and (
        (r.decode_ep == 1 and not r.attention_data_parallel)
        or (r.decode_ep > 1 and r.attention_data_parallel and r.gpu_count % r.decode_ep == 0)))  # fmt: skip
    bad = tmp_path / "runs.json"
    bad.write_text('[{"hardware": "b200"}]')
    with pytest.raises(LabTableError, match="run #1 lacks a field"):
        inferencex_import_file(path=bad)
    with pytest.raises(CommandError, match="file not found"):
        call_command("import_inferencex", str(tmp_path / "missing.json"))
