"""Processes for the fault and load tests: Celery workers, a gunicorn server, and this module as a
command line (``python -m tests.reliability_support intake|sweep ...``) for the application side
that must talk to a private broker.

Settings (and so the Celery broker URL) are read at import, so the side of the application that
enqueues runs in a subprocess with its own CELERY_BROKER_URL, never the test process's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]


def database_url_of_tests() -> str:
    """The URL of the database this test session runs on, for a child process to use."""
    from django.db import connection

    settings = connection.settings_dict
    credentials = quote(settings["USER"] or "postgres")
    if settings.get("PASSWORD"):
        credentials += ":" + quote(settings["PASSWORD"])
    return f"postgres://{credentials}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{settings['NAME']}"


def app_env(broker_url: str, **extra: str) -> dict[str, str]:
    """The environment of an application process on the test database and the given broker."""
    env = {**os.environ, "DATABASE_URL": database_url_of_tests(), "CELERY_BROKER_URL": broker_url}
    # The throttles protect the site from one client; these tests are many clients on loopback.
    unthrottled = {f"THROTTLE_{scope}": "1000000/min" for scope in ("ANON", "USER", "SUBMISSIONS", "PAGE_RENDER")}
    env.update({"DJANGO_SETTINGS_MODULE": "gpuatlas.settings", "LOG_LEVEL": "WARNING", **unthrottled, **extra})
    env.pop("CACHE_URL", None)
    return env


def wait_until(
    predicate: Callable[[], bool],
    *,
    timeout: float,
    every: float = 0.2,
    sweep: Callable[[], object] | None = None,
    sweep_every: float = 5,
) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass; its last answer.

    ``sweep``, when given, runs every ``sweep_every`` seconds meanwhile: the tests' stand-in for
    the periodic sweeper that celery beat runs in production.
    """
    deadline = time.monotonic() + timeout
    next_sweep = time.monotonic() + sweep_every
    while time.monotonic() < deadline:
        if predicate():
            return True
        if sweep is not None and time.monotonic() >= next_sweep:
            sweep()
            next_sweep = time.monotonic() + sweep_every
        time.sleep(every)
    return predicate()


class Process:
    """A child process group; kill() is SIGKILL to all of it (a Celery parent and its pool children)."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log = log_path.open("ab")
        self.process = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive():
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def celery_worker(
    broker_url: str,
    log_path: Path,
    *,
    concurrency: int = 2,
    queue: str = "ingest",
    heartbeat: bool = False,
    env: dict[str, str] | None = None,
    app: str = "gpuatlas",
) -> Process:
    """A worker of ``queue``; ``heartbeat``: with worker heartbeats, as the compose file runs them;
    ``app``: the Celery app module (the project's, or one of the tests' own)."""
    args = [
        sys.executable, "-m", "celery", "-A", app, "worker", "-Q", queue, "-P", "prefork",
        "-c", str(concurrency), "-n", f"rel-{uuid.uuid4().hex[:8]}@%h",
        "--without-gossip", "--without-mingle", "--loglevel", "WARNING",
    ]  # fmt: skip
    if not heartbeat:
        args.append("--without-heartbeat")
    return Process(args, app_env(broker_url, **(env or {})), log_path)


def celery_beat(broker_url: str, log_path: Path, schedule: Path, *, env: dict[str, str] | None = None) -> Process:
    """Celery beat with the project's schedule (settings.CELERY_BEAT_SCHEDULE), as production runs it."""
    args = [sys.executable, "-m", "celery", "-A", "gpuatlas", "beat", "--schedule", str(schedule), "--loglevel", "INFO"]
    return Process(args, app_env(broker_url, **(env or {})), log_path)


def gunicorn_server(broker_url: str, port: int, log_path: Path, **env: str) -> Process:
    args = [
        sys.executable, "-m", "gunicorn", "gpuatlas.wsgi:application", "--bind", f"127.0.0.1:{port}",
        "--workers", "3", "--threads", "8", "--timeout", "60", "--access-logfile", "-",
    ]  # fmt: skip
    return Process(args, app_env(broker_url, DEBUG="1", **env), log_path)


def helper(command: list[str], broker_url: str, *, timeout: float = 300) -> list[dict]:
    """Run this module's command line against the test database and ``broker_url``; its JSON lines."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.reliability_support", *command],
        cwd=ROOT,
        env=app_env(broker_url),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


# --------------------------------------------------------------------------- command line


def _intake(args: argparse.Namespace) -> None:
    """POST ``count`` submissions through the API (the test client: same view, same on_commit enqueue)."""
    from django.test import Client

    from tests.factories import body, make_result, submission_document

    client = Client(HTTP_AUTHORIZATION=f"Token {args.token}")
    for index in range(args.count):
        results = [make_result(median=600.0 + index % 50), make_result(precision="fp16", median=640.0)]
        document = submission_document(results=results)
        started = time.monotonic()
        response = client.post("/api/v1/submissions/", data=body(document), content_type="application/json")
        print(
            json.dumps(
                {
                    "run_uuid": document["run_uuid"],
                    "status_code": response.status_code,
                    "seconds": round(time.monotonic() - started, 4),
                }
            ),
            flush=True,
        )


def _sweep(args: argparse.Namespace) -> None:
    """Run the periodic sweeper as if ``ahead`` seconds had passed (past both grace periods)."""
    import datetime as dt

    from django.utils import timezone

    from benchmarks_app.services.ingest import submissions_sweep
    from benchmarks_app.tasks import submissions_enqueue

    summary = submissions_sweep(now=timezone.now() + dt.timedelta(seconds=args.ahead), limit=args.limit)
    requeued = submissions_enqueue(submission_ids=summary.waiting)
    print(json.dumps({"requeued": len(requeued), "reclaimed": summary.reclaimed}), flush=True)


def main() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")
    django.setup()
    parser = argparse.ArgumentParser(prog="python -m tests.reliability_support")
    commands = parser.add_subparsers(dest="command", required=True)
    intake = commands.add_parser("intake")
    intake.add_argument("--count", type=int, required=True)
    intake.add_argument("--token", required=True)
    intake.set_defaults(run=_intake)
    sweep = commands.add_parser("sweep")
    sweep.add_argument("--ahead", type=float, default=400.0)
    sweep.add_argument("--limit", type=int, default=5000)
    sweep.set_defaults(run=_sweep)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
