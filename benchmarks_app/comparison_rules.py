"""Which stored benchmark results count in a comparison: the precision families a result's
precision belongs to, and how many community results make a figure. Pure definitions, shared by
the rankings (dashboard), the LLM figures (llm) and the fit calculator."""

from __future__ import annotations

# Precision families: which stored precisions count, and which dense tensor peaks estimate them
# (first supported one with a figure wins; "fp32_nontensor" is Gpu.fp32_tflops).
PRECISION_FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "16bit": (("fp16", "bf16"), ("bf16", "fp16")),
    "8bit": (("int8", "fp8"), ("fp8", "int8")),
    "32bit": (("fp32", "tf32"), ("tf32", "fp32_nontensor")),
    "4bit": (("int4", "fp4"), ("fp4", "int8")),
    # LLM serving: each submission's own weight format, as long as it met the benchmark's accuracy target.
    "any": (("fp4", "int4", "fp8", "int8", "fp16", "bf16", "tf32", "fp32"), ("fp8", "int8", "bf16", "fp16")),
}

# An aggregate counts when it holds a lab result or at least this many community results.
MIN_COMMUNITY_N = 3


def figure_counts(*, has_lab: bool, n: int) -> bool:
    """Whether a figure counts in a comparison: a lab result is checked by hand and counts alone;
    community results count once ``MIN_COMMUNITY_N`` of them agree on one median, so that one
    mistaken run cannot set a GPU's figure."""
    return has_lab or n >= MIN_COMMUNITY_N
