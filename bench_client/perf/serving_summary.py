"""The short table at the end of serving_session.sh: serving points, TP points, all-reduce, DDP, reference ratio.

    python3 bench_client/perf/serving_summary.py OUT_DIR
    python3 bench_client/perf/serving_summary.py --energy OUT_DIR   # SWEEP=energy: no reference expected

Last, one line per serving point with its energy: concurrency, tokens/s, average W per GPU, the board
limit, J/token, the window's seconds and samples, the reading's source, and why a point is flagged.

Reads the session's result files (any that exist) and prints one line per figure; exits 1 when a file
is missing its results or a correctness check failed, so the session's last line says whether it worked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ENERGY_FILES = ("serve-gpu0.json", "serve4096-gpu0.json", "tp-host.json")


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _fmt(value: object, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def serving_rows(payload: dict, workload: str) -> list[str]:
    rows = []
    for result in payload.get("results", []):
        if result["workload"] != workload or ("phase" in result["params"] and result["params"]["phase"] != "serve"):
            continue
        params, extra = result["params"], result.get("extra", {})
        ok = "ok" if result.get("correctness", {}).get("passed", True) else "CHECK FAILED"
        rows.append(
            f"{params['model']:<11} {result['precision']:<4} tp{result['gpu_count']} ctx {params['context_len']:>4} "
            f"conc {params['concurrency']:>4}: step {_fmt(extra.get('step_ms'), 2):>7} ms, "
            f"{_fmt(extra.get('tokens_per_s_per_gpu')):>9} tok/s/GPU, {_fmt(extra.get('tokens_per_s_per_user')):>6} "
            f"tok/s/user, {_fmt(extra.get('joules_per_token'), 3):>6} J/tok, {_fmt(extra.get('achieved_gbs'), 0):>5} "
            f"GB/s, graph {extra.get('cuda_graph')} {ok}"
        )
    for entry in payload.get("skipped", []):
        if entry["workload"] == workload and entry.get("params", {}).get("phase", "serve") == "serve":
            params = entry.get("params", {})
            rows.append(
                f"{params.get('model', '?'):<11} {entry['precision']:<4} ctx {params.get('context_len')} conc "
                f"{params.get('concurrency')}: skipped: {entry['reason'][:150]}"
            )
    return rows


ENERGY_HEADER = (
    f"{'model':<11} {'prec':<4} {'tp':>2} {'ctx':>4} {'conc':>4} {'tok/s':>10} {'tok/s/GPU':>10} {'tok/s/user':>10} "
    f"{'W/GPU':>6} {'limit':>5} {'J/token':>8} {'window s':>8} {'samples':>7} {'source':<17} flag"
)


def energy_rows(payload: dict) -> list[tuple[str, bool]]:
    """One line per serving point, and whether its energy is flagged: throughput and the window behind its J/token."""
    rows = []
    for result in payload.get("results", []):
        params, extra = result["params"], result.get("extra", {})
        if "concurrency" not in params or params.get("phase", "serve") != "serve":
            continue
        line = (
            f"{params['model']:<11} {result['precision']:<4} {result['gpu_count']:>2} {params['context_len']:>4} "
            f"{params['concurrency']:>4} {_fmt(result['median']):>10} {_fmt(extra.get('tokens_per_s_per_gpu')):>10} "
            f"{_fmt(extra.get('tokens_per_s_per_user')):>10} {_fmt(extra.get('power_w')):>6} "
            f"{_fmt(extra.get('power_limit_w'), 0):>5} {_fmt(extra.get('joules_per_token'), 4):>8} "
            f"{_fmt(extra.get('energy_window_s'), 2):>8} {_fmt(extra.get('energy_samples')):>7} "
            f"{extra.get('energy_source') or '-':<17} {extra.get('energy_flag') or ''}"
        )
        rows.append((line, bool(extra.get("energy_flag"))))
    return rows


def main() -> int:
    energy_mode = "--energy" in sys.argv[1:]
    folder = Path([arg for arg in sys.argv[1:] if arg != "--energy"][0])
    problems = []
    print("== summary")
    serve = _load(folder / "serve-gpu0.json")
    if serve is None:
        problems.append("serve-gpu0.json missing or unreadable")
    else:
        gpu = serve["environment"]["gpu"]["name_torch"]
        print(f"single GPU: {gpu}, torch {serve['environment']['torch_version']}")
    phases = _load(folder / "phases-gpu0.json")
    for source in (serve, phases):
        for result in (source or {}).get("results", []):
            if result["workload"] == "llm-decode" and result["params"]["phase"] != "serve":
                extra = result.get("extra", {})
                print(
                    f"{result['params']['model']:<11} {result['precision']:<4} {result['params']['phase']:<7} batch "
                    f"{result['params']['batch']:>3}: {result['median']:,.1f} tok/s, "
                    f"{_fmt(extra.get('achieved_gbs'), 0)} GB/s, inter-token {_fmt(extra.get('inter_token_ms'), 3)} ms"
                )
    if serve is not None and not energy_mode:  # the energy table below lists every point
        print("\n".join(serving_rows(serve, "llm-decode")))
    reference = _load(folder / "reference.json")
    if reference is None:
        if not energy_mode:
            problems.append("reference.json missing")
    else:
        for ratio in reference.get("ratios", []):
            verdict = "OK" if ratio["ratio"] >= 0.9 else "BELOW 0.90"
            print(
                f"batch-1 vs hand-written: {ratio['precision']} ctx {ratio['context_len']}: client "
                f"{ratio['client_step_ms']:.3f} ms ({ratio['client_gbs']} GB/s), reference "
                f"{ratio['reference_step_ms']:.3f} ms ({ratio['reference_gbs']} GB/s), ratio {ratio['ratio']:.3f} {verdict}"
            )
    for name in ("tp-host.json", "multigpu-host.json"):
        payload = _load(folder / name)
        if payload is None:
            if (folder / name).exists() or name == "tp-host.json":
                problems.append(f"{name} missing or unreadable")
            continue
        host = payload.get("host", {})
        print(
            f"{name}: {host.get('gpu_count')} GPU(s), interconnect {host.get('interconnect')}, NCCL {host.get('nccl_version')}"
        )
        if not energy_mode:
            print("\n".join(serving_rows(payload, "llm-decode-tp")))
        for result in payload["results"]:
            extra = result.get("extra", {})
            if result["workload"] == "allreduce-busbw":
                print(
                    f"all-reduce {result['params']['bytes']:>10} B x{result['gpu_count']}: {result['median']:.1f} GB/s busbw"
                )
            elif result["workload"] == "transformer-train-ddp":
                print(
                    f"DDP x{result['gpu_count']}: {result['median']:,.0f} tokens/s, scaling "
                    f"{_fmt(extra.get('scaling_efficiency'), 3)}"
                )
    for payload_name in (*ENERGY_FILES, "phases-gpu0.json", "multigpu-host.json"):
        payload = _load(folder / payload_name)
        for result in (payload or {}).get("results", []):
            if not result.get("correctness", {}).get("passed", True):
                problems.append(
                    f"{payload_name}: {result['workload']} {result['precision']} {result['params']}: check failed"
                )
    energy = [row for name in ENERGY_FILES for row in energy_rows(_load(folder / name) or {})]
    if energy:
        print("== energy per serving point (W/GPU: average over the window; flag: not published)")
        print(ENERGY_HEADER)
        print("\n".join(line for line, _flagged in energy))
        print(f"energy: {len(energy)} points, {sum(flagged for _line, flagged in energy)} flagged")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print(
        "== summary end: "
        + ("all outputs present, every check passed" if not problems else f"{len(problems)} problem(s)")
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
