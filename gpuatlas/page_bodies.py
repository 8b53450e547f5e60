"""Page bodies rendered once per data version, and the page around them rendered per request.

A cached body is the content block of a page template rendered without a request: no context
processor runs, so nothing of the user (name, CSRF token, messages) can end up in a shared cache
entry. The page templates take their base from ``base_template`` (default base.html) and show
``body`` when the view passes one; ``page_response`` renders the header, language form and
footer around it for each visitor.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

# A base template that outputs nothing but the content block: with it, a page template renders
# its body alone.
BODY_ONLY = "_body_only.html"


def body_render(*, template: str, context: dict[str, Any]) -> str:
    """The content block of a page template, rendered without a request (so without anything
    user-specific); the template escaped what it inserted."""
    return render_to_string(template, {**context, "base_template": BODY_ONLY})


def page_response(
    request: HttpRequest, *, template: str, body: str, context: dict[str, Any] | None = None, status: int = 200
) -> HttpResponse:
    """The page around a cached body: the template rendered for this request (header and footer
    hold the user, the CSRF token and the language form) with the body inserted as it is."""
    return render(request, template, {**(context or {}), "body": mark_safe(body)}, status=status)  # noqa: S308 - our own escaped HTML
