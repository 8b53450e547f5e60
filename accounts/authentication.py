"""DRF authentication by ``Authorization: Token <key>`` against hashed ApiToken rows."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import authentication, exceptions

from accounts.models import ApiToken
from accounts.selectors import api_token_get_active
from accounts.services import token_hash


class ApiTokenAuthentication(authentication.TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key: str):  # type: ignore[no-untyped-def, override]
        token = api_token_get_active(key_sha256=token_hash(key))
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive.")
        # One write per hour at most: a token used in a tight loop should not write each time.
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 3600:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token
