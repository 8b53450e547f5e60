"""Celery tasks of the dashboard (queue "imports", settings.CELERY_TASK_ROUTES).

The busiest pages are rendered again here, off the request path: asked for by the data-version
bump (gpuatlas/data_version.py), and by beat just after midnight, when the day in the keys turns.
The bump also asks for the rankings' submitter counts to be brought up to date (queued before
the warm-up, which reads them).
"""

from __future__ import annotations

import time

from celery import shared_task
from django.core.cache import cache

from dashboard.fragments import pages_warm
from dashboard.services import ranking_submitters_refresh
from gpuatlas.data_version import (
    SUBMITTERS_QUEUED_KEY,
    SUBMITTERS_TASK,
    WARM_QUEUED_KEY,
    WARM_STARTED_KEY,
    WARM_TASK,
)


@shared_task(name=WARM_TASK, ignore_result=True, soft_time_limit=540, time_limit=600)
def pages_warm_task() -> int:
    cache.delete(WARM_QUEUED_KEY)
    cache.set(WARM_STARTED_KEY, time.time(), timeout=None)
    return pages_warm()


@shared_task(name=SUBMITTERS_TASK, ignore_result=True, soft_time_limit=540, time_limit=600)
def ranking_submitters_refresh_task() -> int:
    cache.delete(SUBMITTERS_QUEUED_KEY)
    return ranking_submitters_refresh()
