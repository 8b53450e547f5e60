"""Celery tasks of the dashboard (queue "imports", settings.CELERY_TASK_ROUTES).

The busiest pages are rendered again here, off the request path: asked for by the data-version
bump (gpuatlas/data_version.py), and by beat just after midnight, when the day in the keys turns.
The bump also asks for the rankings' submitter counts and then the GPU pages' stored standings to
be brought up to date (queued before the warm-up, which reads them); the warm-up stores the
standings again when the day has turned since. While writes go on, all three wait for them to
settle (``followup_put_off``).
"""

from __future__ import annotations

import time

from celery import shared_task
from django.core.cache import cache

from dashboard.fragments import pages_warm
from dashboard.services import ranking_submitters_refresh, stored_standings_refresh
from gpuatlas.data_version import (
    STANDINGS_QUEUED_KEY,
    STANDINGS_TASK,
    SUBMITTERS_QUEUED_KEY,
    SUBMITTERS_TASK,
    WARM_QUEUED_KEY,
    WARM_STARTED_KEY,
    WARM_TASK,
    followup_put_off,
)


@shared_task(name=WARM_TASK, ignore_result=True, soft_time_limit=540, time_limit=600)
def pages_warm_task() -> int:
    if followup_put_off(task=WARM_TASK, queued_key=WARM_QUEUED_KEY):
        return 0
    cache.delete(WARM_QUEUED_KEY)
    cache.set(WARM_STARTED_KEY, time.time(), timeout=None)
    stored_standings_refresh(when_stale=True)
    return pages_warm()


@shared_task(name=SUBMITTERS_TASK, ignore_result=True, soft_time_limit=540, time_limit=600)
def ranking_submitters_refresh_task() -> int:
    if followup_put_off(task=SUBMITTERS_TASK, queued_key=SUBMITTERS_QUEUED_KEY):
        return 0
    cache.delete(SUBMITTERS_QUEUED_KEY)
    return ranking_submitters_refresh()


@shared_task(name=STANDINGS_TASK, ignore_result=True, soft_time_limit=540, time_limit=600)
def stored_standings_refresh_task() -> int:
    if followup_put_off(task=STANDINGS_TASK, queued_key=STANDINGS_QUEUED_KEY):
        return 0
    cache.delete(STANDINGS_QUEUED_KEY)
    return stored_standings_refresh()
