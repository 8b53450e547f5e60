"""GPU names of price rows -> catalogue GPUs: GpuMatcher plus memory candidates and safe retries."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from catalog.matching import MEMORY_SNAP_TOLERANCE, GpuMatcher
from catalog.services.prices.common import OfferRow

# Words that may follow a model name without changing which GPU it is (memory size, socket,
# memory type). Only when everything after the model is such words may we retry with the bare
# model: "A100-80G-PCIe" -> "A100" is safe, "RTX6000-Ada" -> "RTX6000" is another GPU.
_SAFE_SUFFIX_WORD = re.compile(
    r"^((\d+(\.\d+)?)?\s*(g|gb|gib)|\d+(\.\d+)?|pcie|sxm\d?|hgx|hbm\d?e?|nvlink|gddr\d?x?)$", re.IGNORECASE
)
_MODEL_HEAD = re.compile(r"^(?:nvidia[\s_-]+)?([a-z]*\d+[a-z]*)", re.IGNORECASE)
_NVLINK = re.compile(r"nvlink", re.IGNORECASE)
_VARIANT_WORD = re.compile(r"sxm|pcie|nvl|oam", re.IGNORECASE)


def bare_model_name(name: str) -> str | None:
    """``A100-80G-PCIe`` -> ``A100``; ``None`` when the suffix might change the GPU."""
    text = re.sub(r"\(([^)]*)\)", r" \1 ", name).strip()
    head = _MODEL_HEAD.match(text)
    if head is None:
        return None
    rest = [w for w in re.split(r"[\s_\-/]+", text[head.end() :]) if w]
    if head.group(1) == text or not all(_SAFE_SUFFIX_WORD.match(w) for w in rest):
        return None
    return head.group(1)


def hints_clean(text: str) -> str:
    # "PCIe-NVLink" is a PCIe card with a bridge, not the H100 NVL product.
    cleaned = _NVLINK.sub(" ", text)
    return re.sub(r"(?i)\bhgx\b", "SXM", cleaned)


@dataclass
class GpuLink:
    gpu_id: int | None
    memory_gib: float | None
    memory_mismatch: str = ""


class GpuLinker:
    """GpuMatcher plus the memory-candidate and bare-name retries, cached per distinct input."""

    def __init__(self, matcher: GpuMatcher) -> None:
        self.matcher = matcher
        self.cache: dict[tuple[Any, ...], GpuLink] = {}

    def link(self, row: OfferRow) -> GpuLink:
        key = (row.gpu_name_raw, row.other_gpu_names, row.hints, row.memory_candidates)
        if key not in self.cache:
            self.cache[key] = self._link(row)
        return self.cache[key]

    def _fits(self, gpu_id: int, memory: float | None) -> bool:
        known = self.matcher.facts[gpu_id].memory_gib
        return memory is None or not known or abs(memory - known) / known <= MEMORY_SNAP_TOLERANCE

    def _same_form_factor(self, gpu_id: int, *, name: str, hints: str, memory: float | None) -> int:
        """When memory alone moved the match to a sibling, keep the alias target's form factor.

        "A100" (alias: A100 SXM4 40 GB) with 80 GiB and no PCIe/SXM word is the SXM4 80 GB,
        not whichever 80 GB sibling sorts first.
        """
        if memory is None or _VARIANT_WORD.search(f"{name} {hints}"):
            return gpu_id
        target = self.matcher.match(name=name, hints=hints)
        if not target.matched or target.gpu_id == gpu_id:
            return gpu_id
        assert target.gpu_id is not None
        wanted = self.matcher.facts[target.gpu_id].variant
        chosen = self.matcher.facts[gpu_id]
        if not wanted or chosen.variant == wanted:
            return gpu_id
        for sibling in self.matcher.families.get(chosen.family, []):
            if self.matcher.facts[sibling].variant == wanted and self._fits(sibling, memory):
                return sibling
        return gpu_id

    def _link(self, row: OfferRow) -> GpuLink:
        hints = hints_clean(row.hints)
        names = [row.gpu_name_raw, *row.other_gpu_names]
        names += [bare for bare in (bare_model_name(n) for n in list(names)) if bare and bare not in names]
        memories: tuple[float | None, ...] = row.memory_candidates or (None,)
        fallback: GpuLink | None = None
        for name in names:
            if not name:
                continue
            for memory in memories:
                result = self.matcher.match(name=name, memory_gib=memory, hints=f"{hints} {name}")
                if not result.matched:
                    break
                assert result.gpu_id is not None
                if self._fits(result.gpu_id, memory):
                    return GpuLink(self._same_form_factor(result.gpu_id, name=name, hints=hints, memory=memory), memory)
                known = self.matcher.facts[result.gpu_id].memory_gib
                fallback = fallback or GpuLink(
                    result.gpu_id, memory, f"reported {memory:g} GiB per GPU, catalogue {known:g} GiB"
                )
        # A name match whose reported memory fits no candidate still names the GPU (several
        # catalogues misreport memory); keep it, flagged on the offer and in the summary.
        return fallback or GpuLink(None, row.memory_candidates[0] if row.memory_candidates else None)
