"""The serving sweep: decode-step time, throughput and energy against the number of sequences served.

A serving point is ``concurrency`` sequences, each with ``context_len`` tokens already in the KV cache,
all taking one decode step together, as a server's continuous batching does once the prompts are in.
The step is one CUDA graph (the whole step: embedding, every layer, the output head and the greedy
pick of the next token, fed back as the next step's input) replayed back to back. Per point:

- step time; output tokens/s = concurrency / step time (per GPU: divided by the GPUs of the group);
- tokens/s per user = 1 / step time (one token per sequence per step);
- joules per output token over a steady-state window of at least 5 s of replays after a warm-up
  (``energy.py``: NVML's total-energy counter, else its power readings; summed over the group's
  GPUs), with the window's length, its samples, the source and the board's power limit beside it;
  None where there is neither. A window under 5 s, or a GPU whose average power is above its limit,
  is flagged (``extra.energy_flag``) and the server does not publish that figure.

Concurrency doubles from 1 until the KV cache of the next batch would not fit in the memory left
after the weights (the first that does not is recorded as skipped, with the GiB it needs), so the
sweep ends at the GPU's memory limit. The context is N(0, 1) keys and values rather than a real
prompt's: the speed of attention does not depend on the values, and a prefill of 256 x 1,024 tokens
would cost more than the whole sweep. The check compares the graph's logits for sequence 0 with a
plainly written eager step over the same cache (``Decoder.reference_step``).

Tensor parallelism (``llm-decode-tp``, one process per GPU): Megatron's split (QKV and gate/up by
columns, the output and down products by rows, an all-reduce after each, the output head by
vocabulary with its logits gathered), the NCCL collectives captured in the step's graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..energy import energy_flags, energy_window_measure, window_plan
from ..timing import TimingPolicy
from .common import Case, Context, GiB, Prepared, Unsupported, correctness_record, relative_errors
from .llm import (
    _CONSISTENCY_TOLERANCE,
    LLM_PRECISIONS,
    Decoder,
    KvCache,
    Shape,
    TensorParallel,
    _graphed,
    _require_precision,
    shape_from,
)

# Short points: the step is the same work every replay, so its time settles within a few
# repetitions; 10 repetitions of at least 20 ms (the schema's minimum window), more (up to 1 s of
# them) until they agree within 2 %.
SERVE_POLICY = TimingPolicy(
    min_repetitions=10,
    max_repetitions=20,
    target_spread_pct=2.0,
    max_seconds=1.0,
    warmup_seconds=0.1,
    min_repetition_seconds=0.02,
)
CPU_SERVE_POLICY = TimingPolicy(
    min_repetitions=10, max_repetitions=10, max_seconds=0.05, warmup_seconds=0.0, min_repetition_seconds=0.0002
)
SHARED_MODEL = "serve-model"  # the ctx.cache key of the model the sweep's points share
# cuBLAS workspaces, the graph's memory pool, NCCL's buffers and the allocator's slack.
RESERVE_BYTES = int(1.5 * GiB)


@dataclass(frozen=True)
class PointPlan:
    """The concurrencies to measure at one context, and why the sweep stops where it does."""

    concurrencies: tuple[int, ...]
    kv_limit_sequences: int  # the most sequences of this context whose cache fits beside the weights
    first_unfit: int | None  # the first doubling that does not fit (recorded as skipped)
    unfit_reason: str | None


def consistency_tolerance(precision: str, *, n_layers: int, gpus: int) -> float:
    """The served step's tolerance against the eager step, for a model of ``n_layers`` split over ``gpus``.

    The two steps differ only in rounding (other kernels, and under tensor parallelism partial sums
    added in another order), and independent rounding differences grow like the square root of the
    number of layers they pass through and of the partial sums per output. The base tolerance holds
    for Llama 3 8B's 32 layers on one GPU; 80 layers of 70B over 2 GPUs gave 0.079 (bf16) and 0.30
    (fp8) on two H200s, where a wrong cache position, rotary angle or head grouping gives 0.1 to 0.8
    at 32 layers and grows with depth as well.
    """
    return round(_CONSISTENCY_TOLERANCE[precision] * math.sqrt(max(n_layers, 32) / 32 * max(gpus, 1)), 4)


def resident_bytes(shape: Shape, precision: str, tp: int, max_len: int) -> int:
    """What one rank holds for the whole sweep: its share of the weights, the embedding, rotary tables."""
    linear = (shape.linear_parameters - shape.d_model * shape.vocab) // tp
    weights = linear * (1 if precision == "fp8" else 2)
    head = shape.vocab * shape.d_model * 2 // tp
    embedding = shape.vocab * shape.d_model * 2
    heads = (shape.n_heads + 2 * shape.n_kv_heads) // tp
    tables = 2 * max_len * heads * shape.head_dim * 2 + 2 * max_len * shape.head_dim * 2
    return weights + head + embedding + tables


def per_sequence_bytes(shape: Shape, tp: int, context: int) -> int:
    """One sequence's KV cache on one rank, plus its share of the step's activations and logits."""
    cache = shape.kv_bytes_per_token() // tp * (context + 1)
    activations = 2 * (4 * shape.d_ff // tp + 8 * shape.d_model) + shape.vocab * (2 + 2 + 8)
    return cache + activations


def point_plan(
    shape: Shape, precision: str, *, tp: int, context: int, free: int, plan_max: int, max_len: int, reserve: int
) -> PointPlan:
    resident = resident_bytes(shape, precision, tp, max_len)
    per_sequence = per_sequence_bytes(shape, tp, context)
    room = free - resident - reserve
    limit = max(0, room // per_sequence)
    concurrencies = []
    batch = 1
    while batch <= min(limit, plan_max):
        concurrencies.append(batch)
        batch *= 2
    first_unfit = None
    reason = None
    if batch <= plan_max:
        first_unfit = batch
        needed = resident + reserve + batch * per_sequence
        what = f"{batch} sequence{'s' if batch > 1 else ''} at context {context}"
        reason = (
            f"{shape.name} {precision}{f' over {tp} GPUs' if tp > 1 else ''}: {what} need about "
            f"{needed / GiB:.1f} GiB per GPU ({resident / GiB:.1f} GiB of weights, "
            f"{batch * per_sequence / GiB:.1f} GiB of KV cache and activations); {free / GiB:.1f} GiB are free. "
            f"The KV cache holds at most {limit} such sequences"
        )
    return PointPlan(tuple(concurrencies), int(limit), first_unfit, reason)


def _unfit(reason: str) -> Callable[[Context], Prepared]:
    def build(ctx: Context) -> Prepared:
        raise Unsupported(reason)

    return build


def _shared_model(ctx: Context, shape: Shape, precision: str, *, max_len: int, tp: TensorParallel | None) -> Decoder:
    """The sweep's model, built once per precision and kept in ``ctx.cache`` across its points."""
    key = (shape.name, precision, max_len, tp.size if tp else 1)
    held = ctx.cache.get(SHARED_MODEL)
    if held is not None and held[0] == key:
        return held[1]
    ctx.cache.pop(SHARED_MODEL, None)
    del held
    ctx.release()
    model = Decoder(ctx, shape, precision, max_len=max_len, tp=tp)
    if precision == "fp8":
        model.calibrate_decode(ctx)
    ctx.cache[SHARED_MODEL] = (key, model)
    return model


