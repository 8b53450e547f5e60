"""TensorRT-LLM's current performance overview (llm/data/trtllm/v1.1, the developer-guide layout):
its per-GPU tables, attention data-parallel (DEP) columns and the models they land on, on the
real rows the serving model is checked against."""

from __future__ import annotations

import pytest

from llm.models import ServingPoint
from llm.selectors.serving import serving_points_for_fit
from llm.services.trtllm_import import BUNDLED_DIR, BUNDLED_FILES, trtllm_import_file
from llm.serving.shapes import MODEL_SHAPES
from llm.trtllm import trtllm_parse
from tests.world import LLM_WORLD, world_build

CURRENT = next(f for f in BUNDLED_FILES if f.directory == "v1.1")
# The references the serving model is checked against: (model, GPU, parallelism, precision) ->
# output tokens/s per GPU at 1000/1000.
REFERENCES = {
    ("deepseek-r1", "H200", "DEP8", "fp8"): 1627,
    ("deepseek-r1", "B200", "DEP4", "fp4"): 6463,
    ("gpt-oss-120b", "H100", "DEP4", "fp8"): 4685,
    ("gpt-oss-120b", "H200", "TP1", "fp8"): 6868,
    ("gpt-oss-120b", "B200", "DEP2", "fp4"): 25943,
    ("qwen3-235b-a22b", "H200", "DEP4", "fp8"): 3288,
    ("qwen3-235b-a22b", "H100", "DEP8", "fp8"): 1932,
}


def _rows():
    return trtllm_parse((BUNDLED_DIR / "v1.1" / "perf-overview.md").read_text(encoding="utf-8"), default_version="1.1")


def test_the_current_tables_read_per_gpu_with_their_parallelism():
    rows = _rows()
    assert len(rows) == 150 and all(r.per_gpu and r.table == "throughput" for r in rows)
    found = {(r.model, r.gpu_name, r.parallelism, r.precision): r for r in rows
             if (r.input_tokens, r.output_tokens) == (1000, 1000)}  # fmt: skip
    for key, value in REFERENCES.items():
        assert found[key].tokens_per_s_per_gpu == value, key
    dep8 = found[("deepseek-r1", "H200", "DEP8", "fp8")]
    # DEP8: attention data-parallel, the experts spread over the same eight GPUs.
    assert (dep8.gpu_count, dep8.expert_parallel, dep8.attention_data_parallel) == (8, 8, True)
    assert dep8.model_name == "Deepseek R1 0528"  # the 0528 checkpoint of DeepSeek-R1's architecture
    tp1 = found[("gpt-oss-120b", "H200", "TP1", "fp8")]
    assert (tp1.gpu_count, tp1.expert_parallel, tp1.attention_data_parallel) == (1, 1, False)
    # The RTX tables name their GPU in the heading: "Qwen3 235B A22B - RTX 6000 Pro Blackwell Server Edition".
    rtx = found[("qwen3-235b-a22b", "RTX 6000 Pro Blackwell Server Edition", "DEP2,PP2", "fp4")]
    assert (rtx.gpu_count, rtx.tokens_per_s_per_gpu, rtx.model_name) == (4, 1731, "Qwen3 235B A22B")
    # Models without a shape stay unmapped rather than guessed (Llama 4 Maverick, Qwen3 30B).
    assert {r.model_name for r in rows if r.model is None} == {"LLaMA v4 Maverick", "Qwen3 30B A3B"}
    assert MODEL_SHAPES["qwen3-235b-a22b"].is_moe and MODEL_SHAPES["qwen3-235b-a22b"].experts == 128


@pytest.mark.django_db
def test_the_references_land_as_serving_points_and_stay_out_of_a_tensor_parallel_fit():
    world_build(rows=LLM_WORLD)
    summary = trtllm_import_file(path=BUNDLED_DIR / "v1.1" / "perf-overview.md", release=CURRENT.release,
                                 commit=CURRENT.commit, dates=CURRENT.dates, upstream_path=CURRENT.upstream_path,
                                 refresh_aggregates=False, refit=False)  # fmt: skip
    assert summary.results_written == 150 and not summary.unmatched
    points = ServingPoint.objects.filter(source_kind="trtllm", input_tokens=1000, output_tokens=1000)
    slugs = {"H200": "h200-sxm-141-gb", "H100": "h100-sxm5-80-gb", "B200": "b200"}
    for (model, gpu, parallelism, precision), value in REFERENCES.items():
        point = points.get(model=model, gpu__slug=slugs[gpu], weight_precision_stated=precision,
                           source_title__contains=f" {parallelism} ")  # fmt: skip
        assert point.tokens_per_s_per_gpu == value
        # gpt-oss's "(FP8)" Hopper columns ran OpenAI's MXFP4 checkpoint (the file's FP8 list names
        # no gpt-oss; "Hopper: use TRITON"): corrected, with the file as the citation.
        hopper_gpt_oss = model.startswith("gpt-oss") and gpu in ("H100", "H200")
        assert (point.weight_precision, point.precision_status) == (
            ("fp4", "corrected") if hopper_gpt_oss else (precision, "stated"))  # fmt: skip
        assert point.source_url.endswith("/585c756579dc4d01f21fc13c2f604cdb461ac4f0/docs/source/developer-guide/"
                                         "perf-overview.md")  # fmt: skip
        params = point.result.params
        assert params["attention_data_parallel"] is True if parallelism.startswith("DEP") else (
            "attention_data_parallel" not in params)  # fmt: skip
    dep = points.get(model="deepseek-r1", gpu__slug="h200-sxm-141-gb")
    assert dep.gpu_count == 8 and dep.result.params["expert_parallel"] == 8 and dep.date_estimated
    # An attention data-parallel run is fitted as DEP (experts over the 8 GPUs, attention on each),
    # never as TP8.
    fitted = serving_points_for_fit()
    dep_fitted = [p for p in fitted if "deepseek-r1" in p.label and "H200" in p.label]
    assert dep_fitted and all(p.workload.ep == 8 and p.workload.tp == 1 for p in dep_fitted)
    assert any("gpt-oss-120b fp4" in p.label and "H200" in p.label for p in fitted)  # TP1 stays in
