"""Fit the model's constants to measured rows, and measure its error leaving one GPU out.

Pure (numpy, pandas, scipy; no Django): callers turn measurements into :class:`Observation`
records. Each kind of row fits its own constants, in the model's own arithmetic:

* ``decode`` (one stream, tokens/s of the stream): seconds per token =
  ``a x bytes/bandwidth + c x layers``, linear in (a = 1/efficiency, c = overhead per layer),
  a bounded linear least squares on relative residuals;
* ``prefill`` (prompt tokens/s of the configuration): one efficiency, the geometric mean of
  measured / peak-limited rates;
* ``serving`` (output tokens/s per GPU at large batch): one compute efficiency per benchmark
  and one bandwidth efficiency, bounded nonlinear least squares on log residuals.

:func:`leave_one_gpu_out` refits without each GPU's rows and compares the estimate for that
GPU's rows with their measurements: per use case, the median and worst GPU of the absolute
percentage errors (a GPU's error is the median over its rows).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from llm_estimate.constants import LlmConstants, precision_group
from llm_estimate.model import (
    LlmEstimate,
    compute_peak,
    decode_seconds_per_token,
    kv_bytes_per_token,
    llm_throughput_estimate,
    prefill_tokens_per_s,
)
from llm_estimate.shapes import ModelShape

KINDS = ("decode", "prefill", "serving")
USE_CASE_OF_KIND = {"decode": "chat", "prefill": "prefill", "serving": "serving"}
GROUPS = ("4bit", "8bit", "16bit")
# Robust loss: a few rows far off (a broken run, an old build) must not move the constants.
_LOSS, _LOSS_SCALE = "soft_l1", 0.2
_UNIT = LlmConstants(
    decode_bandwidth_efficiency=dict.fromkeys(GROUPS, 1.0),
    decode_overhead_ms_per_layer=0.0,
    prefill_compute_efficiency=dict.fromkeys(GROUPS, 1.0),
    serving_compute_efficiency=1.0,
    serving_bandwidth_efficiency=1.0,
)


@dataclass(frozen=True)
class Observation:
    """One measured row, in plain numbers.

    ``measured``: decode = tokens/s of the stream; prefill = prompt tokens/s of the
    configuration; serving = output tokens/s per GPU. ``gpu_count`` and ``split`` describe the
    measured configuration (serving rows are estimated at the fewest GPUs the model fits on:
    large systems run replicas). ``context_tokens``: decode = average context while generating,
    prefill = prompt length, serving = KV context per stream. ``fit``: whether the constants
    are fitted on the row (rows of hosts the model does not describe, such as a GPU behind a
    single-board computer, are only compared); ``headline``: whether the row is a figure the
    rankings show, on which the leave-one-GPU-out error is measured.
    """

    gpu_key: str
    kind: str
    measured: float
    memory_gib: float | None
    bandwidth_gbs: float | None
    tensor_tflops: Mapping[str, float | None]
    model: ModelShape
    bytes_per_weight: float
    weight_precision: str
    gpu_count: int = 1
    split: str = "layer"
    context_tokens: int = 512
    benchmark: str = ""
    label: str = ""
    fit: bool = True
    headline: bool = True


def predict(observation: Observation, constants: LlmConstants) -> float | None:
    """The model's figure for an observation (same unit as ``measured``), None without the figures."""
    o, m = observation, observation.model
    if o.kind == "decode":
        if not o.bandwidth_gbs:
            return None
        kv = o.context_tokens * kv_bytes_per_token(layers=m.layers, kv_heads=m.kv_heads, head_dim=m.head_dim)
        return 1.0 / decode_seconds_per_token(
            bandwidth_gbs=float(o.bandwidth_gbs),
            active_weight_bytes=m.active_params_b * 1e9 * o.bytes_per_weight,
            kv_bytes=kv,
            layers=m.layers,
            weight_precision=o.weight_precision,
            gpu_count=o.gpu_count,
            split=o.split,
            constants=constants,
        )
    if o.kind == "prefill":
        peak = compute_peak(o.tensor_tflops, weight_precision=o.weight_precision)
        if peak is None:
            return None
        return prefill_tokens_per_s(
            peak_tflops=peak[0],
            active_params_b=m.active_params_b,
            layers=m.layers,
            hidden=m.hidden,
            prompt_tokens=o.context_tokens,
            weight_precision=o.weight_precision,
            gpu_count=o.gpu_count,
            split=o.split,
            constants=constants,
        )
    estimate = _serving_estimate(o, constants)
    return estimate.tokens_per_s_per_gpu if estimate.fits else None


