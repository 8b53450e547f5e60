"""Rate limits: anonymous, per user, and a stricter burst scope for benchmark submissions.

Rates come from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (env THROTTLE_ANON / THROTTLE_USER /
THROTTLE_SUBMISSIONS). DRF copies that dict onto the throttle class at import time; these classes
read it on every request instead, so ``override_settings`` (tests) and reloads take effect.
A refused request is a 429 with ``Retry-After`` (DRF's Throttled exception sets the header).
"""

from __future__ import annotations

from typing import Any

from rest_framework import throttling
from rest_framework.settings import api_settings


class _LiveRates:
    scope: str

    def get_rate(self) -> Any:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class AnonThrottle(_LiveRates, throttling.AnonRateThrottle):
    scope = "anon"


class UserThrottle(_LiveRates, throttling.UserRateThrottle):
    scope = "user"


class SubmissionBurstThrottle(_LiveRates, throttling.SimpleRateThrottle):
    """Per user (or per IP when anonymous) on the submission endpoints, on top of anon/user."""

    scope = "submissions"

    def allow_request(self, request: Any, view: Any) -> bool:
        # Polling a submission's status is a read: only POSTs spend the burst allowance.
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return True
        return super().allow_request(request, view)

    def get_cache_key(self, request: Any, view: Any) -> str:
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


DEFAULT_THROTTLES = [AnonThrottle, UserThrottle]
SUBMISSION_THROTTLES = [AnonThrottle, UserThrottle, SubmissionBurstThrottle]
