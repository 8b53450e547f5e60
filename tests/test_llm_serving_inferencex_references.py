"""The serving model against InferenceX's DeepSeek-R1 FP8 8k/1k curves (llm/data/inferencex), each
GPU's runs at those lengths left out of the fit that estimates them.

MI300X: run #119 of the copied file (SGLang, TP8, 32 requests in flight, 2026-05-18): 736.45
input and output tokens/s per GPU, 81.8 output tokens/s per GPU, at a median 22.3 tokens/s per
user (the "725 at 23" the curve shows). B200 "5,857 at 23" is run #390 (dynamo-trt, prefill and
decode on separate GPUs, MTP speculative decoding): neither is a plan the model prices, so it is
not a reference here (SOURCES.md of llm/data/inferencex)."""

from __future__ import annotations

import pytest

from llm.selectors.serving import serving_points_for_fit
from llm.services.inferencex_import import inferencex_import_file
from llm.services.trtllm_import import trtllm_import_bundled
from llm.serving.fit import at_interactivity, constants_fit, predict
from llm.serving.physics import max_concurrency
from tests.world import LLM_WORLD, world_build

pytestmark = pytest.mark.django_db
ISL, OSL = 8192, 1024


def test_mi300x_fp8_8k_1k_lands_within_25_percent_left_out_of_the_fit() -> None:
    world_build(rows=LLM_WORLD)
    trtllm_import_bundled(refit=False)
    inferencex_import_file(refresh_aggregates=False, refit=False)
    points = serving_points_for_fit()

    def configuration(p) -> bool:
        return (
            p.source == "inferencex" and p.gpu_key == "radeon-instinct-mi300x" and p.model_key == "deepseek-r1"
            and (p.workload.input_len, p.workload.output_len) == (ISL, OSL)
        )  # fmt: skip

    runs = [p for p in points if configuration(p)]
    reference = [p for p in runs if p.concurrency == 32]
    assert len(reference) == 1 and reference[0].tokens_per_s_per_gpu == pytest.approx(736.45 * OSL / (ISL + OSL), 0.01)
    without = constants_fit([p for p in points if not configuration(p)])  # from the defaults, as the full fit starts
    p = reference[0]
    at_its_load = predict(p, without)
    assert at_its_load is not None
    assert at_its_load.tokens_per_s_per_gpu == pytest.approx(p.tokens_per_s_per_gpu, rel=0.25)
    # The same run read as the curve reads it: the most tokens/s per GPU at its tokens/s per user.
    limit = max_concurrency(p.workload, p.hardware, without)
    at_its_speed = at_interactivity(w=p.workload, hw=p.hardware, c=without, link=p.link,
                                    target=p.tokens_per_s_per_user, limit=limit)  # fmt: skip
    assert at_its_speed is not None
    assert at_its_speed.tokens_per_s_per_gpu == pytest.approx(p.tokens_per_s_per_gpu, rel=0.25)