def _own_reading(value: float) -> list[float]:
    return [value]


def _energy_figures(
    ctx: Context,
    fn: Callable[[], object],
    *,
    step_s: float,
    batch: int,
    gather: Callable[[float], list[float]],
) -> dict[str, Any]:
    """Energy per output token over a steady-state window (energy.py), checked against the power limit.

    ``gather`` collects one figure from every rank of the group (a list of one on a single GPU): the
    group's joules are the sum of its GPUs', and each GPU's average power is checked against its own
    board limit.
    """

    def run_steps(count: int) -> None:
        for _ in range(count):
            fn()

    plan = window_plan(step_s=step_s, policy=ctx.sizes.serve_energy)
    window = energy_window_measure(
        run_steps=run_steps, synchronize=ctx.synchronize, plan=plan, energy_mj=ctx.energy_mj, power_w=ctx.power_w
    )
    parts = gather(-1.0 if window.joules is None else window.joules)
    limits = [limit for limit in gather(ctx.power_limit_w or -1.0) if limit > 0]
    gpus = len(parts)
    joules = None if any(part < 0 for part in parts) else sum(parts)
    figures: dict[str, Any] = {
        "joules_per_token": None,
        "power_w": None,
        # Four significant figures, so a window of a few milliseconds (a CPU run) keeps its precision.
        "energy_window_s": float(f"{window.seconds:.4g}"),
        "energy_warmup_s": float(f"{window.warmup_s:.4g}"),
        "energy_samples": window.samples,
        "energy_source": window.source,
        "power_limit_w": min(limits) if len(limits) == gpus else None,
        "energy_flag": None,
    }
    if joules is None or window.seconds <= 0:
        return figures
    per_gpu_power = [part / window.seconds for part in parts]
    flags = energy_flags(seconds=window.seconds, power_w_per_gpu=per_gpu_power, power_limit_w=figures["power_limit_w"])
    figures.update(
        joules_per_token=float(f"{joules / (window.steps * batch):.4g}"),
        power_w=round(joules / window.seconds / gpus, 1),
        energy_flag="; ".join(flags)[:200] or None,
    )
    return figures


