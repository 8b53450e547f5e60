"""English sentences left on a Chinese page: runs of four or more English words with a function
word among them ("the", "of", "per"...), in the text a reader sees. Not counted: citations and
sources (<cite>, links out of the site, elements marked ``data-source`` or class ``source``), code
(<code>, <pre>), names marked ``translate="no"``, scripts and styles; product, model and engine names are capitalised words or
identifiers and carry no function word, so they pass."""

from __future__ import annotations

import re
from html.parser import HTMLParser

FUNCTION_WORDS = frozenset(
    [
        "the",
        "of",
        "and",
        "to",
        "is",
        "are",
        "on",
        "per",
        "with",
        "for",
        "in",
        "an",
        "at",
        "by",
        "from",
        "not",
        "no",
        "be",
        "it",
        "its",
        "this",
        "that",
        "as",
        "or",
        "was",
        "were",
        "has",
        "have",
        "can",
        "cannot",
        "does",
        "do",
        "which",
        "when",
        "where",
        "there",
        "here",
        "than",
        "then",
        "into",
    ]
)
WORDS = re.compile(r"[A-Za-z][A-Za-z'’-]*(?:[ ,;:]+[A-Za-z][A-Za-z'’-]*){3,}")
SKIPPED = frozenset({"script", "style", "code", "pre", "cite", "textarea", "svg"})
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[bool] = []  # per open element: is the text inside it skipped
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            return
        values = dict(attrs)
        href = values.get("href") or ""
        skipped = (
            tag in SKIPPED
            or "data-source" in values
            or values.get("translate") == "no"
            or "source" in (values.get("class") or "").split()
            or (tag == "a" and href.startswith(("http://", "https://")))
        )
        self.stack.append(skipped or (bool(self.stack) and self.stack[-1]))

    def handle_endtag(self, tag: str) -> None:
        if tag not in VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1]:
            return
        for run in WORDS.findall(data):
            words = {w.lower().strip(",;:") for w in re.split(r"[ ,;:]+", run)}
            if words & FUNCTION_WORDS:
                self.found.append(run.strip())


def english_sentences(html: str) -> list[str]:
    parser = _Text()
    parser.feed(html)
    return parser.found
