"""Celery tasks of the LLM serving model: they take source kinds or ids and call services.

The benchmark imports and the ingest (benchmarks_app, below llm) ask for these by name once their
results are committed (``gpuatlas.followups.followup_after_commit``). Queue "imports"
(settings.CELERY_TASK_ROUTES): a refit is seconds of scipy, kept off the ingest queue.

Idempotent: the points of a source or of a submission are replaced, never added to, and the refit
writes nothing when its inputs have not changed; a task delivered twice does the same work twice.
"""

from __future__ import annotations

import logging

from celery import shared_task

from gpuatlas.followups import followup_after_commit
from llm.services.serving_fit import WATCHES_AFTER_FIT_TASK, serving_model_refit_after_write
from llm.services.serving_points import serving_points_add_for_submissions, serving_points_rebuild

logger = logging.getLogger(__name__)


@shared_task(name="llm.tasks.serving_points_refresh", acks_late=True, soft_time_limit=540, time_limit=600)
def serving_points_refresh(
    *, source: str | None = None, submission_ids: list[int] | None = None, refit: bool = True
) -> int:
    """Derive the serving points of new results, then refit the serving model on them.

    ``submission_ids``: the points of these submissions' results (the live ingest; no other point
    is touched), refitted only when one was written. Otherwise every point of ``source`` (a
    ``SourceKind``; None: every source) is rebuilt from the stored results. ``refit=False`` leaves
    the fit to the caller that imports several sources in a row. Returns the points written.
    """
    if submission_ids is not None:
        written = serving_points_add_for_submissions(submission_ids=submission_ids)
        if written and refit:
            serving_model_refit_after_write()
        if written:
            followup_after_commit(WATCHES_AFTER_FIT_TASK)
        return written
    summary = serving_points_rebuild(source=source)
    for line in summary.as_lines():
        logger.info("%s: %s", source or "every source", line)
    if refit:
        serving_model_refit_after_write()
    followup_after_commit(WATCHES_AFTER_FIT_TASK)
    return sum(summary.points.values())
