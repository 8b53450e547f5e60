"""Device memory bandwidth: copy and triad on buffers far larger than the L2 cache."""

from __future__ import annotations

from typing import Any

from .common import Case, Context, Prepared, Unsupported, correctness_record, relative_errors

_TRIAD_SCALAR = 3.0
_SAMPLE = 1 << 20  # elements compared in float64 at each end of the triad output


def _buffer_bytes(ctx: Context, buffers: int) -> int:
    """4 GiB per buffer; halved only when the GPU lacks the memory, never below 20x its L2 cache."""
    size = ctx.sizes.membw_buffer_bytes
    free = ctx.free_bytes()
    if free is None:
        return size
    floor = 20 * (ctx.l2_bytes or 0)
    while size * buffers > 0.8 * free and size // 2 >= max(floor, 1):
        size //= 2
    if size * buffers > 0.8 * free:
        raise Unsupported(f"{buffers} buffers of at least 20x L2 ({floor / 2**20:.0f} MiB) do not fit in free memory")
    return size


def _copy(ctx: Context) -> Prepared:
    torch = ctx.torch
    size = ctx.cache["membw-bytes:copy"]
    src = torch.rand(size // 4, generator=ctx.generator(21), device=ctx.device)
    dst = torch.empty_like(src)

    def fn() -> None:
        dst.copy_(src)

    def check() -> dict[str, Any]:
        return {"method": "exact compare with the source", "passed": bool(torch.equal(dst, src))}

    return Prepared(fn=fn, work=2 * size / 1e9, check=check)


def _triad(ctx: Context) -> Prepared:
    torch = ctx.torch
    size = ctx.cache["membw-bytes:triad"]
    b = torch.rand(size // 4, generator=ctx.generator(22), device=ctx.device)
    c = torch.rand(size // 4, generator=ctx.generator(23), device=ctx.device)
    a = torch.full_like(b, float("nan"))

    def fn() -> None:
        torch.add(b, c, alpha=_TRIAD_SCALAR, out=a)

    def check() -> dict[str, Any]:
        worst = (0.0, 0.0)
        for part in (slice(0, _SAMPLE), slice(-_SAMPLE, None)):
            ref = b[part].double() + _TRIAD_SCALAR * c[part].double()
            rel, max_rel = relative_errors(torch, a[part], ref)
            worst = (max(worst[0], rel), max(worst[1], max_rel))
        return correctness_record(
            method="first and last 2^20 elements vs float64", rel=worst[0], max_rel=worst[1], tolerance=1e-6
        )

    return Prepared(fn=fn, work=3 * size / 1e9, check=check)


def membw_cases(ctx: Context, wanted: tuple[str, ...]) -> list[Case]:
    cases = []
    for workload, buffers, build in (("membw-copy", 2, _copy), ("membw-triad", 3, _triad)):
        if workload not in wanted:
            continue
        key = f"membw-bytes:{workload.split('-')[1]}"
        try:
            ctx.cache[key] = _buffer_bytes(ctx, buffers)
        except Unsupported as reason:
            cases.append(Case(workload, "fp32", {}, _raiser(str(reason)), workload))
            continue
        params = {"buffer_bytes": ctx.cache[key], "dtype": "float32"}
        size = ctx.cache[key]
        shown = f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size / 2**20:g} MiB"
        cases.append(Case(workload, "fp32", params, build, f"{workload} {shown}"))
    return cases


def _raiser(reason: str):  # noqa: ANN202
    def build(_ctx: Context) -> Prepared:
        raise Unsupported(reason)

    return build
