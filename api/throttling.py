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

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        # Polling a submission's status is a read: only POSTs spend the burst allowance.
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return None
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


class ThrottleGroup(throttling.BaseThrottle):
    """Several rate throttles checked with one cache read and one write.

    DRF's throttles each read and write their history, two cache round trips apiece: four per
    submission, a fifth of an authenticated request's CPU. A group reads every member's
    history with one ``get_many`` and writes those that passed with one ``set_many``. Each
    member keeps DRF's semantics: a sliding window of timestamps, a refused request is not
    recorded, and Retry-After is the longest wait among the members that refused.
    """

    members: tuple[type[throttling.SimpleRateThrottle], ...] = ()

    def __init__(self) -> None:
        self.waits: list[float] = []

    def allow_request(self, request: Any, view: Any) -> bool:
        checks: list[tuple[Any, str]] = []
        for member_class in self.members:
            member = member_class()
            if member.rate is None:
                continue
            key = member.get_cache_key(request, view)
            if key is not None:
                checks.append((member, key))
        if not checks:
            return True
        cache = checks[0][0].cache
        stored = cache.get_many([key for _member, key in checks])
        now = checks[0][0].timer()
        passed: dict[str, list[float]] = {}
        timeout = 0
        for member, key in checks:
            member.now = now
            member.history = [moment for moment in stored.get(key, []) if moment > now - member.duration]
            if len(member.history) >= member.num_requests:
                wait = member.wait()
                self.waits.append(wait if wait is not None else member.duration)
            else:
                passed[key] = [now, *member.history]
                timeout = max(timeout, member.duration)
        if passed:
            cache.set_many(passed, timeout)
        return not self.waits

    def wait(self) -> float | None:
        return max(self.waits, default=None)


class DefaultThrottles(ThrottleGroup):
    members = (AnonThrottle, UserThrottle)


class SubmissionThrottles(ThrottleGroup):
    members = (AnonThrottle, UserThrottle, SubmissionBurstThrottle)


DEFAULT_THROTTLES = [DefaultThrottles]
SUBMISSION_THROTTLES = [SubmissionThrottles]
