"""Fit the model's constants to measured rows (the leave-one-GPU-out error: llm.estimate.loo).

Pure (numpy, pandas, scipy; no Django): callers turn measurements into :class:`Observation`
records. Each kind of row fits its own constants, in the model's own arithmetic:

* ``decode`` (one stream, tokens/s of the stream): seconds per token =
  ``a x bytes/bandwidth + c x layers + communication``, with (a = 1/efficiency per weight-format
  group, c = overhead per layer) fitted by bounded robust least squares on log residuals;
* ``prefill`` (prompt tokens/s of the configuration): one efficiency, the geometric mean of
  measured / peak-limited rates;
* ``serving`` (output tokens/s per GPU at large batch): one compute efficiency per benchmark,
  one bandwidth efficiency and one factor on the all-reduce time per link kind that measured
  rows communicate over, bounded robust least squares on log residuals.

Communication seconds come from llm.serving.comm (measured nccl-tests figures); the
configuration of a serving row (its tensor-parallel degree) is the one the model itself picks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from llm.estimate.constants import LlmConstants, precision_group
from llm.estimate.coverage import Regime, configuration_of
from llm.estimate.model import (
    LlmEstimate,
    compute_peak,
    decode_seconds_per_token,
    kv_bytes_per_token,
    llm_throughput_estimate,
    prefill_tokens_per_s,
)
from llm.serving.comm import GpuLink, layer_split_token_seconds, tensor_parallel_step_seconds
from llm.serving.shapes import ModelShape

KINDS = ("decode", "prefill", "serving")
USE_CASE_OF_KIND = {"decode": "chat", "prefill": "prefill", "serving": "serving"}
GROUPS = ("4bit", "8bit", "16bit")
# Robust loss: a few rows far off (a broken run, an old build) must not move the constants.
_LOSS, _LOSS_SCALE = "soft_l1", 0.2
# The communication factors are fitted in [1/20, 1000/20]: log(factor) = theta + log(1/20).
_COMM_LOG_LOW = float(np.log(1.0 / 20.0))
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
    rankings show, on which the leave-one-GPU-out error is measured. ``link`` prices the
    communication of multi-GPU configurations; ``vendor`` and ``architecture`` name the GPU's
    class for the measured range (llm.estimate.coverage).
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
    link: GpuLink | None = None
    vendor: str = ""
    architecture: str = ""


def one_stream_communication_s(o: Observation) -> float:
    """Seconds a token of one stream spends between the GPUs of the row's configuration (0 when
    the link is unknown or not given)."""
    if o.link is None or o.gpu_count <= 1:
        return 0.0
    m = o.model
    if o.split == "tensor":
        seconds = tensor_parallel_step_seconds(link=o.link, gpus=o.gpu_count, tokens=1, layers=m.layers,
                                               hidden=m.hidden)  # fmt: skip
    else:
        seconds = layer_split_token_seconds(link=o.link, gpus=o.gpu_count, hidden=m.hidden)
    return seconds or 0.0


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
            communication_s=one_stream_communication_s(o),
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
        link=o.link,
    )


SERVING_CONTEXT_GRID = (256, 512, 1024, 2048, 4096)


def _prepare(observations: Sequence[Observation], *, serving_context: int = 2048) -> pd.DataFrame:
    """One row per usable observation with the terms the constants divide (unit efficiencies)
    and the seconds spent communicating, which no constant scales.

    Serving rows are prepared at ``serving_context`` tokens of KV cache per stream (their own
    ``context_tokens`` when set): the context bounds the batch and the bytes read per step. Their
    configuration (the tensor-parallel degree) is the one the model picks, which no fitted
    constant moves (llm.estimate.model).
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
            "vendor": o.vendor,
            "architecture": o.architecture,
            "configuration": configuration_of(
                gpu_count=o.gpu_count, split=o.split, link_kind=o.link.kind(o.gpu_count) if o.link else ""
            ),
            "compute_precision": "",
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
            row["comm"] = one_stream_communication_s(o)
        elif o.kind == "prefill":
            base = predict(o, _UNIT)
            if base is None:
                continue
            row["x"] = base
        else:
            if not o.context_tokens:
                o = replace(o, context_tokens=serving_context)
            chosen = _serving_estimate(o, _UNIT)
            peak = compute_peak(o.tensor_tflops, weight_precision=o.weight_precision)
            if not chosen.fits or peak is None or not o.bandwidth_gbs or not o.memory_gib:
                continue
            n, batch = chosen.gpu_count, chosen.batch
            kv_value = 1.0 if o.bytes_per_weight <= 1.0 else 2.0
            kv = kv_bytes_per_token(layers=m.layers, kv_heads=m.kv_heads, head_dim=m.head_dim, bytes_per_value=kv_value)
            row["memory_time"] = (m.total_params_b * 1e9 * o.bytes_per_weight + batch * o.context_tokens * kv) / (
                o.bandwidth_gbs * 1e9 * n
            )
            row["compute_time"] = 2.0 * m.active_params_b * 1e9 * batch / (peak[0] * 1e12 * n)
            row["batch_per_gpu"] = batch / n
            unit_comm = tensor_parallel_step_seconds(link=o.link, gpus=n, tokens=batch, layers=m.layers,
                                                     hidden=m.hidden) if o.link else 0.0  # fmt: skip
            row["comm"] = unit_comm or 0.0
            row["link"] = chosen.link_kind
            row["configuration"] = configuration_of(gpu_count=n, split="tensor", link_kind=chosen.link_kind)
            row["compute_precision"] = chosen.compute_precision
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
    x, layers, comm = rows["x"].to_numpy(), rows["layers"].to_numpy(), rows["comm"].to_numpy()
    measured = np.log(rows["measured"].to_numpy())

    def residuals(theta: np.ndarray) -> np.ndarray:
        factors, overhead = np.exp(theta[:-1]), np.expm1(theta[-1]) * 1e-3  # overhead in s per layer
        return -np.log(factors[which] * x + overhead * layers + comm) - measured

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
    comm = rows["comm"].to_numpy()
    # One factor per link kind that measured rows communicate over.
    links = sorted({str(k) for k in rows.loc[rows["comm"] > 0, "link"]})
    on_link = {key: (rows["link"] == key).to_numpy() for key in links}
    batch = rows["batch_per_gpu"].to_numpy()
    measured = np.log(rows["measured"].to_numpy())
    k = len(benchmarks) + 1

    def residuals(theta: np.ndarray) -> np.ndarray:
        memory_factor, compute_factors = np.exp(theta[0]), np.exp(theta[1:k])
        talk = comm.copy()
        for i, key in enumerate(links):
            talk[on_link[key]] *= np.exp(theta[k + i] + _COMM_LOG_LOW)
        step = memory_factor * memory_time + compute_factors[which] * compute_time + talk
        return np.log(batch / step) - measured

    start = np.append(np.full(k, np.log(2.0)), np.full(len(links), -_COMM_LOG_LOW))
    theta = _robust_log_fit(residuals, start, upper=np.log(1000.0))
    by_benchmark = {b: float(np.exp(-theta[i + 1])) for i, b in enumerate(benchmarks)}
    factors = {key: float(np.exp(theta[k + i] + _COMM_LOG_LOW)) for i, key in enumerate(links)}
    default = float(np.exp(np.mean(np.log(list(by_benchmark.values())))))
    return replace(
        base,
        serving_bandwidth_efficiency=float(np.exp(-theta[0])),
        serving_compute_efficiency=default,
        serving_compute_efficiency_by_benchmark=by_benchmark,
        communication_factor=factors,
    )


