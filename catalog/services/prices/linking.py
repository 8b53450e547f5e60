"""GPU names of price rows -> catalogue GPUs, and the form-factor decision for offers.

The generic name matcher (``catalog.matching.GpuMatcher``) finds the GPU model. Which member
of the model's family an offer is (A100 SXM4 80 GB, A100 PCIe 80 GB...) is decided here, from
the row alone:

* the memory per GPU the source reports (the parsers hand over the readings, most trusted
  first) picks the family members it fits within 7%;
* a form-factor word in the row (GPU name, GpuInfo name, instance type, the tracker's socket:
  ``SXM4``, ``PCIe``, Cudo's ``pci``, ``NVL``, ``HGX``...) picks among those;
* where the provider documents the instance family's GPU (``instance_families.toml``: AWS p5
  is the H100 SXM, RunPod's ``A100-80GB`` the PCIe card...), that GPU, provided the row's
  memory and form-factor words agree with it; a row that contradicts its rule is flagged;
* when the row states no form factor and members of another form factor still fit, the offer
  is **ambiguous**: it keeps the matcher's pick for reference but stays out of per-GPU
  rankings until a curator maps it (``OfferGpuMapping``, admin). Nothing is guessed silently;
* a stated form factor whose card has another memory than the row reports (``H100_NVL`` with
  80 GB: the NVL card has 94 GB) is a contradiction: flagged and ambiguous, never matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from catalog.matching import GpuMatcher
from catalog.models import Gpu, OfferGpuMapping
from catalog.services.prices.common import OfferRow
from catalog.services.prices.families import InstanceFamily, instance_families_load, instance_family_for

MEMORY_FIT = 0.07  # reported memory within 7% of the catalogue's: the same card (80 GB vs 81920 MiB)

# Words that may follow a model name without changing which GPU it is (memory size, socket,
# memory type). Only when everything after the model is such words may we retry with the bare
# model: "A100-80G-PCIe" -> "A100" is safe, "RTX6000-Ada" -> "RTX6000" is another GPU.
_SAFE_SUFFIX_WORD = re.compile(
    r"^((\d+(\.\d+)?)?\s*(g|gb|gib)|\d+(\.\d+)?|pcie|pci|sxm\d?|hgx|hbm\d?e?|nvlink|gddr\d?x?)$", re.IGNORECASE
)
_MODEL_HEAD = re.compile(r"^(?:nvidia[\s_-]+)?([a-z]*\d+[a-z]*)", re.IGNORECASE)
# Form-factor words, matched on the row text split at anything but letters and digits. "NVLink"
# is a bridge between PCIe cards, not the NVL product; "HGX" boards and "DGX" systems carry SXM
# modules (NVIDIA's DGX A100 and DGX H100 datasheets: SXM4/SXM5 GPUs on an HGX baseboard).
_FORM_FACTORS = (
    (re.compile(r"^(?:[a-z]*\d+)?(?:sxm\d?|hgx|dgx)(?:x\d+)?$"), "SXM"),  # "sxm4x8": 8 SXM4 modules
    (re.compile(r"^(?:[a-z]*\d+)?(?:pcie|pci|pciex)(?:x\d+)?$"), "PCIe"),
    (re.compile(r"^(?:[a-z]*\d+)?nvl$"), "NVL"),
    (re.compile(r"^oam$"), "OAM"),
    (re.compile(r"^(?:workstation|ws)$"), "Workstation"),
    (re.compile(r"^server$"), "Server"),
)
# RTX PRO cards name their edition by a suffix: RTXPRO6000S / RTX_PRO_6000_S / SE (Server Edition),
# RTXPRO6000-WK / WS (Workstation Edition), Max-Q (the Max-Q Workstation Edition).
_RTX_PRO_EDITION = re.compile(
    r"RTX[\s_-]*PRO[\s_-]*\d{4}[\s_-]*(?:Blackwell[\s_-]*)?(?P<edition>SE|S|Server|WS|WK|Workstation|Max-?Q)(?![a-z])",
    re.IGNORECASE,
)
_EDITIONS = {"se": "Server", "s": "Server", "server": "Server", "ws": "Workstation", "wk": "Workstation"}
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
# Memory types a row may name ("NVIDIA-H100-80GB-HBM3"): where a family's members differ in it
# (H100 SXM5 HBM3, H100 PCIe HBM2e), the memory type states the member as a form-factor word does.
_MEMORY_TYPES = {
    "hbm2": "HBM2",
    "hbm2e": "HBM2e",
    "hbm3": "HBM3",
    "hbm3e": "HBM3e",
    "gddr6": "GDDR6",
    "gddr6x": "GDDR6X",
}


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


def memory_types_stated(text: str) -> set[str]:
    """The memory types a row's text names: ``{"HBM3"}`` for ``NVIDIA-H100-80GB-HBM3``."""
    return {_MEMORY_TYPES[w] for w in _WORD_SPLIT.split(text.lower()) if w in _MEMORY_TYPES}


