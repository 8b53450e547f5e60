"""The kernels of one llm-decode step, timed alone: where a decode step's time goes.

For each linear layer of Llama 3 8B, at 1 and 128 tokens: the bf16 product (F.linear) and the fp8
one (the static activation quantisation, then torch._scaled_mm), as GB/s of weight read; and the
decode attention over a 512..640-position bf16 cache, as GB/s of cache read. CUDA events over 50
calls after 5 warm-up calls, three trials, the median printed.

    python bench_client/perf/llm_kernels.py            # needs a CUDA GPU with fp8 (8.9+)
"""

from __future__ import annotations

import statistics

import torch

LAYERS = {"qkv": (6144, 4096), "out": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}
CALLS = 50


def timed(fn) -> float:  # noqa: ANN001
    for _ in range(5):
        fn()
    trials = []
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(CALLS):
            fn()
        end.record()
        end.synchronize()
        trials.append(start.elapsed_time(end) / 1000 / CALLS)
    return statistics.median(trials)


def main() -> None:
    generator = torch.Generator(device="cuda").manual_seed(7)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'layer':<8} {'tokens':>6} {'bf16 us':>9} {'bf16 GB/s':>10} {'fp8 us':>9} {'fp8 GB/s':>9} {'quant us':>9}")
    totals = {1: [0.0, 0.0, 0.0], 128: [0.0, 0.0, 0.0]}
    for name, (n, k) in LAYERS.items():
        w = torch.randn(n, k, generator=generator, device="cuda", dtype=torch.bfloat16).mul_(k**-0.5)
        w_scale = (w.abs().amax().float() / 448).clamp_min(1e-12)
        w8 = (w.float() / w_scale).clamp(-448, 448).to(torch.float8_e4m3fn)
        for tokens in (1, 128):
            x = torch.randn(tokens, k, generator=generator, device="cuda", dtype=torch.bfloat16)
            x_scale = (x.abs().amax().float() / 448).clamp_min(1e-12)
            inverse = 1 / x_scale
            xq = (x * inverse).clamp(-448, 448).to(torch.float8_e4m3fn)
            bf16 = timed(lambda x=x, w=w: torch.nn.functional.linear(x, w))
            fp8 = timed(
                lambda xq=xq, w8=w8, x_scale=x_scale, w_scale=w_scale: torch._scaled_mm(
                    xq, w8.t(), scale_a=x_scale, scale_b=w_scale, out_dtype=torch.bfloat16, use_fast_accum=True
                )
            )
            quant = timed(lambda x=x, inverse=inverse: (x * inverse).clamp(-448, 448).to(torch.float8_e4m3fn))
            totals[tokens][0] += bf16
            totals[tokens][1] += fp8
            totals[tokens][2] += quant
            print(
                f"{name:<8} {tokens:>6} {bf16 * 1e6:>9.1f} {n * k * 2 / bf16 / 1e9:>10.0f} "
                f"{fp8 * 1e6:>9.1f} {n * k / fp8 / 1e9:>9.0f} {quant * 1e6:>9.1f}"
            )
    for tokens, (bf16, fp8, quant) in totals.items():
        print(
            f"32 layers at {tokens} token(s): bf16 {bf16 * 32 * 1e3:.2f} ms, "
            f"fp8 {(fp8 + quant) * 32 * 1e3:.2f} ms (of which quantisation {quant * 32 * 1e3:.2f} ms)"
        )
    for batch in (1, 128):
        length = 576  # the mean cache length of a 512 + 128 decode
        q = torch.randn(batch, 8, 4, 128, generator=generator, device="cuda", dtype=torch.bfloat16)
        cache = torch.randn(2, batch, 8, 640, 128, generator=generator, device="cuda", dtype=torch.bfloat16)
        keys, values = cache[0, :, :, :length], cache[1, :, :, :length]
        seconds = timed(
            lambda q=q, keys=keys, values=values: torch.nn.functional.scaled_dot_product_attention(q, keys, values)
        )
        read = 2 * keys.numel() * 2
        print(
            f"decode attention, batch {batch}, {length} positions: {seconds * 1e6:.1f} us, {read / seconds / 1e9:.0f} GB/s "
            f"of cache read; 32 layers {seconds * 32 * 1e3:.2f} ms"
        )


if __name__ == "__main__":
    main()
