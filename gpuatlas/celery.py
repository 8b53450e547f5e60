"""The Celery application: configured from Django settings (CELERY_* names)."""

import os
import time
from typing import Any

from celery import Celery, signals
from django.db import connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

app = Celery("gpuatlas")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Task events (JSON log lines with the submission id, Prometheus counts and durations) and
# Django's logging configuration for workers and beat.
import gpuatlas.celery_signals  # noqa: E402, F401


@signals.task_prerun.connect
def _drop_stale_connections(sender: Any = None, **_: Any) -> None:
    # With CELERY_DB_REUSE_MAX a worker keeps its connection across tasks. What a web request
    # does at its start (close one past CONN_MAX_AGE, or one that raised and fails a health
    # check) keeps a dead connection from failing every task until the next recycle; a healthy
    # one is not pinged, a round trip per task being what reuse is meant to save. Never for an
    # eager task: it runs inside its caller's transaction.
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return
    for conn in connections.all(initialized_only=True):
        if conn.connection is None or conn.in_atomic_block:
            continue
        if conn.errors_occurred or (conn.close_at is not None and time.monotonic() >= conn.close_at):
            conn.close_if_unusable_or_obsolete()
