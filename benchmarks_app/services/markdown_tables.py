"""Pipe tables of a Markdown file, each with the headings above it (pure, no Django)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class MarkdownTable:
    headings: tuple[str, ...]  # h1 .. the nearest heading, outermost first
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    line: int  # 1-based line of the header

    @property
    def heading(self) -> str:
        return self.headings[-1] if self.headings else ""


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return [cell.strip() for cell in body.split("|")]


def markdown_tables(text: str) -> list[MarkdownTable]:
    """Every pipe table (a header row, a ``---`` separator, then rows), in file order.

    Rows are padded or cut to the header's width; code blocks are skipped.
    """
    lines = text.splitlines()
    tables: list[MarkdownTable] = []
    headings: list[tuple[int, str]] = []
    in_code = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.lstrip().startswith("```"):
            in_code = not in_code
            index += 1
            continue
        if in_code:
            index += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            headings = [(lvl, text_) for lvl, text_ in headings if lvl < level] + [(level, heading.group(2))]
            index += 1
            continue
        if line.lstrip().startswith("|") and index + 1 < len(lines) and _SEPARATOR.match(lines[index + 1].strip()):
            header = _cells(line)
            rows: list[tuple[str, ...]] = []
            cursor = index + 2
            while cursor < len(lines) and lines[cursor].lstrip().startswith("|"):
                cells = _cells(lines[cursor])
                cells = (cells + [""] * len(header))[: len(header)]
                rows.append(tuple(cells))
                cursor += 1
            tables.append(MarkdownTable(tuple(h for _, h in headings), tuple(header), tuple(rows), index + 1))
            index = cursor
            continue
        index += 1
    return tables
