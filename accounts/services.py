"""Writes for accounts: API token creation and revocation."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.utils import timezone

from accounts.models import ApiToken


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """Create a token for ``user``; returns the row and the raw key, which is shown once."""
    raw = secrets.token_urlsafe(32)
    # One in 64 would start with "-", which a command line (gpuatlas-bench submit --token KEY)
    # reads as an option.
    while raw.startswith("-"):
        raw = secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name.strip()[:100] or "token", prefix=raw[:8], key_sha256=token_hash(raw)
    )
    return token, raw


def api_token_revoke(*, user: User, token_id: int) -> bool:
    """Revoke one of ``user``'s own tokens; another user's token is never touched."""
    updated = ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
    return updated == 1
