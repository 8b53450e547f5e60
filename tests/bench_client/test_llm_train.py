"""llm-train: the run on the CPU (tiny shapes), its FLOP count, gradient accumulation, the micro-batch
choice and the check that catches a step that never updated the bf16 weights."""

from __future__ import annotations

import dataclasses
import json

import pytest
from gpuatlas_bench.cli import main
from gpuatlas_bench.schema import submission_validate

torch = pytest.importorskip("torch", reason="llm-train runs through PyTorch")

from gpuatlas_bench.workloads import llm_train  # noqa: E402
from gpuatlas_bench.workloads.common import CPU_TINY_SIZES, GPU_SIZES, Unsupported  # noqa: E402
from gpuatlas_bench.workloads.llm import shape_from  # noqa: E402

from tests.bench_client.support import cpu_context  # noqa: E402

GIB = 2**30


def _shape(sizes):
    return dataclasses.replace(shape_from(sizes.llm), n_layers=sizes.llm_train["n_layers"])


def _inputs(shape, *, batch: int, seq_len: int):
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(batch, seq_len, shape.d_model, generator=generator).to(torch.bfloat16)
    return x, torch.randn(batch, seq_len, shape.d_model, generator=generator).to(torch.bfloat16)


def test_cpu_run_writes_one_valid_result_with_accumulated_micro_batches(tmp_path, capsys):
    out = tmp_path / "train.json"
    code = main(["run", "--allow-cpu", "--quick", "--quiet", "--workloads", "llm-train", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    payload = json.loads(out.read_text())
    assert submission_validate(payload, require_schema=True) == []
    [result] = payload["results"]
    assert result["workload"] == "llm-train" and result["precision"] == "bf16" and result["unit"] == "tokens/s"
    assert result["params"] == {"model": "tiny-test", "n_layers": 2, "seq_len": 32, "batch": 4}
    assert result["correctness"]["passed"], result["correctness"]
    extra = result["extra"]
    assert (extra["micro_batch"], extra["gradient_accumulation_steps"]) == (2, 2)
    assert extra["model_flops_per_token"] == 466_944
    assert extra["model_tflops"] == round(result["median"] * 466_944 / 1e12, 3)
    assert extra["linear_parameters"] == 73_728 and extra["parameters"] == 73_728 + 4 * 64  # and the norms
    assert extra["optimizer"].startswith("AdamW")


def test_the_flop_count_is_the_hand_count_and_what_pytorch_counts_less_the_masked_half():
    shape = _shape(CPU_TINY_SIZES)
    # By hand: a layer's QKV 64 x (64 + 2 x 2 x 16), output 64 x 64, gate/up/down 3 x 64 x 128.
    layer = 64 * 128 + 64 * 64 + 3 * 64 * 128
    assert shape.layer_linear_parameters == layer == 36_864
    per_token = 6 * 2 * layer + 6 * 2 * 32 * (4 * 16)
    assert llm_train.model_flops_per_token(shape, seq_len=32) == per_token == 466_944

    # PyTorch's FLOP counter over one forward and backward: every matrix product, and the attention
    # of the math backend, which computes the masked half of the scores too.
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    trainer = llm_train.MixedPrecisionTrainer(cpu_context(), shape, seq_len=32)
    x, grad_out = _inputs(shape, batch=2, seq_len=32)
    with sdpa_kernel([SDPBackend.MATH]), FlopCounterMode(display=False) as counter:
        trainer.model(x, trainer.cos, trainer.sin).backward(grad_out)
    counts = {str(op): flops for op, flops in counter.get_flop_counts()["Global"].items()}
    tokens = 2 * 32
    assert counts["aten.mm"] == 6 * 2 * layer * tokens
    assert counts["aten.mm"] + counts["aten.bmm"] / 2 == per_token * tokens


def test_llama3_8b_layers_at_4096_tokens():
    shape = _shape(GPU_SIZES)
    assert (shape.n_layers, shape.d_model, shape.n_heads, shape.n_kv_heads, shape.d_ff) == (4, 4096, 32, 8, 14336)
    # QKV 4096 x (4096 + 2 x 1024), output 4096 x 4096, gate/up/down 3 x 4096 x 14336.
    assert shape.layer_linear_parameters == 218_103_808
    assert llm_train.model_flops_per_token(shape, seq_len=4096) == 6 * 4 * 218_103_808 + 6 * 4 * 4096 * 4096


def test_gradient_accumulation_sums_what_one_batch_would_give():
    shape = _shape(CPU_TINY_SIZES)
    x, grad_out = _inputs(shape, batch=4, seq_len=32)
    whole = llm_train.MixedPrecisionTrainer(cpu_context(), shape, seq_len=32)
    whole.accumulate(x, grad_out, micro_batch=4)
    split = llm_train.MixedPrecisionTrainer(cpu_context(), shape, seq_len=32)
    split.accumulate(x, grad_out, micro_batch=1)
    halves = llm_train.MixedPrecisionTrainer(cpu_context(), shape, seq_len=32)
    halves.accumulate(x[:2], grad_out[:2], micro_batch=2)
    for one, four, two in zip(whole.gradients, split.gradients, halves.gradients, strict=True):
        error = float(torch.linalg.vector_norm(four - one) / torch.linalg.vector_norm(one))
        assert error < 0.01  # bf16 rounding of each micro-batch's gradients
        # Half the batch is not the batch: the comparison above would see a lost micro-batch.
        assert float(torch.linalg.vector_norm(two - one) / torch.linalg.vector_norm(one)) > 0.2


def test_the_check_fails_when_the_bf16_weights_are_not_refreshed(monkeypatch):
    ctx = cpu_context()
    [case] = llm_train.llm_train_cases(ctx)
    prepared = case.build(ctx)
    prepared.fn()
    assert prepared.check()["passed"]
    monkeypatch.setattr(llm_train.MixedPrecisionTrainer, "copy_back", lambda self: None)
    prepared.fn()
    assert not prepared.check()["passed"]


@pytest.mark.parametrize(
    ("available_gib", "chosen"),
    [(80, 8), (40, 4), (24, 2), (8, 1), (1, 1)],
)
def test_the_micro_batch_is_the_largest_that_fits(available_gib, chosen):
    assert (
        llm_train.micro_batch_choose(
            batch=8, fixed_bytes=2 * GIB, per_sequence_bytes=5 * GIB, available_bytes=available_gib * GIB
        )
        == chosen
    )
    assert llm_train.micro_batch_choose(batch=6, fixed_bytes=0, per_sequence_bytes=1, available_bytes=100) == 2


def test_a_gpu_without_the_memory_for_the_state_skips_before_allocating():
    ctx = cpu_context()
    ctx.free_bytes = lambda: 1_000_000  # type: ignore[method-assign]
    [case] = llm_train.llm_train_cases(ctx)
    with pytest.raises(Unsupported, match=r"2 layers of tiny-test need about .* GiB of GPU memory .* GiB are free"):
        case.build(ctx)
