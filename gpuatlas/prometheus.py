"""Prometheus metrics at ``/metrics``, kept from the public.

What is exported:
- request counts and latency from django-prometheus's middlewares (``django_http_*``);
- Celery task counts and durations (``gpuatlas_celery_*``), recorded by ``celery_signals``;
- scrape-time readings: queue depth of the ``ingest`` and ``imports`` queues (Redis ``LLEN``),
  whether the broker answers, and benchmark submissions by status (one grouped ``COUNT``).

With several gunicorn or Celery processes per host, set ``PROMETHEUS_MULTIPROC_DIR`` to an
empty, per-host directory shared by those processes and wiped at start: every process then
writes its samples there and a scrape of any one web process sums them all.

Access: the endpoint answers only a request carrying ``Authorization: Bearer <METRICS_TOKEN>``
or coming from an address in ``METRICS_ALLOWED_IPS``; with neither configured it does not exist
(404). It is served by a middleware placed before SSL redirection and host validation so that an
internal plain-HTTP scrape by pod or host IP works, and it reads ``REMOTE_ADDR`` only, never a
forwarded header a client could forge.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import prometheus_client
from django.apps import apps
from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry, Counter, Histogram, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

METRICS_PATH = "/metrics"
QUEUES = ("ingest", "imports")
# kombu's Redis transport keeps prioritised messages in extra lists named queue + sep + priority.
_KOMBU_PRIORITY_SEP = "\x06\x16"
_KOMBU_PRIORITY_STEPS = (3, 6, 9)

TASK_DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, float("inf"))

celery_tasks_published = Counter(
    "gpuatlas_celery_tasks_published_total", "Celery tasks enqueued, by task name.", ["task"]
)
celery_tasks_finished = Counter(
    "gpuatlas_celery_tasks_total",
    "Celery tasks that finished running, by task name and final state (SUCCESS, FAILURE, RETRY...).",
    ["task", "state"],
)
celery_task_duration = Histogram(
    "gpuatlas_celery_task_duration_seconds",
    "Wall time of Celery task runs, by task name.",
    ["task"],
    buckets=TASK_DURATION_BUCKETS,
)


def broker_redis_client() -> Any | None:
    """A Redis client on the Celery broker with short timeouts, or None when the broker is not Redis."""
    url = settings.CELERY_BROKER_URL
    if not url or not url.startswith(("redis://", "rediss://")):
        return None
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)


class QueueDepthCollector(Collector):
    """Messages waiting in each Celery queue, read from Redis when Prometheus scrapes."""

    def collect(self) -> Iterable[GaugeMetricFamily]:
        up = GaugeMetricFamily("gpuatlas_broker_up", "1 when the Celery broker answered this scrape.")
        depth = GaugeMetricFamily(
            "gpuatlas_celery_queue_length",
            "Messages waiting in a Celery queue (not yet taken by a worker).",
            labels=["queue"],
        )
        client = broker_redis_client()
        if client is None:
            return []
        try:
            with client.pipeline(transaction=False) as pipe:
                for queue in QUEUES:
                    pipe.llen(queue)
                    for priority in _KOMBU_PRIORITY_STEPS:
                        pipe.llen(f"{queue}{_KOMBU_PRIORITY_SEP}{priority}")
                lengths = pipe.execute()
        except Exception as exc:  # any connection error: report the broker down, not a 500
            logger.warning("metrics: broker unreachable: %s", exc.__class__.__name__)
            up.add_metric([], 0)
            return [up]
        finally:
            client.close()
        per_queue = 1 + len(_KOMBU_PRIORITY_STEPS)
        for index, queue in enumerate(QUEUES):
            depth.add_metric([queue], sum(lengths[index * per_queue : (index + 1) * per_queue]))
        up.add_metric([], 1)
        return [up, depth]


class SubmissionStatusCollector(Collector):
    """Benchmark submissions by status: one grouped COUNT, cached a few seconds per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[float, dict[str, int]] | None = None

    def _counts(self) -> dict[str, int]:
        # Looked up by name at scrape time: this module is imported while the settings load
        # (gpuatlas/__init__ -> celery), before the app registry can hand out models.
        submissions = apps.get_model("benchmarks_app", "RawSubmission")
        choices = submissions._meta.get_field("status").choices or ()
        counts = dict.fromkeys((value for value, _label in choices), 0)
        rows = submissions.objects.order_by().values_list("status").annotate(n=Count("id"))
        for status, n in rows:
            counts[status] = n
        return counts

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "gpuatlas_submissions", "Raw benchmark submissions by processing status.", labels=["status"]
        )
        now = time.monotonic()
        with self._lock:
            if self._cached is None or now - self._cached[0] >= settings.METRICS_DB_CACHE_SECONDS:
                try:
                    self._cached = (now, self._counts())
                except Exception as exc:  # a database outage must not break the rest of the scrape
                    logger.warning("metrics: submission counts unavailable: %s", exc.__class__.__name__)
                    return []
            counts = self._cached[1]
        for status, n in sorted(counts.items()):
            family.add_metric([status], n)
        return [family]


