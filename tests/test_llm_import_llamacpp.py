"""The llama.cpp / Ollama table importers on the real READMEs."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command

from benchmarks_app.models import BenchmarkResult, LabImportRow
from benchmarks_app.services.geerling_import import geerling_import, geerling_rows
from benchmarks_app.services.llm_readme_tables import BUNDLED_DIR, consumer_name_candidates
from benchmarks_app.services.markdown_tables import markdown_tables
from benchmarks_app.services.xiongjiedai_import import (
    cell_value,
    quant_precision,
    xiongjiedai_import,
    xiongjiedai_rows,
)
from tests.world import LLM_WORLD, world_build

CURRENT = BUNDLED_DIR / "xiongjiedai-aa72e0ec" / "README.md"
LLAMA123 = BUNDLED_DIR / "xiongjiedai-eafac9d2" / "README.md"
GEERLING = BUNDLED_DIR / "geerlingguy-bdf94413" / "README.md"


def test_cells_quantisations_and_names():
    assert cell_value("**144.49**") == cell_value("144.49")
    assert cell_value("OOM").oom and cell_value("OOM").value is None  # type: ignore[union-attr]
    assert cell_value("") is None
    assert (quant_precision("Q4_K_M"), quant_precision("q4_0"), quant_precision("F16")) == ("int4", "int4", "fp16")
    assert "GeForce RTX 4070 Ti Super" in consumer_name_candidates("Nvidia 4070 Ti Super")
    assert "Radeon RX 7900 XT" in consumer_name_candidates("AMD 7900 XT")
    assert "Arc A310" in consumer_name_candidates("Intel Arc A310 ECO")
    assert "A100 PCIe 80 GB" in consumer_name_candidates("A100 PCIe 80GB")


def test_markdown_tables_keep_their_headings_and_skip_code():
    tables = markdown_tables("# A\n```\n| not | a |\n|---|---|\n```\n## B\n| x | y |\n|---|---|\n| 1 | 2 |\n| 3 |\n")
    assert len(tables) == 1
    assert tables[0].headings == ("A", "B") and tables[0].rows == (("1", "2"), ("3", ""))


def test_xiongjiedai_tables_parse_into_one_row_per_cell():
    current = xiongjiedai_rows(text=CURRENT.read_text(encoding="utf-8"), file_label="current")
    full = xiongjiedai_rows(text=LLAMA123.read_text(encoding="utf-8"), file_label="full")
    # LLaMA 3 only in the current README: 3 sections, 8 tests per (GPU, model) row; the overview
    # tables (the same runs' tg/pp 1024) are not read.
    assert set(current["section_key"]) == {"xiongjiedai-llama-3-2024-05"}
    assert len(current) == 800
    assert {"xiongjiedai-llama-1-2023-12", "xiongjiedai-llama-2-2023-12"} < set(full["section_key"])
    row = current[(current.gpu_text == "4090 24GB * 2") & (current.model == "llama-3-70b") & (current.tokens == 512)
                  & (current.test == "tg")].iloc[0]  # fmt: skip
    assert (row.gpu_name, row.gpu_count, row.quant, row.value) == ("4090 24GB", 2, "Q4_K_M", 19.22)
    oom = current[(current.gpu_text == "4080 16GB") & (current.quant == "F16") & (current.tokens == 8192)]
    assert oom["oom"].all() and oom["value"].isna().all()
    # Dec 2023: three runs, their median, the author's mean kept.
    run = full[(full.section_key == "xiongjiedai-llama-1-2023-12") & (full.gpu_text == "4080 16GB")
               & (full.model == "llama-1-7b") & (full.quant == "Q4_0") & (full.test == "tg")].iloc[0]  # fmt: skip
    assert (run.value, run.author_mean, list(run.runs)) == (117.98, 118.05, [118.26, 117.91, 117.98])


@pytest.mark.django_db
def test_xiongjiedai_import_keeps_counts_oom_apple_and_sections_apart():
    world_build(rows=LLM_WORLD)
    summary = xiongjiedai_import()
    assert summary.rows_read == 2216
    assert any("800 cells repeated" in note and "0 of them differ" in note for note in summary.notes)
    assert set(summary.unmatched) == {"A100 80GB"}  # Dec 2023 tables name no form factor
    pair = BenchmarkResult.objects.get(
        workload__slug="llamacpp-tg", gpu__slug="geforce-rtx-4090", gpu_count=2,
        params__model="llama-3-70b", params__quant="Q4_K_M", params__tokens=512,
    )  # fmt: skip
    assert pair.value == 19.22 and pair.precision == "int4" and pair.environment["backend"] == "cuda"
    h100 = BenchmarkResult.objects.get(workload__slug="llamacpp-pp", gpu__slug="h100-pcie-80-gb", gpu_count=1,
                                       params__model="llama-3-8b", params__quant="F16", params__tokens=512)  # fmt: skip
    assert h100.value == 10815.51 and h100.precision == "fp16"
    oom = LabImportRow.objects.filter(outcome=LabImportRow.Outcome.DOES_NOT_FIT, gpu__slug="geforce-rtx-4080")
    assert oom.filter(params__model="llama-3-8b", params__quant="F16", params__tokens=8192).exists()
    assert not BenchmarkResult.objects.filter(value__lte=0).exists()
    apple = LabImportRow.objects.filter(outcome=LabImportRow.Outcome.NOT_A_CATALOGUE_GPU)
    assert apple.filter(name_reported__startswith="M2 Ultra 76-Core GPU 192GB").exists()
    assert LabImportRow.objects.filter(
        outcome=LabImportRow.Outcome.NO_ACCELERATOR, params__model="llama-1-13b"
    ).exists()
    # Sections are part of the key: the 2023 and 2024 rows of one GPU never share an aggregate.
    keys_2023 = set(BenchmarkResult.objects.filter(params__section="xiongjiedai-llama-2-2023-12", gpu__slug="geforce-rtx-4090")
                    .values_list("comparison_key", flat=True))  # fmt: skip
    keys_2024 = set(BenchmarkResult.objects.filter(params__section="xiongjiedai-llama-3-2024-05", gpu__slug="geforce-rtx-4090")
                    .values_list("comparison_key", flat=True))  # fmt: skip
    assert keys_2023 and keys_2024 and not keys_2023 & keys_2024
    again = xiongjiedai_import()
    assert again.results_written == again.results_removed == summary.results_written


def test_geerling_rows_split_host_gpu_and_backend():
    rows = geerling_rows(text=GEERLING.read_text(encoding="utf-8"), file_label="x")
    assert len(rows) == 102
    pi = rows[(rows.label.str.startswith("Pi CM5 - 16GB")) & (rows.model == "deepseek-r1-14b")
              & (rows.gpu_text == "Nvidia RTX 4090")].iloc[0]  # fmt: skip
    assert (pi.backend, pi.host, pi.value, pi.power_w) == ("vulkan", "Pi CM5 - 16GB", 83.31, 397.5)
    desktop = rows[(rows.label == "Intel 265K Custom PC (Nvidia RTX 4090)") & (rows.model == "deepseek-r1-14b")].iloc[0]
    assert desktop.backend == "unmarked" and desktop.value == 92.49
    outside = rows[rows.label == "Minisforum MS-R1 (Nvidia RTX A2000)"].iloc[0]
    assert outside.gpu_text == "Nvidia RTX A2000" and outside.url.endswith("/issues/32")
    assert set(rows.placement) == {"gpu", "cpu", "gpu+cpu"}


@pytest.mark.django_db
def test_geerling_import_backends_apart_gb10_partial_offload_and_cpu_rows():
    world_build(rows=LLM_WORLD)
    summary = geerling_import()
    assert summary.rows_read == 102 and not summary.unmatched
    vulkan, native = (
        BenchmarkResult.objects.get(gpu__slug="geforce-rtx-4090", params__model="deepseek-r1-14b", params__backend=b)
        for b in ("vulkan", "unmarked")
    )
    assert (vulkan.value, native.value) == (83.31, 92.49) and vulkan.comparison_key != native.comparison_key
    assert vulkan.environment["peak_system_power_w"] == 397.5
    spark = BenchmarkResult.objects.get(gpu__slug="gb10", params__model="llama-3.2-3b")
    assert spark.value == 97.93
    offload = LabImportRow.objects.get(outcome=LabImportRow.Outcome.DOES_NOT_FIT, gpu__slug="geforce-rtx-4090")
    assert offload.params["model"] == "llama-3.1-70b" and offload.row["value"] == 3.10
    assert LabImportRow.objects.filter(outcome=LabImportRow.Outcome.NO_ACCELERATOR).count() == 22
    assert LabImportRow.objects.filter(outcome=LabImportRow.Outcome.NOT_A_CATALOGUE_GPU,
                                       name_reported="Mac Studio (M3 Ultra 512GB)").exists()  # fmt: skip
    assert geerling_import().results_written == summary.results_written


@pytest.mark.django_db
def test_command_imports_both_and_lists_unmatched(capsys):
    world_build(rows=LLM_WORLD)
    call_command("import_llamacpp")
    out = capsys.readouterr().out
    assert "UNMATCHED 'A100 80GB'" in out and "geerlingguy/ai-benchmarks" in out
    assert BenchmarkResult.objects.filter(measured_at__date=dt.date(2024, 5, 1)).exists()
