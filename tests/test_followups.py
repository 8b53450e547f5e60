"""A write's follow-up (gpuatlas/followups.py): queued by task name, once the writer commits."""

from __future__ import annotations

import pytest
from celery import shared_task
from django.db import transaction

from gpuatlas import followups
from gpuatlas.celery import app

# The module's own functions: tests/conftest.py replaces followups.followup_run in every test
# (follow-ups run in-process there), and these tests are about the real one.
REAL_FOLLOWUP_RUN = followups.followup_run

CALLS: list[dict[str, object]] = []


@shared_task(name="tests.test_followups.record")
def record(**kwargs: object) -> None:
    CALLS.append(kwargs)


@pytest.fixture(autouse=True)
def no_calls():  # type: ignore[no-untyped-def]
    CALLS.clear()
    yield
    CALLS.clear()


@pytest.mark.django_db(transaction=True)
def test_a_followup_runs_once_the_writer_commits_and_not_before() -> None:
    with transaction.atomic():
        followups.followup_after_commit("tests.test_followups.record", source="mlperf")
        assert CALLS == []
    assert CALLS == [{"source": "mlperf"}]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_write_has_no_followup() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        followups.followup_after_commit("tests.test_followups.record", source="mlperf")
        raise RuntimeError("the write failed")
    assert CALLS == []


def test_a_misspelt_task_name_is_an_error_not_a_lost_followup(eager_tasks) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(KeyError):
        REAL_FOLLOWUP_RUN("tests.test_followups.no_such_task")


def test_the_real_runner_runs_an_eager_task_and_says_so(eager_tasks) -> None:  # type: ignore[no-untyped-def]
    assert REAL_FOLLOWUP_RUN("tests.test_followups.record", answer=42) is True
    assert CALLS == [{"answer": 42}]


def test_a_broker_outage_loses_the_followup_but_not_the_write(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broker_down(*args: object, **kwargs: object) -> None:
        raise ConnectionError("Redis is down")

    monkeypatch.setattr(app.tasks["tests.test_followups.record"], "apply_async", broker_down)
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False  # with a broker: its outage is logged, not raised
    try:
        assert REAL_FOLLOWUP_RUN("tests.test_followups.record") is False
    finally:
        app.conf.task_always_eager = eager
    assert CALLS == []
