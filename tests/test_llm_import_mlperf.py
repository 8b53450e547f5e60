"""The MLPerf Inference importer on the real tables: v6.1 summary.csv, v5.1 and v4.1 summary_results.json."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmarks_app.models import BenchmarkResult, LabImportRow, Workload
from benchmarks_app.services.lab_tables import LabTableError
from benchmarks_app.services.mlperf_import import (
    BUNDLED_DIR,
    accelerator_name_candidates,
    mlperf_import_file,
    round_label,
    weights_precision,
)
from tests.world import LLM_WORLD, world_build

FIXTURES = Path(__file__).parent / "fixtures" / "mlperf"
V61 = BUNDLED_DIR / "inference_results_v6.1" / "summary.csv"
V51_EXCERPT = FIXTURES / "summary_results_v5.1_excerpt.json"
V41_EXCERPT = FIXTURES / "summary_results_v4.1_excerpt.json"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NVFP4 weights and activations; FP8 KV cache", "fp4"),
        ("fp16,bf16,fp8", "fp8"),
        ("int8,bf16", "int8"),
        ("UINT4", "int4"),
        ("mxfp4 (LLMs), fp32 (embedding/reranker)", "fp4"),
        ("{'clip1': 'fp32', 'clip2': 'fp32', 'unet': 'fp8', 'vae': 'fp32'}", "fp8"),
        ("BF16/F32/F8_E4M3/U8", "fp8"),
        ("fp16", "fp16"),
        ("UNSET", None),
    ],
)
def test_the_narrowest_weight_format_is_the_precision(text, expected):
    assert weights_precision(text) == expected


def test_round_labels_and_name_candidates():
    assert round_label("v6.1") == round_label("6.1") == "6.1"
    assert round_label("v5.0") == "5.0"
    with pytest.raises(ValueError, match="v<major>.<minor>"):
        round_label("sixth")
    assert "NVIDIA H100-SXM" in accelerator_name_candidates("NVIDIA H100-SXM-80GB")
    assert "AMD Instinct MI300X" in accelerator_name_candidates("AMD Instinct MI300X-NPS1-SPX-192GB-750W")
    assert "NVIDIA H200-SXM" in accelerator_name_candidates("Virtualized NVIDIA H200-SXM-141GB")
    assert "Intel Arc Pro B70" in accelerator_name_candidates("Intel(R) Arc(TM) Pro B70")


@pytest.mark.django_db
def test_v61_csv_every_row_accounted_for_per_accelerator_units_and_idempotent():
    world_build(rows=LLM_WORLD)
    summary = mlperf_import_file(path=V61, published=dt.date(2026, 11, 25))
    assert summary.rows_read == 492
    kept = LabImportRow.objects.filter(dataset="mlperf-inference-v6.1")
    assert summary.results_written + kept.count() == 492
    # 33 CPU-only rows; 10 rows of the two heterogeneous systems; Vera Rubin / VR200 (preview, not in the catalogue)
    assert kept.filter(outcome=LabImportRow.Outcome.NO_ACCELERATOR).count() == 33
    assert kept.filter(outcome=LabImportRow.Outcome.HETEROGENEOUS).count() == 10
    assert set(summary.unmatched) == {"NVIDIA VR200", "NVIDIA Vera Rubin"}
    assert kept.filter(outcome=LabImportRow.Outcome.UNMATCHED).count() == 8
    assert "NVIDIA H200-SXM-141GB + AMD Instinct MI350X 288GB HBM3e" in summary.heterogeneous

    # Hand-checked: AMD 8xMI350X dlrm-v3 Offline, 10891.1 Samples/s for 8 accelerators, weights fp16,bf16,fp8.
    dlrm = BenchmarkResult.objects.get(
        workload__slug="mlperf-dlrm-v3-offline-samples",
        gpu__slug="radeon-instinct-mi350x",
        source__contains="8xMI350X_2xEPYC_9575F",
    )
    assert dlrm.value == pytest.approx(10891.1 / 8)
    assert (dlrm.gpu_count, dlrm.precision, dlrm.workload.version) == (8, "fp8", "6.1")
    assert dlrm.workload.unit == "samples/s per accelerator"
    assert dlrm.params == {"division": "closed", "availability": "available"}
    assert dlrm.environment["result_system"] == "10891.1"
    # Azure's GB200 NVL72: 18 nodes x 4 = 72 accelerators; the result is the whole rack's.
    azure = BenchmarkResult.objects.filter(gpu__slug="gb200", environment__submitter="Azure", gpu_count=72).first()
    assert azure is not None and azure.value == pytest.approx(float(azure.environment["result_system"]) / 72)
    # Latencies are kept as published (not divided) and lower is better.
    latency = Workload.objects.get(slug="mlperf-resnet-singlestream-latency-ms", version="6.1")
    assert (latency.unit, latency.higher_is_better) == ("ms", False)
    resnet = BenchmarkResult.objects.get(workload=latency)
    assert resnet.value == float(resnet.environment["result_system"])
    # Units never share a workload.
    for workload in Workload.objects.filter(slug__startswith="mlperf-"):
        assert workload.slug.split("-")[-1] in workload.unit.replace("/", "-").replace(" ", "-") or (
            workload.unit in ("ms", "s")
        )
    # The preview Vera Rubin rows are not results; open and rdi rows are, labelled.
    assert BenchmarkResult.objects.filter(params__availability="rdi").exists()
    assert BenchmarkResult.objects.filter(params__division="open").exists()

    again = mlperf_import_file(path=V61, published=dt.date(2026, 11, 25))
    assert again.results_written == again.results_removed == summary.results_written
    assert BenchmarkResult.objects.count() == summary.results_written
    assert LabImportRow.objects.count() == kept.count()


@pytest.mark.django_db
def test_the_json_shape_of_v51_and_v41_reads_without_code_changes(tmp_path):
    world_build(rows=LLM_WORLD)
    summary = mlperf_import_file(path=V51_EXCERPT, published=dt.date(2025, 9, 9))
    assert summary.rows_read == 11
    h200 = BenchmarkResult.objects.get(
        workload__slug="mlperf-llama2-70b-99-offline-tokens",
        gpu__slug="h200-sxm-141-gb",
        environment__submitter="Dell_Broadcom",
    )
    assert h200.value == pytest.approx(34301.9 / 8)
    assert h200.workload.version == "5.1" and h200.precision == "fp8"
    # Cisco's H100 system: 2 nodes x 8 = 16 accelerators.
    h100 = BenchmarkResult.objects.get(gpu__slug="h100-sxm5-80-gb")
    assert (h100.gpu_count, h100.value) == (16, pytest.approx(62351.6 / 16))
    assert h100.environment["url"].startswith(
        "https://github.com/mlcommons/inference_results_v5.1/tree/main/closed/Cisco"
    )
    rows = LabImportRow.objects.filter(dataset="mlperf-inference-v5.1")
    assert rows.filter(outcome=LabImportRow.Outcome.NO_ACCELERATOR).count() == 1
    assert rows.filter(outcome=LabImportRow.Outcome.HETEROGENEOUS).count() == 1
    assert rows.get(outcome=LabImportRow.Outcome.SKIPPED).reason == "weight data types 'UNSET' name no format"
    assert BenchmarkResult.objects.get(workload__unit="ms").value == pytest.approx(111.979792)

    # v4.1: float "a#", the GH200 144 GB (its own catalogue entry by memory), Samples/s beside Tokens/s.
    compressed = tmp_path / "summary_results.json.gz"
    compressed.write_bytes(gzip.compress(V41_EXCERPT.read_bytes()))
    mlperf_import_file(path=compressed, published=dt.date(2024, 8, 28))
    one, eight = (
        BenchmarkResult.objects.get(
            workload__slug="mlperf-llama2-70b-99-offline-tokens",
            workload__version="4.1",
            gpu__slug="radeon-instinct-mi300x",
            gpu_count=n,
        )  # fmt: skip
        for n in (1, 8)
    )
    assert (one.value, eight.value) == (pytest.approx(3062.72), pytest.approx(23514.8 / 8))
    assert BenchmarkResult.objects.get(gpu__slug="gh200-144-gb").value == pytest.approx(4067.52)
    samples = BenchmarkResult.objects.get(workload__slug="mlperf-llama2-70b-99_9-offline-samples")
    assert samples.workload.unit == "samples/s per accelerator" and samples.params["division"] == "open"
    # Importing v4.1 left v5.1 alone.
    assert BenchmarkResult.objects.filter(workload__version="5.1").exists()


def _write_json(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


@pytest.mark.django_db
def test_bad_tables_are_refused_with_the_column_or_unit_named(tmp_path):
    world_build(rows=LLM_WORLD)
    rows = json.loads(V51_EXCERPT.read_text(encoding="utf-8"))
    missing = [{k: v for k, v in row.items() if k != "Performance_Units"} for row in rows]
    with pytest.raises(LabTableError, match="missing column.*units"):
        mlperf_import_file(path=_write_json(tmp_path / "a.json", missing), published=dt.date(2025, 9, 9))
    with pytest.raises(LabTableError, match="not a CSV|expected a JSON list|invalid JSON"):
        mlperf_import_file(path=_write_json(tmp_path / "b.json", {"a": 1}), published=dt.date(2025, 9, 9))  # type: ignore[arg-type]
    assert not BenchmarkResult.objects.exists()  # the refused files wrote nothing
    # A stored workload of the same key with another unit stops the import: units are never mixed.
    Workload.objects.create(slug="mlperf-llama2-70b-99-offline-tokens", version="5.1", name="x", unit="tokens/s",
                            category="inference")  # fmt: skip
    with pytest.raises(LabTableError, match="units are never mixed"):
        mlperf_import_file(path=V51_EXCERPT, published=dt.date(2025, 9, 9))
    assert not BenchmarkResult.objects.exists()
    assert Workload.objects.filter(slug__startswith="mlperf-").count() == 1  # nothing half-written


@pytest.mark.django_db
def test_command_needs_a_date_for_files_that_are_not_bundled(tmp_path, capsys):
    world_build(rows=LLM_WORLD)
    with pytest.raises(CommandError, match="--published"):
        call_command("import_mlperf", str(V51_EXCERPT))
    call_command("import_mlperf", str(V51_EXCERPT), "--published", "2025-09-09")
    out = capsys.readouterr().out
    assert "MLPerf Inference v5.1" in out and "HETEROGENEOUS" in out
    with pytest.raises(CommandError, match="not a date"):
        call_command("import_mlperf", str(V51_EXCERPT), "--published", "9/9/2025")


@pytest.mark.django_db
def test_the_full_rebuild_keeps_imported_lab_tables_and_their_aggregates():
    from benchmarks_app.models import ResultAggregate
    from benchmarks_app.services.rebuild import results_rebuild

    world_build(rows=LLM_WORLD)
    mlperf_import_file(path=V51_EXCERPT, published=dt.date(2025, 9, 9))
    before = sorted(BenchmarkResult.objects.values_list("gpu_id", "comparison_key", "value"))
    aggregates = ResultAggregate.objects.count()
    results_rebuild(lab_path=None)
    assert sorted(BenchmarkResult.objects.values_list("gpu_id", "comparison_key", "value")) == before
    assert ResultAggregate.objects.count() == aggregates > 0
