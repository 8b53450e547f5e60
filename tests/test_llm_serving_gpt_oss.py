"""gpt-oss as it is served: its sliding-window layers, its MXFP4 experts' 8-bit activations on a
GPU with FP4 units, and the batch trtllm-bench leaves a checkpoint it does not size at."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llm.selectors.serving import serving_points_for_fit
from llm.services.trtllm_import import trtllm_import_bundled
from llm.serving.fit import predict
from llm.serving.physics import (
    Hardware,
    ServingConstants,
    Workload,
    cached_layer_tokens,
    kv_bytes_per_sequence_per_gpu,
    kv_bytes_per_token_per_gpu,
    matrix_peak,
    max_concurrency,
    prefill_peak_seconds,
)
from llm.serving.shapes import MODEL_SHAPES
from llm.trtllm import BENCH_DEFAULT_MAX_BATCH
from tests.world import LLM_WORLD, world_build

B200 = Hardware(179, 8000, {"fp4": 9000, "fp8": 4500, "bf16": 2250}, "blackwell")
H200 = Hardware(141, 4800, {"fp8": 1979, "bf16": 989}, "hopper")
GPT_OSS = MODEL_SHAPES["gpt-oss-120b"]


def _gpt_oss(input_len: int, output_len: int, **kw: object) -> Workload:
    return Workload(GPT_OSS, "fp4", 0.5625, input_len, output_len, engine="tensorrt-llm", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("context", [1, 64, 128, 129, 2000, 33_792])
def test_a_sliding_window_layer_keeps_at_most_its_window(context: int) -> None:
    """18 of gpt-oss-120b's 36 layers attend over 128 tokens: up to the window a sequence keeps what
    full attention keeps, beyond it half the layers stop growing."""
    w = _gpt_oss(context, 0)
    full = context * kv_bytes_per_token_per_gpu(w, B200)
    assert cached_layer_tokens(GPT_OSS, context) == 18 * context + 18 * min(context, 128)
    assert kv_bytes_per_sequence_per_gpu(w, B200, context) == pytest.approx(
        full if context <= 128 else full / 2 + 18 * 128 * full / context / 36
    )
    dense = MODEL_SHAPES["llama-3.1-8b"]
    assert cached_layer_tokens(dense, context) == dense.layers * context


def test_the_window_holds_more_sequences_and_shortens_a_long_prompts_attention() -> None:
    windowless = replace(GPT_OSS, sliding_window=0, sliding_layers=0)
    c = ServingConstants()
    w = _gpt_oss(1024, 8192, ep=2)
    assert max_concurrency(w, B200, c) > 1.8 * max_concurrency(replace(w, model=windowless), B200, c)
    short, long = _gpt_oss(100, 100), _gpt_oss(32_768, 1024)
    assert prefill_peak_seconds(short, B200, 100) == pytest.approx(
        prefill_peak_seconds(replace(short, model=windowless), B200, 100)
    )
    assert prefill_peak_seconds(long, B200, 32_768) < 0.8 * prefill_peak_seconds(
        replace(long, model=windowless), B200, 32_768
    )


def test_mxfp4_experts_compute_at_the_fp8_rate_where_the_gpu_has_fp4_units() -> None:
    """W4A8 on Blackwell (TensorRT-LLM's default there), W4A16 on Hopper; an NVFP4 checkpoint
    (DeepSeek-R1's) computes at the FP4 rate."""
    assert matrix_peak(_gpt_oss(1024, 1024), B200) == (4500, "fp8")
    assert matrix_peak(_gpt_oss(1024, 1024), H200) == (989, "bf16")
    r1 = Workload(MODEL_SHAPES["deepseek-r1"], "fp4", 0.5625, 1024, 1024, engine="tensorrt-llm", ep=4)
    assert matrix_peak(r1, B200) == (9000, "fp4")
    assert matrix_peak(replace(_gpt_oss(1024, 1024), weight_precision="fp8", bytes_per_weight=1.0), B200) == (
        4500,
        "fp8",
    )


@pytest.mark.django_db
def test_trtllm_bench_runs_the_mxfp4_checkpoint_at_its_default_batch() -> None:
    """The overview's gpt-oss rows hold at most 2,048 sequences a rank, where the cache would
    hold more (gpt-oss-20b on one B200 at 1,024/1,024); other models' rows are not capped."""
    world_build(rows=LLM_WORLD)
    trtllm_import_bundled(refit=False)
    points = serving_points_for_fit()
    capped = [p for p in points if p.source == "trtllm" and p.scenario == "offline" and p.max_batch]
    assert capped and {p.model_key for p in capped} == {"gpt-oss-20b", "gpt-oss-120b"}
    assert {p.max_batch for p in capped} == {BENCH_DEFAULT_MAX_BATCH}
    row = next(
        p
        for p in capped
        if p.model_key == "gpt-oss-20b"
        and p.gpu_key == "b200"
        and (p.workload.input_len, p.workload.output_len) == (1024, 1024)
    )
    c = ServingConstants()
    assert max_concurrency(row.workload, row.hardware, c) > BENCH_DEFAULT_MAX_BATCH
    got = predict(row, c)
    assert got is not None and got.concurrency == BENCH_DEFAULT_MAX_BATCH
