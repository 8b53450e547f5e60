"""Dense matmul in each precision (fixed 8192 and the GPU's preferred size) and the AutoDL performance guide's stress test."""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
from typing import Any

from ..timing import checked_seconds
from .common import Case, Context, Prepared, Unsupported, correctness_record, relative_errors, require_ampere_for

MATMUL_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")

# ||out - ref|| / ||ref|| ceilings, with a margin over what each format gives on N(0,1) inputs (float32
# arithmetic ~1e-6, TF32 ~3e-4, half-precision outputs ~1e-3, fp8 operands compared against their own
# float64 upcast so only accumulation and the bf16 output count).
TOLERANCE = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 1e-2, "bf16": 1e-2, "fp8": 2e-2}

_FLOAT32_MATMUL_PRECISION = {"fp32": "highest", "tf32": "high"}


def _dtype(torch: Any, precision: str) -> Any:
    return {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def _require_memory(ctx: Context, needed: int, what: str) -> None:
    free = ctx.free_bytes()
    if free is not None and needed * 1.15 > free:
        raise Unsupported(f"{what} needs {needed / 2**30:.1f} GiB of GPU memory; {free / 2**30:.1f} GiB are free")


def _matmul_prepared(ctx: Context, precision: str, m: int, n: int, k: int) -> Prepared:
    torch = ctx.torch
    if precision == "fp32" and os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1":
        raise Unsupported("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 forces TF32, so an FP32 figure cannot be measured")
    work = 2.0 * m * n * k / 1e12
    rows, cols = min(m, ctx.sizes.correctness_slice), min(n, ctx.sizes.correctness_slice)

    if precision == "fp8":
        if ctx.cpu_only:
            raise Unsupported("fp8 matmul needs CUDA (torch._scaled_mm)")
        if ctx.compute_capability is None or ctx.compute_capability < (8, 9):
            raise Unsupported(f"fp8 e4m3 needs compute capability 8.9 or newer; this GPU is {ctx.compute_capability}")
        if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
            raise Unsupported(f"this PyTorch ({torch.__version__}) has no float8_e4m3fn / _scaled_mm")
        _require_memory(ctx, m * k + n * k + 2 * m * n, f"fp8 matmul {m}x{n}x{k}")
        fp8 = torch.float8_e4m3fn
        a = torch.randn(m, k, generator=ctx.generator(11), device=ctx.device).to(fp8)
        b = (
            torch.randn(n, k, generator=ctx.generator(12), device=ctx.device).to(fp8).t()
        )  # column-major, as cuBLASLt wants
        scale = torch.ones((), dtype=torch.float32, device=ctx.device)
        holder: dict[str, Any] = {}

        def fn() -> None:
            holder["out"] = torch._scaled_mm(
                a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16, use_fast_accum=True
            )

        def check() -> dict[str, Any]:
            out = holder["out"]
            out = out[0] if isinstance(out, tuple) else out
            ref = a[:rows].float().double() @ b[:, :cols].float().double()
            rel, max_rel = relative_errors(torch, out[:rows, :cols], ref)
            return correctness_record(
                method=f"{rows}x{cols} slice vs float64", rel=rel, max_rel=max_rel, tolerance=TOLERANCE["fp8"]
            )

        return Prepared(fn=fn, work=work, check=check)

    require_ampere_for(ctx, precision)
    dtype = _dtype(torch, precision)
    element = torch.empty((), dtype=dtype).element_size()
    _require_memory(ctx, (m * k + k * n + m * n) * element, f"{precision} matmul {m}x{n}x{k}")
    a = torch.randn(m, k, generator=ctx.generator(1), device=ctx.device, dtype=torch.float32).to(dtype)
    b = torch.randn(k, n, generator=ctx.generator(2), device=ctx.device, dtype=torch.float32).to(dtype)
    # Poisoned output: the check fails unless the timed runs wrote it.
    out = torch.full((m, n), float("nan"), dtype=dtype, device=ctx.device)
    previous = torch.get_float32_matmul_precision()
    if precision in _FLOAT32_MATMUL_PRECISION:
        torch.set_float32_matmul_precision(_FLOAT32_MATMUL_PRECISION[precision])

    def fn_plain() -> None:
        torch.matmul(a, b, out=out)

    def check_plain() -> dict[str, Any]:
        ref = a[:rows].double() @ b[:, :cols].double()
        rel, max_rel = relative_errors(torch, out[:rows, :cols], ref)
        return correctness_record(
            method=f"{rows}x{cols} slice vs float64", rel=rel, max_rel=max_rel, tolerance=TOLERANCE[precision]
        )

    def teardown() -> None:
        torch.set_float32_matmul_precision(previous)

    return Prepared(fn=fn_plain, work=work, check=check_plain, teardown=teardown)


SWEEP_ROUNDS = 3


def _preferred_size(ctx: Context, precision: str) -> tuple[int, dict[int, float]]:
    """The fastest square size among the candidates (cached for the sustained pass).

    The candidates are timed round-robin, SWEEP_ROUNDS times each, and ranked by their medians: a
    sweep in size order would favour whichever size ran first, on the coolest GPU.
    """
    key = f"matmul-preferred:{precision}"
    if key in ctx.cache:
        return ctx.cache[key]
    prepared_by_size: dict[int, Prepared] = {}
    reasons: list[str] = []
    timer = ctx.timer
    slice_seconds = ctx.policy.min_repetition_seconds / 4
    try:
        for size in ctx.sizes.matmul_candidates:
            try:
                prepared_by_size[size] = _matmul_prepared(ctx, precision, size, size, size)
            except Unsupported as reason:
                reasons.append(str(reason))
        if not prepared_by_size:
            raise Unsupported("; ".join(dict.fromkeys(reasons)) or "no candidate size could run")
        inner: dict[int, int] = {}
        for size, prepared in prepared_by_size.items():
            checked_seconds(timer.time(prepared.fn, 1))  # set-up
            per_call = checked_seconds(timer.time(prepared.fn, 2)) / 2
            inner[size] = max(1, math.ceil(slice_seconds / per_call))
        samples: dict[int, list[float]] = {size: [] for size in prepared_by_size}
        for _ in range(SWEEP_ROUNDS):
            for size, prepared in prepared_by_size.items():
                seconds = checked_seconds(timer.time(prepared.fn, inner[size]))
                samples[size].append(prepared.work * inner[size] / seconds)
        sweep = {size: statistics.median(values) for size, values in samples.items()}
    finally:
        for prepared in reversed(list(prepared_by_size.values())):
            if prepared.teardown:
                prepared.teardown()
        prepared_by_size.clear()
        ctx.release()
    ctx.cache[key] = (max(sweep, key=lambda size: sweep[size]), sweep)
    return ctx.cache[key]


def _build_fixed(precision: str):  # noqa: ANN202 - a builder closure
    def build(ctx: Context) -> Prepared:
        size = ctx.sizes.matmul_fixed
        return _matmul_prepared(ctx, precision, size, size, size)

    return build


def _build_preferred(precision: str):  # noqa: ANN202
    def build(ctx: Context) -> Prepared:
        size, sweep = _preferred_size(ctx, precision)
        prepared = _matmul_prepared(ctx, precision, size, size, size)
        info: dict[str, Any] = {"m": size, "n": size, "k": size}
        info.update({f"sweep_{candidate}_tflops": float(f"{value:.4g}") for candidate, value in sweep.items()})
        prepared.extra = lambda _median: info
        return prepared

    return build


def _build_stress(ctx: Context) -> Prepared:
    size, count = ctx.sizes.stress_size, ctx.sizes.stress_matmuls
    prepared = _matmul_prepared(ctx, "fp32", size, size, size)
    prepared.policy = dataclasses.replace(
        ctx.policy,
        fixed_inner_iterations=count,
        max_repetitions=ctx.policy.min_repetitions,
        warmup_seconds=min(ctx.policy.warmup_seconds, 0.2),
        min_warmup_iterations=3,
    )
    work = prepared.work
    prepared.extra = lambda median: {"seconds_per_100": round(100 * work / median, 6)}
    return prepared


def matmul_cases(ctx: Context, precisions: tuple[str, ...]) -> list[Case]:
    size = ctx.sizes.matmul_fixed
    cases = []
    for precision in MATMUL_PRECISIONS:
        if precision not in precisions:
            continue
        params: dict[str, Any] = {"size": "fixed", "m": size, "n": size, "k": size}
        preferred: dict[str, Any] = {"size": "preferred"}
        if precision == "fp8":
            params.update(fast_accum=True, format="e4m3")
            preferred.update(fast_accum=True, format="e4m3")
        cases.append(Case("matmul", precision, params, _build_fixed(precision), f"matmul {precision} {size}"))
        cases.append(Case("matmul", precision, preferred, _build_preferred(precision), f"matmul {precision} preferred"))
    return cases


def stress_cases(ctx: Context) -> list[Case]:
    size, count = ctx.sizes.stress_size, ctx.sizes.stress_matmuls
    params = {"m": size, "n": size, "k": size, "matmuls_per_repetition": count}
    return [Case("matmul-stress", "fp32", params, _build_stress, f"stress fp32 {size} x{count}")]