def _serving_estimate(o: Observation, constants: LlmConstants) -> LlmEstimate:
    m = o.model
    return llm_throughput_estimate(
        memory_gib=o.memory_gib,
        bandwidth_gbs=o.bandwidth_gbs,
        tensor_tflops=o.tensor_tflops,
        total_params_b=m.total_params_b,
        active_params_b=m.active_params_b,
        layers=m.layers,
        kv_heads=m.kv_heads,
        head_dim=m.head_dim,
        hidden=m.hidden,
        bytes_per_weight=o.bytes_per_weight,
        weight_precision=o.weight_precision,
        mode="batched",
        context_tokens=o.context_tokens,
        benchmark=o.benchmark,
        max_gpus=max(8, o.gpu_count),
        constants=constants,
    )


SERVING_CONTEXT_GRID = (256, 512, 1024, 2048, 4096)


def _prepare(observations: Sequence[Observation], *, serving_context: int = 2048) -> pd.DataFrame:
    """One row per usable observation with the terms the constants divide (unit efficiencies).

    Serving rows are prepared at ``serving_context`` tokens of KV cache per stream (their own
    ``context_tokens`` when set): the context bounds the batch and the bytes read per step.
    """
    rows = []
    for index, o in enumerate(observations):
        row: dict[str, object] = {
            "index": index,
            "gpu": o.gpu_key,
            "kind": o.kind,
            "measured": o.measured,
            "benchmark": o.benchmark,
            "group": precision_group(o.weight_precision),
            "fit": o.fit,
            "headline": o.headline,
        }
        m = o.model
        if o.kind == "decode":
            if not o.bandwidth_gbs:
                continue
            kv = o.context_tokens * kv_bytes_per_token(layers=m.layers, kv_heads=m.kv_heads, head_dim=m.head_dim)
            row["x"] = decode_seconds_per_token(
                bandwidth_gbs=o.bandwidth_gbs,
                active_weight_bytes=m.active_params_b * 1e9 * o.bytes_per_weight,
                kv_bytes=kv,
                layers=m.layers,
                weight_precision=o.weight_precision,
                gpu_count=o.gpu_count,
                split=o.split,
                constants=_UNIT,
            )
            row["layers"] = m.layers
        elif o.kind == "prefill":
            base = predict(o, _UNIT)
            if base is None:
                continue
            row["x"] = base
        else:
            if not o.context_tokens:
                o = replace(o, context_tokens=serving_context)
            unit = _serving_estimate(o, _UNIT)
            peak = compute_peak(o.tensor_tflops, weight_precision=o.weight_precision)
            if not unit.fits or peak is None or not o.bandwidth_gbs or not o.memory_gib:
                continue
            n, batch = unit.gpu_count, unit.batch
            kv_value = 1.0 if o.bytes_per_weight <= 1.0 else 2.0
            kv = kv_bytes_per_token(layers=m.layers, kv_heads=m.kv_heads, head_dim=m.head_dim, bytes_per_value=kv_value)
            row["memory_time"] = (m.total_params_b * 1e9 * o.bytes_per_weight + batch * o.context_tokens * kv) / (
                o.bandwidth_gbs * 1e9 * n
            )
            row["compute_time"] = 2.0 * m.active_params_b * 1e9 * batch / (peak[0] * 1e12 * n)
            row["batch_per_gpu"] = batch / n
        rows.append(row)
    return pd.DataFrame(rows)


