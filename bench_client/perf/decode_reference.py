"""A hand-written batch-1 decode step at Llama 3 8B shapes: what a careful person gets, to hold the client to.

No harness and nothing from gpuatlas_bench: plain PyTorch, weights read once per step, the whole step
(embedding, 32 layers, output head, greedy pick fed back) captured in ONE CUDA graph, replayed back
to back and timed with CUDA events. The same shapes and bytes as the client's serving point at
concurrency 1: bf16 (or W8A8 fp8 with static per-tensor scales, the output head in bf16) weights,
a bf16 KV cache of ``context`` positions plus the new one.

Bytes per step = every linear weight once (QKV, output, gate/up, down in 32 layers, and the output
head; the embedding reads one row) + the KV cache read (2 x 32 layers x 8 heads x 128 x 2 bytes per
position, context + 1 positions). FLOPs per step = 2 per linear weight + 4 x 32 x 4096 x (context + 1)
for attention. GB/s = bytes / step time.

    python3 bench_client/perf/decode_reference.py --out reference.json [--client-json serve.json]

With --client-json (a gpuatlas-bench result holding llm-decode serving points) it prints, per
precision and context, the client's concurrency-1 step against this one: ratio = reference step
time / client step time (1.0 = as fast as the hand-written step; the client must reach 0.90).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F  # noqa: N812

LAYERS, D, HEADS, KV_HEADS, HEAD_DIM, D_FF, VOCAB, THETA = 32, 4096, 32, 8, 128, 14336, 128256, 500000.0
EPS = 1e-5
DEVICE = "cuda"  # the tests run the step on the CPU at tiny shapes
TRIALS = 7
TRIAL_SECONDS = 0.3


class Model:
    def __init__(self, precision: str) -> None:
        g = torch.Generator(device=DEVICE).manual_seed(5)
        self.precision = precision

        def matrix(rows: int, cols: int):  # noqa: ANN202
            w = torch.randn(rows, cols, generator=g, device=DEVICE, dtype=torch.bfloat16).mul_(cols**-0.5)
            if precision != "fp8":
                return w
            scale = (w.abs().amax().float() / 448).clamp_min(1e-12)
            return (w.float().div_(scale).clamp_(-448, 448).to(torch.float8_e4m3fn), scale)

        self.embedding = torch.randn(VOCAB, D, generator=g, device=DEVICE, dtype=torch.bfloat16)
        self.layers = [
            {
                "n1": torch.ones(D, device=DEVICE, dtype=torch.bfloat16),
                "qkv": matrix((HEADS + 2 * KV_HEADS) * HEAD_DIM, D),
                "out": matrix(D, D),
                "n2": torch.ones(D, device=DEVICE, dtype=torch.bfloat16),
                "gate_up": matrix(2 * D_FF, D),
                "down": matrix(D, D_FF),
            }
            for _ in range(LAYERS)
        ]
        self.final = torch.ones(D, device=DEVICE, dtype=torch.bfloat16)
        self.head = torch.randn(VOCAB, D, generator=g, device=DEVICE, dtype=torch.bfloat16).mul_(D**-0.5)
        # Activations stay of order one with these weights: a static input scale of 1/64 keeps them
        # well inside e4m3's range (448) and the clamp catches anything beyond.
        self.input_scale = torch.tensor(1 / 64, device=DEVICE)
        self.input_inverse = torch.tensor(64.0, device=DEVICE)

    def linear(self, x, w):  # noqa: ANN001, ANN201
        if self.precision != "fp8":
            return F.linear(x, w)
        weight, scale = w
        xq = (x * self.input_inverse).clamp_(-448, 448).to(torch.float8_e4m3fn)
        return torch._scaled_mm(
            xq, weight.t(), scale_a=self.input_scale, scale_b=scale, out_dtype=torch.bfloat16, use_fast_accum=True
        )

    def weight_bytes(self) -> int:
        total = self.head.numel() * 2
        for layer in self.layers:
            for name in ("qkv", "out", "gate_up", "down"):
                w = layer[name] if self.precision != "fp8" else layer[name][0]
                total += w.numel() * w.element_size()
        return total


def rope_tables(position: int):  # noqa: ANN201
    inv = 1.0 / (THETA ** (torch.arange(0, HEAD_DIM, 2, device=DEVICE).float() / HEAD_DIM))
    angle = position * inv
    cos = torch.cat((angle.cos(), angle.cos())).to(torch.bfloat16)
    sin = torch.cat((angle.sin(), angle.sin())).to(torch.bfloat16)
    return cos, sin


def step(model: Model, token, cache, position: int, cos, sin):  # noqa: ANN001, ANN201
    x = model.embedding[token]  # [1, D]
    half = HEAD_DIM // 2
    for layer, kv in zip(model.layers, cache, strict=True):
        qkv = model.linear(F.rms_norm(x, (D,), layer["n1"], EPS), layer["qkv"])
        qk = qkv[:, : (HEADS + KV_HEADS) * HEAD_DIM].view(1, HEADS + KV_HEADS, HEAD_DIM)
        qk = qk * cos + torch.cat((-qk[..., half:], qk[..., :half]), dim=-1) * sin
        kv[0, :KV_HEADS, position] = qk[0, HEADS:]
        kv[0, KV_HEADS:, position] = qkv[0, (HEADS + KV_HEADS) * HEAD_DIM :].view(KV_HEADS, HEAD_DIM)
        attended = F.scaled_dot_product_attention(
            qk[:, :HEADS].reshape(1, KV_HEADS, HEADS // KV_HEADS, HEAD_DIM),
            kv[:, :KV_HEADS, : position + 1],
            kv[:, KV_HEADS:, : position + 1],
        )
        x = x + model.linear(attended.reshape(1, D), layer["out"])
        gate, up = model.linear(F.rms_norm(x, (D,), layer["n2"], EPS), layer["gate_up"]).chunk(2, dim=-1)
        x = x + model.linear(F.silu(gate) * up, layer["down"])
    logits = F.linear(F.rms_norm(x, (D,), model.final, EPS), model.head)
    token.copy_(torch.argmax(logits, dim=-1))


def measure(model: Model, context: int) -> dict[str, float]:
    g = torch.Generator(device=DEVICE).manual_seed(6)
    cache = [
        torch.randn(1, 2 * KV_HEADS, context + 1, HEAD_DIM, generator=g, device=DEVICE, dtype=torch.bfloat16)
        for _ in range(LAYERS)
    ]
    token = torch.zeros(1, dtype=torch.long, device=DEVICE)
    cos, sin = rope_tables(context)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step(model, token, cache, context, cos, sin)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(model, token, cache, context, cos, sin)
    for _ in range(20):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        graph.replay()
    end.record()
    end.synchronize()
    replays = max(10, int(TRIAL_SECONDS / (start.elapsed_time(end) / 1000 / 10)))
    times = []
    for _ in range(TRIALS):
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000 / replays)
    graph.reset()
    kv_bytes = 2 * LAYERS * KV_HEADS * HEAD_DIM * 2 * (context + 1)
    step_bytes = model.weight_bytes() + kv_bytes
    linear_params = model.weight_bytes() // (1 if model.precision == "fp8" else 2)
    flops = 2.0 * linear_params + 4.0 * LAYERS * D * (context + 1)
    best, median = min(times), statistics.median(times)
    return {
        "precision": model.precision,
        "context_len": context,
        "step_ms_best": round(best * 1000, 4),
        "step_ms_median": round(median * 1000, 4),
        "bytes_per_step": step_bytes,
        "flops_per_step": flops,
        "gbs_best": round(step_bytes / best / 1e9, 1),
        "gbs_median": round(step_bytes / median / 1e9, 1),
        "replays_per_trial": replays,
        "trials": TRIALS,
    }


def client_points(path: str) -> dict[tuple[str, int], dict]:
    with open(path, encoding="utf-8") as stream:
        payload = json.load(stream)
    points = {}
    for result in payload.get("results", []):
        params = result.get("params", {})
        if result.get("workload") == "llm-decode" and params.get("phase") == "serve" and params.get("concurrency") == 1:
            points[(result["precision"], params["context_len"])] = result
    return points


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="JSON file for the figures")
    parser.add_argument("--client-json", help="a gpuatlas-bench result with llm-decode serving points")
    parser.add_argument("--contexts", nargs="+", type=int, default=[1024, 4096])
    parser.add_argument("--precisions", nargs="+", default=["bf16", "fp8"], choices=["bf16", "fp8"])
    parser.add_argument("--require", type=float, default=0.90, help="the ratio the client must reach (exit 1 below)")
    args = parser.parse_args()
    capability = torch.cuda.get_device_capability()
    figures: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "points": []}
    for precision in args.precisions:
        if precision == "fp8" and capability < (8, 9):
            print(f"fp8 skipped: compute capability {capability}", flush=True)
            continue
        model = Model(precision)
        for context in args.contexts:
            point = measure(model, context)
            figures["points"].append(point)
            print(
                f"reference {precision} context {context}: step {point['step_ms_best']:.3f} ms (best of {TRIALS}), "
                f"median {point['step_ms_median']:.3f} ms, {point['gbs_best']:.0f} GB/s "
                f"({point['bytes_per_step'] / 1e9:.3f} GB, {point['flops_per_step'] / 1e9:.1f} GFLOP per step)",
                flush=True,
            )
        del model
        torch.cuda.empty_cache()
    code = 0
    if args.client_json:
        client = client_points(args.client_json)
        figures["ratios"] = []
        for point in figures["points"]:
            result = client.get((point["precision"], point["context_len"]))
            if result is None:
                print(f"client: no {point['precision']} concurrency-1 point at context {point['context_len']}")
                continue
            client_ms = result["extra"]["step_ms"]
            ratio = point["step_ms_best"] / client_ms
            verdict = "OK" if ratio >= args.require else f"BELOW {args.require:.2f}"
            figures["ratios"].append(
                {
                    "precision": point["precision"],
                    "context_len": point["context_len"],
                    "client_step_ms": client_ms,
                    "client_gbs": result["extra"].get("achieved_gbs"),
                    "reference_step_ms": point["step_ms_best"],
                    "reference_gbs": point["gbs_best"],
                    "ratio": round(ratio, 4),
                }
            )
            print(
                f"client {point['precision']} context {point['context_len']} concurrency 1: {client_ms:.3f} ms "
                f"({result['extra'].get('achieved_gbs')} GB/s) vs reference {point['step_ms_best']:.3f} ms "
                f"({point['gbs_best']:.0f} GB/s): ratio {ratio:.3f} {verdict}",
                flush=True,
            )
            if ratio < args.require:
                code = 1
    with open(args.out, "w", encoding="utf-8") as stream:
        json.dump(figures, stream, indent=2)
    return code


if __name__ == "__main__":
    sys.exit(main())
