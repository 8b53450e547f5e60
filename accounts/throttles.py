"""Throttles on sign-in (site and admin), sign-up, API-token creation, Hugging Face imports and
computed pages: per client address and per account, with a 429 page in the visitor's language;
and the atomic counter every throttle of the site uses (``WindowRateThrottle``, the API's too).

These are DRF's cache throttle, counted atomically, applied to Django's form views, rather than
django-axes or django-ratelimit: the same client address as the API's throttles
(DRF's ``NUM_PROXIES``, from the TRUSTED_PROXIES setting), no new dependency, tables or
middleware, and they fail open with the cache (gpuatlas/cache.py): with Redis down a sign-in is
let through, never a 500. Every POST counts, successful or not: a guesser learns nothing from
which attempt was refused. Rates: ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``, scopes below.

The account an attempt names is counted by its normal username (accounts/usernames.py), so a
fullwidth or capitalised spelling spends the same allowance. A stranger can spend an account's
allowance, so it is short (``THROTTLE_SIGN_IN_ACCOUNT``, ten per ten minutes: a lockout ends at
most two windows after the guessing stops), and the owner is not subject to it: a browser that
signed in to the account before is counted per device (accounts/known_devices.py), and a new
password (a reset) starts a new count.

django-axes was weighed and not taken: it records failed attempts in its own table (or cache)
per request and judges them with a read, as DRF's throttle did (not atomic under concurrency),
needs its own middleware and authentication backend, and has no known-device exemption, which
the owner's access under a stranger's lockout needs; these throttles reuse the API's atomic
counters and client address.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

from accounts.known_devices import known_device, known_device_remember
from accounts.selectors import user_by_normal_username
from accounts.usernames import username_normal

# Scopes (settings THROTTLE_<SCOPE>): attempts per client address, and per account named.
SIGN_IN_ADDRESS = "sign_in"
SIGN_IN_ACCOUNT = "sign_in_account"
SIGN_UP_ADDRESS = "sign_up"
TOKEN_CREATE = "token_create"  # noqa: S105 - a throttle scope, not a secret
HF_IMPORT = "hf_import"  # imports of Hugging Face models (each one a request to the Hub), per account
PAGE_RENDER = "page_render"  # pages computed (not served from the cache) for one address


class WindowRateThrottle(SimpleRateThrottle):
    """DRF's rate throttle, counted atomically: requests that arrive together cannot all pass.

    DRF's own throttle reads a list of timestamps, appends and writes it back: under concurrency
    every request that reads before the first write passes (776 of 1,200 concurrent requests
    passed a 600 limit). Here each request adds one to a counter of its fixed window with the
    cache's atomic ``incr`` (Redis INCR) and is judged by the count it got back: exactly the
    first ``limit`` pass. A refused request gives its count back, so a client that keeps asking
    is let through at the rate, as DRF does. The limit holds over any sliding window: the
    previous window's count weighs by the share of it still inside the sliding window (the
    sliding-window counter). Each counter key lives two windows, and one read key per request.

    Rates are DRF's ``N/period`` with an optional count of periods: ``10/15m`` is ten per fifteen
    minutes. With the cache down the request passes (gpuatlas/cache.py: the throttles fail open).
    """

    PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    num_requests: int
    duration: int

    def parse_rate(self, rate: str | None) -> tuple[int | None, int | None]:  # type: ignore[override]
        if rate is None:
            return None, None
        number, period = rate.split("/")
        digits = period[: len(period) - len(period.lstrip("0123456789"))]
        unit = period[len(digits) :][:1]
        return int(number), int(digits or 1) * self.PERIODS[unit]

    def allow_request(self, request: Any, view: Any) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        window, position = divmod(self.now / self.duration, 1)
        current, previous = f"{self.key}:{int(window)}", f"{self.key}:{int(window) - 1}"
        try:
            self.cache.add(current, 0, timeout=2 * self.duration)
            count = self.cache.incr(current)
        except ValueError:  # the cache does not answer (or the counter just expired): let it pass
            return True
        before = self.cache.get(previous) or 0
        if before * (1 - position) + count <= self.num_requests:
            return True
        with contextlib.suppress(ValueError):
            self.cache.decr(current)
        self.wait_seconds = self.duration * windows_to_wait(
            before=before, current=count - 1, limit=self.num_requests, position=position
        )
        return False

    def wait(self) -> float | None:
        return getattr(self, "wait_seconds", None)


def windows_to_wait(*, before: int, current: int, limit: int, position: float) -> float:
    """How long (in windows) until one more request passes the sliding-window counter, if none
    arrive meanwhile: within this window once enough of the previous one has slid out, else in
    the next one, where this window's count weighs as the previous one."""
    if before > 0 and current + 1 <= limit:
        needed = 1 - (limit - current - 1) / before
        if needed <= 1:
            return max(0.0, needed - position)
    return 1 - position + (max(0.0, 1 - (limit - 1) / current) if current > 0 else 0.0)


