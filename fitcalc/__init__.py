"""Fit calculator: will a model fit, on how many GPUs, how long and at what cost; buy or rent.

The calculator itself is pure functions over plain data (no Django, no database):

* :mod:`fitcalc.presets` - :class:`ModelSpec`, published model presets, custom models.
* :mod:`fitcalc.configs` - a decoder's shapes counted from its config.json.
* :mod:`fitcalc.memory` - :func:`memory_estimate` -> :class:`MemoryBreakdown` (GiB, itemised).
* :mod:`fitcalc.plan` - :func:`fit_plan` over GPUs x counts 1/2/4/8; :func:`buy_vs_rent`.
* :mod:`fitcalc.llm` - LLM inference per GPU count (one stream, a fixed number of users) on the serving model (``llm.serving``).
* :mod:`fitcalc.request` - :class:`FitRequest`, everything one answer needs, with its defaults.

Around it, the Django side: :mod:`fitcalc.forms` validates each input; :mod:`fitcalc.selectors`
builds the request (``fit_request``), reads the GPUs (``gpu_facts``, ``llm_jobs``) and answers
(``fit``, ``serving_plans``); :mod:`fitcalc.models` stores the Hugging Face models that
:mod:`fitcalc.services` imports through :mod:`fitcalc.hub`, the only module that calls the Hub.

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
