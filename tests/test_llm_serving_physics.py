"""The serving model's physics over the curated catalogue's GPUs (pure: no database).

Constants are drawn by hypothesis within the fit's bounds, so the properties hold for any
constants the fit can store, not only for today's.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from llm.serving.physics import (
    AllReduce,
    Hardware,
    ServingConstants,
    Workload,
    attention_width,
    curve_at_interactivity,
    decode_step,
    hardware_class,
    max_concurrency,
    point_at,
    prefill_peak_seconds,
    roofline_tokens_per_s_per_gpu,
    serving_curve_compute,
)
from llm.serving.shapes import MODEL_SHAPES

CATALOGUE = Path(__file__).resolve().parent.parent / "catalog" / "data" / "curated" / "gpus.toml"


def _catalogue() -> list[tuple[str, Hardware]]:
    data = tomllib.loads(CATALOGUE.read_text(encoding="utf-8"))
    out = []
    for g in data["gpu"]:
        specs, tensor = g.get("specs", {}), g.get("tensor", {})
        memory = specs.get("memory_gib", {}).get("value")
        bandwidth = specs.get("memory_bandwidth_gbs", {}).get("value")
        peaks = {k: float(v["value"]) for k, v in tensor.items() if isinstance(v, dict) and v.get("value")}
        if memory and bandwidth and peaks:
            cls = hardware_class(architecture=g.get("architecture", ""), segment=g.get("segment", ""))
            out.append((g["slug"], Hardware(float(memory), float(bandwidth), peaks, cls)))
    return out


GPUS = _catalogue()
GPU_IDS = [slug for slug, _ in GPUS]
FP8_GPUS = [(slug, hw) for slug, hw in GPUS if hw.supports("fp8")]
ENGINES = ("tensorrt-llm", "vllm-sglang", "llama.cpp", "pytorch")
CLASSES = ("hopper", "blackwell", "ampere", "ada", "cdna3", "consumer", "other")
share = st.floats(0.05, 1.0)
constants_strategy = st.builds(
    ServingConstants,
    bandwidth_share=st.fixed_dictionaries(dict.fromkeys(CLASSES, share)),
    compute_share=st.fixed_dictionaries(dict.fromkeys(CLASSES, share)),
    engine_bandwidth=st.fixed_dictionaries({k: st.floats(0.3, 2.0) for k in ENGINES}),
    engine_compute=st.fixed_dictionaries({k: st.floats(0.3, 2.0) for k in ENGINES}),
    overhead_ms=st.fixed_dictionaries({k: st.floats(0.0, 3.0) for k in ENGINES}),
)
NVLINK = AllReduce(bus_gbs=370.0, latency_s=6e-6, source="datasheet")
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _workload(model: str, precision: str, *, tp: int = 1, engine: str = "vllm-sglang",
              input_len: int = 1024, output_len: int = 1024) -> Workload:  # fmt: skip
    return Workload(MODEL_SHAPES[model], precision, 1.0 if precision == "fp8" else 2.0, input_len, output_len,
                    tp=tp, engine=engine)  # fmt: skip


def test_catalogue_has_gpus_to_test_on() -> None:
    assert len(GPUS) >= 40 and len(FP8_GPUS) >= 10
    assert "h100-sxm5-80-gb" in GPU_IDS or any("h100" in s for s in GPU_IDS)


@SETTINGS
@given(
    gpu=st.sampled_from(FP8_GPUS),
    c=constants_strategy,
    model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b"]),
    tp=st.sampled_from([1, 2, 4, 8]),
    engine=st.sampled_from(ENGINES),
    lengths=st.sampled_from([(128, 128), (1024, 1024), (2048, 128), (128, 2048), (5000, 500)]),
    target=st.sampled_from([None, 5.0, 10.0, 20.0, 50.0, 100.0]),
)
def test_fp8_never_below_bf16_on_a_gpu_with_fp8(gpu, c, model, tp, engine, lengths, target) -> None:
    _, hw = gpu
    fp8 = serving_curve_compute(w=_workload(model, "fp8", tp=tp, engine=engine, input_len=lengths[0],
                                            output_len=lengths[1]), hw=hw, c=c, link=NVLINK)  # fmt: skip
    bf16 = serving_curve_compute(w=_workload(model, "bf16", tp=tp, engine=engine, input_len=lengths[0],
                                             output_len=lengths[1]), hw=hw, c=c, link=NVLINK)  # fmt: skip
    assert fp8.max_concurrency >= bf16.max_concurrency
    if not bf16.fits:
        return
    assert fp8.fits
    # Point by point at the same concurrency, and at the same interactivity target.
    by_b = {p.concurrency: p for p in fp8.points}
    for p in bf16.points:
        if p.concurrency in by_b:
            assert by_b[p.concurrency].tokens_per_s_per_gpu >= p.tokens_per_s_per_gpu * (1 - 1e-9)
            assert by_b[p.concurrency].tokens_per_s_per_user >= p.tokens_per_s_per_user * (1 - 1e-9)
    b_at = curve_at_interactivity(bf16.points, target)
    f_at = curve_at_interactivity(fp8.points, target)
    if b_at is not None:
        assert f_at is not None
        assert f_at.tokens_per_s_per_gpu >= b_at.tokens_per_s_per_gpu * (1 - 1e-9)


@SETTINGS
@given(
    gpu=st.sampled_from(GPUS),
    c=constants_strategy,
    extra_gib=st.floats(1.0, 200.0),
    model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "gpt-oss-120b", "deepseek-r1"]),
    precision=st.sampled_from(["fp8", "bf16"]),
    tp=st.sampled_from([1, 2, 4, 8]),
)
def test_more_memory_or_more_gpus_never_fewer_sequences(gpu, c, extra_gib, model, precision, tp) -> None:
    _, hw = gpu
    w = _workload(model, precision, tp=tp)
    base = max_concurrency(w, hw, c)
    assert max_concurrency(w, replace(hw, memory_gib=hw.memory_gib + extra_gib), c) >= base
    # Sequences of the whole system: a replica of twice the GPUs holds at least as many as two of
    # half the size can't beat it by the weights it stores twice.
    assert max_concurrency(replace(w, tp=tp * 2), hw, c) >= base


@SETTINGS
@given(
    gpu=st.sampled_from(GPUS),
    c=constants_strategy,
    model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "llama-3.1-405b"]),
    precision=st.sampled_from(["fp8", "bf16"]),
    tp=st.sampled_from([1, 2, 4, 8]),
)
def test_no_point_above_the_roofline(gpu, c, model, precision, tp) -> None:
    _, hw = gpu
    w = _workload(model, precision, tp=tp)
    curve = serving_curve_compute(w=w, hw=hw, c=c, link=NVLINK)
    for p in curve.points:
        assert p.tokens_per_s_per_gpu <= roofline_tokens_per_s_per_gpu(w=w, hw=hw, batch=p.concurrency) * (1 + 1e-9)
        # A user's own prefill is not between their tokens: per user is at least the share of the GPUs.
        assert p.tokens_per_s_per_user * p.concurrency / tp >= p.tokens_per_s_per_gpu * (1 - 1e-9)


@SETTINGS
@given(
    gpu=st.sampled_from(GPUS),
    c=constants_strategy,
    model=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b"]),
    tp=st.sampled_from([1, 2, 4]),
    batch=st.integers(1, 256),
    input_len=st.integers(1, 8192),
)
def test_a_decode_microbenchmark_runs_at_its_decode_steps_alone(gpu, c, model, tp, batch, input_len) -> None:
    """Prompts in the cache before the clock starts: tokens/s is the steps' alone, faster than a
    whole request's life (its prefill included) and never above the roofline."""
    _, hw = gpu
    assume(hw.compute_peak("bf16") is not None)  # a GPU with no 16-bit figure has no estimate at 16 bits
    w = _workload(model, "bf16", tp=tp, input_len=input_len, output_len=128)
    step = decode_step(w=w, hw=hw, c=c, batch=batch, link=NVLINK).total
    decode = point_at(w=w, hw=hw, c=c, batch=batch, link=NVLINK, prefill=False)
    whole = point_at(w=w, hw=hw, c=c, batch=batch, link=NVLINK)
    assert decode.tokens_per_s_per_user == pytest.approx(1 / step)
    assert decode.tokens_per_s_per_gpu == pytest.approx(batch / step / tp)
    assert decode.tokens_per_s_per_gpu > whole.tokens_per_s_per_gpu
    assert decode.tokens_per_s_per_user >= whole.tokens_per_s_per_user
    assert decode.tokens_per_s_per_gpu <= roofline_tokens_per_s_per_gpu(w=w, hw=hw, batch=batch) * (1 + 1e-9)


