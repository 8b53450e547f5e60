"""Reads of the measured energy per token: one table per serving curve of a GPU (the GPU page).

A curve is one sweep of one source: the points of a model at one precision, GPU count, link and
context, from one submission (or table), ordered by concurrency. Only trusted points with a measured
energy count (``ServingPoint.objects.trusted().with_measured_energy()``: read over at least 5 s, every
GPU's average power within its board limit). Tokens per kWh is 3.6 MJ over the joules per token:
the configuration's output per kWh of what its GPUs drew, measured, never the TDP.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from catalog.models import Gpu
from llm.models import ServingPoint
from llm.serving.energy import tokens_per_kwh
from llm.serving.shapes import MODEL_SHAPES


@dataclass(frozen=True)
class EnergyPoint:
    concurrency: int | None
    tokens_per_s_per_user: float | None
    tokens_per_s_per_gpu: float
    power_w: float
    power_limit_w: float
    joules_per_token: float
    window_s: float
    samples: int | None

    @property
    def tokens_per_kwh(self) -> float:
        return tokens_per_kwh(self.joules_per_token)


@dataclass(frozen=True)
class EnergyCurve:
    model: str  # the model's name
    precision: str
    gpu_count: int
    context_tokens: int | None
    engine: str
    energy_source: str  # what the energy was read from, e.g. nvml-total-energy
    measured_on: dt.date
    run_uuid: uuid.UUID | None  # the submission the sweep came in, where it was one
    points: list[EnergyPoint] = field(default_factory=list)


_FIELDS = (
    "model", "weight_precision", "gpu_count", "interconnect", "input_tokens", "engine", "source",
    "result__submission__run_uuid", "energy_source", "measured_on", "concurrency", "tokens_per_s_per_user", "tokens_per_s_per_gpu", "power_w",
    "power_limit_w", "joules_per_token", "energy_window_s", "energy_samples",
)  # fmt: skip


def gpu_energy_curves(*, gpu: Gpu) -> list[EnergyCurve]:
    """This GPU's serving curves with measured energy, one per sweep, each ordered by concurrency."""
    rows = (
        ServingPoint.objects.trusted()
        .with_measured_energy()
        .filter(gpu=gpu)
        .order_by("model", "weight_precision", "gpu_count", "input_tokens", "source", "concurrency")
        .values(*_FIELDS)
    )
    curves: dict[tuple[Any, ...], EnergyCurve] = {}
    for row in rows:
        key = (row["model"], row["weight_precision"], row["gpu_count"], row["interconnect"], row["input_tokens"],
               row["source"])  # fmt: skip
        curve = curves.get(key)
        if curve is None:
            shape = MODEL_SHAPES.get(row["model"])
            curve = curves[key] = EnergyCurve(
                model=shape.name if shape is not None else row["model"],
                precision=row["weight_precision"],
                gpu_count=row["gpu_count"],
                context_tokens=row["input_tokens"],
                engine=row["engine"],
                energy_source=row["energy_source"],
                measured_on=row["measured_on"],
                run_uuid=row["result__submission__run_uuid"],
            )
        curve.points.append(
            EnergyPoint(
                concurrency=row["concurrency"],
                tokens_per_s_per_user=row["tokens_per_s_per_user"],
                tokens_per_s_per_gpu=row["tokens_per_s_per_gpu"],
                power_w=row["power_w"],
                power_limit_w=row["power_limit_w"],
                joules_per_token=row["joules_per_token"],
                window_s=row["energy_window_s"],
                samples=row["energy_samples"],
            )
        )
    return list(curves.values())


__all__ = ["EnergyCurve", "EnergyPoint", "gpu_energy_curves"]
