"""A Celery app with the project's broker configuration and one slow task, for the broker-outage test.

The project's own tasks finish in milliseconds, so a worker seldom holds an unacknowledged message
while it also waits on a BRPOP, the state in which a Redis outage used to kill it (gpuatlas/broker.py).
This app reads every CELERY_* setting, the Redis transport included, from gpuatlas.settings as the
project's app does; its task sleeps, holding its message unacknowledged (late acks) meanwhile, and
logs a marker line when it ends.

    celery -A tests.outage_worker worker -Q outage
"""

from __future__ import annotations

import logging
import os
import time

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

# Not the current app: importing this module (the test does) must leave the project's app current.
app = Celery("outage", set_as_current=False)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_routes = {"outage.*": {"queue": "outage"}}
logger = logging.getLogger(__name__)

QUEUE = "outage"


@app.task(name="outage.sleep")
def outage_sleep(seconds: float, marker: str) -> None:
    time.sleep(seconds)
    logger.warning("slept %s s: %s", seconds, marker)