@pytest.mark.parametrize(("kv_bytes", "attention"), [(1.0, "fp8"), (2.0, "bf16")])
def test_attention_computes_at_the_caches_format_never_at_four_bits(kv_bytes, attention) -> None:
    """FP4 weights on a B200: the matrices at the FP4 peak, the attention at FP8 with an 8-bit
    cache and at BF16 with a 16-bit one, in decode and in prefill (no 4-bit attention kernels)."""
    hw = dict(GPUS)["b200"]
    peaks = hw.tensor_tflops
    assert peaks["fp4"] > peaks["fp8"] > peaks["bf16"]
    w = Workload(MODEL_SHAPES["llama-3.1-70b"], "fp4", 0.5625, 8192, 1024, kv_bytes=kv_bytes)
    m, batch = w.model, 64
    matrices = 2.0 * m.active_params_b * 1e9 * batch
    scores = 4.0 * m.layers * attention_width(m) * (8192 + 512) * batch
    step = decode_step(w=w, hw=hw, c=ServingConstants(), batch=batch, link=NVLINK, peak=True)
    assert step.compute_s == pytest.approx((matrices / peaks["fp4"] + scores / peaks[attention]) / 1e12)
    prompt = 2.0 * m.layers * attention_width(m, prefill=True) * 8192 * 8192
    expected = (8192 * 2.0 * m.active_params_b * 1e9 / peaks["fp4"] + prompt / peaks[attention]) / 1e12
    assert prefill_peak_seconds(w, hw, 8192) == pytest.approx(expected)


