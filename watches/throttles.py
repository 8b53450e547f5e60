"""Throttles on creating watches, per account and per client address: the page uses accounts'
form throttles, the API a DRF throttle of the same scope (``THROTTLE_WATCH_CREATE``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from accounts.throttles import FormThrottle, client_address

WATCH_CREATE = "watch_create"


def watch_create_throttles(request: HttpRequest) -> list[FormThrottle]:
    throttles = [FormThrottle(WATCH_CREATE, client_address(request))]
    user: Any = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        throttles.append(FormThrottle(WATCH_CREATE, f"user:{user.pk}"))
    return throttles
