"""Reads for accounts: the active API token behind a key, with its user; look-alike usernames."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from accounts.models import ApiToken
from accounts.usernames import username_skeleton


def api_token_get_active(*, key_sha256: str) -> ApiToken | None:
    """The unrevoked token with this key hash, its ``user`` loaded; None when there is none."""
    try:
        return ApiToken.objects.active().select_related("user").get(key_sha256=key_sha256)
    except ApiToken.DoesNotExist:
        return None


def username_look_alike(*, username: str) -> str | None:
    """An existing username that looks the same as ``username`` but is another name, or None.

    Every existing name's skeleton is computed here, a cost that grows with the number of users
    (``python -m perf.bench_usernames``; figures in perf/RESULTS.md). Sign-ups are rare, and a
    stored skeleton column would have to follow every rename in the admin; past some 50,000 users
    it pays.
    """
    skeleton = username_skeleton(username)
    for existing in get_user_model().objects.values_list("username", flat=True).iterator():
        if existing != username and username_skeleton(existing) == skeleton:
            return existing
    return None