def _robust_log_fit(
    residual_terms: Callable[[np.ndarray], np.ndarray], start: np.ndarray, upper: float = np.log(100.0)
) -> np.ndarray:
    """Bounded robust least squares on log residuals; parameters are log(1 / efficiency) >= 0."""
    solution = least_squares(residual_terms, start, bounds=(0.0, upper), loss=_LOSS, f_scale=_LOSS_SCALE)
    return np.asarray(solution.x)


def _fit_decode(frame: pd.DataFrame, base: LlmConstants) -> LlmConstants:
    rows = frame[(frame["kind"] == "decode") & frame["fit"]]
    if len(rows) < 3:
        return base
    groups = [g for g in GROUPS if (rows["group"] == g).any()]
    which = rows["group"].map({g: i for i, g in enumerate(groups)}).to_numpy()
    x, layers = rows["x"].to_numpy(), rows["layers"].to_numpy()
    measured = np.log(rows["measured"].to_numpy())

    def residuals(theta: np.ndarray) -> np.ndarray:
        factors, overhead = np.exp(theta[:-1]), np.expm1(theta[-1]) * 1e-3  # overhead in s per layer
        return -np.log(factors[which] * x + overhead * layers) - measured

    theta = _robust_log_fit(residuals, np.append(np.full(len(groups), np.log(1.5)), np.log1p(0.05)), upper=np.log(50.0))
    # Only the groups with rows: another group's efficiency is their geometric mean (LlmConstants).
    efficiency = {g: float(np.exp(-theta[i])) for i, g in enumerate(groups)}
    return replace(
        base, decode_bandwidth_efficiency=efficiency, decode_overhead_ms_per_layer=float(np.expm1(theta[-1]))
    )


def _fit_prefill(frame: pd.DataFrame, base: LlmConstants) -> LlmConstants:
    rows = frame[(frame["kind"] == "prefill") & frame["fit"]]
    if rows.empty:
        return base
    efficiency: dict[str, float] = {}
    for group, part in rows.groupby("group"):
        ratio = np.log(part["x"].to_numpy() / part["measured"].to_numpy())

        def residuals(theta: np.ndarray, ratio: np.ndarray = ratio) -> np.ndarray:
            return theta[0] - ratio

        efficiency[str(group)] = float(np.exp(-_robust_log_fit(residuals, np.array([np.log(3.0)]))[0]))
    return replace(base, prefill_compute_efficiency=efficiency)


def _fit_serving(frame: pd.DataFrame, base: LlmConstants) -> LlmConstants:
    rows = frame[(frame["kind"] == "serving") & frame["fit"]]
    if rows.empty:
        return base
    benchmarks = sorted(rows["benchmark"].unique())
    which = rows["benchmark"].map({b: i for i, b in enumerate(benchmarks)}).to_numpy()
    memory_time = rows["memory_time"].to_numpy()
    compute_time = rows["compute_time"].to_numpy()
    batch = rows["batch_per_gpu"].to_numpy()
    measured = np.log(rows["measured"].to_numpy())

    def residuals(theta: np.ndarray) -> np.ndarray:
        memory_factor, compute_factors = np.exp(theta[0]), np.exp(theta[1:])
        step = memory_factor * memory_time + compute_factors[which] * compute_time
        return np.log(batch / step) - measured

    theta = _robust_log_fit(residuals, np.full(len(benchmarks) + 1, np.log(2.0)), upper=np.log(1000.0))
    by_benchmark = {b: float(np.exp(-theta[i + 1])) for i, b in enumerate(benchmarks)}
    default = float(np.exp(np.mean(np.log(list(by_benchmark.values())))))
    return replace(
        base,
        serving_bandwidth_efficiency=float(np.exp(-theta[0])),
        serving_compute_efficiency=default,
        serving_compute_efficiency_by_benchmark=by_benchmark,
    )


