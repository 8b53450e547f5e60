"""The serving model's fit and its held-out errors (pure: no database)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llm.serving.fit import (
    MeasuredPoint,
    constants_fit,
    error_for,
    error_table,
    held_out,
    predict,
)
from llm.serving.physics import AllReduce, Hardware, ServingConstants, Workload, decode_step
from llm.serving.shapes import MODEL_SHAPES

H100 = Hardware(80.0, 3350.0, {"bf16": 989.4, "fp16": 989.4, "fp8": 1979.0}, "hopper")
H200 = Hardware(141.0, 4800.0, {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}, "hopper")
RTX4090 = Hardware(24.0, 1008.0, {"bf16": 165.2, "fp16": 165.2, "fp8": 330.3}, "consumer")
NVLINK = AllReduce(bus_gbs=370.0, source="datasheet")
TRUE = ServingConstants(
    bandwidth_share={"hopper": 0.75, "consumer": 0.65},
    compute_share={"hopper": 0.45, "consumer": 0.4},
    engine_bandwidth={"tensorrt-llm": 1.0, "llama.cpp": 1.0},
    engine_compute={"tensorrt-llm": 1.0, "llama.cpp": 1.0},
    overhead_ms={"tensorrt-llm": 0.4, "llama.cpp": 0.8},
)


def _points() -> list[MeasuredPoint]:
    """Points the model itself makes with TRUE: offline, at a latency bound and at concurrency 1."""
    out = []
    for gpu, hw in (("h100", H100), ("h200", H200)):
        for model, tp in (("llama-3.1-8b", 1), ("llama-3.1-70b", 2), ("llama-3.1-405b", 8)):
            for isl, osl in ((128, 2048), (1000, 1000), (2048, 128), (5000, 500)):
                w = Workload(MODEL_SHAPES[model], "fp8", 1.0, isl, osl, tp=tp, engine="tensorrt-llm")
                p = MeasuredPoint(gpu, model, hw, w, "offline", 1.0, gpu_count=tp, link=NVLINK)
                got = predict(p, TRUE)
                assert got is not None
                out.append(MeasuredPoint(gpu, model, hw, w, "offline", got.tokens_per_s_per_gpu, gpu_count=tp,
                                         link=NVLINK))  # fmt: skip
                server = MeasuredPoint(gpu, model, hw, w, "server", 1.0, tokens_per_s_per_user=20.0, gpu_count=tp,
                                       link=NVLINK)  # fmt: skip
                got = predict(server, TRUE)
                if got is not None:
                    out.append(MeasuredPoint(gpu, model, hw, w, "server", got.tokens_per_s_per_gpu,
                                             tokens_per_s_per_user=20.0, gpu_count=tp, link=NVLINK))  # fmt: skip
    for model in ("llama-3.1-8b", "llama-2-7b", "llama-3.2-3b"):
        w = Workload(MODEL_SHAPES[model], "int4", 0.61, 512, 128, engine="llama.cpp")
        p = MeasuredPoint("rtx4090", model, RTX4090, w, "single-stream", 1.0, 1.0, concurrency=1)
        got = predict(p, TRUE)
        assert got is not None
        out.append(MeasuredPoint("rtx4090", model, RTX4090, w, "single-stream", got.tokens_per_s_per_gpu,
                                 got.tokens_per_s_per_user, concurrency=1))  # fmt: skip
    return out


def test_fit_recovers_the_constants_the_points_were_made_with() -> None:
    points = _points()
    fitted = constants_fit(points)
    for p in points:
        got = predict(p, fitted)
        assert got is not None
        # Points at a per-user target are fitted on a grid of batches: a few per cent apart at most.
        assert got.tokens_per_s_per_gpu == pytest.approx(p.tokens_per_s_per_gpu, rel=0.05)


def test_decode_microbenchmark_points_are_fitted_as_their_decode_steps() -> None:
    """Our client prefills its prompts before the clock starts: points made of decode steps alone
    (512-token prompts, 128 steps, batch 1 to 128) give back the bandwidth share they were made
    with. Fitted as whole requests, their prefill (a second per 128 prompts at these shares) would
    have to be paid for with a faster GPU."""
    w = Workload(MODEL_SHAPES["llama-3.1-8b"], "bf16", 2.0, 512, 128, engine="pytorch")
    truth = replace(TRUE, engine_bandwidth={"pytorch": 1.0}, engine_compute={"pytorch": 1.0},
                    overhead_ms={"pytorch": 0.4})  # fmt: skip
    points = []
    for batch in (1, 8, 32, 64, 128):
        step = decode_step(w=w, hw=H100, c=truth, batch=batch, link=NVLINK).total
        points.append(MeasuredPoint("h100", "llama-3.1-8b", H100, w, "concurrency", batch / step,
                                    tokens_per_s_per_user=1 / step, concurrency=batch, decode_only=True))  # fmt: skip
    fitted = constants_fit(points)
    for p in points:
        got = predict(p, fitted)
        assert got is not None and got.tokens_per_s_per_gpu == pytest.approx(p.tokens_per_s_per_gpu, rel=0.05)
    effective = fitted.bandwidth_share["hopper"] * fitted.engine_bandwidth["pytorch"]
    assert effective == pytest.approx(0.75, rel=0.1)


def test_held_out_errors_fill_the_table_and_an_estimate_gets_its_error() -> None:
    points = _points()
    results = held_out(points, by="model", base=ServingConstants()) + held_out(
        points, by="gpu", base=ServingConstants()
    )
    table = error_table(results)
    assert set(table) == {"gpu", "model"}
    assert "scenario:offline" in table["model"] and "engine:tensorrt-llm" in table["model"]
    # Leaving the only consumer GPU out leaves its hardware class unmeasured: outside the range.
    assert table["gpu"]["engine:llama.cpp"]["outside"]["n"] == 3
    # The model made these points: held out, it still estimates them closely.
    assert table["model"]["scenario:offline"]["inside"]["median_pct"] < 5
    assert error_for(table, scenario="offline", engine="tensorrt-llm", inside=True) is not None
    assert error_for(table, scenario="nonesuch", engine="nonesuch", inside=True) is not None  # falls back to all


def test_a_checked_fit_refits_once_per_held_out_group_and_reads_its_error_table_off_the_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import llm.serving.fit as fit_module
    from llm.serving.heldout import serving_fit_checked

    points = _points()
    calls = []
    solve = fit_module.least_squares

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return solve(*args, **kwargs)

    monkeypatch.setattr(fit_module, "least_squares", counted)
    fit, checks = serving_fit_checked(points, cutoff="2025-09-01")
    gpus, models = {p.gpu_key for p in points}, {p.model_key for p in points}
    # One fit on every point, one per GPU left out, one per model left out (the points carry no
    # source or date, so neither the source nor the time check refits).
    assert len(calls) == 1 + len(gpus) + len(models)
    assert {r.check for r in checks} == {"gpu", "model"}
    calls.clear()
    start = ServingConstants()
    again = held_out(points, by="gpu", base=start) + held_out(points, by="model", base=start)
    assert fit.errors == error_table(again)


def test_a_measured_per_user_rate_the_model_cannot_reach_is_scored_at_its_one_stream() -> None:
    w = Workload(MODEL_SHAPES["llama-3.1-8b"], "bf16", 2.0, 467, 256, engine="tensorrt-llm")
    one = predict(MeasuredPoint("h100", "llama-3.1-8b", H100, w, "offline", 1.0, concurrency=None), TRUE)
    fast = MeasuredPoint("h100", "llama-3.1-8b", H100, w, "server", 500.0, tokens_per_s_per_user=10_000.0)
    got = predict(fast, TRUE)
    assert got is not None and one is not None
    assert got.concurrency == 1 and got.tokens_per_s_per_user < 10_000.0


def test_an_engine_class_with_no_mixture_of_experts_among_the_points_has_no_per_layer_figure_of_its_own() -> None:
    fitted = constants_fit(_points())  # dense models only
    assert dict(fitted.moe_layer_overhead_us) == {}


def test_a_block_scale_share_its_rows_pin_is_found_even_where_they_are_memory_bound_at_the_start() -> None:
    """DeepSeek-R1's FP8 blocks on Hopper: a run at a known batch whose step the default share
    leaves memory-bound. Its residual is flat in the share there (max(memory, compute)), so only
    the profile over the share's range finds the value it was made with; a larger batch, not
    among the fitted points, is then estimated as that value prices it."""
    # At 0.3 the run's matrices (the share does not touch its attention) make its step compute-bound
    # by a third; at the start share it is memory-bound.
    true = replace(TRUE, block_scale_decode_share=0.3, expert_parallel_share=0.7,
                   moe_layer_overhead_us={"tensorrt-llm": 20.0})  # fmt: skip
    r1 = Workload(MODEL_SHAPES["deepseek-r1"], "fp8", 1.0, 1024, 2048, engine="tensorrt-llm", ep=8)
    qwen = Workload(MODEL_SHAPES["qwen3-235b-a22b"], "fp8", 1.0, 1024, 1024, engine="tensorrt-llm", ep=4)

    def made(w: Workload, model: str, concurrency: int) -> MeasuredPoint:
        probe = MeasuredPoint("h200", model, H200, w, "concurrency", 1.0, 1.0, concurrency=concurrency,
                              gpu_count=w.ep, link=NVLINK)  # fmt: skip
        got = predict(probe, true)
        assert got is not None
        return replace(probe, tokens_per_s_per_gpu=got.tokens_per_s_per_gpu,
                       tokens_per_s_per_user=got.tokens_per_s_per_user)  # fmt: skip

    # Experts spread without block scales (Qwen3's per-tensor FP8) pin the spread share and the
    # per-layer time; DeepSeek-R1 at a small batch and at the guide's 128 per rank.
    moe = [made(qwen, "qwen3-235b-a22b", 4 * b) for b in (1, 16, 64, 256)] + [made(r1, "deepseek-r1", 8)]
    guide, larger = made(r1, "deepseek-r1", 8 * 128), made(r1, "deepseek-r1", 8 * 384)
    step = decode_step(w=r1, hw=H200, c=replace(true, block_scale_decode_share=1.0), batch=128, link=NVLINK)
    assert step.memory_s > step.compute_s  # at the start the run is memory-bound: no gradient in the share
    fitted = constants_fit([*_points(), *moe, guide])
    assert fitted.block_scale_decode_share == pytest.approx(0.3, abs=0.08)
    estimate = predict(larger, fitted)
    assert estimate is not None and estimate.tokens_per_s_per_gpu == pytest.approx(larger.tokens_per_s_per_gpu, rel=0.1)