def serve_prepared(
    ctx: Context,
    model: Decoder,
    *,
    context: int,
    batch: int,
    kv_limit: int,
    gather: Callable[[float], list[float]] = _own_reading,
) -> Prepared:
    torch = ctx.torch
    shape = model.shape
    gpus = model.tp.size
    cache = KvCache(
        ctx,
        shape,
        batch=batch,
        max_len=context + 1,
        kv_heads=model.kv_heads,
        generator=ctx.generator(63 + 1000 * model.tp.rank),
    )
    # The same tokens on every rank of a group (the same seed): they all embed the same sequences.
    tokens = torch.randint(0, shape.vocab, (batch,), generator=ctx.generator(64), device=ctx.device)
    holder: dict[str, Any] = {}

    def body() -> None:
        logits = model.step(tokens, context, cache)
        holder["logits"] = logits
        tokens.copy_(torch.argmax(logits, dim=-1))

    graph_error = None
    try:
        fn, graph = _graphed(ctx, body, body, capture_error_mode="thread_local" if gpus > 1 else "global")
    except RuntimeError as error:  # a build whose collectives cannot be captured: measured eagerly
        if ctx.cpu_only:
            raise
        graph_error = f"CUDA graph capture failed, steps run eagerly: {str(error).strip()[:140]}"
        ctx.synchronize()
        fn, graph = body, None

    def check() -> dict[str, Any]:
        known = tokens.clone()
        fn()
        ctx.synchronize()
        served = holder["logits"][:1].clone()
        reference = model.reference_step(known[:1], context, cache)
        rel, max_rel = relative_errors(torch, served, reference)
        return correctness_record(
            method=(
                f"sequence 0's logits from the served step (batch {batch}) vs a plainly written eager step "
                "over the same cache"
            ),
            rel=rel,
            max_rel=max_rel,
            tolerance=consistency_tolerance(model.precision, n_layers=shape.n_layers, gpus=gpus),
        )

    hd = shape.head_dim
    weights = model.weight_bytes()
    kv_read = batch * (context + 1) * shape.kv_bytes_per_token() // gpus
    step_bytes = weights + kv_read
    linear_params = model.weight_parameters()
    # Per GPU: two FLOPs per weight per sequence in the products, QK^T and PV over the context.
    step_flops = batch * (2.0 * linear_params + 4.0 * shape.n_layers * model.q_heads * hd * (context + 1))

    def extra(median_tokens_per_s: float) -> dict[str, Any]:
        step_s = batch / median_tokens_per_s
        figures: dict[str, Any] = {
            "cuda_graph": graph is not None,
            "steps_per_graph": 1,
            "step_ms": float(f"{step_s * 1000:.6g}"),
            "tokens_per_s_per_gpu": float(f"{median_tokens_per_s / gpus:.6g}"),
            "tokens_per_s_per_user": float(f"{1 / step_s:.6g}"),
            **_energy_figures(ctx, fn, step_s=step_s, batch=batch, gather=gather),
            "bytes_per_step": float(f"{step_bytes:.6g}"),
            "flops_per_step": float(f"{step_flops:.6g}"),
            "achieved_gbs": round(step_bytes / step_s / 1e9, 1),
            "achieved_tflops": round(step_flops / step_s / 1e12, 3),
            "kv_limit_sequences": kv_limit,
            "kv_cache_gib": round(kv_read / GiB, 3),
            "n_layers": shape.n_layers,
            "d_model": shape.d_model,
            "n_heads": shape.n_heads,
            "n_kv_heads": shape.n_kv_heads,
            "d_ff": shape.d_ff,
            "vocab": shape.vocab,
            "parameters": shape.parameters,
            "weights": "random, seeded: N(0, 1/fan_in) matrices; the context's keys and values N(0, 1)",
        }
        if gpus > 1:
            figures["tp"] = gpus
        if graph_error is not None:
            figures["graph_error"] = graph_error
        return figures

    def release() -> None:
        holder.clear()
        cache.combined.clear()
        cache.keys.clear()
        cache.values.clear()
        if graph is not None:
            graph.reset()

    policy = CPU_SERVE_POLICY if ctx.cpu_only else SERVE_POLICY
    return Prepared(fn=fn, work=float(batch), check=check, extra=extra, policy=policy, teardown=release)