def _serving_holdout_error(frame: pd.DataFrame, base: LlmConstants) -> float:
    """The median over GPUs of the error on their headline serving rows, the serving constants
    fitted without each GPU's rows."""
    rows = frame[frame["kind"] == "serving"]
    errors = []
    for gpu in rows["gpu"].unique():
        test = rows[(rows["gpu"] == gpu) & rows["headline"]]
        if test.empty:
            continue
        estimate = predict_prepared(test, _fit_serving(rows[rows["gpu"] != gpu], base))
        errors.append(float(np.median(np.abs(estimate / test["measured"].to_numpy() - 1))))
    return float(np.median(errors)) if errors else 0.0


def serving_context_choose(observations: Sequence[Observation], *, base: LlmConstants) -> int:
    """The KV context per served stream (from :data:`SERVING_CONTEXT_GRID`) whose serving
    constants, fitted without each GPU, estimate that GPU's rows best: a structural choice, made
    on held-out rows (the fit's own loss favours the context whose constants sit on their bounds)."""
    serving = [o for o in observations if o.kind == "serving" and o.measured > 0]
    if not serving:
        return base.serving_context_tokens
    errors = {c: _serving_holdout_error(_prepare(serving, serving_context=c), base) for c in SERVING_CONTEXT_GRID}
    return min(errors, key=lambda c: (errors[c], c))


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


def regimes_prepared(frame: pd.DataFrame) -> list[Regime]:
    """The class of every prepared row (llm.estimate.coverage)."""
    columns = ["kind", "vendor", "architecture", "configuration", "compute_precision"]
    return [Regime(*map(str, values)) for values in frame[columns].itertuples(index=False)]


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
        seconds = (
            frame.loc[decode, "x"].to_numpy() / efficiency
            + (constants.decode_overhead_ms_per_layer / 1000 * frame.loc[decode, "layers"].to_numpy())
            + frame.loc[decode, "comm"].to_numpy()
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
            + frame.loc[serving, "comm"].to_numpy()
            * np.array([constants.communication_factor.get(str(k), 1.0) for k in frame.loc[serving, "link"]])
        )
        out[serving] = frame.loc[serving, "batch_per_gpu"].to_numpy() / step
    return out
