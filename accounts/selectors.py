"""Reads for accounts: the active API token behind a key, with its user; accounts by username."""

from __future__ import annotations

import unicodedata

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser

from accounts.models import ApiToken
from accounts.usernames import username_normal, username_skeleton


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


def user_by_normal_username(*, username: str) -> AbstractBaseUser | None:
    """The account whose username is the same name as ``username`` (username_normal): its exact
    spelling first, else the one whose normal form matches; None when there is none, or when
    accounts made before names were compared this way share it (no guess between them)."""
    users = get_user_model().objects
    exact = users.filter(username=username).first()
    if exact is not None:
        return exact
    normal = username_normal(username)
    candidates = [
        user
        for user in users.filter(username__iexact=unicodedata.normalize("NFKC", username.strip()))
        if username_normal(user.get_username()) == normal
    ]
    return candidates[0] if len(candidates) == 1 else None


def username_taken(*, username: str, exclude_pk: int | None = None) -> str | None:
    """An existing username that is the same name as ``username`` (another account than
    ``exclude_pk``), or None."""
    normal = username_normal(username)
    users = get_user_model().objects.filter(username__iexact=unicodedata.normalize("NFKC", username.strip()))
    for user in users.exclude(pk=exclude_pk) if exclude_pk is not None else users:
        if username_normal(user.get_username()) == normal:
            return user.get_username()
    return None
