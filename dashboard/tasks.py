"""Celery tasks of the dashboard (queue "imports", settings.CELERY_TASK_ROUTES).

After each data-version bump the busiest pages are rendered again here, off the request path.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import shared_task
from django.conf import settings
from django.core.cache import cache
from django.dispatch import receiver

from dashboard.fragments import pages_warm
from gpuatlas.data_version import data_version_bumped

logger = logging.getLogger(__name__)

# Set while a warm-up waits in the queue: bumps meanwhile need no other one (it renders the
# version current when it runs), so a stream of bumps keeps at most one run waiting.
WARM_QUEUED_KEY = "gpuatlas:pages-warm:queued"
# When the last warm-up started (a Unix time).
WARM_STARTED_KEY = "gpuatlas:pages-warm:started"


@shared_task(name="dashboard.tasks.pages_warm_task", ignore_result=True, soft_time_limit=540, time_limit=600)
def pages_warm_task() -> int:
    cache.delete(WARM_QUEUED_KEY)
    cache.set(WARM_STARTED_KEY, time.time(), timeout=None)
    return pages_warm()


def pages_warm_delay_seconds(*, started: float | None, now: float, interval: float) -> float:
    """How long a new warm-up waits: a warm-up renders every busy page (minutes of CPU at scale),
    so while the ingest bumps every few seconds they start at most once per ``interval``."""
    return 0.0 if started is None else max(0.0, started + interval - now)


@receiver(data_version_bumped, dispatch_uid="dashboard.pages_warm")
def pages_warm_enqueue(**_: Any) -> None:
    """Warm the busiest pages after a bump, at most once per PAGES_WARM_INTERVAL_S. Not without a
    shared cache (CACHE_URL): a worker's renders would stay in the worker's local memory."""
    interval = settings.PAGES_WARM_INTERVAL_S
    if not settings.CACHE_URL or not cache.add(WARM_QUEUED_KEY, 1, timeout=interval + 600):
        return
    delay = pages_warm_delay_seconds(started=cache.get(WARM_STARTED_KEY), now=time.time(), interval=interval)
    try:
        pages_warm_task.apply_async(countdown=delay)
    except Exception:  # the writer's commit stands; its pages are rendered by their next visitors
        cache.delete(WARM_QUEUED_KEY)
        logger.warning("the pages could not be queued for warming after a data version bump", exc_info=True)