def form_factors_stated(text: str) -> set[str]:
    """The form factors a row's text names: ``{"PCIe"}`` for ``intel-ice-lake-a100-pci_1x2v4gb``."""
    found = set()
    for edition in _RTX_PRO_EDITION.finditer(text):
        word = edition.group("edition").lower()
        found.add(_EDITIONS.get(word, "Workstation" if word == "workstation" else "Max-Q"))
    for word in _WORD_SPLIT.split(text.lower()):
        for pattern, variant in _FORM_FACTORS:
            if word and pattern.match(word):
                found.add(variant)
    return found


@dataclass(frozen=True)
class GpuFact:
    id: int
    slug: str
    family: str
    variant: str
    memory_gib: float | None
    memory_type: str = ""


@dataclass
class GpuLink:
    gpu_id: int | None
    memory_gib: float | None
    memory_mismatch: str = ""
    ambiguous: bool = False
    candidates: tuple[str, ...] = ()  # slugs of the GPUs an ambiguous offer may be
    how: str = ""


@dataclass
class GpuLinker:
    """The matcher plus family facts and curators' mappings, cached per distinct input."""

    matcher: GpuMatcher
    facts: dict[int, GpuFact] = field(default_factory=dict)
    families: dict[str, list[int]] = field(default_factory=dict)
    mappings: dict[tuple[str, str, str], int] = field(default_factory=dict)
    by_slug: dict[str, int] = field(default_factory=dict)
    instance_families: tuple[InstanceFamily, ...] = ()
    cache: dict[tuple[Any, ...], GpuLink] = field(default_factory=dict)

    @classmethod
    def load(cls, matcher: GpuMatcher | None = None) -> GpuLinker:
        linker = cls(matcher or GpuMatcher.load())
        for row in Gpu.objects.values("id", "slug", "family", "variant", "memory_gib", "memory_type"):
            fact = GpuFact(
                row["id"],
                row["slug"],
                row["family"] or "",
                row["variant"] or "",
                row["memory_gib"],
                row["memory_type"] or "",
            )
            linker.facts[fact.id] = fact
            linker.by_slug[fact.slug] = fact.id
            if fact.family:
                linker.families.setdefault(fact.family, []).append(fact.id)
        for provider, instance, name, gpu_id in OfferGpuMapping.objects.values_list(
            "provider__slug", "instance_type", "gpu_name_raw", "gpu_id"
        ):
            linker.mappings[(provider, instance, name)] = gpu_id
        linker.instance_families = instance_families_load()
        return linker

    def link(self, row: OfferRow) -> GpuLink:
        mapped = self.mappings.get((row.provider, row.instance_type, row.gpu_name_raw))
        if mapped is not None:
            memory = row.memory_candidates[0] if row.memory_candidates else None
            return GpuLink(mapped, memory, how="mapped by a curator")
        family = instance_family_for(
            provider=row.provider, instance_type=row.instance_type, families=self.instance_families
        )
        key = (row.gpu_name_raw, row.other_gpu_names, row.hints, row.memory_candidates, family)
        if key not in self.cache:
            link = self._link(row)
            self.cache[key] = self._documented(link, row, family) if family is not None else link
        return self.cache[key]

    def _documented(self, link: GpuLink, row: OfferRow, family: InstanceFamily) -> GpuLink:
        """The family's documented GPU, where the row agrees with it; else the row's own verdict, flagged."""
        gpu_id = self.by_slug.get(family.gpu)
        if gpu_id is None or link.gpu_id is None:
            return link
        fact, named = self.facts[gpu_id], self.facts[link.gpu_id]
        if named.family != fact.family and link.gpu_id != gpu_id:
            return link  # the row names another GPU model: the rule is not about this row
        how = f"instance family documented by the provider ({family.source})"
        stated = form_factors_stated(" ".join((row.gpu_name_raw, *row.other_gpu_names, row.hints)))
        memory = link.memory_gib
        problems = []
        if memory is not None and not self.fits(gpu_id, memory):
            problems.append(f"reported {memory:g} GiB per GPU, the documented {fact.slug} has {fact.memory_gib or 0:g}")
        if stated and fact.variant not in stated:
            problems.append(f"the row says {'/'.join(sorted(stated))}, the documented {fact.slug} is {fact.variant}")
        if problems:
            slugs = tuple(sorted({fact.slug, *(link.candidates or (named.slug,))}))
            mismatch = "; ".join(problems)
            return GpuLink(link.gpu_id, memory, mismatch, ambiguous=True, candidates=slugs, how=f"contradicts {how}")
        return GpuLink(gpu_id, memory, link.memory_mismatch, how=how)

    def fits(self, gpu_id: int, memory: float | None) -> bool:
        known = self.facts[gpu_id].memory_gib
        return memory is None or not known or abs(memory - known) / known <= MEMORY_FIT

    def _base_match(self, row: OfferRow) -> int | None:
        names = [row.gpu_name_raw, *row.other_gpu_names]
        names += [bare for bare in (bare_model_name(n) for n in list(names)) if bare and bare not in names]
        for name in names:
            if name:
                result = self.matcher.match(name=name)
                if result.matched and result.gpu_id in self.facts:
                    return result.gpu_id
        return None

    def _link(self, row: OfferRow) -> GpuLink:
        base = self._base_match(row)
        if base is None:
            return GpuLink(None, row.memory_candidates[0] if row.memory_candidates else None)
        fact = self.facts[base]
        siblings = self.families.get(fact.family, [base]) if fact.family else [base]
        memory = next((m for m in row.memory_candidates if any(self.fits(s, m) for s in siblings)), None)
        mismatch = ""
        if memory is None and row.memory_candidates:
            mismatch = f"reported {row.memory_candidates[0]:g} GiB per GPU, catalogue {fact.memory_gib or 0:g} GiB"
        candidates = [s for s in siblings if self.fits(s, memory if memory is not None else fact.memory_gib)]
        candidates = candidates or [base]
        text = " ".join((row.gpu_name_raw, *row.other_gpu_names, row.hints))
        stated = form_factors_stated(text)
        how = "name"
        memory_types = memory_types_stated(text)
        if len(memory_types) == 1 and len({self.facts[c].memory_type for c in candidates}) > 1:
            of_type = [c for c in candidates if self.facts[c].memory_type == next(iter(memory_types))]
            if of_type:
                candidates, how = of_type, f"name, memory type {next(iter(memory_types))} stated"
        if len(stated) > 1 and len({self.facts[s].variant for s in siblings} & stated) > 1:
            # "gpu_1x_DGX_A100" listed as "A100_80G_PCIE": the row names two form factors of the
            # family; an aggregator's GPU name and its upstream's machine name disagree. Flag it.
            slugs = tuple(sorted(self.facts[s].slug for s in siblings if self.facts[s].variant in stated))
            slugs = tuple(s for s in slugs if self.fits(self.by_slug[s], memory)) or slugs
            mismatch = f"the row names several form factors ({', '.join(sorted(stated))})"
            return GpuLink(base, memory, mismatch, ambiguous=True, candidates=slugs, how="form factors contradict")
        if len(stated) == 1:
            wanted = next(iter(stated))
            of_variant = [c for c in candidates if self.facts[c].variant == wanted]
            if not of_variant and memory is not None:
                # The stated form factor's card has other memory than the row reports (H100 NVL is
                # 94 GB, the row says 80): the name and the memory disagree; flag, never pick one.
                named = sorted(self.facts[s].slug for s in siblings if self.facts[s].variant == wanted)
                if named:
                    slugs = tuple(sorted({*named, *(self.facts[c].slug for c in candidates)}))
                    mismatch = (
                        f"the row says {wanted} ({', '.join(named)}) but reports {memory:g} GiB per GPU, "
                        f"which fits {', '.join(self.facts[c].slug for c in candidates)}"
                    )
                    return GpuLink(
                        base, memory, mismatch, ambiguous=True, candidates=slugs, how="name and memory disagree"
                    )
            if not of_variant:  # the stated form factor decides where the memory says nothing
                of_variant = [s for s in siblings if self.facts[s].variant == wanted]
            if of_variant:
                candidates, how = of_variant, f"name, form factor {wanted} stated"
        variants = {self.facts[c].variant for c in candidates}
        target = memory if memory is not None else fact.memory_gib or 0
        chosen = (
            base
            if base in candidates
            else min(  # a member of the matcher's form factor, then the closest memory
                candidates,
                key=lambda c: (
                    self.facts[c].variant != fact.variant,
                    abs((self.facts[c].memory_gib or 0) - target),
                    self.facts[c].slug,
                ),
            )
        )
        reported: float | None = memory
        if reported is None and row.memory_candidates:
            reported = row.memory_candidates[0]
        if len(variants) > 1:
            slugs = tuple(sorted(self.facts[c].slug for c in candidates))
            return GpuLink(chosen, reported, mismatch, ambiguous=True, candidates=slugs, how="form factor not stated")
        return GpuLink(chosen, reported, mismatch, how=how)
