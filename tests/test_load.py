"""Load, bounded and on loopback: 50 concurrent submitters for 60 seconds while readers hit the
rankings, against a real gunicorn server and a real Celery worker (PostgreSQL, private Redis).

Afterwards every accepted POST (201) has exactly one stored submission and one outcome (accepted,
flagged or rejected, with its results written once). The counts are printed.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter

import pytest
from django.contrib.auth import get_user_model

from accounts.services import api_token_create
from benchmarks_app.models import BenchmarkResult, RawSubmission, SubmissionStatus
from benchmarks_app.services.peers import live_peers
from benchmarks_app.services.snapshot import catalog_snapshot_clear
from tests.factories import body, make_result, submission_document
from tests.redis_server import PrivateRedis, free_port, needs_redis_server
from tests.reliability_support import celery_worker, gunicorn_server, helper
from tests.world import INGEST_WORLD, world_build

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.celery_worker, needs_redis_server]

SUBMITTERS = 50
READERS = 5
DURATION_S = 60
DECIDED = (SubmissionStatus.ACCEPTED, SubmissionStatus.FLAGGED, SubmissionStatus.REJECTED)


def wait_for_server(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server on port {port} did not start")


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.posts: Counter[int | str] = Counter()
        self.reads: Counter[int | str] = Counter()
        self.created: list[str] = []
        self.other: list[str] = []  # sent, but no 201 seen (an error or a timeout)


def submitter(port: int, key: str, stop: float, tally: Tally, seed: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    index = 0
    while time.monotonic() < stop:
        index += 1
        document = submission_document(
            results=[make_result(median=600.0 + (seed * 7 + index) % 80), make_result(precision="fp16", median=640.0)]
        )
        headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}
        try:
            connection.request("POST", "/api/v1/submissions/", body=body(document), headers=headers)
            response = connection.getresponse()
            response.read()
            outcome: int | str = response.status
        except (OSError, http.client.HTTPException) as exc:
            outcome = type(exc).__name__
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        with tally.lock:
            tally.posts[outcome] += 1
            (tally.created if outcome == 201 else tally.other).append(document["run_uuid"])
    connection.close()


def reader(port: int, stop: float, tally: Tally) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    paths = ["/api/v1/rankings/", "/api/v1/rankings/?use_case=inference-16bit", "/api/v1/results/"]
    index = 0
    while time.monotonic() < stop:
        index += 1
        try:
            connection.request("GET", paths[index % len(paths)])
            response = connection.getresponse()
            response.read()
            outcome: int | str = response.status
        except (OSError, http.client.HTTPException) as exc:
            outcome = type(exc).__name__
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        with tally.lock:
            tally.reads[outcome] += 1
    connection.close()


def test_50_submitters_for_60_seconds_lose_and_duplicate_nothing(transactional_db, tmp_path):
    catalog_snapshot_clear()
    live_peers.clear()
    world_build(rows=INGEST_WORLD)
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"load-{index}") for index in range(SUBMITTERS)]
    )
    keys = [api_token_create(user=user, name="load")[1] for user in users]

    redis = PrivateRedis(tmp_path)
    redis.start()
    port = free_port()
    server = gunicorn_server(redis.url, port, tmp_path / "gunicorn.log")
    worker = celery_worker(redis.url, tmp_path / "worker.log")
    tally = Tally()
    try:
        wait_for_server(port)
        stop = time.monotonic() + DURATION_S
        threads = [
            threading.Thread(target=submitter, args=(port, keys[i], stop, tally, i)) for i in range(SUBMITTERS)
        ] + [threading.Thread(target=reader, args=(port, stop, tally)) for _ in range(READERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=DURATION_S + 60)
        assert not any(thread.is_alive() for thread in threads)

        created = tally.created
        assert created, tally.posts

        def decided() -> int:
            return RawSubmission.objects.filter(run_uuid__in=created, status__in=DECIDED).count()

        deadline = time.monotonic() + 240
        while decided() < len(created) and time.monotonic() < deadline:
            time.sleep(2)
            if decided() < len(created):
                helper(["sweep", "--ahead", "400"], redis.url)
        backlog_s = 240 - (deadline - time.monotonic())
    finally:
        worker.stop()
        server.stop()
        redis.stop()

    rows = list(RawSubmission.objects.filter(run_uuid__in=created).values_list("pk", "run_uuid", "status"))
    stored_uuids = Counter(str(run_uuid) for _, run_uuid, _ in rows)
    lost = [u for u in created if stored_uuids[u] == 0]
    duplicated = [u for u, n in stored_uuids.items() if n > 1]
    statuses = Counter(status for _, _, status in rows)
    per_submission = Counter(
        BenchmarkResult.objects.filter(submission_id__in=[pk for pk, _, _ in rows]).values_list(
            "submission_id", flat=True
        )
    )
    wrong_results = [
        run_uuid
        for pk, run_uuid, status in rows
        if per_submission.get(pk, 0) != (0 if status == SubmissionStatus.REJECTED else 2)
    ]
    stored_without_201 = RawSubmission.objects.filter(run_uuid__in=tally.other).count()
    print(
        f"\nload test: {SUBMITTERS} submitters + {READERS} readers for {DURATION_S}s on loopback "
        f"(gunicorn 3x8, one worker -c 2): POSTs {dict(tally.posts)}, reads {dict(tally.reads)}; "
        f"{len(created)} accepted POSTs -> {len(rows)} stored, outcomes {dict(statuses)}, "
        f"all decided {backlog_s:.0f}s after the load; lost {len(lost)}, duplicated {len(duplicated)}, "
        f"wrong result counts {len(wrong_results)}; {stored_without_201} stored without a 201 seen"
    )
    assert not lost and not duplicated
    assert set(statuses) <= set(DECIDED), statuses
    assert not wrong_results
    assert not any(isinstance(code, int) and code >= 500 for code in [*tally.posts, *tally.reads]), (
        tally.posts,
        tally.reads,
    )
    assert tally.reads[200] > 0
    # A reply lost to a timeout may still have been stored: at most once, never twice.
    assert all(n == 1 for n in Counter(RawSubmission.objects.values_list("run_uuid", flat=True)).values())
    assert json.dumps(dict(statuses))  # counts are plain data for the note
