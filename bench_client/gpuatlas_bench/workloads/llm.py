"""llm-decode: a Llama-architecture decoder with random weights at real model shapes, served from a KV cache.

Prefill runs the prompt of every sequence through the model at once, fills the KV cache and produces
the first output token; decode then generates one token per sequence per step, each step reading the
whole model and the KV cache so far. On CUDA the decode loop (all generated tokens) is captured in one
CUDA graph, as inference servers do, so that kernel launches do not bound batch-1 decoding; the
attention of each step reads exactly the cache positions written so far.

On CUDA, prefill and the decode loop are each captured once in a CUDA graph and replayed, so the
figures are the GPU's work, not Python's kernel launches (servers run graphs or a C++ runtime).

fp8 is W8A8 with static per-tensor scales, the scheme of fp8 post-training quantisation (MLPerf's
TensorRT-LLM entries, vLLM's static fp8 checkpoints): e4m3 weights with one scale per matrix, and
one activation scale per linear layer calibrated once on the case's own prompt (amax / 448);
torch._scaled_mm with a bf16 output. Attention, the KV cache, the embedding and the output head
stay bf16.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .common import Case, Context, Prepared, Unsupported, correctness_record, relative_errors, require_ampere_for

LLM_PRECISIONS = ("bf16", "fp8")
_E4M3_MAX = 448.0
_NORM_EPS = 1e-5
# Decode logits against a prefill over the same tokens: different kernels (flash attention over the
# prompt vs the cached decode step) round differently, and the 32 layers amplify it. On an H100
# (2026-11-25) bf16 gave 0.019; fp8 gave 0.0 at batch 128 and 0.1004 at batch 1: a bf16 difference
# that moves one activation across an e4m3 rounding step grows layer by layer. The bf16 check is
# the one that catches a wrong cache position, RoPE angle or head grouping (0.1 to 0.8 on the test
# model); fp8 runs the same code apart from the matrix products.
_CONSISTENCY_TOLERANCE = {"bf16": 0.05, "fp8": 0.25}


@dataclass(frozen=True)
class Shape:
    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    vocab: int
    rope_theta: float

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def layer_linear_parameters(self) -> int:
        """Parameters of one decoder layer's matrix products: QKV, output, gate, up and down."""
        attention = self.d_model * (self.d_model + 2 * self.kv_dim) + self.d_model * self.d_model
        return attention + 3 * self.d_model * self.d_ff

    @property
    def linear_parameters(self) -> int:
        """Parameters of the matrix products a token goes through (the output head included)."""
        return self.n_layers * self.layer_linear_parameters + self.d_model * self.vocab

    @property
    def parameters(self) -> int:
        return self.linear_parameters + self.vocab * self.d_model + (2 * self.n_layers + 1) * self.d_model

    def kv_bytes_per_token(self, element: int = 2) -> int:
        return 2 * self.n_layers * self.kv_dim * element


def shape_from(sizes: dict[str, Any]) -> Shape:
    return Shape(
        name=sizes["model"],
        n_layers=sizes["n_layers"],
        d_model=sizes["d_model"],
        n_heads=sizes["n_heads"],
        n_kv_heads=sizes["n_kv_heads"],
        d_ff=sizes["d_ff"],
        vocab=sizes["vocab"],
        rope_theta=float(sizes["rope_theta"]),
    )


def rotary_tables(torch: Any, shape: Shape, *, length: int, device: Any) -> tuple[Any, Any, Any]:
    """RoPE at positions 0..length-1: (angles [length, head_dim / 2] float32, cos and sin
    [length, head_dim] bf16, each half repeated as the rotate-half form pairs them)."""
    hd = shape.head_dim
    inv_freq = 1.0 / (shape.rope_theta ** (torch.arange(0, hd, 2, device=device).float() / hd))
    angles = torch.arange(length, device=device).float()[:, None] * inv_freq[None, :]
    cos = torch.cat((angles.cos(), angles.cos()), dim=-1).to(torch.bfloat16)
    sin = torch.cat((angles.sin(), angles.sin()), dim=-1).to(torch.bfloat16)
    return angles, cos, sin


