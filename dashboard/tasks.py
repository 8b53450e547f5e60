"""Celery tasks of the dashboard (queue "imports", settings.CELERY_TASK_ROUTES).

After each data-version bump the busiest pages are rendered again here, off the request path.
"""

from __future__ import annotations

import logging
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


@shared_task(name="dashboard.tasks.pages_warm_task", ignore_result=True, soft_time_limit=540, time_limit=600)
def pages_warm_task() -> int:
    cache.delete(WARM_QUEUED_KEY)
    return pages_warm()


@receiver(data_version_bumped, dispatch_uid="dashboard.pages_warm")
def pages_warm_enqueue(**_: Any) -> None:
    """Warm the busiest pages after a bump. Not without a shared cache (CACHE_URL): a worker's
    renders would stay in the worker's local memory."""
    if not settings.CACHE_URL or not cache.add(WARM_QUEUED_KEY, 1, timeout=600):
        return
    try:
        pages_warm_task.delay()
    except Exception:  # the writer's commit stands; its pages are rendered by their next visitors
        cache.delete(WARM_QUEUED_KEY)
        logger.warning("the pages could not be queued for warming after a data version bump", exc_info=True)
