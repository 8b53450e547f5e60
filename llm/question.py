"""The serving question every LLM serving page and API answers, its parsing and defaults, and the
one formula for the price of a million output tokens. Pure, no database
(tests/test_llm_question.py).

A serving question is a workload and a service level: which model, how many prompt and output
tokens per request, at which weight precision (a fixed one, or the best each GPU supports), on
which engine class (a fixed one, or the one each GPU's vendor publishes with), and how many
output tokens per second every user must get (or maximum throughput, whatever each user gets).
Published serving curves (SemiAnalysis InferenceX, Artificial Analysis, NVIDIA's TensorRT-LLM
tables) answer exactly this; a point measured at another workload lies on another curve and is
never shown as this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.utils.translation import gettext as _

from gpuatlas.query_numbers import (
    SEQUENCE_TOKENS,
    TOKENS_PER_S_PER_USER,
    QueryNumberError,
    number_parse,
    query_number,
)
from llm.serving.shapes import MODEL_SHAPES, ModelShape

# Targets in output tokens/s per user the pages offer ("max": the highest throughput per GPU).
TARGETS = ("10", "20", "50", "100", "max")
DEFAULT_TARGET = "20"
MAX_THROUGHPUT = "max"
DEFAULT_TARGET_RATE = 20.0
# The request shape every page defaults to: 1,000 prompt and 1,000 output tokens, the middle of
# the published sweeps (InferenceX's 1k/1k, TensorRT-LLM's 1000/1000 rows).
DEFAULT_INPUT_TOKENS = 1000
DEFAULT_OUTPUT_TOKENS = 1000
# A measured point answers the question when its mean prompt and output lengths are each within
# this share of the question's (a 1,024/1,024 run answers 1,000/1,000; 128/128 does not).
LENGTH_TOLERANCE = 0.25
# The prompt and output lengths every page and API accepts (gpuatlas.query_numbers.SEQUENCE_TOKENS),
# as integer bounds for form and serializer fields and the API schema.
MIN_SEQUENCE_TOKENS = int(SEQUENCE_TOKENS.low)
MAX_SEQUENCE_TOKENS = int(SEQUENCE_TOKENS.high)

# Precision choices: the best format each GPU has a tensor path for, a family, or one format.
BEST_PRECISION = "any"
PRECISION_FAMILIES = ("any", "4bit", "8bit", "16bit")
FIXED_PRECISIONS = ("fp4", "int4", "fp8", "int8", "bf16", "fp16")
# A format's class: measured points of the same class answer (FP8 and INT8 run the same bytes).
PRECISION_CLASS = {"fp4": "4bit", "int4": "4bit", "fp8": "8bit", "int8": "8bit", "bf16": "16bit", "fp16": "16bit"}
_FAMILY_ORDER = {
    "any": ("fp4", "fp8", "int8", "fp16"),
    "4bit": ("fp4",),
    "8bit": ("fp8", "int8"),
    "16bit": ("bf16", "fp16"),
}
_FAMILY_FALLBACK = {"4bit": "int4", "8bit": "int8"}

# Engine classes of batched serving; "auto": TensorRT-LLM on NVIDIA GPUs (what their published
# figures run), vLLM/SGLang elsewhere.
AUTO_ENGINE = "auto"
BATCHED_ENGINES = ("tensorrt-llm", "vllm-sglang")


class QuestionError(QueryNumberError):
    """A bad question parameter: ``field`` names it, the message says what is accepted."""


def target_rate(target: str) -> float | None:
    """Tokens/s per user of a page target (None for maximum throughput)."""
    return None if target == MAX_THROUGHPUT else float(target)


def target_parse(
    text: str | None, *, field: str = "target", default: float | None = DEFAULT_TARGET_RATE
) -> float | None:
    """A target from a query: tokens/s per user within TOKENS_PER_S_PER_USER, or "max";
    ``default`` when absent. Raises QueryNumberError naming ``field`` for anything else."""
    if text is None or not str(text).strip():
        return default
    value = str(text).strip().lower()
    if value in ("max", "maximum"):
        return None
    return number_parse(value, field=field, bounds=TOKENS_PER_S_PER_USER)


def engine_for_vendor(engine: str, vendor_slug: str) -> str:
    """The engine class batched serving on a GPU of this vendor assumes: ``engine``, or (auto)
    TensorRT-LLM on NVIDIA GPUs and vLLM/SGLang elsewhere (TensorRT-LLM runs on NVIDIA GPUs only)."""
    if engine == AUTO_ENGINE:
        return "tensorrt-llm" if vendor_slug == "nvidia" else "vllm-sglang"
    return "vllm-sglang" if engine == "tensorrt-llm" and vendor_slug != "nvidia" else engine


def cost_per_million_output_tokens(
    *, price_per_gpu_hour: float | None, tokens_per_s_per_gpu: float | None
) -> float | None:
    """The price of a million output tokens: every GPU of a configuration is paid for and each
    produces ``tokens_per_s_per_gpu`` (the one formula every page and API uses)."""
    if not price_per_gpu_hour or not tokens_per_s_per_gpu or tokens_per_s_per_gpu <= 0:
        return None
    return price_per_gpu_hour / (tokens_per_s_per_gpu * 3600.0) * 1e6


def _architecture(shape: ModelShape) -> tuple[Any, ...]:
    return (shape.total_params_b, shape.active_params_b, shape.layers, shape.hidden, shape.kv_heads, shape.head_dim,
            shape.experts, shape.active_experts)  # fmt: skip


def same_architecture(a: str, b: str) -> bool:
    """Whether two model keys are one network shape (Llama 3.3 70B is Llama 3.1 70B's; Llama 2 70B
    is not: fewer parameters, another vocabulary): a point of one measures the other."""
    if a == b:
        return True
    if a not in MODEL_SHAPES or b not in MODEL_SHAPES:
        return False
    return _architecture(MODEL_SHAPES[a]) == _architecture(MODEL_SHAPES[b])


def models_answering(model: str) -> tuple[str, ...]:
    """The model keys whose points measure ``model`` (itself and the same architecture)."""
    return tuple(slug for slug in MODEL_SHAPES if same_architecture(slug, model))


@dataclass(frozen=True)
class ServingQuestion:
    """One workload and service level (module doc). ``precision``: a family of PRECISION_FAMILIES
    ("any": the best each GPU supports) or one of FIXED_PRECISIONS; ``target``: tokens/s per
    user, None for maximum throughput; ``engine``: "auto" or an engine class."""

    model: str
    input_len: int = DEFAULT_INPUT_TOKENS
    output_len: int = DEFAULT_OUTPUT_TOKENS
    precision: str = BEST_PRECISION
    target: float | None = DEFAULT_TARGET_RATE
    engine: str = AUTO_ENGINE

    def __post_init__(self) -> None:
        if self.model not in MODEL_SHAPES:
            raise QuestionError("model", _("unknown model %(model)r") % {"model": self.model[:60]})
        for name in ("input_len", "output_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or not SEQUENCE_TOKENS.holds(value):
                raise QuestionError(name, SEQUENCE_TOKENS.describe())
        if self.precision not in PRECISION_FAMILIES and self.precision not in FIXED_PRECISIONS:
            raise QuestionError("precision", _("one of %(names)s") % {"names": ", ".join(
                PRECISION_FAMILIES + FIXED_PRECISIONS)})  # fmt: skip
        if self.target is not None and not TOKENS_PER_S_PER_USER.holds(self.target):
            raise QuestionError("target", TOKENS_PER_S_PER_USER.describe())
        if self.engine != AUTO_ENGINE and self.engine not in BATCHED_ENGINES:
            raise QuestionError("engine", _("auto, or one of %(names)s") % {"names": ", ".join(BATCHED_ENGINES)})

    def at(self, target: float | None) -> ServingQuestion:
        return replace(self, target=target)

    @property
    def shape(self) -> ModelShape:
        return MODEL_SHAPES[self.model]

    def engine_for(self, vendor_slug: str) -> str:
        """The engine class a GPU's answer assumes: the question's, or (auto) TensorRT-LLM on NVIDIA
        GPUs and vLLM/SGLang elsewhere (TensorRT-LLM runs on NVIDIA GPUs only)."""
        return engine_for_vendor(self.engine, vendor_slug)

    def precision_for(self, tensor: Mapping[str, float | None]) -> str:
        """The weight format a GPU runs: the fixed one, or the family's best the GPU has a tensor
        path for (a family's integer format where it has none: weights converted on the fly). The
        best of any format is one the model is published in where it names them (gpt-oss: FP4,
        which a GPU without an FP4 path runs dequantised)."""
        if self.precision in FIXED_PRECISIONS:
            return self.precision
        published = self.shape.published_formats
        if self.precision == BEST_PRECISION and published:
            return next((p for p in _FAMILY_ORDER[BEST_PRECISION] if p in published and tensor.get(p)), published[0])
        for precision in _FAMILY_ORDER[self.precision]:
            if tensor.get(precision):
                return precision
        return _FAMILY_FALLBACK.get(self.precision, "fp16")

    def lengths_match(self, input_tokens: int | None, output_tokens: int | None) -> bool:
        """Whether a point's mean lengths are this workload's (LENGTH_TOLERANCE); unknown never."""
        if not input_tokens or not output_tokens:
            return False
        return (
            abs(input_tokens / self.input_len - 1) <= LENGTH_TOLERANCE
            and abs(output_tokens / self.output_len - 1) <= LENGTH_TOLERANCE
        )

    def target_text(self) -> str:
        if self.target is None:
            return _("maximum throughput")
        return _("%(rate)s tokens/s per user") % {"rate": f"{self.target:g}"}

    def precision_text(self) -> str:
        if self.precision == BEST_PRECISION:
            return _("the best precision each GPU supports")
        if self.precision in PRECISION_FAMILIES:
            return {"4bit": _("4-bit weights"), "8bit": _("8-bit weights"), "16bit": _("16-bit weights")}[
                self.precision
            ]
        return self.precision.upper()

    def label(self) -> str:
        """The workload in words, for headers and chart titles."""
        return _("%(model)s · %(workload)s") % {"model": self.shape.name, "workload": self.workload_text()}

    def workload_text(self) -> str:
        """The request shape, precision and target in words (the model left out)."""
        return _("%(input)s prompt / %(output)s output tokens · %(precision)s · %(target)s") % {
            "input": f"{self.input_len:,}",
            "output": f"{self.output_len:,}",
            "precision": self.precision_text(),
            "target": self.target_text(),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "precision": self.precision,
            "target_tokens_per_s_per_user": self.target,
            "engine": self.engine,
        }


def length_parse(query: Mapping[str, str], field: str, *, default: int) -> int:
    """A prompt or output length from a query (SEQUENCE_TOKENS); QueryNumberError names the field."""
    value = query_number(query, field, bounds=SEQUENCE_TOKENS)
    return default if value is None else int(value)
