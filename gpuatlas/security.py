"""Content-Security-Policy header (Django 5.2 has none built in).

The site policy allows scripts only from our own origin: plotly.js and our scripts are static
files and figures travel as ``json_script`` data (not executable). Styles also allow
'unsafe-inline' because plotly.js injects style rules and sets style attributes when it draws.
A few paths (the API's Swagger UI and ReDoc pages, rendered by drf-spectacular) need extra
allowances; ``CSP_PATH_OVERRIDES`` widens the policy for those path prefixes only.

Settings: ``CSP_POLICY`` (directive -> list of sources) and ``CSP_PATH_OVERRIDES``
(path prefix -> directives whose sources replace the site policy's for that prefix).
A view that sets its own Content-Security-Policy header keeps it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"

Policy = Mapping[str, Sequence[str]]


def csp_header_value(policy: Policy) -> str:
    """``{"script-src": ["'self'"]}`` -> ``"script-src 'self'"``; directives keep their order."""
    parts = []
    for directive, sources in policy.items():
        if not directive or any(c in directive for c in " ;,") or directive != directive.lower():
            raise ImproperlyConfigured(f"CSP directive {directive!r} is malformed.")
        if isinstance(sources, str):
            raise ImproperlyConfigured(f"CSP directive {directive!r}: give its sources as a list, not a string.")
        for source in sources:
            if not source or any(c in source for c in " ;,\r\n"):
                raise ImproperlyConfigured(f"CSP source {source!r} of {directive!r} is malformed.")
        parts.append(" ".join([directive, *sources]))
    return "; ".join(parts)


def csp_policy_merge(base: Policy, override: Policy) -> dict[str, list[str]]:
    """The base policy with the override's directives replacing (or adding to) it."""
    merged = {directive: list(sources) for directive, sources in base.items()}
    for directive, sources in override.items():
        merged[directive] = list(sources)
    return merged


class ContentSecurityPolicyMiddleware:
    """Adds the Content-Security-Policy header; path overrides are matched by longest prefix."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        base: Policy = getattr(settings, "CSP_POLICY", {})
        if not base:
            raise ImproperlyConfigured("CSP_POLICY is empty: the site needs a Content-Security-Policy.")
        self.default = csp_header_value(base)
        overrides: Mapping[str, Policy] = getattr(settings, "CSP_PATH_OVERRIDES", {})
        self.by_prefix = sorted(
            ((prefix, csp_header_value(csp_policy_merge(base, extra))) for prefix, extra in overrides.items()),
            key=lambda item: len(item[0]),
            reverse=True,
        )

    def header_for(self, path: str) -> str:
        for prefix, value in self.by_prefix:
            if path.startswith(prefix):
                return value
        return self.default

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if HEADER not in response:
            response[HEADER] = self.header_for(request.path)
        return response
