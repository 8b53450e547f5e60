"""One pre-LayerNorm GPT block in bf16: a training step (forward + backward) and an inference forward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .common import Case, Context, Prepared, require_ampere_for


def _block(torch: Any, d_model: int, n_heads: int, d_ff: int) -> Any:
    nn = torch.nn
    functional = torch.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(d_model)
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.proj = nn.Linear(d_model, d_model)
            self.ln2 = nn.LayerNorm(d_model)
            self.fc1 = nn.Linear(d_model, d_ff)
            self.fc2 = nn.Linear(d_ff, d_model)

        def forward(self, x: Any) -> Any:
            batch, seq, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(batch, seq, 3, n_heads, d_model // n_heads).unbind(2)
            attended = functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
            )
            x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, d_model))
            return x + self.fc2(functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    return Block()


def forward_flops_per_token(*, seq_len: int, d_model: int, d_ff: int) -> float:
    """Linear layers 2*(4*d^2 + 2*d*d_ff); causal attention scores and values 2*seq*d (half of 4*seq*d)."""
    return 2.0 * (4 * d_model * d_model + 2 * d_model * d_ff) + 2.0 * seq_len * d_model


def training_step(model: Any, x: Any, grad_out: Any, holder: dict[str, Any]) -> Callable[[], None]:
    """One step: gradients cleared, forward, backward from a fixed output gradient (the output kept)."""
    parameters = list(model.parameters())

    def step() -> None:
        for parameter in parameters:
            parameter.grad = None
        out = model(x)
        out.backward(grad_out)
        holder["out"] = out

    return step


def step_finite(torch: Any, model: Any, holder: dict[str, Any]) -> bool:
    """The step's output and every weight gradient are finite (and were written)."""
    return bool(torch.isfinite(holder["out"]).all()) and all(
        parameter.grad is not None and bool(torch.isfinite(parameter.grad).all()) for parameter in model.parameters()
    )


def _prepared(ctx: Context, train: bool) -> Prepared:
    require_ampere_for(ctx, "bf16")
    torch = ctx.torch
    shape = ctx.sizes.transformer
    batch, seq, d_model = shape["batch"], shape["seq_len"], shape["d_model"]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(ctx.seed)
        block = _block(torch, d_model, shape["n_heads"], shape["d_ff"])
    block = block.to(device=ctx.device, dtype=torch.bfloat16)
    x = torch.randn(batch, seq, d_model, generator=ctx.generator(41), device=ctx.device).to(torch.bfloat16)
    parameters = list(block.parameters())
    holder: dict[str, Any] = {}

    if train:
        grad_out = torch.randn(batch, seq, d_model, generator=ctx.generator(42), device=ctx.device).to(torch.bfloat16)
        fn = training_step(block, x, grad_out, holder)

        def check() -> dict[str, Any]:
            return {"method": "output and every weight gradient finite", "passed": step_finite(torch, block, holder)}

    else:

        def fn() -> None:
            with torch.inference_mode():
                holder["out"] = block(x)

        def check() -> dict[str, Any]:
            return {"method": "output finite", "passed": bool(torch.isfinite(holder["out"]).all())}

    per_token = forward_flops_per_token(seq_len=seq, d_model=d_model, d_ff=shape["d_ff"]) * (3 if train else 1)

    def extra(median_tokens_per_s: float) -> dict[str, Any]:
        return {
            "model_flops_per_token": per_token,
            "model_tflops": round(median_tokens_per_s * per_token / 1e12, 3),
            "parameters": sum(parameter.numel() for parameter in parameters),
        }

    return Prepared(fn=fn, work=float(batch * seq), check=check, extra=extra)


def transformer_cases(ctx: Context, wanted: tuple[str, ...]) -> list[Case]:
    params = dict(ctx.sizes.transformer)
    cases = []
    if "transformer-train" in wanted:
        cases.append(Case("transformer-train", "bf16", params, lambda c: _prepared(c, True), "transformer train"))
    if "transformer-infer" in wanted:
        cases.append(Case("transformer-infer", "bf16", params, lambda c: _prepared(c, False), "transformer infer"))
    return cases