_submission_collector = SubmissionStatusCollector()


def _scrape_time_registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueDepthCollector())
    registry.register(_submission_collector)
    return registry


def process_registry() -> CollectorRegistry:
    """This process's samples, or every process's on this host in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return prometheus_client.REGISTRY


def metrics_render() -> bytes:
    """The exposition text: process (or host) samples followed by scrape-time readings."""
    return prometheus_client.generate_latest(process_registry()) + prometheus_client.generate_latest(
        _scrape_time_registry()
    )


def metrics_access_allowed(*, remote_addr: str, authorization: str) -> bool | None:
    """True to serve, False to refuse (403), None when the endpoint is disabled (404)."""
    token: str = settings.METRICS_TOKEN
    networks = settings.METRICS_ALLOWED_NETWORKS
    if not token and not networks:
        return None
    if token:
        scheme, _, presented = authorization.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(), token.encode()):
            return True
    if networks:
        try:
            address = ipaddress.ip_address(remote_addr)
        except ValueError:
            return False
        return any(address in network for network in networks)
    return False


class MetricsEndpointMiddleware:
    """Serves ``/metrics`` to allowed scrapers; everything else passes through untouched."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.rstrip("/") != METRICS_PATH:
            return self.get_response(request)
        allowed = metrics_access_allowed(
            remote_addr=request.META.get("REMOTE_ADDR", ""),
            authorization=request.META.get("HTTP_AUTHORIZATION", ""),
        )
        if allowed is None:
            return HttpResponse("Not found.\n", status=404, content_type="text/plain")
        if not allowed:
            return HttpResponse(
                "Forbidden: metrics are for the monitoring system only.\n", status=403, content_type="text/plain"
            )
        if request.method not in ("GET", "HEAD"):
            return HttpResponse(
                "Method not allowed.\n", status=405, headers={"Allow": "GET, HEAD"}, content_type="text/plain"
            )
        response = HttpResponse(metrics_render(), content_type=prometheus_client.CONTENT_TYPE_LATEST)
        response["Cache-Control"] = "no-store"
        return response


def worker_metrics_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """WSGI app for a Celery host's own samples (task counts and durations), with the same guard."""
    allowed = metrics_access_allowed(
        remote_addr=environ.get("REMOTE_ADDR", ""), authorization=environ.get("HTTP_AUTHORIZATION", "")
    )
    if environ.get("PATH_INFO", "").rstrip("/") != METRICS_PATH or allowed is None:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"Not found.\n"]
    if not allowed:
        start_response("403 Forbidden", [("Content-Type", "text/plain")])
        return [b"Forbidden.\n"]
    start_response("200 OK", [("Content-Type", prometheus_client.CONTENT_TYPE_LATEST), ("Cache-Control", "no-store")])
    return [prometheus_client.generate_latest(process_registry())]


def worker_metrics_serve(*, addr: str, port: int) -> Any:
    """Serve ``worker_metrics_app`` from a daemon thread (Celery hosts have no web process).

    Started once per worker (in its main process) when METRICS_WORKER_PORT is set; returns the server.
    """
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            logger.debug("worker metrics: " + format, *args)

    server = make_server(addr, port, worker_metrics_app, handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, name="worker-metrics", daemon=True).start()
    logger.info("worker metrics on http://%s:%s%s", addr, server.server_port, METRICS_PATH)
    return server
