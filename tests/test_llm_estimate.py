"""The LLM throughput model (pure arithmetic) and its fit, on literals and synthetic rows."""

from __future__ import annotations

import pytest

from llm.estimate.constants import LlmConstants, constants_from_dict
from llm.estimate.fit import (
    Observation,
    _prepare,
    constants_fit,
    predict,
    predict_prepared,
)
from llm.estimate.loo import leave_one_gpu_out
from llm.estimate.model import (
    GIB,
    compute_peak,
    cost_per_million_tokens,
    kv_bytes_per_token,
    llm_throughput_estimate,
)
from llm.serving.shapes import MODEL_SHAPES, SIZE_CLASSES, bytes_per_weight, model_size_class

C = LlmConstants(
    decode_bandwidth_efficiency={"4bit": 0.5, "16bit": 0.8},
    decode_overhead_ms_per_layer=0.01,
    prefill_compute_efficiency={"16bit": 0.5},
    serving_compute_efficiency=0.4,
    serving_compute_efficiency_by_benchmark={"llama2-70b": 0.6},
    serving_bandwidth_efficiency=0.7,
    serving_context_tokens=1024,
)
H100 = {"memory_gib": 80.0, "bandwidth_gbs": 3350.0, "tensor_tflops": {"bf16": 989.5, "fp16": 989.5, "fp8": 1979.0}}
L70 = MODEL_SHAPES["llama-3.1-70b"]
SHAPE = {"total_params_b": L70.total_params_b, "active_params_b": L70.active_params_b, "layers": L70.layers,
         "kv_heads": L70.kv_heads, "head_dim": L70.head_dim, "hidden": L70.hidden}  # fmt: skip


def test_one_stream_is_bytes_over_bandwidth_plus_overhead():
    estimate = llm_throughput_estimate(**H100, **SHAPE, bytes_per_weight=0.5625, weight_precision="int4",
                                       mode="one_stream", context_tokens=2048, constants=C)  # fmt: skip
    kv = kv_bytes_per_token(layers=80, kv_heads=8, head_dim=128) * 1024  # half the context, on average
    seconds = (70.55e9 * 0.5625 + kv) / (0.5 * 3350e9) + 0.01e-3 * 80
    assert estimate.fits and estimate.gpu_count == 1 and estimate.bound == "memory bandwidth"
    assert estimate.tokens_per_s == pytest.approx(1 / seconds)


def test_layer_split_adds_memory_not_bandwidth_and_tensor_split_adds_both():
    common = {**H100, **SHAPE, "bytes_per_weight": 2.0, "weight_precision": "bf16", "mode": "one_stream",
              "context_tokens": 512, "constants": C}  # fmt: skip
    layer = llm_throughput_estimate(**common)
    assert layer.gpu_count == 2  # 141 GB of weights need two 80 GiB GPUs
    tensor = llm_throughput_estimate(**common, split="tensor")
    assert tensor.tokens_per_s > 1.5 * layer.tokens_per_s  # type: ignore[operator]
    too_big = llm_throughput_estimate(**common, max_gpus=1)
    assert not too_big.fits and too_big.bound == "does not fit" and too_big.tokens_per_s is None


def test_batched_serving_adds_weight_reads_and_compute_and_picks_a_full_batch():
    estimate = llm_throughput_estimate(**H100, **SHAPE, bytes_per_weight=1.0, weight_precision="fp8", mode="batched",
                                       context_tokens=1024, benchmark="llama2-70b", constants=C)  # fmt: skip
    kv = kv_bytes_per_token(layers=80, kv_heads=8, head_dim=128, bytes_per_value=1.0) * 1024
    n = estimate.gpu_count
    assert n == 4  # two GPUs hold the weights, four a full batch of 256 streams per GPU
    assert n * 80 * GIB * 0.9 >= 70.55e9 + 256 * n * kv > 2 * 80 * GIB * 0.9 - 70.55e9
    batch = 256 * n
    step = (70.55e9 + batch * kv) / (0.7 * 3350e9 * n) + 2 * 70.55e9 * batch / (0.6 * 1979e12 * n)
    assert estimate.tokens_per_s == pytest.approx(batch / step)
    assert estimate.tokens_per_s_per_gpu == pytest.approx(batch / step / n)
    assert estimate.compute_precision == "fp8"


def test_compute_peak_falls_back_through_the_formats():
    assert compute_peak({"fp4": 9000.0, "fp8": 4500.0}, weight_precision="fp4") == (9000.0, "fp4")
    assert compute_peak({"fp8": None, "int8": 624.0, "fp16": 312.0}, weight_precision="fp8") == (624.0, "int8")
    assert compute_peak({"fp16_nontensor": 29.7}, weight_precision="int4") == (29.7, "fp16_nontensor")
    assert compute_peak({}, weight_precision="fp16") is None


def test_cost_per_million_tokens():
    assert cost_per_million_tokens(price_per_gpu_hour=2.0, gpu_count=1, tokens_per_s=1000.0) == pytest.approx(2.0 / 3.6)
    assert cost_per_million_tokens(price_per_gpu_hour=2.0, gpu_count=2, tokens_per_s=10.0) == pytest.approx(4.0 / 0.036)
    assert cost_per_million_tokens(price_per_gpu_hour=None, gpu_count=1, tokens_per_s=10.0) is None
    assert cost_per_million_tokens(price_per_gpu_hour=1.0, gpu_count=1, tokens_per_s=0.0) is None


