"""Print client figures beside the datasheet peak, the second run and the hand-written reference.

    python3 perf/compare.py run1.json run2.json handwritten.json [sustained.json]

Datasheet dense peaks (TFLOPS; GB/s), NVIDIA's H100 and H200 datasheets: the FP32 figure is the
non-tensor one, and FP16/BF16/TF32/FP8 are dense (half the 'with sparsity' figures).
"""

from __future__ import annotations

import json
import sys

PEAKS = {
    "H100 SXM": {"fp32": 66.9, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "memory": 3350.0},
    "H100 PCIe": {"fp32": 51.2, "tf32": 378.0, "fp16": 756.0, "bf16": 756.0, "fp8": 1513.0, "memory": 2000.0},
    "H200": {"fp32": 66.9, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "memory": 4800.0},
}
# PCIe 5.0 x16, one direction: 32 GT/s * 16 lanes * 128/130 / 8 bits.
PCIE5_X16_GBS = 63.0


def peaks_for(name: str) -> tuple[str, dict[str, float]]:
    if "H200" in name:
        return "H200", PEAKS["H200"]
    if "H100" in name and "PCIe" in name:
        return "H100 PCIe", PEAKS["H100 PCIe"]
    if "H100" in name:
        return "H100 SXM", PEAKS["H100 SXM"]
    raise SystemExit(f"no datasheet peaks for {name!r}")


def key(result: dict) -> tuple:
    return (result["workload"], result["precision"], json.dumps(result["params"], sort_keys=True), result["mode"])


def label(result: dict) -> str:
    params = result["params"]
    if result["workload"] == "matmul":
        size = params.get("m") or result.get("extra", {}).get("m")
        return f"matmul {result['precision']} {params['size']} {size}"
    return f"{result['workload']} {result['precision']}"


def peak_of(result: dict, peaks: dict[str, float]) -> tuple[float | None, float | None]:
    """(peak, achieved figure comparable with it)."""
    workload = result["workload"]
    if workload in {"matmul", "matmul-stress"}:
        return peaks[result["precision"]], result["median"]
    if workload.startswith("membw-"):
        return peaks["memory"], result["median"]
    if workload.startswith("pcie-"):
        return PCIE5_X16_GBS, result["median"]
    if workload.startswith("transformer-"):
        return peaks["bf16"], result.get("extra", {}).get("model_tflops")
    return None, None


def handwritten_of(result: dict, hand: dict, figure: str) -> float | None:
    """The hand-written figure ('best': of 0.15 s trials; 'best_long': of 1 s trials) for this result."""
    workload = result["workload"]
    if workload == "matmul":
        size = result["params"].get("m") or result.get("extra", {}).get("m")
        return hand["matmul"].get(result["precision"], {}).get(str(size), {}).get(figure)
    if workload in hand and isinstance(hand[workload], dict):
        return hand[workload].get(figure)
    return None


def main() -> None:
    def load(position: int) -> dict | None:
        if len(sys.argv) <= position or not sys.argv[position]:
            return None
        try:
            with open(sys.argv[position], encoding="utf-8") as stream:
                return json.load(stream)
        except (OSError, ValueError) as error:
            print(f"(skipping {sys.argv[position]}: {error})")
            return None

    run1 = load(1)
    if run1 is None:
        raise SystemExit("no first run to compare")
    run2, hand, sustained = load(2), load(3), load(4)
    name = run1["environment"]["gpu"]["name_torch"]
    variant, peaks = peaks_for(name)
    print(f"GPU: {name} -> datasheet {variant}; torch {run1['environment']['torch_version']}")
    second = {key(result): result for result in (run2 or {}).get("results", [])}
    header = (
        f"{'result':<34} {'run1':>10} {'run2':>10} {'agree%':>7} {'hand':>8} {'cli/h%':>6} {'hand1s':>8} {'cli/h1s':>7} "
        f"{'peak':>8} {'%peak':>6} {'spread%':>7} {'check':>6}"
    )
    print(header)
    print("-" * len(header))
    worst_agreement, worst_hand, worst_hand_long = 0.0, 0.0, 0.0
    for result in run1["results"]:
        other = second.get(key(result))
        agreement = None
        if other:
            agreement = 100 * abs(other["median"] - result["median"]) / result["median"]
            worst_agreement = max(worst_agreement, agreement)
        handwritten = handwritten_of(result, hand, "best") if hand else None
        ratio = 100 * result["median"] / handwritten if handwritten else None
        if ratio is not None:
            worst_hand = max(worst_hand, 100 - ratio)
        handwritten_long = handwritten_of(result, hand, "best_long") if hand else None
        ratio_long = 100 * result["median"] / handwritten_long if handwritten_long else None
        if ratio_long is not None:
            worst_hand_long = max(worst_hand_long, 100 - ratio_long)
        peak, achieved = peak_of(result, peaks)
        percent = 100 * achieved / peak if peak and achieved else None
        check = result.get("correctness", {}).get("passed")
        unit = "" if result["unit"] != "tokens/s" else " (model TFLOPS vs BF16 peak)"
        print(
            f"{label(result):<34} {result['median']:>10.1f} "
            f"{(other or {}).get('median', float('nan')):>10.1f} "
            f"{agreement if agreement is not None else float('nan'):>7.2f} "
            f"{handwritten if handwritten else float('nan'):>8.1f} "
            f"{ratio if ratio is not None else float('nan'):>6.1f} "
            f"{handwritten_long if handwritten_long else float('nan'):>8.1f} "
            f"{ratio_long if ratio_long is not None else float('nan'):>7.1f} "
            f"{peak if peak else float('nan'):>8.1f} {percent if percent else float('nan'):>6.1f} "
            f"{result['spread_pct']:>7.2f} {str(check):>6}{unit}"
        )
    print(f"worst run-to-run difference: {worst_agreement:.2f}% (target < 3%)")
    print(f"worst client shortfall vs best hand-written 0.15 s trial: {worst_hand:.2f}% (target < 5%)")
    print(f"worst client shortfall vs best hand-written 1 s trial: {worst_hand_long:.2f}% (target < 5%)")
    if sustained:
        print("sustained run (burst vs sustained after the soak):")
        burst = {key(result)[:3]: result for result in sustained["results"] if result["mode"] == "burst"}
        for result in sustained["results"]:
            if result["mode"] != "sustained":
                continue
            before = burst.get(key(result)[:3])
            if before:
                change = 100 * (result["median"] - before["median"]) / before["median"]
                print(
                    f"  {label(result):<34} burst {before['median']:>10.1f}  sustained {result['median']:>10.1f}  ({change:+.2f}%)"
                )
        soak = sustained.get("soak") or {}
        print(
            f"  soak: {soak.get('seconds')} s of {soak.get('load')}; before {soak.get('telemetry_before')}; after {soak.get('telemetry_after')}"
        )
    environment = run1["environment"]
    print(
        f"clocks before {environment['clocks_before']} after {environment['clocks_after']}; power limit "
        f"{environment['power_limit_w']} W; temperature {environment['temperature_before_c']} -> {environment['temperature_after_c']} C"
    )


if __name__ == "__main__":
    main()
