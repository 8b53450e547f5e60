"""Celery tasks of the catalogue: price imports (queue "imports", see CELERY_TASK_ROUTES).

Tasks take paths and call the services; a transient database error retries with exponential
backoff; each file is its own task, so one provider's failure never stops the others.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from catalog.services.prices import price_import_file
from catalog.services.prices.fetch import price_fetch_cloud
from catalog.services.prices.importer import IMPORTABLE_SUFFIXES

logger = logging.getLogger(__name__)


# A transient database error (deadlock, failover) retries the task with exponential backoff.
_DATABASE_RETRY: dict[str, Any] = {
    "autoretry_for": (OperationalError,),
    "retry_backoff": 30,
    "retry_backoff_max": 1800,
    "retry_jitter": True,
    "max_retries": 5,
}


@shared_task(name="catalog.tasks.price_import_file_task", **_DATABASE_RETRY)
def price_import_file_task(path: str, format: str | None = None, root: str | None = None) -> dict[str, Any]:
    """Import one provider's price file; returns the file summary (also stored in ImportRun)."""
    summary = price_import_file(path=Path(path), format=format, root=Path(root) if root else None)
    if summary.error:
        logger.warning("price import of %s failed: %s", path, summary.error)
    return summary.as_dict()


@shared_task(name="catalog.tasks.prices_import_directory_task")
def prices_import_directory_task(path: str | None = None) -> list[str]:
    """Enqueue one import task per price file under ``path`` (default settings.PRICE_IMPORT_DIR).

    The beat schedule runs this every settings.PRICE_IMPORT_EVERY_HOURS hours. Exchange-rate
    files go first so that the price files that follow can convert.
    """
    root = Path(path or settings.PRICE_IMPORT_DIR)
    if not root.is_dir():
        logger.error("price import directory %s does not exist", root)
        return []
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in IMPORTABLE_SUFFIXES)
    files.sort(key=lambda p: p.name != "exchange_rates.csv")
    for file in files:
        price_import_file_task.delay(str(file), None, str(root))
    return [str(f) for f in files]


@shared_task(name="catalog.tasks.price_fetch_cloud_task", **_DATABASE_RETRY)
def price_fetch_cloud_task(cloud: str) -> dict[str, Any]:
    """Fetch and import one cloud's published catalogue file (its own task: one cloud's failure stops no other)."""
    fetch = price_fetch_cloud(cloud=cloud)
    return {"source": fetch.source, "status": fetch.status, "http_status": fetch.http_status, "error": fetch.error}


@shared_task(name="catalog.tasks.prices_fetch_task")
def prices_fetch_task() -> list[str]:
    """Enqueue one fetch per configured cloud (settings.PRICE_FETCH_CLOUDS); beat runs it every
    settings.PRICE_FETCH_EVERY_HOURS hours."""
    for cloud in settings.PRICE_FETCH_CLOUDS:
        price_fetch_cloud_task.delay(cloud)
    return list(settings.PRICE_FETCH_CLOUDS)