def _contexts(ctx: Context, sizes: dict[str, Any]) -> tuple[int, ...]:
    return tuple(ctx.serve.contexts or sizes["serve_contexts"])


def serve_cases(ctx: Context, precisions: tuple[str, ...]) -> list[Case]:
    """The single-GPU sweep of ``llm-decode`` (params.phase ``serve``): every precision, context, concurrency."""
    if "serve" not in ctx.serve.phases:
        return []
    sizes = ctx.sizes.llm
    shape = shape_from(sizes)
    contexts = _contexts(ctx, sizes)
    max_len = max(contexts) + 1
    free = ctx.free_bytes()
    if free is None:
        free = int(sizes["serve_cpu_memory_bytes"])
    cases: list[Case] = []
    for precision in LLM_PRECISIONS:
        if precision not in precisions:
            continue
        for context in contexts:
            base: dict[str, Any] = {"model": sizes["model"], "phase": "serve", "context_len": context}
            if precision == "fp8":
                base.update(format="e4m3", scaling="static-per-tensor")
            label = f"llm {sizes['model']} {precision} serve context {context} concurrency"
            try:
                _require_precision(ctx, precision)
            except Unsupported as missing:  # one skipped entry, not one per point
                cases.append(
                    Case("llm-decode", precision, {**base, "concurrency": 1}, _unfit(str(missing)), f"{label} 1")
                )
                continue
            plan = point_plan(
                shape,
                precision,
                tp=1,
                context=context,
                free=free,
                plan_max=ctx.serve.max_concurrency,
                max_len=max_len,
                reserve=0 if ctx.cpu_only else RESERVE_BYTES,
            )
            for batch in plan.concurrencies:

                def build(
                    c: Context,
                    batch: int = batch,
                    context: int = context,
                    precision: str = precision,
                    limit: int = plan.kv_limit_sequences,
                ) -> Prepared:
                    model = _shared_model(c, shape, precision, max_len=max_len, tp=None)
                    return serve_prepared(c, model, context=context, batch=batch, kv_limit=limit)

                cases.append(Case("llm-decode", precision, {**base, "concurrency": batch}, build, f"{label} {batch}"))
            if plan.first_unfit is not None and plan.unfit_reason is not None:
                params = {**base, "concurrency": plan.first_unfit}
                cases.append(
                    Case("llm-decode", precision, params, _unfit(plan.unfit_reason), f"{label} {plan.first_unfit}")
                )
    return cases


