"""Work that follows a write, named by its Celery task.

The apps are layered (catalog, then benchmarks_app, then llm, then the pages), and an app never
imports one above it. Yet a write low in the layers has consequences higher up: new results
change the LLM serving model's fit, any data change makes the cached pages stale. The writer
says so explicitly at the end of its transaction, with ``followup_after_commit(<task name>)``:
the call site names what follows, no signal or receiver hides it, and no import points upward.

The task runs once the writer's transaction commits (a rolled-back write has no consequences),
in a worker with a broker, inline in the embedded default (``CELERY_TASK_ALWAYS_EAGER``).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import current_app
from django.db import transaction

from gpuatlas.broker import publish_guarded

logger = logging.getLogger(__name__)


def followup_run(name: str, *, countdown: float = 0, **kwargs: Any) -> bool:
    """Queue the task ``name`` now (run it now when tasks are eager); False when it was lost.

    A broker outage does not undo the write that asked for it: the follow-up is logged as lost
    and the next write of the same kind asks again.
    """
    try:
        task = current_app.tasks[name]
    except KeyError:
        # The apps' tasks modules, which only a worker imports on its start (the web process runs
        # eager tasks too). Once per process: importing them again costs milliseconds per write.
        current_app.loader.import_default_modules()
        task = current_app.tasks[name]  # KeyError again for a misspelt name: a bug, not caught
    try:
        publish_guarded(lambda: task.apply_async(kwargs=kwargs, countdown=countdown or None))
    except Exception:
        if current_app.conf.task_always_eager:
            raise
        logger.warning("the follow-up task %s could not be queued", name, exc_info=True)
        return False
    return True


def followup_after_commit(name: str, *, countdown: float = 0, **kwargs: Any) -> None:
    """Queue the task ``name`` once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: followup_run(name, countdown=countdown, **kwargs))
