"""Reading a GPU name with the name rules: what model it names and what it says about the variant.

The same reading is applied to names from the wild and to catalogue names and aliases, so that
``NVIDIA GeForce RTX 3080 Ti Laptop GPU`` and the catalogue's ``GeForce RTX 3080 Ti Mobile``
come out as the same model key with the same ``mobile`` marker.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from catalog.matching.rules import NameRule
from catalog.models import GpuNameRule

Kind = GpuNameRule.Kind
_NOT_KEY = re.compile(r"[^a-z0-9]+")
_SPACES = re.compile(r"\s+")
# A tail shorter than this is too little to say which marker nvidia-smi cut.
_MIN_MARKER_TAIL = 3


def name_key(text: str) -> str:
    """Lower case letters and digits only: spacing and punctuation never tell GPUs apart."""
    return _NOT_KEY.sub("", text.lower())


@dataclass(frozen=True)
class Refusal:
    status: str
    reason: str


@dataclass(frozen=True)
class ParsedName:
    raw: str
    text: str = ""
    key: str = ""
    bare: str = ""
    vendor: str | None = None
    markers: frozenset[str] = frozenset()
    variants: frozenset[str] = frozenset()
    qualifiers: frozenset[str] = frozenset()
    memory_gib: float | None = None
    memory_type: str = ""
    truncated: bool = False
    refusal: Refusal | None = None
    readings: tuple[str, ...] = ()

    @property
    def signature(self) -> str:
        """Everything the name says, for exact alias look-ups."""
        memory = f"{self.memory_gib:g}" if self.memory_gib else ""
        parts = (self.key, ",".join(sorted(self.variants)), memory, self.memory_type, ",".join(sorted(self.qualifiers)))
        return "|".join((*parts, ",".join(sorted(self.markers))))

    @property
    def is_bare_model(self) -> bool:
        """The name says nothing beyond the model (``A100``, ``NVIDIA GeForce RTX 3060``)."""
        return not (self.variants or self.markers or self.qualifiers or self.memory_gib or self.memory_type)


@dataclass
class _Reading:
    text: str
    vendor: str | None = None
    markers: set[str] = field(default_factory=set)
    variants: set[str] = field(default_factory=set)
    qualifiers: set[str] = field(default_factory=set)
    memory_gib: float | None = None
    memory_type: str = ""
    truncated: bool = False
    readings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Compiled:
    rule: NameRule
    regex: re.Pattern[str]


@functools.lru_cache(maxsize=4)
def name_parser(rules: tuple[NameRule, ...]) -> NameParser:
    """The parser for a set of rules, shared by every matcher loaded with the same rules."""
    return NameParser(list(rules))


class NameParser:
    """The text rules, compiled once per set of rules."""

    def __init__(self, rules: list[NameRule]) -> None:
        self.rules = [
            _Compiled(rule, re.compile(rule.pattern, re.IGNORECASE))
            for rule in sorted(rules, key=lambda r: r.position)
            if rule.pattern and rule.kind != Kind.CANDIDATES
        ]
        self.brands = [c.regex for c in self.rules if c.rule.kind == Kind.BRAND]
        self.marker_phrases = [
            (c.rule.phrase, c.rule.value) for c in self.rules if c.rule.kind == Kind.MARKER and c.rule.phrase
        ]
        # Reading the ~2,800 catalogue names is most of a matcher load; the ingest reloads its
        # snapshot every minute with the same rules and names, so the readings are kept.
        self.parse = functools.lru_cache(maxsize=16384)(self._parse)  # type: ignore[method-assign]

    def parse(self, raw: str) -> ParsedName:
        return self._parse(raw)

    def _parse(self, raw: str) -> ParsedName:
        reading = _Reading(text=_SPACES.sub(" ", raw).strip())
        for compiled in self.rules:
            refusal = self._apply(compiled, reading)
            if refusal is not None:
                return ParsedName(raw=raw, refusal=refusal)
        text = _SPACES.sub(" ", reading.text).strip(" -/,.")
        bare_text = text
        for brand in self.brands:
            bare_text = brand.sub(" ", bare_text)
        key = name_key(text)
        return ParsedName(
            raw=raw,
            text=text,
            key=key,
            bare=name_key(bare_text) or key,
            vendor=reading.vendor,
            markers=frozenset(reading.markers),
            variants=frozenset(reading.variants),
            qualifiers=frozenset(reading.qualifiers),
            memory_gib=reading.memory_gib,
            memory_type=reading.memory_type,
            truncated=reading.truncated,
            readings=tuple(reading.readings),
        )

    def _apply(self, compiled: _Compiled, reading: _Reading) -> Refusal | None:
        rule, regex = compiled.rule, compiled.regex
        match = regex.search(reading.text)
        if match is None:
            return None
        kind = rule.kind
        if kind == Kind.REFUSE:
            return Refusal(rule.value, rule.reason)
        if kind == Kind.BRAND:
            return None
        if kind == Kind.TRUNCATED:
            reading.text = regex.sub("", reading.text)
            reading.truncated = True
            self._complete_cut_marker(reading)
        elif kind == Kind.REPLACE:
            reading.text = regex.sub(rule.value, reading.text)
        elif kind == Kind.NAME_MEMORY:
            reading.memory_gib = reading.memory_gib or float(match.group(1))
            reading.text = regex.sub(" ", reading.text)
        else:
            if kind == Kind.MARKER:
                reading.markers.add(rule.value)
            elif kind == Kind.VENDOR:
                reading.vendor = reading.vendor or rule.value
            elif kind == Kind.VARIANT:
                reading.variants.add(rule.value)
            elif kind == Kind.MEMORY_TYPE:
                reading.memory_type = reading.memory_type or name_key(match.group(0))
            elif kind == Kind.QUALIFIER:
                reading.qualifiers.update(name_key(m.group(0)) for m in regex.finditer(reading.text))
            reading.text = regex.sub(" ", reading.text)
        if rule.reason and kind not in (Kind.VENDOR, Kind.NAME_MEMORY, Kind.MEMORY_TYPE):
            reading.readings.append(rule.reason)
        return None

    def _complete_cut_marker(self, reading: _Reading) -> None:
        """``... RTX 3050 Ti Lapt`` was ``... RTX 3050 Ti Laptop GPU``: restore the marker phrase."""
        words = reading.text.split()
        for count in (3, 2, 1):
            tail = " ".join(words[-count:]).lower()
            if len(words) <= count or len(tail) < _MIN_MARKER_TAIL:
                continue
            for phrase, _marker in self.marker_phrases:
                if phrase.lower().startswith(tail) and len(tail) < len(phrase):
                    reading.text = " ".join([*words[:-count], phrase])
                    reading.truncated = False
                    reading.readings.append(f"nvidia-smi cut the name in {phrase!r}")
                    return
