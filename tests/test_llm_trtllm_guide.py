"""NVIDIA's TensorRT-LLM performance guides: their trtllm-bench runs read section by section, imported
as lab results with their serving points."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from benchmarks_app.models import BenchmarkResult
from benchmarks_app.services.lab_tables import LabTableError
from llm.models import ServingPoint
from llm.services.trtllm_import import BUNDLED_DIR, BUNDLED_GUIDES, trtllm_guide_import_file
from llm.trtllm_guide import GuideFormatError, guide_parse
from tests.world import LLM_WORLD, world_build

GUIDE = BUNDLED_GUIDES[0]
GUIDE_PATH = BUNDLED_DIR / "guides" / GUIDE.file

# The shape of a guide's section, with a command continued without backslashes (as the DeepSeek-R1
# guide's FP8-cache section writes it) and a dataset of fixed lengths.
SECTION = """### B200 max-throughput
```bash
python prepare_dataset.py --stdout token-norm-dist --input-mean {isl} --output-mean 1000 --input-stdev 0 --output-stdev 0
cat >./extra.yml <<EOF
enable_attention_dp: true
kv_cache_config:
  dtype: fp8
EOF
trtllm-bench  --model nvidia/DeepSeek-R1-0528-FP4
     throughput
     --tp 4  --ep 4
     --max_batch_size 256
     --concurrency 1024
```
```
= PERFORMANCE OVERVIEW
Total Output Throughput (tokens/sec):             10000.0
Total Token Throughput (tokens/sec):              20000.0
Per User Output Throughput [w/ ctx] (tps/user):   9.5
Per GPU Output Throughput (tps/gpu):              2500.0
```
"""


def test_the_deepseek_r1_guide_gives_its_runs_as_printed() -> None:
    parsed = guide_parse(GUIDE_PATH.read_text(encoding="utf-8"))
    runs = {r.section: r for r in parsed.runs}
    assert set(runs) == {"B200 min-latency", "B200 max-throughput for R1 with FP16 KV cache", "H200 min-latency",
                         "H200 max-throughput"}  # fmt: skip
    h200 = runs["H200 max-throughput"]
    assert (h200.checkpoint, h200.tensor_parallel, h200.expert_parallel, h200.attention_data_parallel) == (
        "deepseek-ai/DeepSeek-R1", 8, 8, True)  # fmt: skip
    assert (h200.concurrency, h200.max_batch_size, h200.max_num_tokens) == (1024, 128, 1151)
    assert (h200.input_tokens, h200.output_tokens, h200.fixed_lengths) == (1024, 2048, True)
    assert (h200.tokens_per_s_per_gpu, h200.tokens_per_s_per_user) == (1436.1584, 11.3476)
    assert h200.kv_cache_dtype == "auto" and not h200.speculative and h200.parallelism == "DEP8"
    fp16_cache = runs["B200 max-throughput for R1 with FP16 KV cache"]
    assert (fp16_cache.concurrency, fp16_cache.max_batch_size, fp16_cache.tokens_per_s_per_gpu) == (
        3072,
        384,
        4548.0105,
    )
    assert fp16_cache.tokens_per_s_per_user == 11.9263  # the "[w/ ctx]" figure
    # The minimum-latency runs draft tokens (MTP), and their dataset's lengths are means.
    assert runs["H200 min-latency"].speculative and not runs["H200 min-latency"].fixed_lengths
    assert runs["H200 min-latency"].parallelism == "TP8 EP4"
    # The FP8-cache section states no lengths anywhere: not read, and said so.
    (skipped,) = parsed.skipped
    assert "B200 max-throughput for R1-0528 with FP8 KV cache" in skipped and "lengths" in skipped


def test_a_command_without_continuations_and_the_options_file_are_read() -> None:
    (run,) = guide_parse(SECTION.format(isl=1000)).runs
    assert (run.checkpoint, run.tensor_parallel, run.expert_parallel, run.concurrency) == (
        "nvidia/DeepSeek-R1-0528-FP4", 4, 4, 1024)  # fmt: skip
    assert run.kv_cache_dtype == "fp8" and run.attention_data_parallel and run.parallelism == "DEP4"


def test_lengths_the_report_contradicts_and_a_text_without_a_report_are_refused() -> None:
    parsed = guide_parse(SECTION.format(isl=3000))  # total / output = 2.0, the lengths say 4.0
    assert not parsed.runs and "disagree" in parsed.skipped[0]
    with pytest.raises(GuideFormatError, match="no trtllm-bench report"):
        guide_parse("### H200 max-throughput\nNo figures here.\n")


@pytest.mark.django_db
def test_import_writes_the_runs_and_the_points_the_model_prices_idempotently(tmp_path) -> None:  # type: ignore[no-untyped-def]
    world_build(rows=LLM_WORLD)
    summary = trtllm_guide_import_file(path=GUIDE_PATH, guide=GUIDE, refit=False)
    assert summary.results_written == 4 and not summary.unmatched and len(summary.skipped) == 1
    h200 = ServingPoint.objects.get(source_kind="trtllm-guide", gpu__slug="h200-sxm-141-gb")
    assert (h200.model, h200.weight_precision, h200.kv_cache_precision) == ("deepseek-r1", "fp8", "bf16")
    assert (h200.scenario, h200.concurrency, h200.gpu_count) == ("concurrency", 1024, 8)
    assert (h200.tokens_per_s_per_gpu, h200.tokens_per_s_per_user) == (1436.1584, 11.3476)
    assert h200.date_estimated and GUIDE.commit in h200.source_url and "H200 max-throughput" in h200.source_title
    # The runs that draft tokens stay results, without a point; the FP16-cache B200 run is FP4 with a 16-bit cache.
    assert ServingPoint.objects.filter(source_kind="trtllm-guide").count() == 2
    b200 = ServingPoint.objects.get(source_kind="trtllm-guide", gpu__slug="b200")
    assert (b200.weight_precision, b200.kv_cache_precision, b200.concurrency) == ("fp4", "bf16", 3072)
    trtllm_guide_import_file(path=GUIDE_PATH, guide=GUIDE, refit=False)
    assert BenchmarkResult.objects.filter(workload__slug="trtllm-guide").count() == 4
    assert ServingPoint.objects.filter(source_kind="trtllm-guide").count() == 2
    # A checkpoint the importer does not know is listed, not guessed.
    unknown = tmp_path / "guide.md"
    unknown.write_text(SECTION.format(isl=1000).replace("nvidia/DeepSeek-R1-0528-FP4", "someone/Other-FP4"))
    other = trtllm_guide_import_file(path=unknown, guide=GUIDE, refit=False)
    assert other.results_written == 0 and "someone/Other-FP4 is not known" in other.skipped[0]


@pytest.mark.django_db
def test_the_command_names_what_a_guide_import_is_missing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CommandError, match="--title, --commit, --date and --upstream-path"):
        call_command("import_trtllm", str(GUIDE_PATH), guide=True)
    empty = tmp_path / "empty.md"
    empty.write_text("# nothing\n")
    with pytest.raises(CommandError, match="no trtllm-bench report"):
        call_command("import_trtllm", str(empty), guide=True, title="t", commit="0" * 40, date="2025-07-01",
                     upstream_path="docs/x.md")  # fmt: skip
    with pytest.raises(LabTableError, match="file not found"):
        trtllm_guide_import_file(path=tmp_path / "missing.md", guide=GUIDE)
