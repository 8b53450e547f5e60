"""The model's constants: fitted to the measurements (``manage.py llm_model_fit --write``) and
stored in ``constants.json`` beside this module, with the assumptions that are not fitted."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

CONSTANTS_PATH = Path(__file__).with_name("constants.json")


@dataclass(frozen=True)
class LlmConstants:
    """Efficiencies are fractions of the datasheet peak (bandwidth or dense tensor TFLOPS).

    Fitted: ``decode_bandwidth_efficiency`` (per weight-format group: 4bit, 8bit, 16bit) and
    ``decode_overhead_ms_per_layer`` (one stream), ``prefill_compute_efficiency`` (per group),
    ``serving_compute_efficiency`` (per benchmark, with a default for the others),
    ``serving_bandwidth_efficiency`` (batched serving) and ``communication_factor`` (per link
    kind of llm.serving.comm: the share of the all-reduce time priced from measured nccl-tests
    bandwidths that a tensor-parallel serving step does not hide; 1, the nccl-tests figure as it
    is, for a link no measured row runs over); the context a served request holds in the KV
    cache is chosen from a grid.
    Assumed, not fitted: the usable share of GPU memory, a serving engine's reserve per GPU
    (sourced) and the batch cap per GPU.
    Measured: ``typical_error_pct`` and ``outside_error_pct``, the leave-one-GPU-out error inside
    and outside the measured range (llm.estimate.loo), per use case.
    """

    decode_bandwidth_efficiency: Mapping[str, float] = field(
        default_factory=lambda: {"4bit": 0.6, "8bit": 0.6, "16bit": 0.6}
    )
    decode_overhead_ms_per_layer: float = 0.03
    prefill_compute_efficiency: Mapping[str, float] = field(
        default_factory=lambda: {"4bit": 0.3, "8bit": 0.3, "16bit": 0.3}
    )
    serving_compute_efficiency: float = 0.3
    serving_compute_efficiency_by_benchmark: Mapping[str, float] = field(default_factory=dict)
    serving_bandwidth_efficiency: float = 0.6
    communication_factor: Mapping[str, float] = field(default_factory=dict)
    memory_usable_fraction: float = 0.9
    # Serving: GiB per GPU a serving engine holds besides weights and KV cache. vLLM's memory
    # profile of an RTX 5090: "non_torch_memory takes 0.33GiB; PyTorch activation peak memory
    # takes 1.01GiB" (vllm-project/vllm#14452, 2025-04-23).
    serving_reserve_gib: float = 1.34
    serving_max_batch_per_gpu: int = 256
    serving_context_tokens: int = 2048
    fitted: str = "not fitted: defaults"
    fitted_on: str = ""  # ISO date of the fit; empty for the defaults
    observations: Mapping[str, int] = field(default_factory=dict)
    typical_error_pct: Mapping[str, float] = field(default_factory=dict)
    outside_error_pct: Mapping[str, float] = field(default_factory=dict)

    def communication(self, link_kind: str) -> float:
        """The fitted factor on the all-reduce time over a link of this kind (1 when not fitted)."""
        return self.communication_factor.get(link_kind, 1.0)

    @property
    def fitted_rows(self) -> int:
        """The measured rows the constants were fitted to."""
        return sum(self.observations.values())

    def serving_efficiency(self, benchmark: str = "") -> float:
        return self.serving_compute_efficiency_by_benchmark.get(benchmark, self.serving_compute_efficiency)

    def decode_efficiency(self, weight_precision: str) -> float:
        return _by_group(self.decode_bandwidth_efficiency, weight_precision)

    def prefill_efficiency(self, weight_precision: str) -> float:
        return _by_group(self.prefill_compute_efficiency, weight_precision)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["decode_bandwidth_efficiency"] = dict(self.decode_bandwidth_efficiency)
        data["prefill_compute_efficiency"] = dict(self.prefill_compute_efficiency)
        data["serving_compute_efficiency_by_benchmark"] = dict(self.serving_compute_efficiency_by_benchmark)
        data["communication_factor"] = dict(self.communication_factor)
        data["observations"] = dict(self.observations)
        data["typical_error_pct"] = dict(self.typical_error_pct)
        data["outside_error_pct"] = dict(self.outside_error_pct)
        return data


# Weight formats grouped as the efficiencies are fitted: 4-bit formats dequantise on the fly,
# 8-bit and 16-bit ones run other kernels.
PRECISION_GROUPS = {"fp4": "4bit", "int4": "4bit", "fp8": "8bit", "int8": "8bit", "fp16": "16bit", "bf16": "16bit",
                    "fp32": "16bit"}  # fmt: skip


def precision_group(weight_precision: str) -> str:
    return PRECISION_GROUPS.get(weight_precision, "16bit")


def _by_group(values: Mapping[str, float], weight_precision: str) -> float:
    group = precision_group(weight_precision)
    if group in values:
        return values[group]
    known = [v for v in values.values() if v > 0]
    return math.exp(sum(math.log(v) for v in known) / len(known)) if known else 0.5


def constants_from_dict(data: Mapping[str, Any]) -> LlmConstants:
    known = set(LlmConstants.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown LLM model constant(s): {', '.join(unknown)}")
    return LlmConstants(**data)


@lru_cache(maxsize=1)
def constants_default() -> LlmConstants:
    """The committed constants (``constants.json``), or the defaults when the file is absent."""
    if not CONSTANTS_PATH.is_file():
        return LlmConstants()
    return constants_from_dict(json.loads(CONSTANTS_PATH.read_text(encoding="utf-8")))


def constants_write(*, constants: LlmConstants, path: Path = CONSTANTS_PATH) -> None:
    path.write_text(json.dumps(constants.as_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    constants_default.cache_clear()
