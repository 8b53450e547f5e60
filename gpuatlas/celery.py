"""The Celery application: configured from Django settings (CELERY_* names)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

app = Celery("gpuatlas")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Task events (JSON log lines with the submission id, Prometheus counts and durations) and
# Django's logging configuration for workers and beat.
import gpuatlas.celery_signals  # noqa: E402, F401
