"""The measured range of the estimate model: which classes of GPU and configuration its
calibration rows contain, and whether an estimate lies outside them (pure).

An estimate is *outside the measured range* for a use case ("serving" rows or one-stream
"decode" rows) when the rows the constants were fitted on contain

* ``vendor``: no GPU of its vendor;
* ``architecture``: no GPU of its architecture (a vendor's generations differ in software and
  memory systems, e.g. no Ampere GPU has a serving row);
* ``configuration``: no configuration of its kind across several GPUs: tensor parallelism over
  its link (NVLink-class fabric, PCIe with peer-to-peer, PCIe staged through host memory) or,
  for one stream, a layer split; a link the catalogue has no figure for is always outside;
* ``precision`` (serving): no row of its vendor computing in its tensor format (INT8 weights and
  activations on an NVIDIA GPU, say).

Such an estimate is shown as outside the measured range, with the error the model makes when it
extrapolates: the leave-one-GPU-out error of the figures that were outside the range of the
other GPUs' rows (llm.estimate.fit.leave_one_gpu_out).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

REASONS = ("vendor", "architecture", "configuration", "precision")


@dataclass(frozen=True)
class Regime:
    """The class of one figure: measured row or estimate."""

    kind: str  # serving | decode
    vendor: str
    architecture: str
    configuration: str  # single | layer | a link kind of llm.serving.comm (tensor parallel)
    compute_precision: str = ""

    def coverage_keys(self) -> tuple[tuple[str, ...], ...]:
        keys: list[tuple[str, ...]] = [("vendor", self.kind, self.vendor)]
        if self.architecture:
            keys.append(("architecture", self.kind, self.architecture))
        if self.configuration != "single":
            keys.append(("configuration", self.kind, self.configuration))
        if self.kind == "serving" and self.compute_precision:
            keys.append(("precision", self.kind, self.vendor, self.compute_precision))
        return tuple(keys)


def configuration_of(*, gpu_count: int, split: str, link_kind: str) -> str:
    """The configuration class of a figure on ``gpu_count`` GPUs."""
    if gpu_count <= 1:
        return "single"
    if split == "layer":
        return "layer"
    return link_kind or "unknown"


@dataclass(frozen=True)
class Coverage:
    """The regime keys the calibration rows contain."""

    keys: frozenset[tuple[str, ...]]

    def outside(self, regime: Regime) -> tuple[str, ...]:
        """Why ``regime`` lies outside the measured range (REASONS), empty when it lies inside."""
        # A link the catalogue has no figure for is never priced, so never inside the range.
        reasons: list[str] = ["configuration"] if regime.configuration == "unknown" else []
        for key in regime.coverage_keys():
            if key in self.keys:
                continue
            reason = key[0]
            # A vendor without rows has no architecture or precision rows either: say it once.
            if reason in ("architecture", "precision") and "vendor" in reasons:
                continue
            reasons.append(reason)
        return tuple(r for r in REASONS if r in reasons)


def coverage_build(regimes: Iterable[Regime]) -> Coverage:
    return Coverage(frozenset(key for regime in regimes for key in regime.coverage_keys()))
