"""Known devices: a browser that signed in to an account before keeps signing in to it while a
stranger spends that account's sign-in allowance.

A successful sign-in sets a signed cookie naming the account (its normal username) and a random
device id. A later sign-in attempt for that account from that browser is counted per device,
not on the account's shared counter (accounts/throttles.py): a stranger guessing at the account
cannot lock its owner out, and someone holding a stolen cookie gets the same small allowance, on
their own. The cookie carries no secret beyond Django's signature and expires after
``MAX_AGE_DAYS``; it only changes which counter an attempt spends.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponseBase

from accounts.usernames import username_normal

COOKIE = "gpuatlas_known_device"
SALT = "accounts.known-device"
MAX_AGE_DAYS = 180


def known_device(request: HttpRequest, *, username: str) -> str | None:
    """The id of this browser if it signed in to ``username``'s account before, else None."""
    try:
        value = signing.loads(request.COOKIES.get(COOKIE, ""), salt=SALT, max_age=MAX_AGE_DAYS * 86400)
    except signing.BadSignature:
        return None
    if not isinstance(value, dict) or value.get("u") != username_normal(username):
        return None
    device = value.get("d")
    return device if isinstance(device, str) else None


def known_device_remember(request: HttpRequest, response: HttpResponseBase, *, username: str) -> None:
    """Mark this browser as known to ``username``'s account (after a successful sign-in)."""
    device = known_device(request, username=username) or secrets.token_urlsafe(12)
    response.set_cookie(
        COOKIE,
        signing.dumps({"u": username_normal(username), "d": device}, salt=SALT),
        max_age=MAX_AGE_DAYS * 86400,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
