"""``{% cite source %}``: a stored source string as a readable citation (catalog/citations.py)."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from catalog.citations import citation_for

register = template.Library()


@register.simple_tag
def cite(source: str, as_of: dt.date | None = None) -> SafeString:
    """Title (linked), publisher, date; a summary also names the work it summarises.

    ``as_of`` is the date of the figure, shown instead of the document's own date.
    """
    if not source:
        return format_html("")
    citation = citation_for(source)
    title = (
        format_html('<a href="{}" rel="noopener nofollow">{}</a>', citation.url, citation.title)
        if citation.url
        else format_html("<cite>{}</cite>", citation.title)
    )
    parts = [title]
    if citation.publisher:
        parts.append(format_html("{}", citation.publisher))
    date = as_of or citation.date
    if date:
        parts.append(format_html("{}", date.isoformat()))
    out = format_html_join(_(", "), "{}", ((p,) for p in parts))
    if citation.original_title:
        original = (
            format_html('<a href="{}" rel="noopener nofollow">{}</a>', citation.original_url, citation.original_title)
            if citation.original_url
            else format_html("<cite>{}</cite>", citation.original_title)
        )
        out = format_html(
            _("{citation} (summarising {original} by {author})"),
            citation=out,
            original=original,
            author=citation.original_author,
        )
    return format_html('<span class="citation">{}</span>', out)


@register.filter
def field_citation(citations: dict[str, object], field: str) -> object | None:
    """The citation of one catalogue field from the page's {field: SpecCitation}, or None."""
    return citations.get(field) if citations else None


@register.filter
def localized(obj: object, field: str) -> str:
    """``obj.<field>_zh`` on Chinese pages when it is filled, else ``obj.<field>``."""
    language = get_language() or "en"
    if language.startswith("zh"):
        chinese = getattr(obj, f"{field}_zh", "")
        if chinese:
            return str(chinese)
    return str(getattr(obj, field, "") or "")
