"""The per-address limit on computed pages: a 429 page once an address has had too many pages
computed in a minute (THROTTLE_PAGE_RENDER).

A cached page costs a cache read; a computed one (a new parameter set, a user's prices, a
comparison, the fit calculator, a CSV) costs figures, rankings and templates. Only computations
count: inside ``page_renders_limited`` every cached read that misses (gpuatlas.data_version's
guard) and every ``compute_spend()`` of a page that is never cached spends one from the
address's allowance (accounts.throttles.PAGE_RENDER, the same client address as every throttle).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from django.utils.translation import gettext as _

from accounts.throttles import PAGE_RENDER, FormThrottle, client_address, too_many_attempts
from gpuatlas.data_version import computes_guarded


class RendersLimited(Exception):
    def __init__(self, wait_seconds: float) -> None:
        super().__init__(f"page render limit: wait {wait_seconds:.0f} s")
        self.wait_seconds = wait_seconds


def page_renders_limited(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Run ``view`` with its computations counted against the client address's allowance."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        spent: list[bool] = []

        def spend() -> None:
            if spent:  # one page, however many of its parts are computed
                return
            spent.append(True)
            throttle = FormThrottle(PAGE_RENDER, client_address(request))
            if not throttle.allow_request(request, None):  # type: ignore[arg-type]
                raise RendersLimited(throttle.wait() or 1.0)

        try:
            with computes_guarded(spend):
                return view(request, *args, **kwargs)
        except RendersLimited as limited:
            reason = _("Too many pages were computed for your address in the last minute, so this one was not.")
            return too_many_attempts(request, wait_seconds=limited.wait_seconds, reason=reason)

    wrapper.renders_limited = True  # type: ignore[attr-defined]  # what page_renders_limited_is reads
    return wrapper


def page_renders_limited_is(view: Callable[..., Any]) -> bool:
    """Whether ``view`` is wrapped by ``page_renders_limited``."""
    return bool(getattr(view, "renders_limited", False))
