"""Match GPU names against the catalogue: one JSON line per name, or a corpus pass rate.

manage.py match_gpu "NVIDIA H100 80GB HBM3" "Quadro T1000"
printf 'NVIDIA H100\\t95830\\n' | manage.py match_gpu
manage.py match_gpu --corpus tests/data/gpu_names_corpus.tsv
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.matching import CONFLICT, MATCHED, GpuMatcher, MatchResult
from catalog.matching.corpus import CorpusError, CorpusSummary, corpus_evaluate, corpus_read


def _line_read(line: str) -> tuple[str, float | None]:
    """``NAME`` or ``NAME<TAB>MEMORY_MIB``; raises ValueError naming the problem."""
    name, tab, memory = line.rstrip("\r\n").partition("\t")
    if not name.strip():
        raise ValueError("empty name")
    if not tab or not memory.strip():
        return name, None
    try:
        mib = float(memory)
    except ValueError:
        raise ValueError(f"memory {memory.strip()!r} is not a number of MiB") from None
    if not mib > 0 or mib == float("inf"):
        raise ValueError(f"memory {memory.strip()!r} must be a positive number of MiB")
    return name, mib


def result_json(*, name: str, memory_mib: float | None, result: MatchResult) -> dict[str, Any]:
    line: dict[str, Any] = {
        "input": name,
        "memory_mib": memory_mib,
        "slug": result.slug if result.status == MATCHED else None,
        "status": result.status,
        "reason": result.reason,
        "candidates": [{"slug": c.slug, "why": c.why} for c in result.candidates],
    }
    if result.status == CONFLICT and result.slug:
        # What the name alone says, for the curator; the memory disagrees with it.
        line["name_alone"] = result.slug
    return line


class Command(BaseCommand):
    # call_command(..., stdin=stream) reads the names from that stream instead of sys.stdin.
    stealth_options = ("stdin",)
    help = (
        "Match GPU names (arguments, or standard input one per line as NAME or NAME<TAB>MEMORY_MIB) "
        "and print one JSON line each; --corpus FILE prints the pass rate of a name corpus."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", help="GPU names; standard input when none are given.")
        parser.add_argument("--memory-mib", type=float, default=None, help="Memory reported with the named GPUs.")
        parser.add_argument("--corpus", type=Path, default=None, help="Tab-separated corpus file to score.")

    def handle(self, *args: Any, **options: Any) -> None:
        matcher = GpuMatcher.load()
        if options["corpus"] is not None:
            try:
                rows = corpus_read(path=options["corpus"])
            except CorpusError as exc:
                raise CommandError(str(exc)) from None
            self._corpus_report(corpus_evaluate(rows=rows, matcher=matcher))
            return
        memory = options["memory_mib"]
        if memory is not None and not memory > 0:
            raise CommandError("--memory-mib must be a positive number of MiB")
        if options["names"]:
            inputs = [(name, memory) for name in options["names"]]
        else:
            inputs = []
            for number, line in enumerate(options.get("stdin") or sys.stdin, start=1):
                if not line.strip():
                    continue
                try:
                    inputs.append(_line_read(line))
                except ValueError as exc:
                    raise CommandError(f"standard input line {number}: {exc}") from None
        for name, mib in inputs:
            result = matcher.match(name=name, memory_gib=mib / 1024 if mib else None)
            line = result_json(name=name, memory_mib=mib, result=result)
            self.stdout.write(json.dumps(line, ensure_ascii=False))

    def _corpus_report(self, summary: CorpusSummary) -> None:
        scored = len(summary.scored)
        self.stdout.write(
            f"pass rate: {summary.right}/{scored} = {summary.pass_rate:.1%} right; "
            f"{len(summary.wrong)} wrong (matched to another GPU); "
            f"{len(summary.failures) - len(summary.wrong)} not matched where a match was expected "
            "or refused for another reason"
        )
        for outcome in summary.failures:
            kind = "WRONG" if outcome.wrong else "MISS "
            memory = f" @ {outcome.row.memory_mib:g} MiB" if outcome.row.memory_mib else ""
            self.stdout.write(
                f"  {kind} line {outcome.row.line}: {outcome.row.name!r}{memory}: expected {outcome.row.expected}, "
                f"got {outcome.got} ({outcome.result.reason})"
            )
        waiting = summary.awaiting_catalogue
        if waiting:
            still = [o for o in waiting if o.result.status != "matched"]
            self.stdout.write(
                f"needs a catalogue entry (not scored): {len(waiting)} rows, {len(still)} still unmatched, "
                f"{len(waiting) - len(still)} now matched (check them)"
            )
            for outcome in waiting:
                if outcome.result.status == "matched":
                    self.stdout.write(f"  NOW MATCHED line {outcome.row.line}: {outcome.row.name!r} -> {outcome.got}")
