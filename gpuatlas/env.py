"""Strict parsing of environment variables for settings.

Every helper raises ``ImproperlyConfigured`` naming the variable and the reason, so a
typo in a deployment fails at start-up with a message rather than a traceback later.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "", *, environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    return environ.get(name, default).strip()


def env_bool(name: str, default: bool, *, environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    if name not in environ:
        return default
    raw = environ[name].strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={environ[name]!r} is not a boolean: use one of 1/0, true/false, yes/no, on/off."
    )


def env_int(name: str, default: int, *, minimum: int | None = None, environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    if name not in environ or not environ[name].strip():
        return default
    try:
        value = int(environ[name].strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={environ[name]!r} is not an integer.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_list(name: str, default: list[str], *, environ: Mapping[str, str] | None = None) -> list[str]:
    environ = os.environ if environ is None else environ
    if name not in environ:
        return default
    if not environ[name].strip():
        return []
    items = [item.strip() for item in environ[name].split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name}={environ[name]!r} has an empty item: separate values with single commas.")
    return items


_SUPPORTED_DB_SCHEMES = {"postgres", "postgresql", "pgsql", "sqlite"}


def env_database(name: str, default_sqlite_path: str, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Parse a database URL (``postgres://user@host:5432/db`` or ``sqlite:///path``)."""
    environ = os.environ if environ is None else environ
    raw = environ.get(name, "").strip()
    if not raw:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": default_sqlite_path,
            "OPTIONS": {"timeout": 20},
        }
    scheme = raw.split("://", 1)[0].lower() if "://" in raw else ""
    if scheme not in _SUPPORTED_DB_SCHEMES:
        raise ImproperlyConfigured(
            f"{name} is malformed: expected postgres://USER@HOST:PORT/NAME or sqlite:///PATH, "
            f"got a value with scheme {scheme or '(none)'!r}."
        )
    try:
        urlsplit(raw).port  # noqa: B018 - raises ValueError for a non-numeric port
    except ValueError:
        port = raw.rsplit("@", 1)[-1].split("/", 1)[0].rpartition(":")[2]
        raise ImproperlyConfigured(f"{name} is malformed: port {port!r} is not a number.") from None
    try:
        config = dj_database_url.parse(raw, conn_max_age=60, conn_health_checks=True)
    except Exception as exc:  # dj-database-url raises several types for bad URLs
        raise ImproperlyConfigured(f"{name} is malformed: {exc}") from None
    if config["ENGINE"] == "django.db.backends.postgresql":
        # Fail fast when the host does not answer, so /readyz reports it within its timeout.
        config.setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)
    if not config.get("NAME"):
        raise ImproperlyConfigured(f"{name} is malformed: it names no database (the /NAME part).")
    return dict(config)


def env_broker_url(name: str, *, environ: Mapping[str, str] | None = None) -> str:
    """A Celery broker URL; empty means tasks run in-process (the embedded default)."""
    raw = env_str(name, environ=environ)
    if raw and raw.split("://", 1)[0] not in {"redis", "rediss", "amqp", "memory"}:
        raise ImproperlyConfigured(f"{name}={raw!r} is malformed: expected redis://HOST:PORT/DB (or amqp://...).")
    return raw
