"""Weight and KV-cache formats: real bytes per weight, scales and zero points included. Pure data.

Each :class:`WeightFormat` says how many bits one quantised weight costs on the GPU, which weights
the format quantises (the rest stay 16-bit), what precision the matrix multiplies then run in, and
where the figure comes from:

* ``fp8`` - 8 bits; one scale per tensor or per 128 x 128 block (DeepSeek V3's release format:
  a 32-bit scale per 16,384 weights, 0.002 bits). Embeddings and output head stay 16-bit, as
  vLLM's and llm-compressor's FP8 checkpoints keep them. Runs on FP8 tensor cores where the GPU has
  them (Hopper, Ada, Blackwell), else as 16-bit.
* ``int8`` - 8 bits with one scale per output row (bitsandbytes LLM.int8(), SmoothQuant W8A8):
  a 16-bit scale per row of thousands of weights is under 0.01 bits.
* ``int4`` - bitsandbytes 4-bit (FP4/NF4): one 32-bit absmax per block of 64 weights, 0.5 bits
  (QLoRA paper, arXiv:2305.14314, section 3). QLoRA's double quantisation: 0.127 bits.
* ``gptq`` / ``awq`` - 4-bit weights in groups of 128 with a 16-bit scale and a packed 4-bit zero
  point per group and output column: 4 + 16/128 + 4/128 = 4.156 bits (GPTQ, arXiv:2210.17323, and
  AWQ, arXiv:2306.00978, both at their default group size 128, in the AutoGPTQ/AutoAWQ checkpoint
  layout vLLM loads). Embeddings and output head stay 16-bit.
* ``q4_k_m`` / ``q8_0`` - llama.cpp GGUF: 4.8944 and 8.5008 bits per weight averaged over every
  tensor of Llama 3.1 8B, embeddings included (llama.cpp, tools/quantize/README.md, table for
  meta-llama/Llama-3.1-8B). Q4_K_M mixes 4.5-bit Q4_K with 6.56-bit Q6_K tensors.
* ``mxfp4`` - OCP Microscaling FP4: 4-bit elements with an 8-bit shared exponent per 32, 4.25 bits
  (OCP Microscaling Formats (MX) v1.0, 2023). gpt-oss ships its expert weights this way and keeps
  attention, router, embeddings and output head in BF16 (OpenAI's gpt-oss model card, 2025); for a
  mixture of experts only the experts are quantised, for a dense model every linear layer.

Weight-only formats (int8, int4, gptq, awq, GGUF, mxfp4) multiply in 16-bit after dequantising.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

Scope = Literal["all", "linear", "experts_or_linear"]


class Precision(StrEnum):
    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    GPTQ = "gptq"
    AWQ = "awq"
    Q4_K_M = "q4_k_m"
    Q8_0 = "q8_0"
    MXFP4 = "mxfp4"


class KvPrecision(StrEnum):
    """KV cache element formats: 16/32-bit, FP8 (vLLM ``kv_cache_dtype=fp8``, TensorRT-LLM), INT8,
    and llama.cpp's ``q8_0`` (34 bytes per 32 values) and ``q4_0`` (18 bytes per 32 values)."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    Q8_0 = "q8_0"
    Q4_0 = "q4_0"


KV_BYTES: dict[KvPrecision, float] = {
    KvPrecision.FP32: 4.0,
    KvPrecision.BF16: 2.0,
    KvPrecision.FP16: 2.0,
    KvPrecision.FP8: 1.0,
    KvPrecision.INT8: 1.0,
    KvPrecision.Q8_0: 34 / 32,
    KvPrecision.Q4_0: 18 / 32,
}


@dataclass(frozen=True)
class WeightFormat:
    """``bits``: per quantised weight, scales included; ``scope``: which weights it quantises
    (``all``: every tensor; ``linear``: all but embeddings and output head; ``experts_or_linear``:
    the routed experts of a mixture of experts, else every linear layer); ``compute``: the tensor
    precision the multiplies run in; ``label`` for people; ``source`` of the figure."""

    precision: Precision
    bits: float
    scope: Scope
    compute: str
    label: str
    source: str

    @property
    def quantised(self) -> bool:
        return self.precision not in (Precision.FP32, Precision.BF16, Precision.FP16)


GPTQ_AWQ_BITS = 4 + 16 / 128 + 4 / 128
WEIGHT_FORMATS: dict[Precision, WeightFormat] = {
    Precision.FP32: WeightFormat(Precision.FP32, 32, "all", "fp32", "FP32", ""),
    Precision.BF16: WeightFormat(Precision.BF16, 16, "all", "bf16", "BF16", ""),
    Precision.FP16: WeightFormat(Precision.FP16, 16, "all", "fp16", "FP16", ""),
    Precision.FP8: WeightFormat(
        Precision.FP8, 8, "linear", "fp8", "FP8 (8.0 bits)", "per-tensor or 128x128-block scales"
    ),
    Precision.INT8: WeightFormat(
        Precision.INT8, 8, "linear", "bf16", "INT8 (8.0 bits)", "LLM.int8() / SmoothQuant, per-row scales"
    ),
    Precision.INT4: WeightFormat(
        Precision.INT4, 4.5, "linear", "bf16", "INT4 bitsandbytes (4.5 bits)", "QLoRA paper, arXiv:2305.14314"
    ),
    Precision.GPTQ: WeightFormat(
        Precision.GPTQ,
        GPTQ_AWQ_BITS,
        "linear",
        "bf16",
        "GPTQ 4-bit, group 128 (4.16 bits)",
        "GPTQ, arXiv:2210.17323; AutoGPTQ layout",
    ),
    Precision.AWQ: WeightFormat(
        Precision.AWQ,
        GPTQ_AWQ_BITS,
        "linear",
        "bf16",
        "AWQ 4-bit, group 128 (4.16 bits)",
        "AWQ, arXiv:2306.00978; AutoAWQ layout",
    ),
    Precision.Q4_K_M: WeightFormat(
        Precision.Q4_K_M,
        4.8944,
        "all",
        "bf16",
        "llama.cpp Q4_K_M (4.89 bits)",
        "llama.cpp tools/quantize/README.md, Llama 3.1 8B",
    ),
    Precision.Q8_0: WeightFormat(
        Precision.Q8_0,
        8.5008,
        "all",
        "bf16",
        "llama.cpp Q8_0 (8.50 bits)",
        "llama.cpp tools/quantize/README.md, Llama 3.1 8B",
    ),
    Precision.MXFP4: WeightFormat(
        Precision.MXFP4,
        4.25,
        "experts_or_linear",
        "bf16",
        "MXFP4 (4.25 bits)",
        "OCP Microscaling Formats (MX) v1.0; gpt-oss model card",
    ),
}

#: Formats with 4-bit weights: the ones a "4-bit" deployment means.
FOUR_BIT = frozenset({Precision.INT4, Precision.GPTQ, Precision.AWQ, Precision.Q4_K_M, Precision.MXFP4})
SIXTEEN_BIT_OR_MORE = frozenset({Precision.FP32, Precision.BF16, Precision.FP16})
