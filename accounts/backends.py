"""Sign-in by the username as typed in any width or case (accounts.usernames.username_normal)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest

from accounts.selectors import user_by_normal_username


class NormalisedUsernameBackend(ModelBackend):
    """Django's model backend, finding the account whose username is the same name as the one
    typed (``Sec_Dave`` signs in as ``sec_dave``); the password check, the inactive-user rule and
    the timing of an unknown name are Django's."""

    def authenticate(  # type: ignore[override]
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> AbstractBaseUser | None:
        if username is not None:
            user = user_by_normal_username(username=username)
            username = user.get_username() if user is not None else username
        return super().authenticate(request, username=username, password=password, **kwargs)