def _serving_loss(frame: pd.DataFrame, constants: LlmConstants) -> float:
    rows = frame[(frame["kind"] == "serving") & frame["fit"]]
    if rows.empty:
        return 0.0
    residual = np.log(predict_prepared(rows, constants) / rows["measured"].to_numpy()) / _LOSS_SCALE
    return float(np.sum(2 * (np.sqrt(1 + residual**2) - 1)))  # soft_l1, as the fit minimises


def serving_context_choose(observations: Sequence[Observation], *, base: LlmConstants) -> int:
    """The KV context per served stream (from :data:`SERVING_CONTEXT_GRID`) that fits the serving rows best."""
    if not any(o.kind == "serving" for o in observations):
        return base.serving_context_tokens
    losses = {}
    for context in SERVING_CONTEXT_GRID:
        frame = _prepare([o for o in observations if o.kind == "serving"], serving_context=context)
        losses[context] = _serving_loss(frame, _fit_serving(frame, base))
    return min(losses, key=lambda c: (losses[c], c))


def constants_fit(observations: Sequence[Observation], *, base: LlmConstants | None = None) -> LlmConstants:
    """Constants fitted to ``observations`` (kinds without rows keep ``base``'s values)."""
    base = base or LlmConstants()
    base = replace(base, serving_context_tokens=serving_context_choose(observations, base=base))
    return _fit_frame(_prepare(observations, serving_context=base.serving_context_tokens), base)


def _fit_frame(frame: pd.DataFrame, base: LlmConstants) -> LlmConstants:
    if frame.empty:
        return base
    fitted = _fit_serving(frame, _fit_prefill(frame, _fit_decode(frame, base)))
    counts = frame[frame["fit"]]["kind"].value_counts().to_dict()
    return replace(
        fitted,
        fitted=f"fitted {dt.date.today().isoformat()} to {sum(counts.values())} measured rows",
        fitted_on=dt.date.today().isoformat(),
        observations={k: int(counts.get(k, 0)) for k in KINDS},
    )


@dataclass(frozen=True)
class GpuError:
    gpu_key: str
    use_case: str
    rows: int
    median_error_pct: float
    worst_error_pct: float
    example: str  # the worst row in words, for the command's output
    worst_label: str = ""  # the worst row's source label, and its two figures (for pages)
    worst_estimate: float | None = None
    worst_measured: float | None = None


@dataclass(frozen=True)
class UseCaseError:
    use_case: str
    gpus: int
    rows: int
    median_error_pct: float
    worst_error_pct: float
    worst_gpu: str


@dataclass
class LooReport:
    by_use_case: dict[str, UseCaseError]
    by_gpu: list[GpuError]
    skipped_rows: int

    def typical_error_pct(self) -> dict[str, float]:
        return {k: round(v.median_error_pct, 1) for k, v in self.by_use_case.items()}


def _group_value(values: Mapping[str, float], group: str) -> float:
    return values[group] if group in values else float(np.exp(np.mean(np.log(list(values.values())))))