def rotate(torch: Any, x: Any, cos: Any, sin: Any) -> Any:
    """Rotary embedding in the rotate-half form (Llama's layout of the head dimension's pairs)."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


@dataclass
class Fp8Linear:
    """An e4m3 weight with its scale, and the static scale of its input (set by calibration)."""

    weight: Any  # float8_e4m3fn [out, in]
    weight_scale: Any  # float32, 0-dim
    input_scale: Any  # float32, 0-dim: the calibrated amax of the input / 448
    input_inverse: Any  # float32, 0-dim: 1 / input_scale


@dataclass(frozen=True)
class TensorParallel:
    """This rank's place in a tensor-parallel group, and the group's collectives (None: one GPU)."""

    rank: int = 0
    size: int = 1
    all_reduce: Any = None  # in place, sum over the group
    all_gather: Any = None  # [batch, n] on each rank -> [size, batch, n]


class Decoder:
    """The model as plain tensors: per layer a fused QKV, the output projection, fused gate/up and down."""

    def __init__(
        self,
        ctx: Context,
        shape: Shape,
        precision: str,
        *,
        max_len: int,
        tp: TensorParallel | None = None,
    ) -> None:
        torch = ctx.torch
        self.torch = torch
        self.shape = shape
        self.precision = precision
        self.device = ctx.device
        self.dtype = torch.bfloat16
        self.calibrating = False
        self.tp = tp or TensorParallel()
        size = self.tp.size
        if shape.n_kv_heads % size or shape.d_ff % size or shape.vocab % size:
            raise Unsupported(f"{shape.name} does not split over {size} GPUs ({shape.n_kv_heads} key/value heads)")
        # This rank's share (Megatron): query and key/value heads, the MLP's inner width, the vocabulary.
        self.q_heads = shape.n_heads // size
        self.kv_heads = shape.n_kv_heads // size
        self.d_ff = shape.d_ff // size
        self.vocab = shape.vocab // size
        # Each rank draws its own share of the matrices; what every rank holds whole (embedding,
        # norms) comes from one generator seeded alike on all.
        generator = ctx.generator(61 + 1000 * self.tp.rank)
        shared = ctx.generator(60)

        # N(0, 1/fan_in) keeps activations and attention scores of order one through every layer, as
        # trained weights do (values never change the speed of these kernels, zeros aside).
        def weight(rows: int, cols: int, *, fan_in: int | None = None) -> Any:
            w = torch.randn(rows, cols, generator=generator, device=ctx.device, dtype=self.dtype)
            return w.mul_((fan_in or cols) ** -0.5)

        def norm() -> Any:
            return torch.randn(shape.d_model, generator=shared, device=ctx.device, dtype=self.dtype).mul_(0.1).add_(1)

        d = shape.d_model
        hd = shape.head_dim
        # Every rank holds the whole embedding (one row per token is read); the output head is split
        # by vocabulary and its logits gathered.
        self.embedding = torch.randn(shape.vocab, d, generator=shared, device=ctx.device, dtype=self.dtype)
        self.layers = []
        for _ in range(shape.n_layers):
            self.layers.append(
                {
                    "attn_norm": norm(),
                    # Column-parallel: this rank's query, key and value heads.
                    "qkv": self._linear_weight(weight((self.q_heads + 2 * self.kv_heads) * hd, d)),
                    # Row-parallel: this rank's heads in, a partial sum out (all-reduced).
                    "out": self._linear_weight(weight(d, self.q_heads * hd, fan_in=d)),
                    "mlp_norm": norm(),
                    "gate_up": self._linear_weight(weight(2 * self.d_ff, d)),
                    "down": self._linear_weight(weight(d, self.d_ff, fan_in=shape.d_ff)),
                }
            )
        self.final_norm = norm()
        self.head = weight(self.vocab, d)  # bf16 in both precisions, as fp8 servers keep it
        # Rotary tables for every position, computed once: a decode step slices them (no kernel).
        angles, self.cos, self.sin = rotary_tables(torch, shape, length=max_len, device=ctx.device)
        # The decode step rotates the query, key and value heads of its QKV output in one pass:
        # rotated = x * cos + swap_halves(x) * signed_sin, with cos 1 and sin 0 for the value heads,
        # so the keys and values leave it side by side and go into the cache in one copy.
        heads = self.q_heads + 2 * self.kv_heads
        rotary = torch.zeros(heads, dtype=torch.bool, device=ctx.device)
        rotary[: self.q_heads + self.kv_heads] = True
        signed_sin = torch.cat((-angles.sin(), angles.sin()), dim=-1)
        mask = rotary[None, :, None]
        self.step_cos = torch.where(mask, self.cos.float()[:, None, :], 1.0).to(self.dtype)
        self.step_sin = torch.where(mask, signed_sin[:, None, :], 0.0).to(self.dtype)

    def _linear_weight(self, w: Any) -> Any:
        if self.precision != "fp8":
            return w
        torch = self.torch
        scale = (w.abs().amax().float() / _E4M3_MAX).clamp_min(1e-12)
        # In place on one float32 copy: a 70B layer's gate/up is 1.9 GB of it.
        quantised = w.float().div_(scale).clamp_(-_E4M3_MAX, _E4M3_MAX).to(torch.float8_e4m3fn)
        zero = torch.zeros((), dtype=torch.float32, device=w.device)
        return Fp8Linear(weight=quantised, weight_scale=scale, input_scale=zero, input_inverse=zero.clone())

    def weight_parameters(self) -> int:
        """This rank's parameters of the matrix products (the output head's share included)."""
        total = self.head.numel()
        for layer in self.layers:
            for name in ("qkv", "out", "gate_up", "down"):
                total += (layer[name].weight if isinstance(layer[name], Fp8Linear) else layer[name]).numel()
        return total

    def weight_bytes(self) -> int:
        """Bytes one decode step reads: every linear weight once (the embedding only one row per token)."""
        total = self.head.numel() * self.head.element_size()
        for layer in self.layers:
            for name in ("qkv", "out", "gate_up", "down"):
                w = layer[name].weight if isinstance(layer[name], Fp8Linear) else layer[name]
                total += w.numel() * w.element_size()
        return total

    def calibrate(self, tokens: Any, cache: KvCache) -> None:
        """fp8: set every linear layer's static input scale from a prefill over ``tokens``."""
        self.calibrating = True
        try:
            self.prefill(tokens, cache)
        finally:
            self.calibrating = False

    def calibrate_decode(self, ctx: Context, steps: int = 8) -> None:
        """fp8: set the static input scales from ``steps`` plain decode steps of one sequence."""
        torch = self.torch
        cache = KvCache(ctx, self.shape, batch=1, max_len=steps, kv_heads=self.kv_heads)
        token = torch.randint(0, self.shape.vocab, (1,), generator=ctx.generator(65), device=ctx.device)
        self.calibrating = True
        try:
            for position in range(steps):
                token = torch.argmax(self.reference_step(token, position, cache), dim=-1)
        finally:
            self.calibrating = False

    def linear(self, x: Any, w: Any) -> Any:
        torch = self.torch
        if not isinstance(w, Fp8Linear):
            return torch.nn.functional.linear(x, w)
        flat = x.reshape(-1, x.shape[-1])
        if self.calibrating:
            torch.maximum(w.input_scale, flat.abs().amax().float() / _E4M3_MAX, out=w.input_scale)
            w.input_inverse.copy_(1.0 / w.input_scale.clamp_min(1e-12))
        xq = (flat * w.input_inverse).clamp(-_E4M3_MAX, _E4M3_MAX).to(torch.float8_e4m3fn)
        out = torch._scaled_mm(
            xq,
            w.weight.t(),
            scale_a=w.input_scale,
            scale_b=w.weight_scale,
            out_dtype=torch.bfloat16,
            use_fast_accum=True,
        )
        out = out[0] if isinstance(out, tuple) else out
        return out.reshape(*x.shape[:-1], out.shape[-1])

    def rms_norm(self, x: Any, weight: Any) -> Any:
        return self.torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, _NORM_EPS)

    def rope(self, x: Any, start: int, length: int) -> Any:
        """Rotary embedding of x [batch, heads, length, head_dim] at positions start.."""
        return rotate(self.torch, x, self.cos[start : start + length], self.sin[start : start + length])

    def _mlp(self, x: Any, layer: dict[str, Any]) -> Any:
        gate_up = self.linear(self.rms_norm(x, layer["mlp_norm"]), layer["gate_up"])
        gate, up = gate_up.chunk(2, dim=-1)
        return x + self.linear(self.torch.nn.functional.silu(gate) * up, layer["down"])

    def logits(self, x: Any) -> Any:
        local = self.torch.nn.functional.linear(self.rms_norm(x, self.final_norm), self.head)
        if self.tp.all_gather is None:
            return local
        parts = self.tp.all_gather(local)  # [size, batch, vocab / size]
        return parts.permute(1, 0, 2).reshape(x.shape[0], self.shape.vocab)

    def prefill(self, tokens: Any, cache: KvCache) -> Any:
        """Run the prompt tokens [batch, prompt] through the model, fill the cache; logits of the last position."""
        torch = self.torch
        shape = self.shape
        if self.tp.size != 1:
            raise Unsupported("prefill is measured on one GPU")
        batch, length = tokens.shape
        group = shape.n_heads // shape.n_kv_heads
        x = self.embedding[tokens]
        for index, layer in enumerate(self.layers):
            qkv = self.linear(self.rms_norm(x, layer["attn_norm"]), layer["qkv"])
            q, k, v = qkv.split((shape.d_model, shape.kv_dim, shape.kv_dim), dim=-1)
            q = self.rope(q.view(batch, length, shape.n_heads, shape.head_dim).transpose(1, 2), 0, length)
            k = self.rope(k.view(batch, length, shape.n_kv_heads, shape.head_dim).transpose(1, 2), 0, length)
            v = v.view(batch, length, shape.n_kv_heads, shape.head_dim).transpose(1, 2)
            cache.keys[index][:batch, :, :length] = k
            cache.values[index][:batch, :, :length] = v
            attended = torch.nn.functional.scaled_dot_product_attention(
                q, k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1), is_causal=True
            )
            x = x + self.linear(attended.transpose(1, 2).reshape(batch, length, shape.d_model), layer["out"])
            x = self._mlp(x, layer)
        return self.logits(x[:, -1])

    def reference_step(self, token: Any, position: int, cache: KvCache) -> Any:
        """One decode step written plainly (eager; checks ``step``): token [batch] at ``position``."""
        torch = self.torch
        shape = self.shape
        batch = token.shape[0]
        hd = shape.head_dim
        group = self.q_heads // self.kv_heads
        x = self.embedding[token]
        for index, layer in enumerate(self.layers):
            qkv = self.linear(self.rms_norm(x, layer["attn_norm"]), layer["qkv"])
            q, k, v = qkv.split((self.q_heads * hd, self.kv_heads * hd, self.kv_heads * hd), dim=-1)
            q = self.rope(q.view(batch, self.q_heads, 1, hd), position, 1)
            k = self.rope(k.view(batch, self.kv_heads, 1, hd), position, 1)
            keys, values = cache.keys[index], cache.values[index]
            keys[:batch, :, position : position + 1] = k
            values[:batch, :, position : position + 1] = v.view(batch, self.kv_heads, 1, hd)
            # Grouped-query attention of one position: the query heads that share a KV head become
            # that head's "query rows", so the cache is read once, never repeated.
            attended = torch.nn.functional.scaled_dot_product_attention(
                q.view(batch, self.kv_heads, group, hd),
                keys[:batch, :, : position + 1],
                values[:batch, :, : position + 1],
            )
            x = x + self._reduced(self.linear(attended.reshape(batch, self.q_heads * hd), layer["out"]))
            gate, up = self.linear(self.rms_norm(x, layer["mlp_norm"]), layer["gate_up"]).chunk(2, dim=-1)
            x = x + self._reduced(self.linear(torch.nn.functional.silu(gate) * up, layer["down"]))
        return self.logits(x)

    def _reduced(self, partial: Any) -> Any:
        if self.tp.all_reduce is not None:
            self.tp.all_reduce(partial)
        return partial

    def step_tables(self, position: int) -> tuple[Any, Any]:
        """The rotary cos and signed sin of every QKV head at ``position`` (views: no kernel)."""
        return self.step_cos[position], self.step_sin[position]

    def _residual_linear(self, x: Any, a: Any, w: Any) -> Any:
        """x + a @ w.T, summed over the group: rank 0 adds the residual, the all-reduce the partials."""
        torch = self.torch
        if self.tp.rank == 0 and not isinstance(w, Fp8Linear):
            out = torch.addmm(x, a, w.t())  # the residual add in the matrix product's epilogue
        else:
            out = self.linear(a, w)
            if self.tp.rank == 0:
                out += x
        if self.tp.all_reduce is not None:
            self.tp.all_reduce(out)
        return out

    def step(self, token: Any, position: int, cache: KvCache) -> Any:
        """One decode step as a server runs it: token [batch] at ``position``, attending to cache[: position + 1].

        Per layer: RMSNorm, the QKV product, one rotary pass over all heads, one copy of the new key
        and value into the cache, attention, the output product with the residual, RMSNorm, gate/up,
        SiLU x up, the down product with the residual (and an all-reduce after each of the two row-
        parallel products under tensor parallelism). Fewer, larger kernels than ``reference_step``.
        """
        torch = self.torch
        functional = torch.nn.functional
        hd = self.shape.head_dim
        q_heads, kv_heads = self.q_heads, self.kv_heads
        half = hd // 2
        batch = token.shape[0]
        cos, sin = self.step_tables(position)
        x = self.embedding[token]
        for index, layer in enumerate(self.layers):
            heads = self.linear(self.rms_norm(x, layer["attn_norm"]), layer["qkv"]).view(batch, -1, hd)
            swapped = torch.cat((heads[..., half:], heads[..., :half]), dim=-1)
            rotated = torch.addcmul(heads * cos, swapped, sin)
            store = cache.combined[index]
            store[:batch, :, position] = rotated[:, q_heads:]
            attended = functional.scaled_dot_product_attention(
                rotated[:, :q_heads].view(batch, kv_heads, q_heads // kv_heads, hd),
                store[:batch, :kv_heads, : position + 1],
                store[:batch, kv_heads:, : position + 1],
            )
            x = self._residual_linear(x, attended.reshape(batch, q_heads * hd), layer["out"])
            gate, up = self.linear(self.rms_norm(x, layer["mlp_norm"]), layer["gate_up"]).chunk(2, dim=-1)
            x = self._residual_linear(x, functional.silu(gate).mul_(up), layer["down"])
        return self.logits(x)


class KvCache:
    """bf16 keys and values per layer, side by side: [batch, 2 x kv_heads, max_len, head_dim].

    ``keys[i]`` and ``values[i]`` are views of the first and second half of the heads, so a decode
    step writes a position's key and value in one copy. Poisoned with NaN unless ``generator`` is
    given, which fills it with N(0, 1) entries: the context of a serving point, already cached.
    """

    def __init__(
        self,
        ctx: Context,
        shape: Shape,
        *,
        batch: int,
        max_len: int,
        kv_heads: int | None = None,
        generator: Any = None,
    ) -> None:
        torch = ctx.torch
        heads = kv_heads or shape.n_kv_heads
        self.combined = []
        for _ in range(shape.n_layers):
            store = torch.empty((batch, 2 * heads, max_len, shape.head_dim), device=ctx.device, dtype=torch.bfloat16)
            if generator is None:
                store.fill_(float("nan"))
            else:
                store.normal_(generator=generator)
            self.combined.append(store)
        self.keys = [store[:, :heads] for store in self.combined]
        self.values = [store[:, heads:] for store in self.combined]

    def poison(self) -> None:
        for store in self.combined:
            store.fill_(float("nan"))


def _require_precision(ctx: Context, precision: str) -> None:
    require_ampere_for(ctx, "bf16")
    if precision != "fp8":
        return
    torch = ctx.torch
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        raise Unsupported(f"this PyTorch ({torch.__version__}) has no float8_e4m3fn / _scaled_mm")
    if ctx.cpu_only:
        # The test runs: recent PyTorch has a CPU _scaled_mm, which runs the same code path.
        try:
            probe = torch.ones(1, 16).to(torch.float8_e4m3fn)
            scale = torch.ones(())
            torch._scaled_mm(probe, probe.t(), scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
        except (RuntimeError, NotImplementedError) as missing:
            raise Unsupported(f"this PyTorch has no CPU fp8 matmul ({missing})"[:300]) from None
        return
    if ctx.compute_capability is None or ctx.compute_capability < (8, 9):
        raise Unsupported(f"fp8 e4m3 needs compute capability 8.9 or newer; this GPU is {ctx.compute_capability}")


def memory_needed(shape: Shape, *, precision: str, batch: int, prompt_len: int, max_len: int) -> int:
    """Bytes the case holds at its peak: weights, KV cache, and the prefill's largest activations."""
    linear = shape.linear_parameters - shape.d_model * shape.vocab
    weights = linear * (1 if precision == "fp8" else 2) + 2 * shape.vocab * shape.d_model * 2
    cache = batch * max_len * shape.kv_bytes_per_token()
    tokens = batch * prompt_len
    # gate_up output, its two halves' product and SiLU, the residual stream and the repeated K/V.
    activations = tokens * 2 * (2 * shape.d_ff + 2 * shape.d_ff + 6 * shape.d_model)
    return weights + cache + activations


def _prompt(ctx: Context, shape: Shape, batch: int, length: int) -> Any:
    torch = ctx.torch
    return torch.randint(0, shape.vocab, (batch, length), generator=ctx.generator(62), device=ctx.device)


def _extra(
    shape: Shape, model: Decoder, *, phase: str, batch: int, prompt_len: int, generated: int, graph: bool
) -> Any:
    d = shape.d_model

    def extra(median_tokens_per_s: float) -> dict[str, Any]:
        linear_flops = 2.0 * shape.linear_parameters
        if phase == "prefill":
            # Causal attention: QK^T and PV over on average (prompt + 1) / 2 positions per token.
            attention = 4.0 * shape.n_layers * d * (prompt_len + 1) / 2
            # Only the last position goes through the output head.
            per_token = linear_flops - 2.0 * shape.vocab * d * (1 - 1 / prompt_len) + attention
            figures: dict[str, Any] = {}
        else:
            mean_context = prompt_len + (generated + 1) / 2
            per_token = linear_flops + 4.0 * shape.n_layers * d * mean_context
            step_bytes = model.weight_bytes() + batch * mean_context * shape.kv_bytes_per_token()
            steps_per_s = median_tokens_per_s / batch
            figures = {
                "bytes_per_step": float(f"{step_bytes:.6g}"),
                "achieved_gbs": round(step_bytes * steps_per_s / 1e9, 1),
                "inter_token_ms": round(1000 / steps_per_s, 4),
            }
        return {
            "cuda_graph": graph,
            "n_layers": shape.n_layers,
            "d_model": d,
            "n_heads": shape.n_heads,
            "n_kv_heads": shape.n_kv_heads,
            "d_ff": shape.d_ff,
            "vocab": shape.vocab,
            "parameters": shape.parameters,
            "weights": "random, seeded: N(0, 1/fan_in) matrices, N(0, 1) embedding",
            "model_flops_per_token": float(f"{per_token:.6g}"),
            "model_tflops": round(median_tokens_per_s * per_token / 1e12, 3),
            **figures,
        }

    return extra


def _prepared(ctx: Context, *, precision: str, phase: str, batch: int) -> Prepared:
    _require_precision(ctx, precision)
    sizes = ctx.sizes.llm
    shape = shape_from(sizes)
    prompt_len, generated = sizes["prompt_len"], sizes["generated_tokens"]
    max_len = prompt_len + generated
    free = ctx.free_bytes()
    needed = memory_needed(shape, precision=precision, batch=batch, prompt_len=prompt_len, max_len=max_len)
    if free is not None and needed * 1.1 > free:
        raise Unsupported(
            f"{shape.name} {precision} at batch {batch} needs about {needed / 2**30:.1f} GiB of GPU memory; "
            f"{free / 2**30:.1f} GiB are free"
        )
    # Weights are plain tensors that never require gradients, so autograd records nothing.
    model = Decoder(ctx, shape, precision, max_len=max_len)
    cache = KvCache(ctx, shape, batch=batch, max_len=max_len)
    prompt = _prompt(ctx, shape, batch, prompt_len)
    if precision == "fp8":
        model.calibrate(prompt, cache)
        cache.poison()
    if phase == "prefill":
        return _prefill_prepared(ctx, model, cache, prompt, generated=generated)
    return _decode_prepared(ctx, model, cache, prompt, generated=generated)


def _graphed(ctx: Context, body: Any, warmup: Any, *, capture_error_mode: str = "global") -> tuple[Any, Any]:
    """(call, graph): on CUDA ``body`` captured once and replayed; on the CPU ``body`` itself.

    ``warmup`` runs first on a side stream, eagerly: it creates the cuBLAS handles and workspaces,
    which a capture may not allocate. ``capture_error_mode`` "thread_local" lets other threads (NCCL's
    watchdog, which queries its events) go on during the capture.
    """
    if ctx.cpu_only:
        return body, None
    torch = ctx.torch
    current = torch.cuda.current_stream(ctx.device)
    stream = torch.cuda.Stream(device=ctx.device)
    stream.wait_stream(current)
    with torch.cuda.stream(stream):
        warmup()
    current.wait_stream(stream)
    ctx.synchronize()
    torch.cuda.empty_cache()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, capture_error_mode=capture_error_mode):
        body()
    ctx.synchronize()
    return graph.replay, graph


def _assembled(
    model: Decoder,
    fn: Any,
    graph: Any,
    check: Any,
    holder: dict[str, Any],
    *,
    phase: str,
    prompt: Any,
    generated: int,
) -> Prepared:
    batch, prompt_len = prompt.shape

    def release() -> None:
        holder.clear()
        if graph is not None:
            graph.reset()

    extra = _extra(
        model.shape,
        model,
        phase=phase,
        batch=batch,
        prompt_len=prompt_len,
        generated=generated,
        graph=graph is not None,
    )
    work = batch * (prompt_len if phase == "prefill" else generated)
    return Prepared(fn=fn, work=float(work), check=check, extra=extra, teardown=release)


def _prefill_prepared(ctx: Context, model: Decoder, cache: KvCache, prompt: Any, *, generated: int) -> Prepared:
    torch = ctx.torch
    batch, prompt_len = prompt.shape
    holder: dict[str, Any] = {}

    def body() -> None:
        logits = model.prefill(prompt, cache)
        holder["logits"] = logits
        holder["next"] = torch.argmax(logits, dim=-1)

    fn, graph = _graphed(ctx, body, body)
    if graph is not None:
        cache.poison()  # the timed replays must write it again

    def check() -> dict[str, Any]:
        written = all(bool(torch.isfinite(store[:batch, :, :prompt_len]).all()) for store in cache.keys + cache.values)
        finite = bool(torch.isfinite(holder["logits"]).all())
        return {
            "method": "every KV cache entry of the prompt written (NaN poison gone), logits finite",
            "passed": written and finite,
        }

    return _assembled(model, fn, graph, check, holder, phase="prefill", prompt=prompt, generated=generated)


def _decode_prepared(ctx: Context, model: Decoder, cache: KvCache, prompt: Any, *, generated: int) -> Prepared:
    torch = ctx.torch
    batch, prompt_len = prompt.shape
    first = torch.argmax(model.prefill(prompt, cache), dim=-1)
    tokens = torch.empty(generated, batch, dtype=torch.long, device=ctx.device)
    first_logits = torch.full((batch, model.shape.vocab), float("nan"), dtype=torch.bfloat16, device=ctx.device)

    def loop(steps: int = generated) -> None:
        token = first
        for step in range(steps):
            logits = model.step(token, prompt_len + step, cache)
            if step == 0:
                first_logits.copy_(logits)
            token = torch.argmax(logits, dim=-1)
            tokens[step].copy_(token)

    fn, graph = _graphed(ctx, loop, lambda: loop(2))
    first_logits.fill_(float("nan"))

    def check() -> dict[str, Any]:
        # The first decode step saw the prompt and the first generated token through the cache; a
        # prefill over exactly those tokens must give the same logits.
        reference = model.prefill(torch.cat((prompt[:1], first[:1, None]), dim=1), cache)
        rel, max_rel = relative_errors(torch, first_logits[:1], reference)
        record = correctness_record(
            method="first decode step's logits vs a prefill over the same tokens (sequence 0)",
            rel=rel,
            max_rel=max_rel,
            tolerance=_CONSISTENCY_TOLERANCE[model.precision],
        )
        in_vocabulary = bool(((tokens >= 0) & (tokens < model.shape.vocab)).all())
        record["passed"] = record["passed"] and in_vocabulary
        return record

    return _assembled(model, fn, graph, check, {}, phase="decode", prompt=prompt, generated=generated)


def llm_cases(ctx: Context, precisions: tuple[str, ...]) -> list[Case]:
    sizes = ctx.sizes.llm
    cases = []
    for precision in LLM_PRECISIONS:
        if precision not in precisions:
            continue
        for batch in sizes["batches"]:
            for phase in ("prefill", "decode"):
                if phase not in ctx.serve.phases:
                    continue
                params: dict[str, Any] = {
                    "model": sizes["model"],
                    "phase": phase,
                    "batch": batch,
                    "prompt_len": sizes["prompt_len"],
                }
                if phase == "decode":
                    params["generated_tokens"] = sizes["generated_tokens"]
                if precision == "fp8":
                    params.update(format="e4m3", scaling="static-per-tensor")
                label = f"llm {sizes['model']} {precision} {phase} batch {batch}"
                cases.append(Case("llm-decode", precision, params, _builder(precision, phase, batch), label))
    return cases


def _builder(precision: str, phase: str, batch: int):  # noqa: ANN202
    def build(ctx: Context) -> Prepared:
        return _prepared(ctx, precision=precision, phase=phase, batch=batch)

    return build


__all__ = [
    "LLM_PRECISIONS",
    "Decoder",
    "KvCache",
    "Shape",
    "TensorParallel",
    "llm_cases",
    "memory_needed",
    "shape_from",
]
