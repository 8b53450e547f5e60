"""Readable citations for stored source strings (``catalog/data/curated/sources.toml``).

Figures keep the source they were curated from as a short key (an upstream URL or
``seed:<file>``); users see a citation instead: title, publisher or author, date and link, in
the page's language. ``citation_for`` never fails: a source without an entry is shown by its
host name (a URL) or as it is, and a test keeps every source of the shipped data registered.
"""

from __future__ import annotations

import datetime as dt
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.utils.translation import get_language

SOURCES_FILE = Path(__file__).resolve().parent / "data" / "curated" / "sources.toml"


@dataclass(frozen=True)
class Citation:
    key: str
    title: str
    publisher: str
    date: dt.date | None
    url: str
    original_title: str = ""
    original_author: str = ""
    original_url: str = ""
    registered: bool = True


@dataclass(frozen=True)
class _Entry:
    key: str
    prefix: bool
    titles: dict[str, str]
    publishers: dict[str, str]
    date: dt.date | None
    url: str
    original_title: str
    original_author: str
    original_url: str


def _date(text: object) -> dt.date | None:
    if isinstance(text, dt.date):
        return text
    return dt.date.fromisoformat(str(text)) if text else None


@functools.cache
def _entries() -> tuple[_Entry, ...]:
    with SOURCES_FILE.open("rb") as fh:
        data = tomllib.load(fh)
    entries = []
    for raw in data.get("source", []):
        key = raw["key"]
        entries.append(
            _Entry(
                key=key.removesuffix("*"),
                prefix=key.endswith("*"),
                titles={"en": raw["title_en"], "zh": raw["title_zh"]},
                publishers={"en": raw["publisher_en"], "zh": raw["publisher_zh"]},
                date=_date(raw.get("date")),
                url=raw.get("url", ""),
                original_title=raw.get("original_title", ""),
                original_author=raw.get("original_author", ""),
                original_url=raw.get("original_url", ""),
            )
        )
    # Longest prefix first, so a repository's entry never hides a file's own.
    return tuple(sorted(entries, key=lambda e: (not e.prefix, len(e.key)), reverse=True))


def _entry_for(source: str) -> _Entry | None:
    source = source.strip()
    for entry in _entries():
        if source == entry.key or (entry.prefix and source.startswith(entry.key)):
            return entry
    return None


def citation_registered(source: str) -> bool:
    return _entry_for(source) is not None


def citation_for(source: str, *, language: str | None = None) -> Citation:
    """The citation of a stored source string in ``language`` (default: the active one)."""
    lang = "zh" if (language or get_language() or "en").startswith("zh") else "en"
    entry = _entry_for(source)
    if entry is not None:
        return Citation(
            key=source,
            title=entry.titles[lang],
            publisher=entry.publishers[lang],
            date=entry.date,
            url=entry.url,
            original_title=entry.original_title,
            original_author=entry.original_author,
            original_url=entry.original_url,
        )
    text = source.strip()
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.netloc:
        return Citation(key=source, title=parts.netloc, publisher="", date=None, url=text, registered=False)
    return Citation(key=source, title=text, publisher="", date=None, url="", registered=False)
