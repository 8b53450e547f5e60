"""Map GPU names seen in the wild to catalogue GPUs.

Names come from cloud catalogues (``A100-80GB``, ``NVIDIA-H100-80GB-HBM3``), nvidia-smi and
PyTorch (``NVIDIA A100-SXM4-80GB``) and benchmark tables. The alias table gives a first
answer; when that GPU has siblings of the same family (H100 SXM / PCIe / NVL) the variant
words in the name or the instance facts and the reported memory pick the right one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.utils.text import slugify

from catalog.models import Gpu, GpuAlias
from catalog.models.gpus import alias_normalise

MEMORY_SNAP_TOLERANCE = 0.07
_VARIANT_WORDS = {
    "sxm": "SXM",
    "pcie": "PCIe",
    "nvl": "NVL",
    "oam": "OAM",
}
_VARIANT_RE = re.compile(r"(sxm\d?|pcie|nvl|oam)", re.IGNORECASE)
_PREFIXES = ("nvidia", "tesla", "geforce", "amd", "instinct", "quadro")


@dataclass(frozen=True)
class GpuFacts:
    id: int
    slug: str
    family: str
    variant: str
    memory_gib: float | None


@dataclass(frozen=True)
class MatchResult:
    gpu_id: int | None
    slug: str | None
    how: str
    note: str = ""

    @property
    def matched(self) -> bool:
        return self.gpu_id is not None


@dataclass
class GpuMatcher:
    """An in-memory index of aliases and GPU names, loaded once per import or ingest batch."""

    by_key: dict[str, int] = field(default_factory=dict)
    facts: dict[int, GpuFacts] = field(default_factory=dict)
    families: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def load(cls) -> GpuMatcher:
        matcher = cls()
        for row in Gpu.objects.values("id", "slug", "name", "family", "variant", "memory_gib"):
            facts = GpuFacts(row["id"], row["slug"], row["family"], row["variant"], row["memory_gib"])
            matcher.facts[row["id"]] = facts
            matcher.by_key.setdefault(alias_normalise(row["name"]), row["id"])
            matcher.by_key.setdefault(alias_normalise(row["slug"]), row["id"])
            if row["family"]:
                matcher.families.setdefault(row["family"], []).append(row["id"])
        # Aliases win over GPU names: they are curated answers for ambiguous names.
        for normalised, gpu_id in GpuAlias.objects.values_list("normalised", "gpu_id"):
            matcher.by_key[normalised] = gpu_id
        return matcher

    def match(self, *, name: str, memory_gib: float | None = None, hints: str = "") -> MatchResult:
        """Find the catalogue GPU for ``name``; ``hints`` is free text such as an instance type."""
        key = alias_normalise(name)
        gpu_id = self.by_key.get(key)
        how = "alias"
        if gpu_id is None:
            gpu_id = self._match_without_prefix(key)
            how = "alias without vendor prefix"
        if gpu_id is None:
            gpu_id = self.by_key.get(alias_normalise(slugify(name)))
            how = "slug"
        if gpu_id is None:
            return MatchResult(None, None, "unmatched", f"no alias or catalogue name matches {name!r}")
        chosen, note = self._pick_sibling(gpu_id, name=name, hints=hints, memory_gib=memory_gib)
        facts = self.facts[chosen]
        if chosen != gpu_id:
            how = f"{how}, sibling by {note}"
            note = ""
        return MatchResult(chosen, facts.slug, how, note)

    def _match_without_prefix(self, key: str) -> int | None:
        stripped = key
        changed = True
        while changed:
            changed = False
            for prefix in _PREFIXES:
                if stripped.startswith(prefix) and len(stripped) > len(prefix):
                    stripped = stripped[len(prefix) :]
                    changed = True
                    if stripped in self.by_key:
                        return self.by_key[stripped]
        return None

    def _pick_sibling(self, gpu_id: int, *, name: str, hints: str, memory_gib: float | None) -> tuple[int, str]:
        facts = self.facts[gpu_id]
        siblings = self.families.get(facts.family, [gpu_id]) if facts.family else [gpu_id]
        if len(siblings) == 1:
            return gpu_id, self._memory_note(facts, memory_gib)
        candidates = [self.facts[s] for s in siblings]
        reasons = []
        variants = {_VARIANT_WORDS[m.lower().rstrip("0123456789")] for m in _VARIANT_RE.findall(f"{name} {hints}")}
        if len(variants) == 1:
            variant = variants.pop()
            by_variant = [c for c in candidates if c.variant == variant]
            if by_variant:
                candidates = by_variant
                reasons.append(f"variant {variant}")
        if memory_gib:
            by_memory = [
                c
                for c in candidates
                if c.memory_gib and abs(memory_gib - c.memory_gib) / c.memory_gib <= MEMORY_SNAP_TOLERANCE
            ]
            if by_memory:
                candidates = by_memory
                reasons.append(f"memory {memory_gib:g} GiB")
        if any(c.id == gpu_id for c in candidates):
            return gpu_id, self._memory_note(facts, memory_gib)
        # Without a variant word, keep the alias target's own variant (an "A100" with 80 GB is
        # the SXM4 80 GB, not the PCIe one), then the smallest memory difference.
        chosen = sorted(
            candidates,
            key=lambda c: (
                c.variant != facts.variant,
                abs((c.memory_gib or 0) - (memory_gib or facts.memory_gib or 0)),
                c.slug,
            ),
        )[0]
        return chosen.id, " and ".join(reasons)

    @staticmethod
    def _memory_note(facts: GpuFacts, memory_gib: float | None) -> str:
        if (
            memory_gib
            and facts.memory_gib
            and abs(memory_gib - facts.memory_gib) / facts.memory_gib > MEMORY_SNAP_TOLERANCE
        ):
            return f"reported memory {memory_gib:g} GiB differs from the catalogue's {facts.memory_gib:g} GiB"
        return ""