def test_shapes_classes_and_bytes():
    assert all(size.reference in MODEL_SHAPES for size in SIZE_CLASSES.values())
    assert all(m in MODEL_SHAPES for size in SIZE_CLASSES.values() for m in size.members)
    assert model_size_class("llama-2-70b") == "70b" and model_size_class("gptj-6b") is None
    assert bytes_per_weight(precision="int4", quant="Q4_K_M") == 0.61
    assert bytes_per_weight(precision="fp8") == 1.0
    with pytest.raises(ValueError, match="unknown LLM model constant"):
        constants_from_dict({"nonsense": 1})


def _gpu(key: str, bandwidth: float, peak: float, memory: float = 80.0) -> dict[str, object]:
    return {"gpu_key": key, "memory_gib": memory, "bandwidth_gbs": bandwidth,
            "tensor_tflops": {"fp16": peak, "bf16": peak, "fp8": 2 * peak, "int8": 2 * peak}}  # fmt: skip


def _synthetic(constants: LlmConstants) -> list[Observation]:
    """Rows whose 'measurements' are the model's own figures under ``constants``."""
    gpus = [_gpu("a", 1000, 150), _gpu("b", 2000, 300), _gpu("c", 3350, 990), _gpu("d", 900, 120, 24),
            _gpu("e", 4800, 990, 141)]  # fmt: skip
    out = []
    for g in gpus:
        for model, quant, precision in (("llama-3-8b", "Q4_K_M", "int4"), ("llama-3-8b", "F16", "fp16"),
                                        ("llama-2-13b", "F16", "fp16")):  # fmt: skip
            for kind, context in (("decode", 256), ("prefill", 512)):
                o = Observation(kind=kind, measured=1.0, model=MODEL_SHAPES[model], context_tokens=context,
                                bytes_per_weight=bytes_per_weight(precision=precision, quant=quant),
                                weight_precision=precision, **g)  # type: ignore[arg-type]  # fmt: skip
                value = predict(o, constants)
                if value:
                    out.append(Observation(**{**o.__dict__, "measured": value}))
        for model in ("llama-2-70b", "llama-3.1-8b"):
            o = Observation(kind="serving", measured=1.0, model=MODEL_SHAPES[model], bytes_per_weight=1.0,
                            weight_precision="fp8", context_tokens=0, benchmark=model, **g)  # type: ignore[arg-type]  # fmt: skip
            value = predict(
                Observation(**{**o.__dict__, "context_tokens": constants.serving_context_tokens}), constants
            )
            if value:
                out.append(Observation(**{**o.__dict__, "measured": value}))
    return out


TRUE = LlmConstants(
    decode_bandwidth_efficiency={"4bit": 0.55, "16bit": 0.8},
    decode_overhead_ms_per_layer=0.02,
    prefill_compute_efficiency={"4bit": 0.3, "16bit": 0.6},
    serving_compute_efficiency_by_benchmark={"llama-2-70b": 0.5, "llama-3.1-8b": 0.2},
    serving_bandwidth_efficiency=0.65,
    serving_context_tokens=1024,
)


def test_the_fit_recovers_the_constants_that_made_the_rows():
    rows = _synthetic(TRUE)
    assert {o.kind for o in rows} == {"decode", "prefill", "serving"}
    fitted = constants_fit(rows)
    for group in ("4bit", "16bit"):
        assert fitted.decode_bandwidth_efficiency[group] == pytest.approx(
            TRUE.decode_bandwidth_efficiency[group], rel=1e-3
        )
        assert fitted.prefill_compute_efficiency[group] == pytest.approx(
            TRUE.prefill_compute_efficiency[group], rel=1e-3
        )
    assert fitted.decode_overhead_ms_per_layer == pytest.approx(0.02, rel=1e-2)
    assert fitted.serving_context_tokens == 1024
    for benchmark, value in TRUE.serving_compute_efficiency_by_benchmark.items():
        assert fitted.serving_compute_efficiency_by_benchmark[benchmark] == pytest.approx(value, rel=1e-2)
    prepared = _prepare(rows, serving_context=1024)
    vectorised = predict_prepared(prepared, fitted)
    scalar = [predict(rows[i] if rows[i].kind != "serving" else Observation(**{**rows[i].__dict__, "context_tokens": 1024}),
                      fitted) for i in prepared["index"]]  # fmt: skip
    assert list(vectorised) == pytest.approx(scalar, rel=1e-9)


def test_leave_one_gpu_out_never_fits_on_the_gpu_it_scores():
    rows = _synthetic(TRUE)
    # GPU "c" measures twice what the model says: scored without its own rows, its estimate is the
    # model's figure, half the measurement (50 % off). Every other GPU is scored by fits that
    # include "c" (the robust loss limits its pull), so they stay well below.
    rows = [Observation(**{**o.__dict__, "measured": o.measured * 2}) if o.gpu_key == "c" else o for o in rows]
    report = leave_one_gpu_out(rows)
    errors = {(e.gpu_key, e.use_case): e.median_error_pct for e in report.by_gpu}
    assert errors[("c", "chat")] == pytest.approx(50.0, abs=1.0)
    assert all(v < 25 for (gpu, use_case), v in errors.items() if gpu != "c" and use_case == "chat")
    assert report.by_use_case["chat"].worst_gpu == "c"
    assert report.typical_error_pct()["chat"] == pytest.approx(report.by_use_case["chat"].median_error_pct, abs=0.05)
    # Rows that are not headline figures are fitted but not scored.
    quiet = leave_one_gpu_out([Observation(**{**o.__dict__, "headline": o.gpu_key != "c"}) for o in rows])
    assert "c" not in {e.gpu_key for e in quiet.by_gpu}
