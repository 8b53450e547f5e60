"""Liveness and readiness probes for load balancers and orchestrators.

``/healthz``: the process is alive and serving (no dependencies checked, so a database outage
does not make an orchestrator restart every web process).
``/readyz``: this process can do useful work: the database answers with every migration applied,
the Celery broker answers, (when configured) the read replica answers, and with DEBUG
off the static files manifest written by ``collectstatic`` is there (every page names its static
files through it, so without it every page is a 500). A load
balancer should stop routing to a node while it answers 503. A cache that does not answer is
reported as ``"status": "degraded"`` with a 200: pages are then served from the database. Every check is bounded by a short
timeout so a dead dependency makes the probe fail fast instead of hanging.

``ProbeMiddleware`` answers both paths ahead of SSL redirection and host validation: load
balancers and orchestrators probe a node by its own IP over plain HTTP, which ALLOWED_HOSTS and
SECURE_SSL_REDIRECT would otherwise turn into a 400 or a 301. The probes reveal nothing secret.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache

from gpuatlas.celery import app
from gpuatlas.db_router import PRIMARY, REPLICA

logger = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 2.0

# Migrations on disk cannot change under a running process, so once every one is applied the
# migration graph need not be loaded again: later probes only ask the database for ``SELECT 1``.
_migrations_ok = threading.Event()


def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive and serving requests."""
    return JsonResponse({"status": "ok"})


def _check_database() -> str | None:
    connection = connections[PRIMARY]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        if not _migrations_ok.is_set():
            executor = MigrationExecutor(connection)
            pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
            if pending:
                return f"{len(pending)} migration(s) not applied"
            _migrations_ok.set()
    except Exception as exc:  # any driver error means "not ready"
        connection.close_if_unusable_or_obsolete()
        return f"database unreachable: {exc.__class__.__name__}"
    return None


def _check_replica() -> str | None:
    if REPLICA not in connections.settings:
        return None
    connection = connections[REPLICA]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        connection.close_if_unusable_or_obsolete()
        return f"replica unreachable: {exc.__class__.__name__}"
    return None


def _ping_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=CHECK_TIMEOUT_S, socket_timeout=CHECK_TIMEOUT_S)
    try:
        client.ping()
    finally:
        client.close()


def _check_broker() -> str | None:
    url = settings.CELERY_BROKER_URL
    if not url:  # tasks run in-process: nothing to reach
        return None
    try:
        if url.startswith(("redis://", "rediss://")):
            _ping_redis(url)
        else:
            with app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_S)
    except Exception as exc:
        return f"broker unreachable: {exc.__class__.__name__}"
    return None


def _check_cache() -> str | None:
    url = getattr(settings, "CACHE_URL", "")
    if not url or not url.startswith(("redis://", "rediss://")):
        return None
    try:
        _ping_redis(url)
    except Exception as exc:
        return f"cache unreachable: {exc.__class__.__name__}"
    return None


def _check_static_manifest() -> str | None:
    if settings.DEBUG or not isinstance(staticfiles_storage, ManifestFilesMixin):
        return None  # with DEBUG on the storage serves unhashed names
    # Read when this process created the storage: a manifest written later does not help it.
    if not staticfiles_storage.hashed_files:
        return f"no static files manifest in {settings.STATIC_ROOT}: run `manage.py collectstatic`"
    return None


CHECKS: tuple[tuple[str, Callable[[], str | None]], ...] = (
    ("database", _check_database),
    ("replica", _check_replica),
    ("broker", _check_broker),
    ("cache", _check_cache),
    ("static", _check_static_manifest),
)
# Checks whose failure leaves the node serving, only slower: reported under "degraded" with a 200.
# Every node shares the one cache, so a 503 for it would take the whole site out of the load
# balancer while each node can still answer from the database (gpuatlas/cache.py).
DEGRADED_ONLY = frozenset({"cache"})


@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """Ready when the database (migrated), broker and cache answer and the static files are collected."""
    problems: dict[str, str] = {}
    degraded: dict[str, str] = {}
    timings: dict[str, float] = {}
    for name, check in CHECKS:
        started = time.perf_counter()
        problem = check()
        timings[name] = round((time.perf_counter() - started) * 1000, 1)
        if problem:
            (degraded if name in DEGRADED_ONLY else problems)[name] = problem
    if problems or degraded:
        logger.warning(
            "%s: %s",
            "not ready" if problems else "degraded",
            "; ".join(f"{k}: {v}" for k, v in (problems | degraded).items()),
            extra={"problems": problems, "degraded": degraded},
        )
    status = "unavailable" if problems else "degraded" if degraded else "ok"
    return JsonResponse(
        {"status": status, "problems": problems, "degraded": degraded, "checks_ms": timings},
        status=503 if problems else 200,
    )


_PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {"/healthz": healthz, "/readyz": readyz}


class ProbeMiddleware:
    """Serves /healthz and /readyz before SecurityMiddleware and CommonMiddleware (see module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = _PROBES.get(request.path_info.rstrip("/")) if request.method in ("GET", "HEAD") else None
        if probe is None:
            return self.get_response(request)
        return probe(request)