def predict_prepared(frame: pd.DataFrame, constants: LlmConstants) -> np.ndarray:
    """The model's figures for prepared rows: the same arithmetic as :func:`predict`, vectorised."""
    out = np.full(len(frame), np.nan)
    kind = frame["kind"].to_numpy()
    decode = kind == "decode"
    if decode.any():
        efficiency = np.array(
            [_group_value(constants.decode_bandwidth_efficiency, g) for g in frame.loc[decode, "group"]]
        )
        seconds = frame.loc[decode, "x"].to_numpy() / efficiency + (
            constants.decode_overhead_ms_per_layer / 1000 * frame.loc[decode, "layers"].to_numpy()
        )
        out[decode] = 1.0 / seconds
    prefill = kind == "prefill"
    if prefill.any():
        efficiency = np.array(
            [_group_value(constants.prefill_compute_efficiency, g) for g in frame.loc[prefill, "group"]]
        )
        out[prefill] = efficiency * frame.loc[prefill, "x"].to_numpy()
    serving = kind == "serving"
    if serving.any():
        efficiency = np.array([constants.serving_efficiency(b) for b in frame.loc[serving, "benchmark"]])
        step = (
            frame.loc[serving, "memory_time"].to_numpy() / constants.serving_bandwidth_efficiency
            + frame.loc[serving, "compute_time"].to_numpy() / efficiency
        )
        out[serving] = frame.loc[serving, "batch_per_gpu"].to_numpy() / step
    return out


def leave_one_gpu_out(observations: Sequence[Observation], *, base: LlmConstants | None = None) -> LooReport:
    """For each GPU: fit without its rows, estimate its rows, compare (see the module doc)."""
    base = base or LlmConstants()
    usable = [o for o in observations if o.measured > 0]
    # The serving context is chosen once on every row (a structural assumption); the
    # efficiencies are refitted without each GPU.
    base = replace(base, serving_context_tokens=serving_context_choose(usable, base=base))
    prepared = _prepare(usable, serving_context=base.serving_context_tokens)
    parts = []
    for gpu in sorted(prepared["gpu"].unique()) if not prepared.empty else []:
        test = prepared[prepared["gpu"] == gpu]
        if not test["headline"].any():
            continue
        constants = _fit_frame(prepared[prepared["gpu"] != gpu], base)
        estimate = predict_prepared(test, constants)
        part = test[test["headline"]][["gpu", "kind", "measured", "index"]].copy()
        estimate = estimate[test["headline"].to_numpy()]
        part["estimate"] = estimate
        parts.append(part)
    frame = pd.DataFrame(columns=["gpu", "use_case", "error", "label", "source", "estimate", "measured"])
    if parts:
        joined = pd.concat(parts, ignore_index=True)
        joined = joined[np.isfinite(joined["estimate"])]
        frame = pd.DataFrame(
            {
                "gpu": joined["gpu"],
                "use_case": joined["kind"].map(USE_CASE_OF_KIND),
                "error": (joined["estimate"] - joined["measured"]).abs() / joined["measured"] * 100,
                "label": [
                    f"{usable[int(i)].label}: estimated {e:.4g}, measured {m:.4g}"
                    for i, e, m in zip(joined["index"], joined["estimate"], joined["measured"], strict=True)
                ],
                "source": [usable[int(i)].label for i in joined["index"]],
                "estimate": joined["estimate"],
                "measured": joined["measured"],
            }
        )
    by_gpu: list[GpuError] = []
    by_use_case: dict[str, UseCaseError] = {}
    for (gpu, use_case), group in frame.groupby(["gpu", "use_case"], sort=True):
        worst = group.loc[group["error"].idxmax()]
        by_gpu.append(
            GpuError(
                str(gpu),
                str(use_case),
                len(group),
                float(group["error"].median()),
                float(worst["error"]),
                str(worst["label"]),
                str(worst["source"]),
                float(worst["estimate"]),
                float(worst["measured"]),
            )  # fmt: skip
        )
    gpu_frame = pd.DataFrame([e.__dict__ for e in by_gpu])
    if not gpu_frame.empty:
        for use_case, group in gpu_frame.groupby("use_case", sort=True):
            worst = group.loc[group["median_error_pct"].idxmax()]
            by_use_case[str(use_case)] = UseCaseError(
                str(use_case),
                len(group),
                int(group["rows"].sum()),
                float(group["median_error_pct"].median()),
                float(worst["median_error_pct"]),
                str(worst["gpu_key"]),
            )
    return LooReport(by_use_case, by_gpu, len(usable) - len(frame))
