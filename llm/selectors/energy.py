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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from catalog.models import Gpu
from llm.models import ServingModelFit, ServingPoint
from llm.selectors.serving_target import ServingChoice
from llm.serving.energy import (
    EnergyFigure,
    PowerCurve,
    PowerSample,
    energy_estimate,
    energy_measured,
    power_curve_key,
    tokens_per_kwh,
)
from llm.serving.physics import hardware_class
from llm.serving.shapes import MODEL_SHAPES, model_size_class


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

    @property
    def tokens_per_s_per_kw(self) -> float:
        """Output tokens/s per kW the GPUs drew, measured: performance per measured kW."""
        return self.tokens_per_s_per_gpu / (self.power_w / 1000)


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
    size: str = ""  # the model's size class (llm.serving.shapes.SIZE_CLASSES), empty outside them

    @property
    def power_limits_w(self) -> tuple[float, float]:
        """The lowest and highest board limit the driver reported over the curve's points."""
        limits = [p.power_limit_w for p in self.points]
        return (min(limits), max(limits)) if limits else (0.0, 0.0)


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
                size=model_size_class(row["model"]) or "",
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


def power_samples_for_fit() -> list[PowerSample]:
    """Every trusted point with a measured energy and a fixed concurrency, as a sample of its GPU
    class's power curve for its model size class (llm.serving.energy; one query)."""
    rows = (
        ServingPoint.objects.trusted()
        .with_measured_energy()
        .filter(concurrency__isnull=False)
        .order_by("id")
        .values(
            "model", "concurrency", "gpu_count", "power_w", "power_limit_w", "gpu__segment", "gpu__architecture__slug"
        )  # fmt: skip
    )
    samples = []
    for row in rows:
        size = model_size_class(row["model"])
        if size is None or not row["power_w"] or not row["power_limit_w"] or not row["concurrency"]:
            continue
        gpu_class = hardware_class(architecture=row["gpu__architecture__slug"] or "", segment=row["gpu__segment"])
        key = power_curve_key(gpu_class=gpu_class, size=size)
        samples.append(PowerSample(key, row["concurrency"] / row["gpu_count"], row["power_w"], row["power_limit_w"]))
    return samples


def serving_choice_energy(
    choice: ServingChoice, *, tokens_per_s_per_gpu: float, power_curves: Mapping[str, PowerCurve]
) -> EnergyFigure | None:
    """The energy per output token of a serving choice's figure: the measured energy of a measured
    point at that rate (the one the figure quotes), else the GPU class's power curve at the load of
    the model's curve point nearest that rate (estimated, with its interval); None without either."""
    for point in choice.measured:
        at_rate = point.tokens_per_s_per_gpu > 0 and abs(point.tokens_per_s_per_gpu / tokens_per_s_per_gpu - 1) < 1e-6
        if point.joules_per_token is not None and point.power_w and at_rate:
            return energy_measured(joules_per_token_=point.joules_per_token, power_w=point.power_w)
    curve = power_curves.get(choice.power_key)
    if curve is None or len(choice.curve_loads) != len(choice.curve) or not choice.curve:
        return None
    nearest = min(range(len(choice.curve)), key=lambda i: abs(choice.curve[i][1] - tokens_per_s_per_gpu))
    answer = choice.answer
    return energy_estimate(
        curve, load=choice.curve_loads[nearest], tokens_per_s_per_gpu=tokens_per_s_per_gpu,
        limit_w=choice.board_limit_w, rate_interval=answer.estimate_factors if answer else None,
    )  # fmt: skip


def power_curves_current() -> dict[str, PowerCurve]:
    """The power curves stored with the newest serving model fit (``power_curve_key`` -> curve);
    empty before any fit or where nothing was measured (one query)."""
    stored = ServingModelFit.objects.newest()
    data = stored.constants.get("power", {}) if stored is not None and isinstance(stored.constants, dict) else {}
    return {key: PowerCurve.from_dict(value) for key, value in data.items()}


__all__ = [
    "EnergyCurve",
    "EnergyPoint",
    "gpu_energy_curves",
    "power_curves_current",
    "power_samples_for_fit",
    "serving_choice_energy",
]
