"""TensorRT-LLM's current perf overview (llm/data/trtllm/v1.1) for mixtures of experts served with
the experts spread and attention data parallel (DEPn), each configuration left out of the fit
that estimates it, within 25 %.

Each left-out fit starts from the defaults, as the fit on every point does: started from that
fit's result, a refit keeps what only the left-out rows determine. Leaving a configuration out
removes the overview's rows of it at every length; other publications' runs of the same
configuration stay in (the DeepSeek-R1 guide's H200 DEP8 run at 1,024/2,048 tokens and 128
requests per rank, llm/data/trtllm/guides): they are measurements the site holds, not the figure
being estimated.

- DeepSeek-R1 H200 DEP8 FP8 (1,627): its checkpoint is scaled per 128x128 block, which Hopper's
  matrix units do not apply; the decode share that prices it (llm/serving/physics.py) is pinned
  by the guide's run, found by the fit's profile of that share.
- gpt-oss-120b H100 DEP4 (4,685): the overview's "(FP8)" Hopper columns ran OpenAI's MXFP4
  checkpoint (corrected, llm/data/precision_corrections.json), 4-bit weights dequantised to 16
  bits, whose decode share the H200 and gpt-oss-20b rows pin.
- gpt-oss on Blackwell (B200 DEP2, 25,943): the same checkpoint computes with 8-bit activations
  there (W4A8), its sliding-window layers keep 128 tokens, and trtllm-bench holds a rank at 2,048
  sequences for a format it does not size (tests/test_llm_serving_gpt_oss.py). Priced without
  these, the gpt-oss rows pull the constants they share with the other DEP runs far enough that
  Qwen3-235B H100 DEP8 (1,932) reads about +31 % left out, although the overview measures it only
  4 % ahead of TP8 on the same GPUs."""

from __future__ import annotations

import pytest

from llm.selectors.serving import serving_points_for_fit
from llm.services.trtllm_import import trtllm_import_bundled
from llm.serving.fit import constants_fit, predict
from tests.world import LLM_WORLD, world_build

pytestmark = pytest.mark.django_db
REFERENCES = (  # model, GPU, GPUs, experts spread over, published output tokens/s per GPU at 1k/1k
    pytest.param("deepseek-r1", "h200-sxm-141-gb", 8, 8, 1627, id="deepseek-r1-h200-dep8"),
    pytest.param("deepseek-r1", "b200", 4, 4, 6463, id="deepseek-r1-b200-dep4"),
    pytest.param("gpt-oss-120b", "h100-sxm5-80-gb", 4, 4, 4685, id="gpt-oss-120b-h100-dep4"),
    pytest.param("gpt-oss-120b", "h200-sxm-141-gb", 1, 1, 6868, id="gpt-oss-120b-h200-tp1"),
    pytest.param("gpt-oss-120b", "b200", 2, 2, 25943, id="gpt-oss-120b-b200-dep2"),
    pytest.param("qwen3-235b-a22b", "h200-sxm-141-gb", 4, 4, 3288, id="qwen3-235b-h200-dep4"),
    pytest.param("qwen3-235b-a22b", "h100-sxm5-80-gb", 8, 8, 1932, id="qwen3-235b-h100-dep8"),
)


@pytest.mark.parametrize(("model", "gpu", "count", "ep", "value"), REFERENCES)
def test_dep_reference_lands_within_25_percent_left_out_of_the_fit(model, gpu, count, ep, value) -> None:
    world_build(rows=LLM_WORLD)
    trtllm_import_bundled(refit=False)
    points = serving_points_for_fit()

    def configuration(p) -> bool:
        return p.model_key == model and p.gpu_key == gpu and p.gpu_count == count and p.source == "trtllm"

    reference = [p for p in points if configuration(p) and abs(p.tokens_per_s_per_gpu - value) < 1]
    assert len(reference) == 1, (model, gpu)
    assert reference[0].workload.ep == ep
    without = constants_fit([p for p in points if not configuration(p)])  # from the defaults, as the full fit starts
    estimate = predict(reference[0], without)
    assert estimate is not None
    assert estimate.tokens_per_s_per_gpu == pytest.approx(value, rel=0.25), (model, gpu)


def test_deepseek_r1_h200_dep8_lands_in_the_fit_on_every_point() -> None:
    """What the site shows for DeepSeek-R1 on H200: with its rows in the fit, the block-scale decode
    share lands the published run within 25 % (without that share it read about +62 %)."""
    world_build(rows=LLM_WORLD)
    trtllm_import_bundled(refit=False)
    points = serving_points_for_fit()
    fitted = constants_fit(points)
    reference = [
        p
        for p in points
        if p.model_key == "deepseek-r1" and p.gpu_key == "h200-sxm-141-gb" and p.gpu_count == 8
        and p.source == "trtllm" and abs(p.tokens_per_s_per_gpu - 1627) < 1
    ]  # fmt: skip
    assert len(reference) == 1
    assert fitted.block_scale_decode_share < 0.9  # the share the run is landed by, not a coincidence
    estimate = predict(reference[0], fitted)
    assert estimate is not None and estimate.tokens_per_s_per_gpu == pytest.approx(1627, rel=0.25)