def _fitted_like() -> ServingConstants:
    """Constants of the size the fit gives (shares of datasheet figures, sub-millisecond overhead)."""
    return ServingConstants(
        bandwidth_share={"consumer": 0.7, "hopper": 0.8},
        compute_share={"consumer": 0.5, "hopper": 0.6},
        overhead_ms={"llama.cpp": 0.5, "vllm-sglang": 0.3, "tensorrt-llm": 0.2},
    )


def test_single_stream_decode_is_bandwidth_bound_on_a_fast_consumer_card() -> None:
    """An 8B model at 4 bits on an RTX 5090 reads ~4.9 GB a token: its speed follows the
    bandwidth (1,792 GB/s), not a fixed cost per layer (which capped it near 200 tok/s)."""
    hw = dict(GPUS)["geforce-rtx-5090"]
    w = Workload(MODEL_SHAPES["llama-3.1-8b"], "int4", 0.61, 512, 128, engine="llama.cpp")
    step = decode_step(w=w, hw=hw, c=_fitted_like(), batch=1, link=NVLINK)
    assert step.bound == "memory bandwidth"
    assert step.memory_s > step.overhead_s
    rtx4090 = decode_step(w=w, hw=dict(GPUS)["geforce-rtx-4090"], c=_fitted_like(), batch=1, link=NVLINK)
    assert 1 / step.total > 1.4 / rtx4090.total  # 1,792 vs 1,008 GB/s


@pytest.mark.parametrize(("slug", "hw"), GPUS, ids=GPU_IDS)
def test_one_stream_needs_far_less_compute_than_bandwidth_on_every_catalogue_gpu(slug, hw) -> None:
    """At concurrency 1 a decode step does about one multiply-add per weight byte: on every GPU
    of the catalogue its time at the datasheet peaks is set by the bytes, many times over."""
    for precision in ("bf16", "fp8"):
        w = _workload("llama-3.1-8b", precision)
        if hw.compute_peak(precision) is None:
            continue
        step = decode_step(w=w, hw=hw, c=_fitted_like(), batch=1, link=NVLINK, peak=True)
        assert step.memory_s > 5 * step.compute_s, slug
        fitted = decode_step(w=w, hw=hw, c=_fitted_like(), batch=1, link=NVLINK)
        assert fitted.bound == "memory bandwidth", slug


