"""A corpus of real GPU names with the answer a curator expects, and how the matcher does on it.

The file is tab-separated with a header: ``name``, ``memory_mib`` (empty when the source shows
none), ``expected`` (a catalogue slug, or ``unmatched`` / ``conflict`` / ``ambiguous``),
``needs_catalogue_entry`` (``yes`` where the right answer is a GPU the catalogue lacks, so that
the row is reported apart instead of as right or wrong), ``source`` (where the string was seen)
and ``note``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from catalog.matching.matcher import AMBIGUOUS, CONFLICT, MATCHED, UNMATCHED, GpuMatcher, MatchResult

CORPUS_COLUMNS = ("name", "memory_mib", "expected", "needs_catalogue_entry", "source", "note")
_NON_MATCHES = (UNMATCHED, CONFLICT, AMBIGUOUS)


class CorpusError(ValueError):
    """The corpus file is malformed; the message names the line and the column."""


@dataclass(frozen=True)
class CorpusRow:
    line: int
    name: str
    memory_mib: float | None
    expected: str
    needs_catalogue_entry: bool
    source: str
    note: str


@dataclass(frozen=True)
class CorpusOutcome:
    row: CorpusRow
    result: MatchResult

    @property
    def got(self) -> str:
        return self.result.slug if self.result.status == MATCHED and self.result.slug else self.result.status

    @property
    def right(self) -> bool:
        return self.got == self.row.expected

    @property
    def wrong(self) -> bool:
        """Matched to a GPU it is not: the failure that puts a result on the wrong page."""
        return self.result.status == MATCHED and not self.right


@dataclass
class CorpusSummary:
    outcomes: list[CorpusOutcome] = field(default_factory=list)

    @property
    def scored(self) -> list[CorpusOutcome]:
        return [o for o in self.outcomes if not o.row.needs_catalogue_entry]

    @property
    def awaiting_catalogue(self) -> list[CorpusOutcome]:
        return [o for o in self.outcomes if o.row.needs_catalogue_entry]

    @property
    def right(self) -> int:
        return sum(o.right for o in self.scored)

    @property
    def wrong(self) -> list[CorpusOutcome]:
        return [o for o in self.scored if o.wrong]

    @property
    def failures(self) -> list[CorpusOutcome]:
        return [o for o in self.scored if not o.right]

    @property
    def pass_rate(self) -> float:
        return self.right / len(self.scored) if self.scored else 0.0


def corpus_read(*, path: Path) -> list[CorpusRow]:
    """Read and check a corpus file; raises CorpusError naming the line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CorpusError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    reader = csv.DictReader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    missing = [c for c in CORPUS_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise CorpusError(f"{path}: the header lacks column(s) {', '.join(missing)}")
    rows = []
    for line, record in enumerate(reader, start=2):
        where = f"{path.name} line {line}"
        name = (record.get("name") or "").strip()
        expected = (record.get("expected") or "").strip()
        if not name or not expected:
            raise CorpusError(f"{where}: name and expected are required")
        if not (record.get("source") or "").strip():
            raise CorpusError(f"{where}: source is required (where the string was seen)")
        raw_memory = (record.get("memory_mib") or "").strip()
        try:
            memory = float(raw_memory) if raw_memory else None
        except ValueError:
            raise CorpusError(f"{where}: memory_mib {raw_memory!r} is not a number") from None
        if memory is not None and memory <= 0:
            raise CorpusError(f"{where}: memory_mib must be positive")
        needs = (record.get("needs_catalogue_entry") or "").strip().lower()
        if needs not in ("", "yes", "no"):
            raise CorpusError(f"{where}: needs_catalogue_entry is yes, no or empty, not {needs!r}")
        rows.append(
            CorpusRow(
                line=line,
                name=name,
                memory_mib=memory,
                expected=expected,
                needs_catalogue_entry=needs == "yes",
                source=record["source"].strip(),
                note=(record.get("note") or "").strip(),
            )
        )
    return rows


def corpus_evaluate(*, rows: list[CorpusRow], matcher: GpuMatcher) -> CorpusSummary:
    summary = CorpusSummary()
    for row in rows:
        memory_gib = row.memory_mib / 1024 if row.memory_mib else None
        summary.outcomes.append(CorpusOutcome(row, matcher.match(name=row.name, memory_gib=memory_gib)))
    return summary
