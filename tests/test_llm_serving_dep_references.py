"""TensorRT-LLM's current perf overview (llm/data/trtllm/v1.1) for mixtures of experts served with
the experts spread and attention data parallel (DEPn), each configuration left out of the fit
that estimates it, within 25 %.

Each left-out fit starts from the defaults, as the fit on every point does: started from that
fit's result, a refit keeps what only the left-out rows determine.

Two Hopper runs are still off left out and marked so (strict: the mark fails the day they land):
- DeepSeek-R1 H200 DEP8 FP8 (1,627 tokens/s per GPU). Its checkpoint is scaled per 128x128 block,
  and Hopper's tensor cores do not apply the scales: its decode runs at a fitted share of the FP8
  rate (llm/serving/physics.py), which lands it within 25 % in the fit on every point (test
  below). But only these rows determine that share; left out, it stays at 1 and the run reads
  about +69 %.
- gpt-oss-120b H100 DEP4 (4,685, read about +110 %). gpt-oss on Hopper runs its MXFP4 checkpoint
  with a 16-bit cache (the overview's options: "Hopper: use auto", "Hopper: use TRITON"); priced
  so, and with its 128-token sliding-window layers, every gpt-oss row on Hopper at 1k/1k reads
  about twice its measurement while the Blackwell rows land: a cost of that expert path the model
  does not have. The block-scale decode share does not cover it: given to gpt-oss's rows too, the
  fit pulls it to its bound and DeepSeek-R1's H200 run reads -40 %."""

from __future__ import annotations

import pytest

from llm.selectors.serving import serving_points_for_fit
from llm.services.trtllm_import import trtllm_import_bundled
from llm.serving.fit import constants_fit, predict
from tests.world import LLM_WORLD, world_build

pytestmark = pytest.mark.django_db
HOPPER_MISS = pytest.mark.xfail(strict=True, reason="the model overestimates this Hopper DEP run left out (module doc)")
REFERENCES = (  # model, GPU, GPUs, experts spread over, published output tokens/s per GPU at 1k/1k
    pytest.param("deepseek-r1", "h200-sxm-141-gb", 8, 8, 1627, marks=HOPPER_MISS, id="deepseek-r1-h200-dep8"),
    pytest.param("deepseek-r1", "b200", 4, 4, 6463, id="deepseek-r1-b200-dep4"),
    pytest.param("gpt-oss-120b", "h100-sxm5-80-gb", 4, 4, 4685, marks=HOPPER_MISS, id="gpt-oss-120b-h100-dep4"),
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
