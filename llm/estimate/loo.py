"""The model's error, measured by leaving one GPU out (pure: numpy, pandas).

:func:`leave_one_gpu_out` refits the constants without each GPU's rows and compares the estimate
for that GPU's headline rows with their measurements. Each scored row is also classed as inside
or outside the measured range of the *other* GPUs' rows (llm.estimate.coverage): leaving out the
only GPU of an architecture, or the only rows of a link, makes its rows an extrapolation, and
their error is the error of extrapolating.

Per use case: the typical error (median over GPUs of each GPU's median error on its rows inside
the range) and the worst GPU.

Few GPUs are the only one of their class, so the error of extrapolating is measured by leaving
whole classes out (:func:`leave_one_class_out`): the model is refitted without every row of a
vendor, of an architecture, and without every multi-GPU row of a link kind, then estimates the
rows it left out. The error outside the measured range is the median over those GPUs of each GPU's median
error (fitted rows only: hosts the model does not describe, such as a GPU behind a single-board
computer, say nothing about extrapolating).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from llm.estimate.constants import LlmConstants
from llm.estimate.coverage import Coverage, coverage_build
from llm.estimate.fit import (
    USE_CASE_OF_KIND,
    Observation,
    _fit_frame,
    _prepare,
    predict_prepared,
    regimes_prepared,
)

# Fewer GPUs than this left out with their class make their median a poor figure: the error
# outside the range is then the worst GPU's error of the use case instead.
MIN_OUTSIDE_GPUS = 3


@dataclass(frozen=True)
class GpuError:
    gpu_key: str
    use_case: str
    rows: int
    median_error_pct: float
    worst_error_pct: float
    example: str
    outside_rows: int = 0  # rows outside the range of the other GPUs' rows
    outside_reasons: tuple[str, ...] = ()
    worst_label: str = ""  # the worst row's source label, and its two figures (for pages)
    worst_estimate: float | None = None
    worst_measured: float | None = None


@dataclass(frozen=True)
class UseCaseError:
    use_case: str
    gpus: int
    rows: int
    median_error_pct: float  # GPUs' rows inside the range of the others
    worst_error_pct: float
    worst_gpu: str
    outside_gpus: int = 0  # scores of a GPU with one of its classes left out
    outside_median_error_pct: float | None = None
    outside_classes: int = 0  # vendors, architectures and links left out
    all_median_error_pct: float | None = None  # over every GPU, inside the range or not

    @property
    def outside_error_pct(self) -> float:
        """The error an estimate outside the measured range carries (see the module doc)."""
        if self.outside_gpus >= MIN_OUTSIDE_GPUS and self.outside_median_error_pct is not None:
            return max(self.outside_median_error_pct, self.median_error_pct)
        return max(self.worst_error_pct, self.median_error_pct)


@dataclass
class LooReport:
    by_use_case: dict[str, UseCaseError]
    by_gpu: list[GpuError]
    skipped_rows: int
    coverage: Coverage = Coverage(frozenset())

    def typical_error_pct(self) -> dict[str, float]:
        return {k: round(v.median_error_pct, 1) for k, v in self.by_use_case.items()}

    def outside_error_pct(self) -> dict[str, float]:
        return {k: round(v.outside_error_pct, 1) for k, v in self.by_use_case.items()}


def _covered_without(frame: pd.DataFrame) -> dict[tuple[str, ...], set[str]]:
    """For every regime key of the fitted rows: the GPUs that have it."""
    gpus_by_key: dict[tuple[str, ...], set[str]] = defaultdict(set)
    fitted = frame[frame["fit"]]
    for gpu, regime in zip(fitted["gpu"], regimes_prepared(fitted), strict=True):
        for key in regime.coverage_keys():
            gpus_by_key[key].add(str(gpu))
    return gpus_by_key


def _scored(test: pd.DataFrame, constants: LlmConstants) -> pd.DataFrame:
    """The headline rows of ``test`` with the estimate of ``constants`` and their % error."""
    scored = test[test["headline"]][["gpu", "kind", "measured", "index"]].copy()
    scored["estimate"] = predict_prepared(test, constants)[test["headline"].to_numpy()]
    scored = scored[np.isfinite(scored["estimate"].astype(float))]
    scored["error"] = (scored["estimate"] - scored["measured"]).abs() / scored["measured"] * 100
    scored["use_case"] = scored["kind"].map(USE_CASE_OF_KIND)
    return scored


def leave_one_class_out(prepared: pd.DataFrame, *, base: LlmConstants) -> pd.DataFrame:
    """Per held-out class (a vendor or an architecture of a kind of row, or the multi-GPU rows of
    a link kind) and GPU: the median error of its fitted headline rows, estimated by constants fitted
    without the class (see the module doc)."""
    frame = prepared.assign(
        vendor_class=prepared["kind"] + ":" + prepared["vendor"],
        arch_class=prepared["kind"] + ":" + prepared["architecture"],
        link_class=prepared["kind"] + ":" + prepared["configuration"],
    )
    classes = [("vendor_class", c) for c in sorted(set(frame.loc[frame["vendor"] != "", "vendor_class"]))]
    classes += [("arch_class", c) for c in sorted(set(frame.loc[frame["architecture"] != "", "arch_class"]))]
    classes += [
        ("link_class", c)
        for c in sorted(set(frame.loc[~frame["configuration"].isin(["single", "layer"]), "link_class"]))
    ]
    medians = []
    for column, value in classes:
        held = frame[column] == value
        test = frame[held & frame["fit"]]
        if not test["headline"].any() or test["kind"].iloc[0] == "prefill":
            continue
        scored = _scored(test, _fit_frame(frame[~held], base))
        for (gpu, use_case), group in scored.groupby(["gpu", "use_case"], sort=True):
            medians.append({"class": value, "gpu": gpu, "use_case": use_case, "error": float(group["error"].median())})
    return pd.DataFrame(medians, columns=["class", "gpu", "use_case", "error"])


def leave_one_gpu_out(observations: Sequence[Observation], *, base: LlmConstants | None = None) -> LooReport:
    """For each GPU: fit without its rows, estimate its rows, compare; then the same for each
    class of rows (see the module doc).

    ``base``: the constants fitted to every row (llm.estimate.fit.constants_fit). The serving
    context is taken from it (a structural choice); the efficiencies are refitted without each
    GPU or class.
    """
    base = base or LlmConstants()
    usable = [o for o in observations if o.measured > 0]
    prepared = _prepare(usable, serving_context=base.serving_context_tokens)
    if prepared.empty:
        return LooReport({}, [], len(usable))
    gpus_by_key = _covered_without(prepared)
    parts = []
    for gpu in sorted(prepared["gpu"].unique()):
        test = prepared[prepared["gpu"] == gpu]
        if not test["headline"].any():
            continue
        scored = _scored(test, _fit_frame(prepared[prepared["gpu"] != gpu], base))
        others = Coverage(frozenset(key for key, gpus in gpus_by_key.items() if gpus - {gpu}))
        regimes = regimes_prepared(prepared.loc[scored.index])
        scored["reasons"] = [others.outside(regime) for regime in regimes]
        scored["label"] = [
            f"{usable[int(i)].label}: estimated {e:.4g}, measured {m:.4g}"
            for i, e, m in zip(scored["index"], scored["estimate"], scored["measured"], strict=True)
        ]
        scored["source"] = [usable[int(i)].label for i in scored["index"]]
        parts.append(scored)
    frame = pd.concat(parts) if parts else pd.DataFrame(columns=["gpu", "use_case", "error", "label", "reasons"])
    by_gpu: list[GpuError] = []
    medians: list[dict[str, object]] = []
    for (gpu, use_case), group in frame.groupby(["gpu", "use_case"], sort=True):
        worst = group.loc[group["error"].idxmax()]
        outside = group[group["reasons"].map(bool)]
        inside = group[~group["reasons"].map(bool)]
        reasons = tuple(sorted({r for rs in outside["reasons"] for r in rs}))
        by_gpu.append(
            GpuError(
                str(gpu),
                str(use_case),
                len(group),
                float(group["error"].median()),
                float(worst["error"]),
                str(worst["label"]),
                len(outside),
                reasons,
                str(worst["source"]),
                float(worst["estimate"]),
                float(worst["measured"]),
            )
        )
        medians.append(
            {
                "gpu": str(gpu),
                "use_case": str(use_case),
                "rows": len(group),
                "all": float(group["error"].median()),
                "inside": float(inside["error"].median()) if len(inside) else np.nan,
            }
        )
    held_out = leave_one_class_out(prepared, base=base)
    by_use_case: dict[str, UseCaseError] = {}
    for use_case, group in pd.DataFrame(medians).groupby("use_case", sort=True) if medians else []:
        worst = group.loc[group["all"].idxmax()]
        inside = group["inside"].dropna()
        outside = held_out[held_out["use_case"] == use_case]
        by_use_case[str(use_case)] = UseCaseError(
            str(use_case),
            len(group),
            int(group["rows"].sum()),
            float(inside.median()) if len(inside) else float(group["all"].median()),
            float(worst["all"]),
            str(worst["gpu"]),
            len(outside),
            float(outside["error"].median()) if len(outside) else None,
            int(outside["class"].nunique()),
            float(group["all"].median()),
        )
    coverage = coverage_build(regimes_prepared(prepared[prepared["fit"]]))
    return LooReport(by_use_case, by_gpu, len(usable) - len(frame), coverage)


def loo_report_as_dict(report: LooReport) -> dict[str, object]:
    """The report as JSON-ready data (stored with the fit, read back by :func:`loo_report_from_dict`)."""
    return {
        "by_use_case": {k: asdict(v) for k, v in report.by_use_case.items()},
        "by_gpu": [asdict(e) for e in report.by_gpu],
        "skipped_rows": report.skipped_rows,
        "coverage": sorted(list(key) for key in report.coverage.keys),
    }


def loo_report_from_dict(data: Mapping[str, Any]) -> LooReport:
    by_gpu = [GpuError(**{**e, "outside_reasons": tuple(e.get("outside_reasons", ()))}) for e in data.get("by_gpu", [])]
    return LooReport(
        by_use_case={k: UseCaseError(**v) for k, v in data.get("by_use_case", {}).items()},
        by_gpu=by_gpu,
        skipped_rows=int(data.get("skipped_rows", 0)),
        coverage=Coverage(frozenset(tuple(k) for k in data.get("coverage", []))),
    )
