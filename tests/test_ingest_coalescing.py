"""Intakes share one queued ingest task, which drains every waiting submission.

With a real worker, a task per submission cost the broker a message and the worker a
delivery for each, most of which found their submission already taken by a batch. Now an
intake queues a task only while none is waiting to start; the task clears that mark, then
ingests everything received, oldest first.
"""

from __future__ import annotations

from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from benchmarks_app.models import RawSubmission, SubmissionStatus
from benchmarks_app.services import ingest as ingest_module
from benchmarks_app.services import intake as intake_module
from benchmarks_app.services.ingest import submission_ingest, submissions_claim_waiting, submissions_drain
from benchmarks_app.services.intake import INGEST_QUEUED_KEY, ingest_queued_clear, submission_intake
from benchmarks_app.services.peers import live_peers
from benchmarks_app.services.snapshot import catalog_snapshot_clear
from benchmarks_app.tasks import ingest_submission
from tests.factories_ingest import body, ingest_world, submission_document

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh():  # type: ignore[no-untyped-def]
    catalog_snapshot_clear()
    live_peers.clear()
    cache.delete(INGEST_QUEUED_KEY)
    yield
    cache.delete(INGEST_QUEUED_KEY)
    catalog_snapshot_clear()
    live_peers.clear()


@pytest.fixture
def coalescing(settings):  # type: ignore[no-untyped-def]
    """A real worker's settings: tasks are sent, not run here (``delay`` is recorded instead)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.INGEST_COALESCE_SECONDS = 30
    with (
        mock.patch.object(intake_module, "cache_is_shared", return_value=True),
        mock.patch.object(intake_module, "cache") as shared_cache,
        mock.patch.object(ingest_submission, "delay") as delay,
    ):
        marks: dict[str, int] = {}

        def add(key: str, value: int, timeout: int) -> bool:  # Redis SET NX
            if key in marks:
                return False
            marks[key] = value
            return True

        shared_cache.add.side_effect = add
        shared_cache.delete.side_effect = lambda key: marks.pop(key, None)
        yield delay


def _store(user, **kwargs) -> RawSubmission:  # type: ignore[no-untyped-def]
    return submission_intake(body=body(submission_document(**kwargs)), submitter=user).submission


@pytest.fixture
def user():  # type: ignore[no-untyped-def]
    return get_user_model().objects.create(username="submitter")


def test_intakes_queue_one_task_until_it_starts(coalescing, user, django_capture_on_commit_callbacks):
    ingest_world()
    with django_capture_on_commit_callbacks(execute=True):
        first = _store(user)
    with django_capture_on_commit_callbacks(execute=True):
        _store(user)
        _store(user)
    assert [c.args for c in coalescing.call_args_list] == [(first.pk,)]

    ingest_queued_clear()  # what the task does as it starts
    with django_capture_on_commit_callbacks(execute=True):
        fourth = _store(user)
    assert [c.args for c in coalescing.call_args_list] == [(first.pk,), (fourth.pk,)]


def test_without_a_shared_cache_every_intake_queues_its_own_task(coalescing, user, django_capture_on_commit_callbacks):
    ingest_world()
    with (
        mock.patch.object(intake_module, "cache_is_shared", return_value=False),
        django_capture_on_commit_callbacks(execute=True),
    ):
        stored = [_store(user) for _ in range(3)]
    assert [c.args for c in coalescing.call_args_list] == [(s.pk,) for s in stored]


def test_an_unreachable_cache_means_a_task_of_its_own(coalescing, user, django_capture_on_commit_callbacks):
    ingest_world()
    intake_module.cache.add.side_effect = ConnectionError("cache down")
    with django_capture_on_commit_callbacks(execute=True):
        stored = [_store(user) for _ in range(2)]
    assert [c.args for c in coalescing.call_args_list] == [(s.pk,) for s in stored]


def test_a_draining_task_decides_every_waiting_submission(user):
    ingest_world()
    stored = [_store(user) for _ in range(4)]
    assert submission_ingest(submission_id=stored[1].pk, batch_size=2, drain=True) == SubmissionStatus.ACCEPTED
    statuses = set(RawSubmission.objects.values_list("status", flat=True))
    assert statuses == {SubmissionStatus.ACCEPTED}


def test_without_drain_a_task_leaves_the_others_waiting(user):
    ingest_world()
    stored = [_store(user) for _ in range(3)]
    submission_ingest(submission_id=stored[0].pk, batch_size=1)
    assert list(RawSubmission.objects.order_by("pk").values_list("status", flat=True)) == [
        SubmissionStatus.ACCEPTED,
        SubmissionStatus.RECEIVED,
        SubmissionStatus.RECEIVED,
    ]


def test_claims_of_waiting_submissions_take_the_oldest_once(user):
    ingest_world()
    stored = [_store(user) for _ in range(3)]
    _claimed_at, first = submissions_claim_waiting(batch_size=2)
    _claimed_at, second = submissions_claim_waiting(batch_size=2)
    _claimed_at, third = submissions_claim_waiting(batch_size=2)
    assert (first, second, third) == ([stored[0].pk, stored[1].pk], [stored[2].pk], [])
    assert set(RawSubmission.objects.values_list("attempts", flat=True)) == {1}


def test_a_drain_out_of_time_hands_over_to_a_new_task(user):
    ingest_world()
    stored = [_store(user) for _ in range(2)]
    with mock.patch.object(intake_module, "submission_enqueue") as enqueue:
        assert submissions_drain(batch_size=50, seconds=0) == 0
    enqueue.assert_called_once_with(submission_id=stored[0].pk)
    assert set(RawSubmission.objects.values_list("status", flat=True)) == {SubmissionStatus.RECEIVED}


def test_a_failing_batch_in_a_drain_is_redone_one_by_one(user):
    ingest_world()
    stored = [_store(user) for _ in range(3)]
    real = ingest_module._derive_claimed
    calls: list[list[int]] = []

    def batch_fails(ids, claimed_at):  # type: ignore[no-untyped-def]
        calls.append(list(ids))
        if len(ids) > 1:
            raise RuntimeError("a bug that only batches hit")
        return real(ids, claimed_at)

    with mock.patch.object(ingest_module, "_derive_claimed", side_effect=batch_fails):
        assert submissions_drain(batch_size=50) == 3
    assert calls[0] == [s.pk for s in stored]
    assert set(RawSubmission.objects.values_list("status", flat=True)) == {SubmissionStatus.ACCEPTED}
