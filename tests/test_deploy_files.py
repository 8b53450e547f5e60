"""The compose file, Dockerfile and gunicorn config say things that are true of this repository.

Docker cannot run here, so these checks keep the container files honest: every service they
name exists, every file they run exists, every setting they pass is one the app reads.
"""

from __future__ import annotations

import os
import re
import runpy
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_the_production_topology(compose):
    services = compose["services"]
    assert set(services) == {
        *("db", "redis-broker", "redis-cache", "migrate", "web", "worker-ingest", "worker-imports", "beat")
    }
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown service {dependency}"
    for name in ("db", "redis-broker", "redis-cache", "web", "worker-ingest", "worker-imports"):
        assert "healthcheck" in services[name], f"{name} has no health check"
    for name in ("web", "worker-ingest", "worker-imports", "beat"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert "-Q" in services["worker-ingest"]["command"] and "ingest" in services["worker-ingest"]["command"]
    assert "imports" in services["worker-imports"]["command"]
    assert "deploy" not in services["beat"], "beat must stay a single instance"


def _option(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None


def test_cache_and_broker_are_separate_redis_instances_with_their_own_memory_policy(compose):
    """The cache is bounded and evicts; the broker never evicts a queued task (a policy is per
    instance, so they cannot share one)."""
    services = compose["services"]
    env = services["web"]["environment"]
    broker_host = env["CELERY_BROKER_URL"].split("//")[1].split(":")[0]
    cache_host = env["CACHE_URL"].split("//")[1].split(":")[0]
    assert broker_host != cache_host and {broker_host, cache_host} <= set(services)
    broker, cache = services[broker_host]["command"], services[cache_host]["command"]
    assert _option(broker, "--maxmemory-policy") == "noeviction" and _option(broker, "--appendonly") == "yes"
    assert _option(cache, "--maxmemory-policy") == "allkeys-lru"
    assert (_option(cache, "--maxmemory") or "").startswith("${CACHE_MAXMEMORY:-")
    stack = (ROOT / "deploy" / "stack.sh").read_text()
    assert "--maxmemory-policy allkeys-lru" in stack and "noeviction" in stack


def test_compose_passes_only_settings_the_app_reads(compose):
    settings_source = (ROOT / "gpuatlas" / "settings.py").read_text()
    gunicorn_source = (ROOT / "deploy" / "gunicorn.conf.py").read_text()
    for name in ("web", "worker-ingest", "worker-imports", "beat", "migrate"):
        for variable in compose["services"][name]["environment"]:
            read_by = settings_source + gunicorn_source
            assert re.search(rf'"{variable}"', read_by), f"{name} sets {variable}, which nothing reads"


def test_compose_production_settings(compose):
    env = compose["services"]["web"]["environment"]
    assert env["DEBUG"] == "0"
    assert env["SECRET_KEY"].startswith("${SECRET_KEY:?"), "no default secret: compose refuses to start without one"
    assert env["DATABASE_URL"].startswith("postgres://")
    assert env["CELERY_BROKER_URL"].startswith("redis://")


def test_dockerfile_runs_files_that_exist():
    dockerfile = (ROOT / "Dockerfile").read_text()
    entrypoint = re.search(r'ENTRYPOINT \["(/app/)?([^"]+)"\]', dockerfile).group(2)
    assert (ROOT / entrypoint).is_file()
    assert os.access(ROOT / entrypoint, os.X_OK)
    assert (ROOT / "deploy" / "gunicorn.conf.py").is_file()
    assert "USER gpuatlas" in dockerfile, "the app must not run as root"


def test_dockerignore_keeps_secrets_and_local_state_out():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".env", ".venv", ".git", "db.sqlite3"} <= ignored


def test_gunicorn_config_reads_the_environment(monkeypatch):
    monkeypatch.setenv("GUNICORN_WORKERS", "2")
    monkeypatch.setenv("GUNICORN_BIND", "127.0.0.1:8123")
    config = runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))
    assert (config["workers"], config["bind"], config["accesslog"]) == (2, "127.0.0.1:8123", None)
    assert config["wsgi_app"] == "gpuatlas.wsgi:application"


def test_gunicorn_config_refuses_a_bad_worker_count(monkeypatch):
    monkeypatch.setenv("GUNICORN_WORKERS", "two")
    with pytest.raises(SystemExit, match="GUNICORN_WORKERS='two' is not an integer"):
        runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))


def _resolve(value: str) -> str:
    """Compose interpolation as `docker compose` does it when the optional variables are unset."""

    def one(match: re.Match) -> str:
        name, op, default = match.group(1), match.group(2), match.group(3)
        if op == ":?":
            import secrets

            return {"ALLOWED_HOSTS": "gpuatlas.example.org"}.get(name, secrets.token_urlsafe(50))
        return default or ""

    return re.sub(r"\$\{([A-Z_]+)(:-|:\?)?([^}]*)\}", one, value)


@pytest.mark.parametrize("service", ["web", "worker-ingest", "beat", "migrate"])
def test_compose_environment_passes_the_deploy_checks(compose, service):
    """The environment Compose gives each role, optional variables left empty, passes the security checks.

    (Security tag only: other checks, such as the API schema check, need the database, which
    has no address here.)
    """
    import subprocess
    import sys

    env = {name: _resolve(str(value)) for name, value in compose["services"][service]["environment"].items()}
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check", "--deploy", "--tag", "security", "--fail-level", "WARNING"],
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"} | env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr + result.stdout


def test_every_long_running_service_is_restarted_when_it_exits(compose):
    for name in ("web", "worker-ingest", "worker-imports", "beat", "db", "redis-broker", "redis-cache"):
        assert compose["services"][name].get("restart") in {"unless-stopped", "always"}, name


def test_the_stack_script_restarts_its_workers_and_beat():
    script = (ROOT / "deploy" / "stack.sh").read_text()
    for name in ("worker-ingest", "worker-imports", "beat"):
        assert re.search(rf"launch_supervised {name} ", script), name