def test_measured_all_reduce_is_used_and_named() -> None:
    """The real 2x H200 NVLink run: 42.6 GB/s bus bandwidth at 1 MiB, 328 GB/s at 1 GiB."""
    measured = AllReduce(
        measured=((1048576, 42.59), (8388608, 167.763), (67108864, 270.445), (1073741824, 328.137)),
        source="measured",
    )
    assert measured.seconds(message_bytes=1048576, gpus=2) == pytest.approx(1048576 / 42.59e9)
    assert measured.seconds(message_bytes=1073741824, gpus=2) == pytest.approx(1073741824 / 328.137e9)
    # Below the smallest size the call costs at least that size's time.
    assert measured.seconds(message_bytes=1024, gpus=2) == pytest.approx(1048576 / 42.59e9)
    hw = dict(GPUS)["h200-sxm-141-gb"] if "h200-sxm-141-gb" in dict(GPUS) else next(h for s, h in GPUS if "h200" in s)
    w = _workload("llama-3.1-70b", "fp8", tp=2)
    on_measured = serving_curve_compute(w=w, hw=hw, c=_fitted_like(), link=measured)
    on_sheet = serving_curve_compute(w=w, hw=hw, c=_fitted_like(), link=NVLINK)
    assert on_measured.allreduce_source == "measured" and on_sheet.allreduce_source == "datasheet"
    # Small decode messages are latency-bound: the measured link is slower there than the sheet's.
    assert on_measured.points[0].step_s > on_sheet.points[0].step_s


def test_curve_at_interactivity_interpolates_and_refuses_unreachable_targets() -> None:
    hw = next(h for s, h in GPUS if "h100" in s and h.memory_gib >= 80)
    curve = serving_curve_compute(w=_workload("llama-3.1-70b", "fp8", tp=2), hw=hw, c=_fitted_like(), link=NVLINK)
    top = curve.points[0].tokens_per_s_per_user
    assert curve_at_interactivity(curve.points, top * 2) is None
    mid = curve_at_interactivity(curve.points, 20.0)
    assert mid is not None and mid.tokens_per_s_per_user >= 20.0 - 1e-9
    best = curve_at_interactivity(curve.points, None)
    assert best is not None and best.tokens_per_s_per_gpu >= mid.tokens_per_s_per_gpu


def test_latent_attention_decodes_over_its_latent_and_prefills_unabsorbed() -> None:
    """DeepSeek-R1's decode step computes, per context token and layer, scores over the 576-wide
    latent and values over its 512 for each of 128 heads; its prefill runs 192-wide keys and
    128-wide values a head (config.json: kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim
    128, v_head_dim 128). A dense model attends over head_dim either way."""
    r1, llama = MODEL_SHAPES["deepseek-r1"], MODEL_SHAPES["llama-3.1-70b"]
    hw = Hardware(memory_gib=141, bandwidth_gbs=4800, tensor_tflops={"fp8": 1979.0}, hardware_class="hopper")
    c = ServingConstants()

    def compute_s(model, input_len: int) -> float:
        w = Workload(model, "fp8", 1.0, input_len, 2, tp=8)
        return decode_step(w=w, hw=hw, c=c, batch=1, link=AllReduce(), peak=True).compute_s

    # Each context token adds 4 x layers x 128 x (576 + 512) / 2 FLOPs per GPU-share of the step.
    per_token = (compute_s(r1, 10_001) - compute_s(r1, 1)) / 10_000 * 1979e12 * 8
    assert per_token == pytest.approx(4 * r1.layers * 128 * (576 + 512) / 2, rel=1e-6)
    assert attention_width(r1, prefill=True) == 128 * (192 + 128) // 2
    assert attention_width(llama) == attention_width(llama, prefill=True) == llama.hidden
