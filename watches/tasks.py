"""Celery tasks of the watches: they take ids and call services.

The writers below this app ask for an evaluation by name once their transaction commits
(``gpuatlas.followups.followup_after_commit``): the price import with its ``ImportRun``, every
write of results with their workloads (benchmarks_app.services.results_changed: the ingest, the lab
imports, moderation, a rebuild), the LLM serving model's refresh. Each write asks for one task, which
evaluates only the watches whose inputs it changed (watches/selectors/changes.py). Each alert is a
task of its own (``delivery_send``), retried with exponential backoff.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings

from watches.selectors.changes import (
    gpus_with_changed_offers,
    llm_use_cases,
    use_cases_of_workloads,
    watch_ids_after_price_change,
    watch_ids_of_use_cases,
)
from watches.services.delivery import Outcome, delivery_attempt, delivery_give_up
from watches.services.evaluation import Evaluation, watches_evaluate

logger = logging.getLogger(__name__)

# The longest wait between two attempts of a delivery.
BACKOFF_MAX_S = 3600


def _logged(what: str, evaluation: Evaluation) -> int:
    if evaluation.watches:
        logger.info(
            "%s: %d watches evaluated, %d changed, %d crossings",
            what,
            evaluation.watches,
            evaluation.changed,
            len(evaluation.crossings),
        )
    return len(evaluation.crossings)


@shared_task(name="watches.tasks.watches_evaluate_after_price_import", acks_late=True)
def watches_evaluate_after_price_import(*, import_run_id: int) -> int:
    """The watches whose GPUs' offers the import changed; returns the crossings recorded."""
    gpu_ids = gpus_with_changed_offers(import_run_id=import_run_id)
    evaluation = watches_evaluate(watch_ids=watch_ids_after_price_change(gpu_ids=gpu_ids))
    return _logged(f"price import {import_run_id}", evaluation)


@shared_task(name="watches.tasks.watches_evaluate_after_results", acks_late=True)
def watches_evaluate_after_results(*, workload_ids: list[int]) -> int:
    """The ranking watches of the use cases that rank results of these workloads."""
    use_cases = use_cases_of_workloads(workload_ids=workload_ids)
    evaluation = watches_evaluate(watch_ids=watch_ids_of_use_cases(use_cases=use_cases))
    return _logged(f"results of {len(workload_ids)} workloads", evaluation)


@shared_task(name="watches.tasks.watches_evaluate_after_serving_model", acks_late=True)
def watches_evaluate_after_serving_model() -> int:
    """The ranking watches of the LLM use cases, after new serving points or a new fit."""
    evaluation = watches_evaluate(watch_ids=watch_ids_of_use_cases(use_cases=llm_use_cases()))
    return _logged("LLM serving model", evaluation)


def retry_countdown(retries: int) -> int:
    """Seconds before the next attempt: WATCH_WEBHOOK_BACKOFF_S, doubled at each retry, at most an hour."""
    return int(
        get_exponential_backoff_interval(
            factor=settings.WATCH_WEBHOOK_BACKOFF_S, retries=retries, maximum=BACKOFF_MAX_S, full_jitter=False
        )
    )


@shared_task(
    name="watches.tasks.delivery_send", bind=True, acks_late=True, max_retries=None, soft_time_limit=60, time_limit=90
)
def delivery_send(self, *, delivery_id: int) -> str:  # type: ignore[no-untyped-def]
    """Send one alert; retried with exponential backoff up to WATCH_WEBHOOK_RETRIES times.

    Run eagerly (no broker) an attempt cannot wait for its retry: it is given up at once.
    """
    outcome = delivery_attempt(delivery_id=delivery_id)
    if outcome is Outcome.RETRY:
        if not self.request.is_eager and self.request.retries < settings.WATCH_WEBHOOK_RETRIES:
            raise self.retry(countdown=retry_countdown(self.request.retries))
        delivery_give_up(delivery_id=delivery_id)
        return Outcome.FAILED.value
    return outcome.value
