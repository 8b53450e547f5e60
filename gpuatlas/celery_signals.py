"""Celery task events: structured log lines with the submission id, Prometheus counts and durations.

Connected from ``gpuatlas.celery``. The request id of the web request that enqueued a task
travels in a message header, so the worker's log lines for that task carry the same id as the
request's. While a task runs, database reads are pinned to the primary: a task usually reads a
row its producer has just committed, which a lagging replica may not have yet.
"""

from __future__ import annotations

import logging
import logging.config
import os
import time
from typing import Any

from celery import signals
from django.conf import settings
from prometheus_client import multiprocess

from gpuatlas import prometheus
from gpuatlas.db_router import primary_pin_enter, primary_pin_exit
from gpuatlas.logging import log_context_enter, log_context_exit, request_id_get

logger = logging.getLogger("gpuatlas.tasks")

REQUEST_ID_HEADER = "gpuatlas_request_id"

# task id -> (start time, log-context tokens, primary-pin token); one entry per running task.
_running: dict[str, tuple[float, Any, Any]] = {}


def task_ids(*, task_name: str, args: tuple | list | None, kwargs: dict | None) -> dict[str, Any]:
    """The object ids a task works on, for its log lines: every ``*_id`` keyword argument.

    Ingest tasks take the submission id; a positional one is recognised for tasks of
    ``benchmarks_app`` whose first argument is an integer.
    """
    ids = {k: v for k, v in (kwargs or {}).items() if k.endswith("_id") and isinstance(v, int | str)}
    if "submission_id" not in ids and task_name.startswith("benchmarks_app.") and args:
        first = args[0]
        if isinstance(first, int) and not isinstance(first, bool):
            ids["submission_id"] = first
    return ids


@signals.before_task_publish.connect
def _on_publish(sender: str | None = None, headers: dict | None = None, **_: Any) -> None:
    if sender:
        prometheus.celery_tasks_published.labels(task=sender).inc()
    request_id = request_id_get()
    if headers is not None and request_id and REQUEST_ID_HEADER not in headers:
        headers[REQUEST_ID_HEADER] = request_id


def _header(task: Any, name: str) -> str | None:
    request = getattr(task, "request", None)
    if request is None:
        return None
    value = getattr(request, name, None)
    if value is None and isinstance(getattr(request, "headers", None), dict):
        value = request.headers.get(name)
    return value if isinstance(value, str) else None


@signals.task_prerun.connect
def _on_prerun(task_id: str | None = None, task: Any = None, args: Any = None, kwargs: Any = None, **_: Any) -> None:
    if task is None or task_id is None:
        return
    ids = task_ids(task_name=task.name, args=args, kwargs=kwargs)
    request_id = _header(task, REQUEST_ID_HEADER) or request_id_get()
    tokens = log_context_enter(request_id=request_id, task=task.name, task_id=task_id, **ids)
    pin = primary_pin_enter()
    _running[task_id] = (time.perf_counter(), tokens, pin)
    logger.info("task started %s", task.name, extra={"event": "task_started", "retries": task.request.retries or 0})


@signals.task_postrun.connect
def _on_postrun(task_id: str | None = None, task: Any = None, state: str | None = None, **_: Any) -> None:
    if task is None or task_id is None:
        return
    started, tokens, pin = _running.pop(task_id, (None, None, None))
    duration = time.perf_counter() - started if started is not None else None
    state = state or "UNKNOWN"
    prometheus.celery_tasks_finished.labels(task=task.name, state=state).inc()
    if duration is not None:
        prometheus.celery_task_duration.labels(task=task.name).observe(duration)
    logger.info(
        "task finished %s: %s",
        task.name,
        state,
        extra={
            "event": "task_finished",
            "state": state,
            "duration_ms": round(duration * 1000, 1) if duration is not None else None,
        },
    )
    if pin is not None:
        primary_pin_exit(pin)
    if tokens is not None:
        log_context_exit(tokens)


@signals.task_failure.connect
def _on_failure(
    task_id: str | None = None, exception: BaseException | None = None, sender: Any = None, **_: Any
) -> None:
    # Runs inside the task's log context (before task_postrun), so the line carries its ids.
    logger.error(
        "task failed %s: %s",
        getattr(sender, "name", "?"),
        exception.__class__.__name__ if exception else "?",
        exc_info=exception if isinstance(exception, BaseException) else None,
        extra={"event": "task_failed"},
    )


@signals.task_retry.connect
def _on_retry(request: Any = None, reason: Any = None, **_: Any) -> None:
    logger.warning("task will retry: %s", reason, extra={"event": "task_retry"})


@signals.worker_ready.connect
def _on_worker_ready(**_: Any) -> None:
    # A worker on its own host has no web process whose /metrics would include its task samples.
    if settings.METRICS_WORKER_PORT:
        prometheus.worker_metrics_serve(addr=settings.METRICS_WORKER_ADDR, port=settings.METRICS_WORKER_PORT)


@signals.worker_process_shutdown.connect
def _on_worker_process_shutdown(pid: int | None = None, **_: Any) -> None:
    # Multiprocess mode keeps a dead process's gauge files unless told it died.
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(pid or os.getpid())


@signals.setup_logging.connect
def _on_setup_logging(**_: Any) -> None:
    # Connecting this stops Celery from replacing the root logger's handlers: workers and beat
    # then log through Django's LOGGING (JSON in production) like the web processes.
    logging.config.dictConfig(settings.LOGGING)
