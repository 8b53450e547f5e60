"""llm-decode: the Llama 3 8B shapes, the run on the CPU (tiny shapes), its consistency check, the real H100 run."""

from __future__ import annotations

import json

import pytest
from gpuatlas_bench.cli import main
from gpuatlas_bench.schema import submission_validate

torch = pytest.importorskip("torch", reason="llm-decode runs through PyTorch")

from gpuatlas_bench.runner import POLICIES  # noqa: E402
from gpuatlas_bench.workloads import llm  # noqa: E402
from gpuatlas_bench.workloads.common import (  # noqa: E402
    CPU_TINY_SIZES,
    GPU_SIZES,
    Context,
    Unsupported,
    relative_errors,
)

from tests.bench_client.support import cpu_context  # noqa: E402

GIB = 2**30


def _by_configuration(payload):
    """llm-decode prefill and decode results by (precision, phase, batch)."""
    return {
        (r["precision"], r["params"]["phase"], r["params"]["batch"]): r
        for r in payload["results"]
        if r["workload"] == "llm-decode" and r["params"]["phase"] != "serve"
    }


def test_llama3_8b_shape_has_the_published_parameter_count():
    # Meta-Llama-3-8B: 8,030,261,248 parameters (model card and safetensors index).
    shape = llm.shape_from(GPU_SIZES.llm)
    assert shape.parameters == 8_030_261_248
    assert (shape.head_dim, shape.kv_dim) == (128, 1024)
    # bf16 KV cache: 32 layers x (K and V) x 8 heads x 128 x 2 bytes = 128 KiB per token.
    assert shape.kv_bytes_per_token() == 131_072


def test_cpu_run_measures_both_phases_at_both_batches_in_both_precisions(tmp_path, capsys):
    out = tmp_path / "llm.json"
    code = main(
        [
            "run",
            "--allow-cpu",
            "--quick",
            "--quiet",
            "--workloads",
            "llm-decode",
            "--llm-phases",
            "prefill",
            "decode",
            "--out",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    payload = json.loads(out.read_text())
    assert submission_validate(payload, require_schema=True) == []
    measured = _by_configuration(payload)
    assert len(measured) == len(payload["results"])  # no serving points asked for
    assert set(measured) == {(p, phase, b) for p in ("bf16", "fp8") for phase in ("prefill", "decode") for b in (1, 3)}
    decode = measured[("bf16", "decode", 3)]
    assert decode["params"] == {
        "model": "tiny-test",
        "phase": "decode",
        "batch": 3,
        "prompt_len": 8,
        "generated_tokens": 4,
    }
    assert decode["unit"] == "tokens/s"
    assert measured[("fp8", "prefill", 1)]["params"]["scaling"] == "static-per-tensor"
    for result in measured.values():
        assert result["correctness"]["passed"], result["correctness"]
        assert result["extra"]["cuda_graph"] is False  # no CUDA here
    # inter-token time is one decode step: batch / tokens per second.
    assert decode["extra"]["inter_token_ms"] == pytest.approx(1000 * 3 / decode["median"], rel=1e-3)


def test_decode_steps_reproduce_a_prefill_over_the_same_tokens():
    case = next(c for c in llm.llm_cases(cpu_context(), ("bf16",)) if c.params["phase"] == "decode")
    prepared = case.build(cpu_context())
    prepared.fn()
    check = prepared.check()
    assert check["passed"] and check["rel_error"] < 0.01


@pytest.mark.parametrize("fault", ["rope position", "own key not attended", "wrong head group"])
def test_the_consistency_check_catches_cache_and_attention_bugs(monkeypatch, fault):
    if fault == "rope position":
        tables = llm.Decoder.step_tables
        monkeypatch.setattr(llm.Decoder, "step_tables", lambda self, position: tables(self, position - 1))
    else:
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def faulty(q, k, v, **options):
            if options:  # the prefill's causal call stays right
                return sdpa(q, k, v, **options)
            if fault == "own key not attended":
                return sdpa(q, k[:, :, :-1], v[:, :, :-1])
            return sdpa(q, k.flip(1), v.flip(1))

        monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", faulty)
    case = next(c for c in llm.llm_cases(cpu_context(), ("bf16",)) if c.params["phase"] == "decode")
    prepared = case.build(cpu_context())
    prepared.fn()
    check = prepared.check()
    assert check["passed"] is False
    assert check["rel_error"] > 0.05


def test_fp8_calibrates_static_scales_and_differs_from_bf16_by_quantisation_only():
    ctx = cpu_context()
    shape = llm.shape_from(CPU_TINY_SIZES.llm)
    bf16 = llm.Decoder(ctx, shape, "bf16", max_len=12)
    fp8 = llm.Decoder(ctx, shape, "fp8", max_len=12)
    cache = llm.KvCache(ctx, shape, batch=1, max_len=12)
    prompt = llm._prompt(ctx, shape, 1, 8)
    assert all(float(layer["qkv"].input_scale) == 0 for layer in fp8.layers)
    fp8.calibrate(prompt, cache)
    assert all(float(layer[name].input_scale) > 0 for layer in fp8.layers for name in ("qkv", "out", "gate_up", "down"))
    rel, _ = relative_errors(torch, fp8.prefill(prompt, cache), bf16.prefill(prompt, cache))
    assert 0.005 < rel < 0.3  # same weights, e4m3 rounding of weights and activations


def test_a_gpu_without_the_memory_skips_the_large_batch_before_allocating():
    class SmallGpu(Context):
        def free_bytes(self):
            return 24 * GIB

    ctx = SmallGpu(
        torch=None,  # never reached: the memory check comes first
        device=None,
        cpu_only=False,
        sizes=GPU_SIZES,
        policy=POLICIES["standard"],
        seed=1,
        compute_capability=(8, 9),
        l2_bytes=None,
    )
    with pytest.raises(Unsupported, match=r"llama3-8b bf16 at batch 128 needs about 3\d\.\d GiB"):
        llm._prepared(ctx, precision="bf16", phase="decode", batch=128)
    shape = llm.shape_from(GPU_SIZES.llm)
    one = llm.memory_needed(shape, precision="bf16", batch=1, prompt_len=512, max_len=640)
    assert 16 * GIB < one * 1.1 < 24 * GIB  # batch 1 fits a 24 GB card


def test_real_h100_run_is_valid_and_decode_is_bounded_by_memory_bandwidth(h100_run_path):
    payload = json.loads((h100_run_path.parent / "h100_run_llm.json").read_text())
    assert submission_validate(payload, require_schema=True) == []
    assert payload["environment"]["gpu"]["name_nvidia_smi"] == "NVIDIA H100 80GB HBM3"
    results = _by_configuration(payload)
    assert len(results) == 8
    decode = results[("bf16", "decode", 1)]
    assert decode["params"] == {
        "model": "llama3-8b",
        "phase": "decode",
        "batch": 1,
        "prompt_len": 512,
        "generated_tokens": 128,
    }
    # One batch-1 step reads every weight once: tokens/s x bytes per step is a bandwidth, which must
    # stay under the 3.35 TB/s of HBM3 (datasheet) and above half of it.
    bandwidth = decode["median"] * decode["extra"]["bytes_per_step"] / 1e9
    assert 1675 < bandwidth < 3350
    assert decode["extra"]["cuda_graph"] is True
    # Batching amortises the weights: 128 sequences give far more tokens/s than one.
    assert results[("bf16", "decode", 128)]["median"] > 50 * decode["median"]