def _group_collectives(ctx: Context, group: Any) -> tuple[Callable[[Any], None], Callable[[Any], Any]]:
    torch, dist = ctx.torch, group.dist

    def all_reduce(tensor: Any) -> None:
        dist.all_reduce(tensor)

    def all_gather(tensor: Any) -> Any:
        tensor = tensor.contiguous()
        if group.backend == "nccl":
            out = torch.empty((group.world, *tensor.shape), dtype=tensor.dtype, device=tensor.device)
            dist.all_gather_into_tensor(out, tensor)
            return out
        parts = [torch.empty_like(tensor) for _ in range(group.world)]
        dist.all_gather(parts, tensor)
        return torch.stack(parts)

    return all_reduce, all_gather


def tp_cases(ctx: Context, group: Any, interconnect: str) -> list[Case]:
    """``llm-decode-tp``: the serving sweep of Llama 3 70B split over the group's GPUs (tp = group size)."""
    sizes = ctx.sizes.llm_tp
    shape = shape_from(sizes)
    contexts = _contexts(ctx, ctx.sizes.llm)
    max_len = max(contexts) + 1
    world = group.world
    own_free = ctx.free_bytes()
    # Every rank must build the same list of cases: plan on the GPU with the least free memory.
    free = int(min(group.gather(float(own_free)))) if own_free is not None else int(sizes["serve_cpu_memory_bytes"])
    all_reduce, all_gather = _group_collectives(ctx, group)

    cases: list[Case] = []
    for precision in LLM_PRECISIONS:
        if precision not in ctx.serve.precisions:
            continue
        for context in contexts:
            base: dict[str, Any] = {
                "model": sizes["model"],
                "context_len": context,
                "tp": world,
                "interconnect": interconnect,
            }
            if precision == "fp8":
                base.update(format="e4m3", scaling="static-per-tensor")
            label = f"llm {sizes['model']} {precision} TP{world} context {context} concurrency"
            reason = None
            if shape.n_kv_heads % world:
                reason = f"{shape.name} has {shape.n_kv_heads} key/value heads: they do not split over {world} GPUs"
            else:
                try:
                    _require_precision(ctx, precision)
                except Unsupported as missing:
                    reason = str(missing)
            if reason is not None:
                cases.append(Case("llm-decode-tp", precision, {**base, "concurrency": 1}, _unfit(reason), f"{label} 1"))
                continue
            plan = point_plan(
                shape,
                precision,
                tp=world,
                context=context,
                free=free,
                plan_max=ctx.serve.max_concurrency,
                max_len=max_len,
                reserve=0 if ctx.cpu_only else RESERVE_BYTES,
            )
            for batch in plan.concurrencies:

                def build(
                    c: Context,
                    batch: int = batch,
                    context: int = context,
                    precision: str = precision,
                    limit: int = plan.kv_limit_sequences,
                ) -> Prepared:
                    tp = TensorParallel(rank=group.rank, size=world, all_reduce=all_reduce, all_gather=all_gather)
                    model = _shared_model(c, shape, precision, max_len=max_len, tp=tp if world > 1 else None)
                    return serve_prepared(c, model, context=context, batch=batch, kv_limit=limit, gather=group.gather)

                params = {**base, "concurrency": batch}
                cases.append(Case("llm-decode-tp", precision, params, build, f"{label} {batch}"))
            if plan.first_unfit is not None and plan.unfit_reason is not None:
                params = {**base, "concurrency": plan.first_unfit}
                cases.append(
                    Case("llm-decode-tp", precision, params, _unfit(plan.unfit_reason), f"{label} {plan.first_unfit}")
                )
    return cases


__all__ = [
    "CPU_SERVE_POLICY",
    "RESERVE_BYTES",
    "SERVE_POLICY",
    "SHARED_MODEL",
    "PointPlan",
    "per_sequence_bytes",
    "point_plan",
    "resident_bytes",
    "serve_cases",
    "serve_prepared",
    "tp_cases",
]
