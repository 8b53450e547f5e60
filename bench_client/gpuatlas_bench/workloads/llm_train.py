"""llm-train: training steps of decoder layers at Llama 3 8B's shapes, as mixed-precision training runs them.

One call is one optimizer step over ``batch`` sequences of ``seq_len`` tokens through ``n_layers``
of Llama 3 8B's layers (RMSNorm, fused QKV with 32 query and 8 key/value heads, RoPE, causal
grouped-query flash attention, the output product, RMSNorm, fused gate/up, SiLU x up, down; no
biases): forward and backward in bf16, the weight gradients summed into fp32 buffers, an AdamW step
on fp32 master weights and moments (fused where PyTorch has the fused kernel), and the bf16 weights
rounded from the master weights again. The sequences go through in micro-batches, the largest the
GPU's memory holds (a probe step of one sequence measures what each costs), the gradients summed
over them as gradient accumulation does: every GPU does the same work per call, which is why the
micro-batch is reported in ``extra`` and not in params.

The layers' input stands for the embedding's output and the backward starts from a fixed random
gradient of their output (the loss and the output head are not part of the layers measured): both
N(0, 1), seeded. Weights N(0, 1/fan_in), so activations stay of order one as trained weights keep them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from .common import Case, Context, GiB, Prepared, Unsupported, require_ampere_for
from .llm import Shape, rotary_tables, rotate, shape_from

LLM_TRAIN = "llm-train"
# AdamW as Llama 2 was trained (Touvron et al. 2023, section 2.2); the values do not change the speed.
ADAMW = {"lr": 3e-4, "betas": (0.9, 0.95), "eps": 1e-5, "weight_decay": 0.1}
_NORM_EPS = 1e-5
# The share of the memory left after the probe step that the chosen micro-batch may take: the
# allocator's fragmentation and cuBLAS's workspaces need the rest.
MEMORY_SHARE = 0.9
# Bytes per parameter held for the whole run: bf16 weights (2), fp32 master weights (4), fp32
# gradient buffers (4), AdamW's two fp32 moments (8); and the bf16 gradients of a backward (2).
HELD_BYTES_PER_PARAMETER = 18
BF16_GRADIENT_BYTES = 2


def model_flops_per_token(shape: Shape, *, seq_len: int) -> float:
    """Model FLOP per trained token of the layers: 6 x their matrix parameters + 6 x layers x seq x d_attn.

    Kaplan et al. 2020 (arXiv:2001.08361, table 1): a forward pass costs 2 FLOP per matrix parameter
    and 2 x n_layer x n_ctx x d_attn for attention, where the score (QK^T) and value (PV) products
    each cost 2 x d_attn per query-key pair and the causal mask leaves each query s/2 keys on average;
    causal flash attention skips the masked blocks, so that is the work done. A training step is three
    forwards (the backward computes the gradients of the inputs and of the weights, one forward each).
    d_attn is the query heads x head_dim (grouped-query attention shares the keys and values, not the
    products). No embedding, output head or norms: the workload has none of the first two.
    """
    d_attn = shape.n_heads * shape.head_dim
    return 6.0 * shape.n_layers * shape.layer_linear_parameters + 6.0 * shape.n_layers * seq_len * d_attn


def micro_batch_choose(*, batch: int, fixed_bytes: int, per_sequence_bytes: int, available_bytes: int) -> int:
    """The largest power of two dividing ``batch`` whose step fits in ``MEMORY_SHARE`` of the available
    memory (``fixed_bytes`` + micro-batch x ``per_sequence_bytes``); 1 when none does."""
    candidates = [size for size in (64, 32, 16, 8, 4, 2) if size <= batch and batch % size == 0]
    for size in candidates:
        if fixed_bytes + size * per_sequence_bytes <= MEMORY_SHARE * available_bytes:
            return size
    return 1


def _layers(ctx: Context, shape: Shape) -> Any:
    """The decoder layers as a module: fp32 weights drawn from the seeded generator (the master copy)."""
    torch = ctx.torch
    nn = torch.nn
    functional = torch.nn.functional
    generator = ctx.generator(81)
    d, kv, hd = shape.d_model, shape.kv_dim, shape.head_dim

    def matrix(rows: int, cols: int) -> Any:
        weight = torch.randn(rows, cols, generator=generator, device=ctx.device).mul_(cols**-0.5)
        return nn.Parameter(weight)

    class DecoderLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn_norm = nn.Parameter(torch.ones(d, device=ctx.device))
            self.qkv = matrix(d + 2 * kv, d)
            self.out = matrix(d, d)
            self.mlp_norm = nn.Parameter(torch.ones(d, device=ctx.device))
            self.gate_up = matrix(2 * shape.d_ff, d)
            self.down = matrix(d, shape.d_ff)

        def forward(self, x: Any, cos: Any, sin: Any) -> Any:
            batch, seq, _ = x.shape
            normed = functional.rms_norm(x, (d,), self.attn_norm, _NORM_EPS)
            q, k, v = functional.linear(normed, self.qkv).split((d, kv, kv), dim=-1)
            q = rotate(torch, q.view(batch, seq, shape.n_heads, hd).transpose(1, 2), cos, sin)
            k = rotate(torch, k.view(batch, seq, shape.n_kv_heads, hd).transpose(1, 2), cos, sin)
            v = v.view(batch, seq, shape.n_kv_heads, hd).transpose(1, 2)
            attended = functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + functional.linear(attended.transpose(1, 2).reshape(batch, seq, d), self.out)
            normed = functional.rms_norm(x, (d,), self.mlp_norm, _NORM_EPS)
            gate, up = functional.linear(normed, self.gate_up).chunk(2, dim=-1)
            return x + functional.linear(functional.silu(gate) * up, self.down)

    class Layers(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(DecoderLayer() for _ in range(shape.n_layers))

        def forward(self, x: Any, cos: Any, sin: Any) -> Any:
            for layer in self.layers:
                x = layer(x, cos, sin)
            return x

    return Layers()


class MixedPrecisionTrainer:
    """bf16 layers for the forward and backward; fp32 master weights, gradient buffers and AdamW state."""

    def __init__(self, ctx: Context, shape: Shape, *, seq_len: int) -> None:
        torch = ctx.torch
        self.torch = torch
        self.model = _layers(ctx, shape)
        self.weights = list(self.model.parameters())
        # The drawn fp32 tensors become the master weights; the module's parameters get bf16 copies.
        self.master = [weight.detach() for weight in self.weights]
        with torch.no_grad():
            for weight, master in zip(self.weights, self.master, strict=True):
                weight.data = master.to(torch.bfloat16)
        self.gradients = [torch.zeros_like(master) for master in self.master]
        for master, gradient in zip(self.master, self.gradients, strict=True):
            master.grad = gradient
        try:
            self.optimizer = torch.optim.AdamW(self.master, **ADAMW, fused=True)
            self.optimizer_name = "AdamW, fused (torch.optim.AdamW(fused=True))"
        except RuntimeError:  # no fused kernel for this device in this PyTorch
            self.optimizer = torch.optim.AdamW(self.master, **ADAMW, foreach=True)
            self.optimizer_name = "AdamW, foreach (torch.optim.AdamW(foreach=True))"
        _angles, self.cos, self.sin = rotary_tables(torch, shape, length=seq_len, device=ctx.device)
        self.out: Any = None

    def parameters(self) -> int:
        return sum(weight.numel() for weight in self.weights)

    def step(self, x: Any, grad_out: Any, *, micro_batch: int) -> None:
        """One optimizer step over the sequences of ``x``, ``micro_batch`` at a time."""
        self.accumulate(x, grad_out, micro_batch=micro_batch)
        self.optimizer.step()
        self.copy_back()

    def accumulate(self, x: Any, grad_out: Any, *, micro_batch: int) -> None:
        """Forward and backward of each micro-batch; the fp32 buffers end with the sum of their gradients."""
        for start in range(0, x.shape[0], micro_batch):
            self.out = self.model(x[start : start + micro_batch], self.cos, self.sin)
            self.out.backward(grad_out[start : start + micro_batch])
            for weight, gradient in zip(self.weights, self.gradients, strict=True):
                if start == 0:
                    gradient.copy_(weight.grad)
                else:
                    gradient.add_(weight.grad)
                weight.grad = None  # freed before the next micro-batch's backward

    def copy_back(self) -> None:
        """The bf16 weights of the next forward: the updated master weights, rounded."""
        with self.torch.no_grad():
            for weight, master in zip(self.weights, self.master, strict=True):
                weight.copy_(master)

    def check(self, before: list[Any]) -> dict[str, Any]:
        """The output and every master weight finite, every weight matrix moved from its first
        values, and the bf16 weights the master weights rounded."""
        torch = self.torch
        finite = bool(torch.isfinite(self.out).all()) and all(bool(torch.isfinite(m).all()) for m in self.master)
        moved = all(not torch.equal(master[0], first) for master, first in zip(self.master, before, strict=True))
        rounded = all(
            torch.equal(weight, master.to(torch.bfloat16))
            for weight, master in zip(self.weights, self.master, strict=True)
        )
        return {
            "method": "output and fp32 master weights finite; every weight moved by AdamW; "
            "the bf16 weights are the master weights rounded",
            "passed": finite and moved and rounded,
        }


def _attention(ctx: Context) -> Any:
    """On a GPU, flash attention or an error: another backend would time another algorithm."""
    attention = ctx.torch.nn.attention
    if ctx.cpu_only:
        return contextlib.nullcontext()
    return attention.sdpa_kernel([attention.SDPBackend.FLASH_ATTENTION])


def _micro_batch(ctx: Context, trainer: MixedPrecisionTrainer, x: Any, grad_out: Any, batch: int) -> int:
    """The micro-batch of the timed steps: on a GPU from a probe step of one sequence (what it holds
    beyond the run's fixed memory), on the CPU the size profile's (no memory to fill)."""
    if ctx.cpu_only:
        return int(ctx.sizes.llm_train["cpu_micro_batch"])
    cuda = ctx.torch.cuda
    ctx.synchronize()
    cuda.reset_peak_memory_stats(ctx.device)
    trainer.step(x[:1], grad_out[:1], micro_batch=1)
    ctx.synchronize()
    held = cuda.memory_allocated(ctx.device)
    gradients = BF16_GRADIENT_BYTES * trainer.parameters()
    per_sequence = max(0, cuda.max_memory_allocated(ctx.device) - held - gradients)
    available = (ctx.free_bytes() or 0) + cuda.memory_reserved(ctx.device) - held
    cuda.reset_peak_memory_stats(ctx.device)
    return micro_batch_choose(
        batch=batch, fixed_bytes=gradients, per_sequence_bytes=per_sequence, available_bytes=available
    )


def _prepared(ctx: Context, shape: Shape, *, seq_len: int, batch: int) -> Prepared:
    require_ampere_for(ctx, "bf16")
    torch = ctx.torch
    parameters = shape.n_layers * shape.layer_linear_parameters
    free = ctx.free_bytes()
    needed = (HELD_BYTES_PER_PARAMETER + BF16_GRADIENT_BYTES) * parameters
    if free is not None and needed * 1.1 > free:
        raise Unsupported(
            f"{shape.n_layers} layers of {shape.name} need about {needed / GiB:.1f} GiB of GPU memory for their "
            f"weights, gradients and AdamW state before any activation; {free / GiB:.1f} GiB are free"
        )
    trainer = MixedPrecisionTrainer(ctx, shape, seq_len=seq_len)
    x = torch.randn(batch, seq_len, shape.d_model, generator=ctx.generator(82), device=ctx.device)
    grad_out = torch.randn(batch, seq_len, shape.d_model, generator=ctx.generator(83), device=ctx.device)
    x, grad_out = x.to(torch.bfloat16), grad_out.to(torch.bfloat16)
    before = [master[0].clone() for master in trainer.master]
    with _attention(ctx):
        micro_batch = _micro_batch(ctx, trainer, x, grad_out, batch)

    def fn() -> None:
        with _attention(ctx):
            trainer.step(x, grad_out, micro_batch=micro_batch)

    per_token = model_flops_per_token(shape, seq_len=seq_len)

    def extra(median_tokens_per_s: float) -> dict[str, Any]:
        peak = None if ctx.cpu_only else torch.cuda.max_memory_allocated(ctx.device) / GiB
        return {
            "model_flops_per_token": per_token,
            "model_tflops": round(median_tokens_per_s * per_token / 1e12, 3),
            "parameters": trainer.parameters(),
            "linear_parameters": parameters,
            "d_model": shape.d_model,
            "n_heads": shape.n_heads,
            "n_kv_heads": shape.n_kv_heads,
            "d_ff": shape.d_ff,
            "micro_batch": micro_batch,
            "gradient_accumulation_steps": batch // micro_batch,
            "optimizer": trainer.optimizer_name,
            "attention": "any (CPU)" if ctx.cpu_only else "flash",
            "step_ms": round(batch * seq_len / median_tokens_per_s * 1000, 3),
            "peak_memory_gib": round(peak, 2) if peak is not None else None,
        }

    return Prepared(
        fn=fn,
        work=float(batch * seq_len),
        check=lambda: trainer.check(before),
        extra=extra,
    )


def llm_train_cases(ctx: Context) -> list[Case]:
    sizes = ctx.sizes.llm_train
    shape = dataclasses.replace(shape_from(ctx.sizes.llm), n_layers=sizes["n_layers"])
    params = {"model": shape.name, "n_layers": shape.n_layers, "seq_len": sizes["seq_len"], "batch": sizes["batch"]}
    build = lambda c: _prepared(c, shape, seq_len=sizes["seq_len"], batch=sizes["batch"])  # noqa: E731
    return [Case(LLM_TRAIN, "bf16", params, build, "llm train")]
