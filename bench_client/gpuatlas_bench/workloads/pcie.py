"""Host-to-device and device-to-host bandwidth through pinned host memory."""

from __future__ import annotations

from typing import Any

from .common import Case, Context, Prepared, Unsupported


def _prepared(ctx: Context, direction: str) -> Prepared:
    if ctx.cpu_only:
        raise Unsupported("needs CUDA: pinned host memory and a PCIe link")
    torch = ctx.torch
    size = ctx.sizes.pcie_bytes
    device_data = torch.rand(size // 4, generator=ctx.generator(31), device=ctx.device)
    host = torch.empty(size // 4, dtype=torch.float32, pin_memory=True)
    if direction == "h2d":
        host.copy_(device_data)
        target = torch.full_like(device_data, float("nan"))

        def fn() -> None:
            target.copy_(host, non_blocking=True)

        def check() -> dict[str, Any]:
            ctx.synchronize()
            return {"method": "exact compare with the source", "passed": bool(torch.equal(target, device_data))}

    else:
        host.fill_(float("nan"))

        def fn() -> None:
            host.copy_(device_data, non_blocking=True)

        def check() -> dict[str, Any]:
            ctx.synchronize()
            return {"method": "exact compare with the source", "passed": bool(torch.equal(host, device_data.cpu()))}

    return Prepared(fn=fn, work=size / 1e9, check=check)


def pcie_cases(ctx: Context, wanted: tuple[str, ...]) -> list[Case]:
    cases = []
    for direction in ("h2d", "d2h"):
        workload = f"pcie-{direction}"
        if workload in wanted:
            params = {"bytes": ctx.sizes.pcie_bytes, "pinned": True}
            cases.append(Case(workload, "fp32", params, _builder(direction), workload))
    return cases


def _builder(direction: str):  # noqa: ANN202
    def build(ctx: Context) -> Prepared:
        return _prepared(ctx, direction)

    return build