class FormThrottle(WindowRateThrottle):
    """One scope's counter for one identity (a client address or an account)."""

    def __init__(self, scope: str, ident: str) -> None:
        self.scope = scope
        self.ident = ident
        super().__init__()

    def get_rate(self) -> Any:
        # Read on every request (DRF copies the setting onto the class at import), so that
        # override_settings applies.
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope or "")

    def get_cache_key(self, request: Any, view: Any) -> str:
        digest = hashlib.sha256(self.ident.encode()).hexdigest()[:32]
        return self.cache_format % {"scope": self.scope, "ident": digest}


def client_address(request: HttpRequest) -> str:
    """The client address as the deployment's proxies define it (DRF's get_ident, NUM_PROXIES)."""
    # A request with no address (no REMOTE_ADDR and no forwarded one) shares one allowance.
    return "address:" + (BaseThrottle().get_ident(request) or "unknown")  # type: ignore[arg-type]


def _account(request: HttpRequest) -> str | None:
    """Whose allowance a sign-in attempt spends: the device's when this browser signed in to the
    named account before, else the account's, counted anew after each new password."""
    username = request.POST.get("username", "")
    normal = username_normal(username)
    if not normal:
        return None
    device = known_device(request, username=username)
    if device is not None:
        return f"device:{normal}:{device}"
    user = user_by_normal_username(username=username)
    password_epoch = hashlib.sha256(user.password.encode()).hexdigest()[:16] if user is not None else ""
    return f"account:{normal}:{password_epoch}"


def sign_in_throttles(request: HttpRequest) -> list[FormThrottle]:
    throttles = [FormThrottle(SIGN_IN_ADDRESS, client_address(request))]
    if account := _account(request):
        throttles.append(FormThrottle(SIGN_IN_ACCOUNT, account))
    return throttles


def sign_up_throttles(request: HttpRequest) -> list[FormThrottle]:
    return [FormThrottle(SIGN_UP_ADDRESS, client_address(request))]


def token_create_throttles(request: HttpRequest) -> list[FormThrottle]:
    user = getattr(request, "user", None)
    throttles = [FormThrottle(TOKEN_CREATE, client_address(request))]
    if user is not None and user.is_authenticated:
        throttles.append(FormThrottle(TOKEN_CREATE, f"user:{user.pk}"))
    return throttles


def hf_import_throttles(request: HttpRequest) -> list[FormThrottle]:
    """Per address and per account: the fit page's import button and POST /api/v1/fit/models/
    spend the same allowance (api.throttling.HfImportThrottle)."""
    throttles = [FormThrottle(HF_IMPORT, client_address(request))]
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        throttles.append(FormThrottle(HF_IMPORT, f"user:{user.pk}"))
    return throttles


def too_many_attempts(request: HttpRequest, *, wait_seconds: float, reason: str = "") -> HttpResponse:
    """The 429 page: what happened (``reason``; by default, too many attempts) and when to try
    again, in the visitor's language."""
    minutes = max(1, math.ceil(wait_seconds / 60))
    response = render(request, "429.html", {"minutes": minutes, "reason": reason}, status=429)
    response["Retry-After"] = str(max(1, math.ceil(wait_seconds)))
    return response


def sign_in_view(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """A sign-in view (the site's or the admin's): throttled per address and per account, and
    remembering the browser once a POST signs in (accounts/known_devices.py)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        user = getattr(request, "user", None)
        if request.method == "POST" and user is not None and user.is_authenticated and response.status_code == 302:
            known_device_remember(request, response, username=user.get_username())
        return response

    return throttle_posts(sign_in_throttles)(wrapper)


def throttle_posts(
    throttles: Callable[[HttpRequest], list[FormThrottle]],
) -> Callable[[Callable[..., HttpResponseBase]], Callable[..., HttpResponseBase]]:
    """Refuse a view's POSTs with the 429 page once any of ``throttles(request)`` is spent.

    Every throttle is checked (and so counts the attempt), as DRF does, and the longest wait is
    the one reported.
    """

    def decorate(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if request.method == "POST":
                waits = [
                    throttle.wait() or 1.0
                    for throttle in throttles(request)
                    if not throttle.allow_request(request, None)  # type: ignore[arg-type]
                ]
                if waits:
                    return too_many_attempts(request, wait_seconds=max(waits))
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
