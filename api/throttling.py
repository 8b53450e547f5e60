"""Rate limits: DRF's throttles on the default cache, anonymous, per user, and a stricter burst
scope for benchmark submissions, each counted atomically (accounts.throttles.WindowRateThrottle).

Rates come from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (env THROTTLE_ANON / THROTTLE_USER /
THROTTLE_SUBMISSIONS). A refused request is a 429 with ``Retry-After``: DRF checks every throttle
and waits the longest of the refusing ones.
"""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import RedisError
from rest_framework import throttling
from rest_framework.settings import api_settings

from accounts.throttles import WindowRateThrottle, hf_import_throttles

logger = logging.getLogger(__name__)


class _SettingsRate:
    """The rate read on every request (DRF copies the setting onto the class at import), so that
    ``override_settings`` applies; and a request let through, logged, when the cache's Redis does
    not answer: the throttles protect the site, and a site whose cache is down should still answer."""

    scope: str

    def get_rate(self) -> Any:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request: Any, view: Any) -> bool:
        try:
            return super().allow_request(request, view)  # type: ignore[misc]
        except RedisError:
            logger.warning("the throttle check failed in Redis; the request is let through", exc_info=True)
            return True


class AnonThrottle(_SettingsRate, WindowRateThrottle, throttling.AnonRateThrottle):
    scope = "anon"


class UserThrottle(_SettingsRate, WindowRateThrottle, throttling.UserRateThrottle):
    scope = "user"


class SubmissionBurstThrottle(_SettingsRate, WindowRateThrottle):
    """Per user (or per IP when anonymous) on the submission endpoints, on top of anon/user."""

    scope = "submissions"

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        # Polling a submission's status is a read: only POSTs spend the burst allowance.
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return None
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


DEFAULT_THROTTLES = [AnonThrottle, UserThrottle]
SUBMISSION_THROTTLES = [AnonThrottle, UserThrottle, SubmissionBurstThrottle]


class HfImportThrottle(throttling.BaseThrottle):
    """Imports of Hugging Face models: the fit page's allowance (accounts.throttles.hf_import_throttles),
    per address and per account, spent by POSTs only."""

    def allow_request(self, request: Any, view: Any) -> bool:
        if request.method != "POST":
            return True
        self.waits = [t.wait() or 1.0 for t in hf_import_throttles(request) if not t.allow_request(request, view)]
        return not self.waits

    def wait(self) -> float | None:
        return max(self.waits, default=None)
