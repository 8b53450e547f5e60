"""A frozen Redis (SIGSTOP: connections open, nothing answered) costs a request a bounded time.

Before: during a 20 s freeze a submission POST took 17 s, and only 5 requests completed. Now
every Redis call has a socket timeout: the cache answers a miss within CACHE_TIMEOUT_MS (500 ms);
a submission whose ingest cannot be queued within two tries of BROKER_TIMEOUT_S (2 s) answers
503 "try again" within a few seconds, stays stored, and is ingested once the broker answers
(the sweeper queues it; the client's retry answers 200 with it). Frozen Redis here is a private
redis-server stopped with SIGSTOP, never the machine's shared Redis.
"""

from __future__ import annotations

import json
import os
import signal
import time
from types import SimpleNamespace

import pytest
from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from kombu.exceptions import OperationalError

from accounts.services import api_token_create
from benchmarks_app.models import RawSubmission, SubmissionStatus
from benchmarks_app.services import intake as intake_module
from benchmarks_app.tasks import ingest_submission, submission_enqueue, submissions_enqueue
from gpuatlas import broker
from gpuatlas.cache import DegradingRedisCache, cache_settings
from gpuatlas.data_version import BUMP_TASK
from gpuatlas.followups import followup_run
from tests.factories import body, make_result, submission_document
from tests.redis_server import needs_redis_server, private_redis  # noqa: F401
from tests.reliability_support import celery_worker, helper, wait_until
from tests.world import INGEST_WORLD

WORLD = INGEST_WORLD


class frozen:  # noqa: N801 - reads as a state: "with frozen(redis):"
    """SIGSTOP the private redis-server for the block, SIGCONT after."""

    def __init__(self, server) -> None:  # type: ignore[no-untyped-def]
        self.pid = server.process.pid

    def __enter__(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def __exit__(self, *exc: object) -> None:
        os.kill(self.pid, signal.SIGCONT)


@needs_redis_server
def test_a_frozen_cache_is_a_miss_within_the_cache_timeout(private_redis) -> None:  # noqa: F811
    params = cache_settings(private_redis.url, timeout_s=settings.CACHE_TIMEOUT_MS / 1000)
    cache = DegradingRedisCache(params["LOCATION"], params)
    cache.set("page", "body", 60)
    assert cache.get("page") == "body"
    with frozen(private_redis):
        started = time.monotonic()
        assert cache.get("page", "miss") == "miss"
        first = time.monotonic() - started
        started = time.monotonic()
        assert cache.get("page", "miss") == "miss"  # the process leaves the cache alone a while
        second = time.monotonic() - started
    assert first < 1.0, f"a frozen cache held a read {first:.2f} s"
    assert second < 0.05


@pytest.mark.django_db(transaction=True)
def test_a_submission_whose_ingest_cannot_be_queued_answers_503_then_its_retry_200(world, client, monkeypatch) -> None:
    monkeypatch.setattr(intake_module, "submission_enqueue", lambda *, submission_id: False)
    _, key = api_token_create(user=get_user_model().objects.create(username="queue-down"), name="t")
    document = submission_document(results=[make_result(median=600.0)])
    posted = [
        client.post("/api/v1/submissions/", data=body(document), content_type="application/json",
                    HTTP_AUTHORIZATION=f"Token {key}")
        for _attempt in range(2)
    ]  # fmt: skip
    assert posted[0].status_code == 503 and posted[0]["Retry-After"] == "30"
    assert "Try again" in posted[0].json()["detail"] and posted[0]["Location"].endswith(f"{document['run_uuid']}/")
    assert posted[1].status_code == 200 and posted[1].json()["status"] == "received"
    assert RawSubmission.objects.filter(run_uuid=document["run_uuid"], status=SubmissionStatus.RECEIVED).count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_upload_whose_ingest_cannot_be_queued_says_it_waits_for_the_queue(world, client, monkeypatch) -> None:
    monkeypatch.setattr(intake_module, "submission_enqueue", lambda *, submission_id: False)
    client.force_login(get_user_model().objects.create(username="queue-down-form"))
    document = submission_document(results=[make_result(median=600.0)])
    page = client.post("/submit/", {"text": json.dumps(document)}, follow=True)
    assert page.status_code == 200 and "the ingest queue is not answering" in page.content.decode()
    assert RawSubmission.objects.filter(run_uuid=document["run_uuid"], status=SubmissionStatus.RECEIVED).count() == 1


def test_after_a_failed_publish_the_process_leaves_the_broker_alone_for_a_while(monkeypatch) -> None:
    """A frozen broker costs one publish's timeouts per process and period, not one per submission
    (a sweep of ten stored submissions asked it ten times, 2-6 s each)."""
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    clock = [1000.0]
    monkeypatch.setattr(broker, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(broker, "_publish_down_until", [0.0])
    asked: list[int] = []

    def frozen_publish(submission_id: int) -> None:
        asked.append(submission_id)
        raise OperationalError("Timeout reading from socket")

    monkeypatch.setattr(ingest_submission, "delay", frozen_publish)
    assert submissions_enqueue(submission_ids=range(1, 11)) == []
    assert asked == [1]  # the other nine were not queued at once: stored, the next sweep queues them
    bump = current_app.tasks[BUMP_TASK]
    monkeypatch.setattr(bump, "apply_async", lambda **_: asked.append(-1))
    assert followup_run(BUMP_TASK) is False and asked == [1]
    clock[0] += broker.PUBLISH_RETRY_AFTER_S
    assert submission_enqueue(submission_id=11) is False and asked == [1, 11]  # asked again after the period
    clock[0] += broker.PUBLISH_RETRY_AFTER_S
    assert followup_run(BUMP_TASK) is True and asked == [1, 11, -1]


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.celery_worker
@needs_redis_server
@pytest.mark.django_db(transaction=True)
def test_a_frozen_broker_answers_503_quickly_and_loses_nothing(world, private_redis, tmp_path) -> None:  # noqa: F811
    _, key = api_token_create(user=get_user_model().objects.create(username="frozen-broker"), name="t")
    with frozen(private_redis):
        during = helper(["intake", "--count", "2", f"--token={key}"], private_redis.url)
    assert [r["status_code"] for r in during] == [503, 503], during
    slowest = max(r["seconds"] for r in during)
    assert slowest < 8, f"a submission waited {slowest:.1f} s for the frozen broker"
    # The process left the broker alone after the first failure (gpuatlas.broker.publish_guarded).
    assert during[1]["seconds"] < 1.5, during
    run_uuids = [r["run_uuid"] for r in during]
    assert RawSubmission.objects.filter(run_uuid__in=run_uuids, status=SubmissionStatus.RECEIVED).count() == 2

    worker = celery_worker(private_redis.url, tmp_path / "worker.log")
    try:

        def decided() -> bool:
            return not RawSubmission.objects.filter(run_uuid__in=run_uuids, status=SubmissionStatus.RECEIVED).exists()

        assert wait_until(decided, timeout=90, sweep=lambda: helper(["sweep"], private_redis.url)), "never ingested"
    finally:
        worker.stop()
    assert RawSubmission.objects.filter(run_uuid__in=run_uuids).count() == 2
