"""Rate limits: anonymous, per user, and a stricter burst scope for benchmark submissions.

Rates come from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (env THROTTLE_ANON / THROTTLE_USER /
THROTTLE_SUBMISSIONS). DRF copies that dict onto the throttle class at import time; these classes
read it on every request instead, so ``override_settings`` (tests) and reloads take effect.
A refused request is a 429 with ``Retry-After`` (DRF's Throttled exception sets the header).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.core.cache import caches
from redis.exceptions import RedisError
from rest_framework import throttling
from rest_framework.settings import api_settings

from gpuatlas.cache import RedisCache

logger = logging.getLogger(__name__)


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


# DRF's sliding log, for several scopes at once, as one atomic step on the Redis server. KEYS:
# one sorted set of request times per scope. ARGV: now, a member name unique to this request,
# then each scope's duration and limit. A scope at its limit answers {count, oldest time} and
# records nothing; the others record this request. Times go back as strings: Redis would cut
# a Lua number down to an integer.
_SLIDING_LOG_LUA = """
local now = tonumber(ARGV[1])
local replies, passed = {}, {}
for i, key in ipairs(KEYS) do
  local duration = tonumber(ARGV[1 + 2 * i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - duration)
  local count = redis.call('ZCARD', key)
  if count >= tonumber(ARGV[2 + 2 * i]) then
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    replies[i] = {count, oldest[2]}
  else
    replies[i] = 0
    passed[#passed + 1] = {key, duration}
  end
end
for _, scope in ipairs(passed) do
  redis.call('ZADD', scope[1], now, ARGV[2])
  redis.call('EXPIRE', scope[1], math.ceil(scope[2]))
end
return replies
"""
# The sorted sets have names of their own: a key of the same name may still hold a pickled
# history written by the get_many/set_many path (an older release, or a cache switched over).
_LOG_PREFIX = "log:"
_scripts: dict[int, Any] = {}


def _sliding_log_script(backend: RedisCache) -> tuple[Any, Any]:
    client = backend._cache.get_client(write=True)  # type: ignore[attr-defined]
    script = _scripts.get(id(client))
    if script is None:
        script = _scripts[id(client)] = client.register_script(_SLIDING_LOG_LUA)
    return client, script


def _drf_wait(member: Any, *, now: float, count: int, oldest: float | None) -> float:
    """``SimpleRateThrottle.wait()`` from a history's length and oldest time; the duration where DRF has none."""
    remaining = member.duration - (now - oldest) if oldest is not None else member.duration
    available = member.num_requests - count + 1
    return remaining / available if available > 0 else float(member.duration)


class ThrottleGroup(throttling.BaseThrottle):
    """Several rate throttles checked and recorded in one step.

    DRF's throttles each read and write their history, two cache round trips apiece: four per
    submission, a fifth of an authenticated request's CPU. Each member keeps DRF's semantics:
    a sliding window of request times, a refused request is not recorded (the other scopes
    still count it), and Retry-After is the longest wait among the members that refused.

    With Redis the whole check is one Lua script: one round trip, no history sent back and
    forth (a client at 2,000 requests a minute has 2,000 times per scope, which DRF unpickles,
    filters and pickles again on every request), and atomic, so two requests at once cannot
    both take the last place. If Redis does not answer, the request is let through: the
    throttles protect the site, and a site whose cache is down should still answer (the
    failure is logged). With
    another cache (local memory in tests and on a machine without Redis) it is one
    ``get_many`` and one ``set_many``.
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
        backend = caches["default"]  # DRF's throttles use the default cache (through a proxy)
        now = checks[0][0].timer()
        if isinstance(backend, RedisCache):
            self._check_in_redis(backend, checks, now)
        else:
            self._check_in_cache(backend, checks, now)
        return not self.waits

    def _check_in_redis(self, backend: RedisCache, checks: list[tuple[Any, str]], now: float) -> None:
        args: list[Any] = [repr(now), uuid.uuid4().hex]
        for member, _key in checks:
            args += [member.duration, member.num_requests]
        try:
            client, script = _sliding_log_script(backend)
            replies = script(
                keys=[backend.make_key(_LOG_PREFIX + key) for _member, key in checks], args=args, client=client
            )
        except RedisError:
            logger.warning("the throttle check failed in Redis; the request is let through", exc_info=True)
            return
        for (member, _key), reply in zip(checks, replies, strict=True):
            if reply != 0:
                count, oldest = reply
                self.waits.append(_drf_wait(member, now=now, count=int(count), oldest=float(oldest)))

    def _check_in_cache(self, backend: Any, checks: list[tuple[Any, str]], now: float) -> None:
        stored = backend.get_many([key for _member, key in checks])
        passed: dict[str, list[float]] = {}
        timeout = 0
        for member, key in checks:
            history = [moment for moment in stored.get(key, []) if moment > now - member.duration]
            if len(history) >= member.num_requests:
                oldest = history[-1] if history else None
                self.waits.append(_drf_wait(member, now=now, count=len(history), oldest=oldest))
            else:
                passed[key] = [now, *history]
                timeout = max(timeout, member.duration)
        if passed:
            backend.set_many(passed, timeout)

    def wait(self) -> float | None:
        return max(self.waits, default=None)


class DefaultThrottles(ThrottleGroup):
    members = (AnonThrottle, UserThrottle)


class SubmissionThrottles(ThrottleGroup):
    members = (AnonThrottle, UserThrottle, SubmissionBurstThrottle)


DEFAULT_THROTTLES = [DefaultThrottles]
SUBMISSION_THROTTLES = [SubmissionThrottles]
