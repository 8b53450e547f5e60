"""The serving model against NVIDIA's published TensorRT-LLM throughputs (llm/data/trtllm/, imported as
serving points): Llama 3.1 70B FP8 on one and two H100s and H200s, and 405B FP8 on eight, at the
published 1,000-token prompts and answers, each configuration left out of the fit that estimates it."""

from __future__ import annotations

import pytest

from llm.selectors.serving import serving_points_for_fit
from llm.services.trtllm_import import trtllm_import_bundled
from llm.serving.fit import constants_fit, predict
from tests.world import LLM_WORLD, world_build

pytestmark = pytest.mark.django_db
REFERENCES = (
    ("llama-3.1-70b", "h100-sxm5-80-gb", 1),
    ("llama-3.1-70b", "h100-sxm5-80-gb", 2),
    ("llama-3.1-70b", "h200-sxm-141-gb", 1),
    ("llama-3.1-70b", "h200-sxm-141-gb", 2),
    ("llama-3.1-405b", "h100-sxm5-80-gb", 8),
    ("llama-3.1-405b", "h200-sxm-141-gb", 8),
)


def test_fp8_70b_and_405b_land_within_25_percent_of_tensorrt_llm_left_out_of_the_fit() -> None:
    world_build(rows=LLM_WORLD)
    trtllm_import_bundled(refit=False)
    points = serving_points_for_fit()
    checked = 0
    for model, gpu, tp in REFERENCES:

        def configuration(p, model=model, gpu=gpu, tp=tp):
            return p.model_key == model and p.gpu_key == gpu and p.workload.tp == tp and p.engine == "tensorrt-llm"

        references = [
            p for p in points
            if configuration(p) and p.scenario == "offline" and p.workload.weight_precision == "fp8"
            and (p.workload.input_len, p.workload.output_len) == (1000, 1000)
        ]  # fmt: skip
        assert references, (model, gpu, tp)
        without = constants_fit(
            [p for p in points if not configuration(p)]
        )  # from the defaults, as the full fit starts
        for p in references:
            estimate = predict(p, without)
            assert estimate is not None, p.label
            assert estimate.tokens_per_s_per_gpu == pytest.approx(p.tokens_per_s_per_gpu, rel=0.25), p.label
            checked += 1
    assert checked >= len(REFERENCES)
