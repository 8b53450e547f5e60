"""Celery tasks of the dashboard (queue "imports", settings.CELERY_TASK_ROUTES).

The busiest pages are rendered again here, off the request path: asked for by the data-version
bump (gpuatlas/data_version.py), and by beat just after midnight, when the day in the keys turns.
"""

from __future__ import annotations

import time

from celery import shared_task
from django.core.cache import cache

from dashboard.fragments import pages_warm
from gpuatlas.data_version import WARM_QUEUED_KEY, WARM_STARTED_KEY, WARM_TASK


@shared_task(name=WARM_TASK, ignore_result=True, soft_time_limit=540, time_limit=600)
def pages_warm_task() -> int:
    cache.delete(WARM_QUEUED_KEY)
    cache.set(WARM_STARTED_KEY, time.time(), timeout=None)
    return pages_warm()
