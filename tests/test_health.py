"""Liveness and readiness probes: /readyz follows the database, migrations and the broker."""

from __future__ import annotations

import time

import pytest
from django.db import OperationalError, connections
from django.db.migrations.executor import MigrationExecutor

from gpuatlas import health
from tests.redis_server import needs_redis_server, private_redis  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_migration_check():
    health._migrations_ok.clear()
    yield
    health._migrations_ok.clear()


def test_healthz_answers_without_touching_dependencies(client, settings, monkeypatch):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    monkeypatch.setattr(health, "_check_database", lambda: pytest.fail("healthz must not check the database"))
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_ok_with_migrated_database_and_no_broker(client, settings):
    settings.CELERY_BROKER_URL = ""  # embedded default: tasks in-process, nothing to reach
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert body["problems"] == {}
    assert response["Cache-Control"].startswith("max-age=0")


def test_readyz_unavailable_with_pending_migrations(client, settings, monkeypatch):
    settings.CELERY_BROKER_URL = ""
    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [("app", "0002"), ("app", "0003")])
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["problems"] == {"database": "2 migration(s) not applied"}


def test_readyz_unavailable_when_database_refuses(client, settings, monkeypatch):
    settings.CELERY_BROKER_URL = ""

    def refuse(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(connections["default"], "cursor", refuse)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["problems"] == {"database": "database unreachable: OperationalError"}


def test_migration_graph_is_loaded_once_then_only_pinged(client, settings, monkeypatch):
    settings.CELERY_BROKER_URL = ""
    first = client.get("/readyz")
    assert first.status_code == 200
    assert first.json()["status"] == "ok" and first.json()["problems"] == {}
    monkeypatch.setattr(MigrationExecutor, "__init__", lambda *a, **k: pytest.fail("graph reloaded"))
    again = client.get("/readyz")
    assert again.status_code == 200
    assert again.json()["status"] == "ok" and again.json()["problems"] == {}


@needs_redis_server
def test_readyz_follows_the_broker_down_and_back(client, settings, private_redis):  # noqa: F811
    settings.CELERY_BROKER_URL = private_redis.url

    up = client.get("/readyz")
    assert up.status_code == 200, up.content

    private_redis.stop()
    started = time.monotonic()
    down = client.get("/readyz")
    elapsed = time.monotonic() - started
    assert down.status_code == 503
    assert down.json()["status"] == "unavailable"
    assert down.json()["problems"] == {"broker": "broker unreachable: ConnectionError"}
    assert elapsed < 2 * health.CHECK_TIMEOUT_S + 1, f"readyz took {elapsed:.1f}s with the broker down"

    private_redis.start()
    back = client.get("/readyz")
    assert back.status_code == 200, back.content
    assert back.json()["problems"] == {}


@needs_redis_server
def test_readyz_reports_an_unreachable_cache(client, settings, private_redis):  # noqa: F811
    settings.CELERY_BROKER_URL = ""
    settings.CACHE_URL = private_redis.url
    assert client.get("/readyz").status_code == 200
    private_redis.stop()
    response = client.get("/readyz")
    # Still ready: pages are served from the database without the cache; the outage is reported.
    assert response.status_code == 200
    assert response.json()["status"] == "degraded"
    assert response.json()["problems"] == {}
    assert response.json()["degraded"] == {"cache": "cache unreachable: ConnectionError"}


def test_probes_answer_plain_http_by_node_ip_in_production(client, settings):
    """A load balancer probes by IP over HTTP: no 400 for the host, no 301 to https."""
    settings.CELERY_BROKER_URL = ""
    settings.ALLOWED_HOSTS = ["example.org"]
    settings.SECURE_SSL_REDIRECT = True
    live = client.get("/healthz", HTTP_HOST="10.0.3.7:8000")
    assert live.status_code == 200 and live.json() == {"status": "ok"}
    ready = client.get("/readyz", HTTP_HOST="10.0.3.7:8000")
    assert ready.status_code == 200 and ready.json()["status"] == "ok"
    # Everything else still gets the production treatment.
    assert client.get("/api/v1/gpus/", HTTP_HOST="10.0.3.7:8000").status_code == 400
    assert client.get("/api/v1/gpus/", HTTP_HOST="example.org").status_code == 301


MANIFEST_STORAGE = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}


def test_one_static_storage_whatever_debug_says():
    import json
    import os
    import subprocess
    import sys

    # The settings module as each environment loads it (the suite swaps in a plain storage).
    script = (
        "import django, json, os; os.environ['DJANGO_SETTINGS_MODULE']='gpuatlas.settings'; django.setup(); "
        "from django.conf import settings; print(json.dumps(settings.STORAGES))"
    )
    loaded = []
    for debug in ("0", "1"):
        env = {"PATH": os.environ.get("PATH", ""), "DEBUG": debug, "SECRET_KEY": "x" * 60, "ALLOWED_HOSTS": "a"}
        result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        loaded.append(json.loads(result.stdout.strip().splitlines()[-1]))
    assert loaded == [MANIFEST_STORAGE, MANIFEST_STORAGE]


def test_readyz_fails_loudly_without_the_static_manifest(client, settings, tmp_path):
    settings.CELERY_BROKER_URL = ""
    settings.STORAGES = MANIFEST_STORAGE
    settings.STATIC_ROOT = tmp_path  # collectstatic never ran here
    settings.DEBUG = False
    response = client.get("/readyz")
    assert response.status_code == 503
    problem = response.json()["problems"]["static"]
    assert "no static files manifest" in problem and "collectstatic" in problem and str(tmp_path) in problem

    settings.DEBUG = True  # development: unhashed names, no manifest needed
    assert client.get("/readyz").status_code == 200


def test_with_the_manifest_pages_name_hashed_files_and_readyz_is_ok(client, settings, tmp_path):
    import json

    from django.templatetags.static import static

    settings.CELERY_BROKER_URL = ""
    (tmp_path / "staticfiles.json").write_text(
        json.dumps({"version": "1.1", "paths": {"favicon.svg": "favicon.0123abcd.svg"}})
    )
    settings.STORAGES = MANIFEST_STORAGE
    settings.STATIC_ROOT = tmp_path
    settings.DEBUG = False
    assert static("favicon.svg") == "/static/favicon.0123abcd.svg"
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    settings.DEBUG = True  # the same storage in development: the file's own name
    assert static("favicon.svg") == "/static/favicon.svg"
