"""gunicorn configuration for GPU Atlas web nodes (``gunicorn -c deploy/gunicorn.conf.py gpuatlas.wsgi``).

Every value can be overridden from the environment (GUNICORN_* below) or the command line.
Web nodes are stateless: add processes with GUNICORN_WORKERS, add nodes behind the load balancer.
"""

from __future__ import annotations

import multiprocessing
import os


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not an integer.") from None
    if value < 1:
        raise SystemExit(f"{name}={value} must be at least 1.")
    return value


wsgi_app = "gpuatlas.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# Sync workers: requests are short and database-bound; (2 x cores) + 1 is gunicorn's own advice.
workers = _int("GUNICORN_WORKERS", multiprocessing.cpu_count() * 2 + 1)
threads = _int("GUNICORN_THREADS", 1)
timeout = _int("GUNICORN_TIMEOUT", 30)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 20)
keepalive = 5
# Recycle workers now and then so a slow leak cannot grow without bound; jitter avoids all at once.
max_requests = _int("GUNICORN_MAX_REQUESTS", 2000)
max_requests_jitter = 200
# Request bodies are small JSON documents; refuse oversized header lines early.
limit_request_line = 8190
# The app logs every request as JSON with its request id (gpuatlas.logging); gunicorn's own
# access log would duplicate it. Errors go to stderr as JSON lines too.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
# Behind a reverse proxy on the same host or network: trust its X-Forwarded-* only from there.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# /dev/shm: worker heartbeat files on a RAM disk (containers often have a slow overlay /tmp).
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108 - gunicorn's documented advice

logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "gpuatlas.logging.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
    "loggers": {
        "gunicorn.error": {"handlers": ["console"], "level": loglevel.upper(), "propagate": False},
        # With a logconfig gunicorn would write access lines too: the app's own request lines
        # (gpuatlas.request, with the request id) replace them.
        "gunicorn.access": {"handlers": [], "level": "CRITICAL", "propagate": False},
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
}


def child_exit(server, worker):  # noqa: ANN001 - gunicorn's hook signature
    # Prometheus multiprocess mode: drop the dead worker's live gauges.
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
