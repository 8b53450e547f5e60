"""The fit calculator's request: everything it needs to answer, validated and with defaults applied.

Built by :func:`fitcalc.selectors.fit_request.fit_request_build` from a valid
:class:`fitcalc.forms.FitForm`'s data; read by :func:`fitcalc.selectors.fit.fit_compute`.

Defaults (documented in the API schema too)
-------------------------------------------
* mode ``inference``; precision: the mode's default (bf16; int4 for qlora);
  context 2048 tokens; batch 1.
* ``flash_attention`` true: FlashAttention (or PyTorch's fused scaled-dot-product attention) is
  the default attention kernel of current training stacks, so the ``a x s x s`` attention
  matrices are not stored. Set it to false to count them (Korthikanti et al. 2022, eq. 1).
* ``activation_checkpointing``: empty = the estimator's default per mode (on for lora, qlora and
  full_finetune, off for train).
* inference: batched serving; without ``users``, at full load (as many sequences as the memory
  holds beside the weights; memory and fit are those of one sequence).
* ``price`` typical: the median of the providers' cheapest current on-demand offers.
* ``days`` 30: training (all but inference) is also planned past one node, the fewest whole
  nodes that finish the work within this many days.
* ``hours_per_day`` 12: buying pays when a GPU is busy about 12 hours a day for a month.
* ``electricity_price_per_kwh``: no default (no sourced figure); empty = electricity not counted.
* ``input_len``/``output_len``: the request shape batched LLM serving is answered at, 1,000 and
  1,000 tokens as on the rankings (llm.question); ``context`` stays the memory breakdown's length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fitcalc.memory import LoraTargets, MemoryBreakdown, Mode
from fitcalc.presets import ModelSpec
from llm.question import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS

TRANSFORMER_KINDS = ("decoder", "encoder")
#: Batched serving without a number of users runs at full load: as many sequences as the memory
#: left after the weights holds (up to the serving model's cap), as MLPerf's Offline
#: test does. Memory and fit are then those of one sequence beside the weights.
FULL_LOAD_SEQUENCES = 1

DEFAULT_MODE = Mode.INFERENCE.value
DEFAULT_CONTEXT = 2048
DEFAULT_BATCH = 1
DEFAULT_FLASH_ATTENTION = True
DEFAULT_HOURS_PER_DAY = 12.0
#: Training plans past one node: the deadline when none is given, a month of rented nodes.
DEFAULT_TRAINING_DAYS = 30.0
DEFAULT_LORA_RANK = 16
DEFAULT_LORA_TARGETS = LoraTargets.ALL_LINEAR.value


@dataclass(frozen=True)
class FitWork:
    """The job's size: ``amount`` of ``given_as`` (tokens, samples, epochs), and the same in the
    unit of the throughput (``work_units`` of ``unit``: tokens for transformers, samples else)."""

    given_as: str
    amount: float
    unit: str
    work_units: float


@dataclass(frozen=True)
class FitRequest:
    """Everything the calculator needs, validated: what ``fitcalc.selectors.fit_compute`` takes."""

    model: ModelSpec
    breakdown: MemoryBreakdown
    mode: str
    precision: str
    context: int
    batch: int
    flash_attention: bool
    activation_checkpointing: bool | None
    lora_rank: int
    lora_targets: str
    work: FitWork | None
    work_unit: str
    hours_per_day: float
    electricity_price_per_kwh: float | None
    condition: str
    currency: str
    serving: str = "batched"
    users: int | None = None
    kv_cache_precision: str = "bf16"
    hf_model: str | None = None
    price_rule: str = "typical"
    input_len: int = DEFAULT_INPUT_TOKENS
    output_len: int = DEFAULT_OUTPUT_TOKENS
    days: float = DEFAULT_TRAINING_DAYS

    def echo(self) -> dict[str, Any]:
        """The inputs as the API answers them (after defaults)."""
        return {
            "model": self.model.slug,
            "params": self.model.params,
            "mode": self.mode,
            "precision": self.precision,
            "context": self.context,
            "batch": self.batch,
            "flash_attention": self.flash_attention,
            "activation_checkpointing": self.breakdown.activation_checkpointing,
            "lora_rank": self.lora_rank,
            "lora_targets": self.lora_targets,
            "work": None
            if self.work is None
            else {
                "given_as": self.work.given_as,
                "amount": self.work.amount,
                "unit": self.work.unit,
                "work_units": self.work.work_units,
            },
            "hours_per_day": self.hours_per_day,
            "electricity_price_per_kwh": self.electricity_price_per_kwh,
            "condition": self.condition,
            "currency": self.currency,
            "serving": self.serving,
            "users": self.users,
            "kv_cache_precision": self.kv_cache_precision,
            "hf_model": self.hf_model,
            "price": self.price_rule,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "days": self.days,
        }


def work_unit_for(model: ModelSpec) -> str:
    """Transformers are measured in tokens (per second); image models in samples."""
    return "tokens" if model.kind in TRANSFORMER_KINDS else "samples"
