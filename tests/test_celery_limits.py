"""Every task and every periodic entry can be sent through the real Celery configuration.

Celery refuses to send a task whose soft time limit (its own, or the global
CELERY_TASK_SOFT_TIME_LIMIT) is above its hard limit: ``apply_async`` raises ValueError and beat
logs "Couldn't apply scheduled task" on every tick, so a periodic task with such limits never runs.
The eager mode of the SQLite pass skips that check, so these tests send for real (the message is
captured where kombu would publish it).
"""

from __future__ import annotations

from unittest import mock

import pytest
from django.conf import settings

from gpuatlas.celery import app

# What a worker's autodiscovery imports (the test process imports modules only as tests need them).
app.loader.import_default_modules()

PROJECT_TASKS = sorted(name for name in app.tasks if name.split(".")[0] in {"benchmarks_app", "catalog", "dashboard"})


@pytest.fixture
def sent(monkeypatch):
    """Messages that apply_async would publish, with eager execution off as in production."""
    monkeypatch.setitem(app.conf, "task_always_eager", False)
    captured: list[tuple[str, dict]] = []

    def capture(producer, name, message, **options):  # type: ignore[no-untyped-def]
        captured.append((name, message.headers))

    # On the app's own AMQP object: the message is built (and its limits checked) exactly as
    # beat's would be, and only the publishing is replaced.
    with mock.patch.object(app.amqp, "send_task_message", capture):
        yield captured


def test_the_project_tasks_are_registered():
    assert {"benchmarks_app.tasks.sweep_stuck_submissions", "catalog.tasks.prices_fetch_task"} <= set(PROJECT_TASKS)


@pytest.mark.parametrize("name", PROJECT_TASKS)
def test_soft_limit_is_at_most_the_hard_limit(name):
    task = app.tasks[name]
    hard = task.time_limit if task.time_limit is not None else settings.CELERY_TASK_TIME_LIMIT
    soft = task.soft_time_limit if task.soft_time_limit is not None else settings.CELERY_TASK_SOFT_TIME_LIMIT
    assert soft <= hard, f"{name}: soft {soft} s > hard {hard} s; Celery would refuse to send it"


@pytest.mark.parametrize("entry", sorted(settings.CELERY_BEAT_SCHEDULE))
def test_every_periodic_task_is_sent_through_apply_async(entry, sent):
    name = settings.CELERY_BEAT_SCHEDULE[entry]["task"]
    app.tasks[name].apply_async()  # what beat does for a registered task
    assert [(n, h["task"]) for n, h in sent] == [(name, name)]
    hard, soft = sent[0][1]["timelimit"]
    assert soft is None or hard is None or soft <= hard


def test_the_sweeper_is_scheduled_every_sweep_interval():
    entry = settings.CELERY_BEAT_SCHEDULE["submissions-sweep"]
    assert entry["task"] == "benchmarks_app.tasks.sweep_stuck_submissions"
    assert entry["schedule"].total_seconds() == settings.SUBMISSION_SWEEP_EVERY_S


def test_a_killed_batch_is_final_within_a_minute_by_the_default_periods() -> None:
    """A claim of a dead worker is taken back by the first sweep after the claim grace, a message
    it held by the first sweep after the received grace; either is then ingested in about a
    second. The grace must outlast a live ingest, which its time limit kills."""
    from benchmarks_app.tasks import INGEST_TIME_LIMIT_S, ingest_submission

    assert ingest_submission.time_limit == INGEST_TIME_LIMIT_S < settings.INGEST_CLAIM_GRACE_S
    for grace in (settings.INGEST_CLAIM_GRACE_S, settings.INGEST_RECEIVED_GRACE_S):
        assert grace + settings.SUBMISSION_SWEEP_EVERY_S + 5 <= 60
