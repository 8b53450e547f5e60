"""Fit calculator: will a model fit, on how many GPUs, how long and at what cost; buy or rent.

Pure functions over plain data (no Django, no database):

* :mod:`fitcalc.presets` - :class:`ModelSpec`, published model presets, custom models.
* :mod:`fitcalc.memory` - :func:`memory_estimate` -> :class:`MemoryBreakdown` (GiB, itemised).
* :mod:`fitcalc.plan` - :func:`fit_plan` over GPUs x counts 1/2/4/8; :func:`buy_vs_rent`.
* :mod:`fitcalc.llm` - LLM inference per GPU count with the calibrated model (``llm.estimate``).

Every input error is a :class:`FitInputError` (a ``ValueError``) carrying the field name.
"""

from fitcalc.errors import FitInputError
from fitcalc.memory import GIB, LoraTargets, MemoryBreakdown, Mode, Precision, lora_trainable_params, memory_estimate
from fitcalc.plan import (
    BuyVsRent,
    CountPlan,
    CountRate,
    GpuFacts,
    GpuPlan,
    buy_vs_rent,
    fit_plan,
    gpu_plan,
    per_gpu_memory_gib,
    scaling_speedup,
)
from fitcalc.presets import PRESETS, ModelSpec, model_spec_custom, model_spec_from_preset, preset_slugs

__all__ = [
    "GIB",
    "PRESETS",
    "BuyVsRent",
    "CountPlan",
    "CountRate",
    "FitInputError",
    "GpuFacts",
    "GpuPlan",
    "LoraTargets",
    "MemoryBreakdown",
    "ModelSpec",
    "Mode",
    "Precision",
    "buy_vs_rent",
    "fit_plan",
    "gpu_plan",
    "lora_trainable_params",
    "memory_estimate",
    "model_spec_custom",
    "model_spec_from_preset",
    "per_gpu_memory_gib",
    "preset_slugs",
    "scaling_speedup",
]
