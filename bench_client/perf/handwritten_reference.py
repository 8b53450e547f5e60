"""Hand-written reference loops, to check that gpuatlas-bench measures what a careful person would.

Plain torch.matmul / copy_ / add loops with CUDA events, no harness: several trials each, and the
best trial is the figure the client must come within 5% of. Run on the GPU machine in the same
session as the client:

    python3 perf/handwritten_reference.py --client-json run1.json --out handwritten.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

TRIALS = 7
LONG_TRIALS = 4
GiB = 1024**3


def _timed(fn, iterations: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0


def _trials(fn, per_call_work: float) -> dict[str, float]:
    """Best and median of TRIALS short trials (0.15 s) and of LONG_TRIALS long ones (1 s).

    Short trials can land on the top of a power-management swing; long ones average over it.
    """
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    one = _timed(fn, 3) / 3
    figures: dict[str, float] = {}
    for name, target_s, trials in (("", 0.15, TRIALS), ("_long", 1.0, LONG_TRIALS)):
        iterations = max(3, int(target_s / one))
        values = [per_call_work * iterations / _timed(fn, iterations) for _ in range(trials)]
        figures.update({f"best{name}": max(values), f"median{name}": statistics.median(values)})
        figures[f"iterations{name}"] = iterations
    return figures


def matmul(precision: str, n: int) -> dict[str, float]:
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    if precision == "fp8":
        a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.ones((), device="cuda")

        def fn():
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)

    else:
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]
        a = torch.randn(n, n, device="cuda").to(dtype)
        b = torch.randn(n, n, device="cuda").to(dtype)

        def fn():
            return torch.matmul(a, b)

    figure = _trials(fn, 2 * n**3 / 1e12)
    torch.set_float32_matmul_precision("highest")
    return figure


def stress_as_published() -> dict[str, float]:
    """The AutoDL performance guide's stress test as published (wall clock and synchronize), but on random
    instead of zero inputs."""
    n = 8192
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    figures = []
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(100):
            torch.matmul(a, b)
        torch.cuda.synchronize()
        figures.append(100 * 2 * n**3 / 1e12 / (time.perf_counter() - started))
    return {"best": max(figures), "median": statistics.median(figures), "iterations": 100}


def copy(size: int) -> dict[str, float]:
    src = torch.rand(size // 4, device="cuda")
    dst = torch.empty_like(src)
    figure = _trials(lambda: dst.copy_(src), 2 * size / 1e9)
    return figure


def triad(size: int) -> dict[str, float]:
    b = torch.rand(size // 4, device="cuda")
    c = torch.rand(size // 4, device="cuda")
    a = torch.empty_like(b)
    figure = _trials(lambda: torch.add(b, c, alpha=3.0, out=a), 3 * size / 1e9)
    return figure


def pcie(direction: str, size: int) -> dict[str, float]:
    device = torch.rand(size // 4, device="cuda")
    host = torch.empty(size // 4, pin_memory=True)
    if direction == "h2d":
        figure = _trials(lambda: device.copy_(host, non_blocking=True), size / 1e9)
    else:
        figure = _trials(lambda: host.copy_(device, non_blocking=True), size / 1e9)
    return figure


def _fresh(figure: dict[str, float]) -> dict[str, float]:
    """Called with each finished figure: its tensors are gone, give their memory back before the next."""
    torch.cuda.empty_cache()
    return figure


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client-json", help="a client result, to reuse its preferred matmul sizes and buffer sizes")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    preferred: dict[str, int] = {}
    membw_bytes = {"membw-copy": 4 * GiB, "membw-triad": 4 * GiB}
    if args.client_json:
        with open(args.client_json, encoding="utf-8") as stream:
            client = json.load(stream)
        for result in client["results"]:
            if result["workload"] == "matmul" and result["params"].get("size") == "preferred":
                preferred[result["precision"]] = int(result["extra"]["m"])
            if result["workload"] in membw_bytes:
                membw_bytes[result["workload"]] = int(result["params"]["buffer_bytes"])

    figures: dict[str, dict] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    matmuls: dict[str, dict] = {}
    for precision in ("fp32", "tf32", "fp16", "bf16", "fp8"):
        sizes = sorted({8192, preferred.get(precision, 8192)})
        matmuls[precision] = {}
        for size in sizes:
            matmuls[precision][str(size)] = _fresh(matmul(precision, size))
            figure = matmuls[precision][str(size)]
            print(
                f"matmul {precision} {size}: best {figure['best']:.1f} TFLOPS (0.15 s trials), "
                f"{figure['best_long']:.1f} (1 s trials)",
                flush=True,
            )
    figures["matmul"] = matmuls
    figures["matmul-stress"] = _fresh(stress_as_published())
    print(f"AutoDL stress test: best {figures['matmul-stress']['best']:.1f} TFLOPS", flush=True)
    figures["membw-copy"] = _fresh(copy(membw_bytes["membw-copy"]))
    figures["membw-triad"] = _fresh(triad(membw_bytes["membw-triad"]))
    figures["pcie-h2d"] = _fresh(pcie("h2d", GiB))
    figures["pcie-d2h"] = _fresh(pcie("d2h", GiB))
    for name in ("membw-copy", "membw-triad", "pcie-h2d", "pcie-d2h"):
        print(
            f"{name}: best {figures[name]['best']:.1f} GB/s, {figures[name]['best_long']:.1f} (1 s trials)", flush=True
        )
    with open(args.out, "w", encoding="utf-8") as stream:
        json.dump(figures, stream, indent=2)


if __name__ == "__main__":
    main()
