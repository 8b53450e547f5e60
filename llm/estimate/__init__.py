"""LLM inference throughput: the estimate model (pure arithmetic), its shapes and its fit.

Imports nothing from Django, ``dashboard`` or ``fitcalc``: the rankings and the fit calculator
both call :func:`llm.estimate.model.llm_throughput_estimate` with plain numbers.
"""

from llm.estimate.constants import LlmConstants, constants_default
from llm.estimate.model import LlmEstimate, cost_per_million_tokens, llm_throughput_estimate
from llm.serving.shapes import MODEL_SHAPES, SIZE_CLASSES, ModelShape, SizeClass

__all__ = [
    "MODEL_SHAPES",
    "SIZE_CLASSES",
    "LlmConstants",
    "LlmEstimate",
    "ModelShape",
    "SizeClass",
    "constants_default",
    "cost_per_million_tokens",
    "llm_throughput_estimate",
]
