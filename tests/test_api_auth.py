"""Authorisation and throttling of API v1: anonymous read, staff-only moderation, 429 with Retry-After."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.test import Client, override_settings
from django.utils import translation

from accounts.services import api_token_create
from benchmarks_app.models import BenchmarkResult, RawSubmission, ResultAggregate, SubmissionStatus, TrustLabel
from tests.factories import UserFactory
from tests.world import API_WORLD, RESNET_KEY

pytestmark = pytest.mark.django_db
WORLD = API_WORLD


def token_for(user) -> str:  # type: ignore[no-untyped-def]
    _, key = api_token_create(user=user, name="tests")
    return f"Token {key}"


def post_json(client, url: str, body: object, **headers: str):  # type: ignore[no-untyped-def]
    return client.post(url, data=json.dumps(body), content_type="application/json", **headers)


def curator(*codenames: str, username: str = "curator"):  # type: ignore[no-untyped-def]
    """A staff user with these permissions on raw submissions (the admin's: change by default)."""
    user = get_user_model().objects.create(username=username, is_staff=True)
    for codename in codenames or ("change_rawsubmission",):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


APPROVE = "/api/v1/moderation/submissions/approve/"
REJECT = "/api/v1/moderation/submissions/reject/"
QUEUE = "/api/v1/moderation/submissions/"


def test_reads_are_anonymous(client, world):  # type: ignore[no-untyped-def]
    for url in ("/api/v1/gpus/", "/api/v1/offers/", "/api/v1/rankings/", "/api/v1/results/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.json()["results"], f"{url} answered an anonymous reader with no rows"
    slugs = {row["slug"] for row in client.get("/api/v1/gpus/").json()["results"]}
    assert {world.gpus["h100"].slug, world.gpus["a100"].slug} <= slugs


def test_a_bad_token_is_401_even_on_reads(client, world):  # type: ignore[no-untyped-def]
    response = client.get("/api/v1/gpus/", HTTP_AUTHORIZATION="Token not-a-real-token")
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid or revoked token."}


@pytest.mark.parametrize(("method", "url"), [("get", QUEUE), ("post", APPROVE), ("post", REJECT)])
def test_anonymous_cannot_moderate(client, world, method, url):  # type: ignore[no-untyped-def]
    response = client.get(url) if method == "get" else client.post(url, data="{}", content_type="application/json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize(("method", "url"), [("get", QUEUE), ("post", APPROVE), ("post", REJECT)])
def test_a_user_who_is_not_staff_cannot_moderate(client, world, method, url):  # type: ignore[no-untyped-def]
    auth = token_for(UserFactory(username="someone"))
    if method == "get":
        response = client.get(url, HTTP_AUTHORIZATION=auth)
    else:
        response = post_json(client, url, {"run_uuids": [str(world.submissions[0].run_uuid)]}, HTTP_AUTHORIZATION=auth)
    assert response.status_code == 403
    assert response.json() == {"detail": "You do not have permission to perform this action."}
    world.submissions[0].refresh_from_db()
    assert world.submissions[0].status == SubmissionStatus.FLAGGED


@pytest.mark.parametrize(("method", "url"), [("get", QUEUE), ("post", APPROVE), ("post", REJECT)])
def test_staff_without_the_admins_permissions_cannot_moderate(client, world, method, url):  # type: ignore[no-untyped-def]
    """The admin refuses a staff user with no permission on submissions (403): so does the API."""
    auth = token_for(UserFactory(username="intern", is_staff=True))
    if method == "get":
        response = client.get(url, HTTP_AUTHORIZATION=auth)
    else:
        response = post_json(client, url, {"run_uuids": [str(world.submissions[0].run_uuid)]}, HTTP_AUTHORIZATION=auth)
    assert response.status_code == 403
    world.submissions[0].refresh_from_db()
    assert world.submissions[0].status == SubmissionStatus.FLAGGED


def test_the_view_permission_reads_the_queue_and_only_change_decides(client, world):  # type: ignore[no-untyped-def]
    viewer = token_for(curator("view_rawsubmission", username="viewer"))
    assert client.get(QUEUE, HTTP_AUTHORIZATION=viewer).status_code == 200
    body = {"run_uuids": [str(world.submissions[0].run_uuid)]}
    assert post_json(client, REJECT, body, HTTP_AUTHORIZATION=viewer).status_code == 403
    changer = token_for(curator())
    assert client.get(QUEUE, HTTP_AUTHORIZATION=changer).status_code == 200
    assert post_json(client, REJECT, body, HTTP_AUTHORIZATION=changer).status_code == 200
    world.submissions[0].refresh_from_db()
    assert world.submissions[0].status == SubmissionStatus.REJECTED


def test_anonymous_cannot_submit(client, world):  # type: ignore[no-untyped-def]
    stored = RawSubmission.objects.count()
    response = post_json(client, "/api/v1/submissions/", {})
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {"detail": "Authentication credentials were not provided."}
    assert RawSubmission.objects.count() == stored


def test_staff_approves_a_flagged_submission(client, world):  # type: ignore[no-untyped-def]
    auth = token_for(curator())
    flagged, on_hold, _ = world.submissions
    unknown = "00000000-0000-4000-8000-000000000000"
    before = ResultAggregate.objects.get(gpu=world.gpus["h100"], comparison_key=RESNET_KEY).n
    response = post_json(
        client, APPROVE, {"run_uuids": [str(flagged.run_uuid), str(on_hold.run_uuid), unknown]}, HTTP_AUTHORIZATION=auth
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["changed"] == [str(flagged.run_uuid)]
    assert set(body["skipped"]) == {str(on_hold.run_uuid), unknown}
    assert body["skipped"][unknown] == "no such submission"
    flagged.refresh_from_db()
    assert flagged.status == SubmissionStatus.ACCEPTED
    assert BenchmarkResult.objects.get(submission=flagged).trust == TrustLabel.COMMUNITY
    assert ResultAggregate.objects.get(gpu=world.gpus["h100"], comparison_key=RESNET_KEY).n > before
    remaining = client.get(QUEUE, HTTP_AUTHORIZATION=auth).json()["results"]
    assert [row["run_uuid"] for row in remaining] == [str(on_hold.run_uuid)]


def test_staff_rejects_and_the_results_leave_the_site(client, world):  # type: ignore[no-untyped-def]
    auth = token_for(curator())
    flagged = world.submissions[0]
    response = post_json(client, REJECT, {"run_uuids": [str(flagged.run_uuid)]}, HTTP_AUTHORIZATION=auth)
    assert response.status_code == 200
    assert response.json() == {"changed": [str(flagged.run_uuid)], "skipped": {}}
    assert not BenchmarkResult.objects.filter(submission=flagged).exists()
    flagged.refresh_from_db()
    assert flagged.status == SubmissionStatus.REJECTED
    assert flagged.payload == "{}"  # the raw submission is kept as received


@pytest.mark.parametrize(
    "body",
    [{}, {"run_uuids": []}, {"run_uuids": ["not-a-uuid"]}, {"run_uuids": [False]}, {"run_uuids": "x"}, [1, 2]],
)
def test_bad_decision_bodies_are_400_naming_the_field(client, world, body):  # type: ignore[no-untyped-def]
    auth = token_for(curator())
    response = post_json(client, APPROVE, body, HTTP_AUTHORIZATION=auth)
    assert response.status_code == 400
    assert set(response.json()["errors"]) <= {"run_uuids", "non_field_errors"}
    world.submissions[0].refresh_from_db()
    assert world.submissions[0].status == SubmissionStatus.FLAGGED


def test_too_many_decisions_at_once_is_400(client, world):  # type: ignore[no-untyped-def]
    auth = token_for(curator())
    body = {"run_uuids": [f"00000000-0000-4000-8000-{index:012d}" for index in range(501)]}
    response = post_json(client, APPROVE, body, HTTP_AUTHORIZATION=auth)
    assert response.status_code == 400
    assert "run_uuids" in response.json()["errors"]


def test_a_staff_session_needs_csrf_to_moderate(world):  # type: ignore[no-untyped-def]
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator())
    response = post_json(client, APPROVE, {"run_uuids": [str(world.submissions[0].run_uuid)]})
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def _rates(**rates: str) -> dict:
    config = dict(settings.REST_FRAMEWORK)
    config["DEFAULT_THROTTLE_RATES"] = {"anon": "1000/min", "user": "1000/min", "submissions": "1000/min", **rates}
    return config


def test_anonymous_throttle_answers_429_with_retry_after(client, world):  # type: ignore[no-untyped-def]
    with override_settings(REST_FRAMEWORK=_rates(anon="3/min")):
        cache.clear()
        statuses = [client.get("/api/v1/ping/").status_code for _ in range(4)]
        throttled = client.get("/api/v1/gpus/")
    assert statuses == [200, 200, 200, 429]
    assert throttled.status_code == 429
    # A burst counts against the next minute too (accounts.throttles.WindowRateThrottle: the limit
    # holds over any sliding minute), so the wait may pass the end of this one.
    assert 0 < int(throttled["Retry-After"]) <= 120
    assert "detail" in throttled.json()


def test_users_have_their_own_allowance(client, world):  # type: ignore[no-untyped-def]
    auth = token_for(UserFactory(username="reader"))
    with override_settings(REST_FRAMEWORK=_rates(anon="1/min", user="2/min")):
        cache.clear()
        assert client.get("/api/v1/ping/").status_code == 200
        assert client.get("/api/v1/ping/").status_code == 429
        assert [client.get("/api/v1/ping/", HTTP_AUTHORIZATION=auth).status_code for _ in range(3)] == [200, 200, 429]


def test_submissions_have_a_stricter_burst_limit(client, world):  # type: ignore[no-untyped-def]
    auth = token_for(UserFactory(username="submitter2"))
    with override_settings(REST_FRAMEWORK=_rates(submissions="2/min")):
        cache.clear()
        posts = [post_json(client, "/api/v1/submissions/", {}, HTTP_AUTHORIZATION=auth) for _ in range(3)]
        # Reads are not limited by the burst scope, and neither are other endpoints.
        status_reads = [
            client.get(f"/api/v1/submissions/{world.submissions[2].run_uuid}/", HTTP_AUTHORIZATION=auth).status_code
            for _ in range(3)
        ]
        other = client.get("/api/v1/gpus/", HTTP_AUTHORIZATION=auth)
    assert [p.status_code for p in posts[:2]] == [400, 400]  # an empty document is invalid, but counted
    assert posts[2].status_code == 429
    assert int(posts[2]["Retry-After"]) > 0
    assert status_reads == [200, 200, 200]
    assert other.status_code == 200


def test_a_refused_scope_records_nothing_while_the_others_still_count(client, world):  # type: ignore[no-untyped-def]
    auth = token_for(UserFactory(username="submitter3"))
    with override_settings(REST_FRAMEWORK=_rates(user="4/min", submissions="1/min")):
        cache.clear()
        posts = [post_json(client, "/api/v1/submissions/", {}, HTTP_AUTHORIZATION=auth).status_code for _ in range(3)]
        reads = [client.get("/api/v1/ping/", HTTP_AUTHORIZATION=auth).status_code for _ in range(3)]
    # Every request spends the user scope (4 in a minute), refused ones included, as in DRF:
    # POST 1 (user 1, burst 1), POST 2 and 3 refused by the burst scope (user 2, 3), read 1
    # (user 4), then the user scope refuses.
    assert posts == [400, 429, 429]
    assert reads == [200, 429, 429]


def test_retry_after_is_the_longest_wait_among_the_refusing_scopes(client, world):  # type: ignore[no-untyped-def]
    auth = token_for(UserFactory(username="submitter4"))
    with override_settings(REST_FRAMEWORK=_rates(user="1/hour", submissions="1/min")):
        cache.clear()
        post_json(client, "/api/v1/submissions/", {}, HTTP_AUTHORIZATION=auth)
        refused = post_json(client, "/api/v1/submissions/", {}, HTTP_AUTHORIZATION=auth)
    assert refused.status_code == 429
    # One an hour: the next passes once the hour of the first has wholly slid out, within two hours.
    assert 60 < int(refused["Retry-After"]) <= 7200


def test_the_window_slides(client, world, monkeypatch):  # type: ignore[no-untyped-def]
    # The sliding-window counter (accounts.throttles.WindowRateThrottle): the count of this fixed
    # minute plus the previous minute's, weighed by the share of it still inside the sliding minute.
    from rest_framework import throttling

    clock = [1_000_000.0]  # 40 s into the minute that starts at 999,960
    monkeypatch.setattr(throttling.SimpleRateThrottle, "timer", staticmethod(lambda: clock[0]))
    auth = token_for(UserFactory(username="clocked"))
    statuses = []
    with override_settings(REST_FRAMEWORK=_rates(user="2/min")):
        cache.clear()
        for moment in (0.0, 10.0, 20.0, 61.0, 62.0, 71.0):
            clock[0] = 1_000_000.0 + moment
            response = client.get("/api/v1/ping/", HTTP_AUTHORIZATION=auth)
            statuses.append((response.status_code, response.get("Retry-After")))
    # 0 and 10 pass. At 20 a new minute starts with the previous one's 2 wholly inside: refused
    # until half of it has slid out (30 s). At 61, 2 x 19/60 + 1 passes; at 62, 2 x 18/60 + 2 is
    # over until this minute ends (18 s), and at 71 still (9 s).
    assert [status for status, _wait in statuses] == [200, 200, 429, 200, 429, 429]
    waits = [int(wait) for status, wait in statuses if status == 429]
    assert all(expected <= wait <= expected + 1 for wait, expected in zip(waits, (30, 18, 9), strict=True)), waits


def test_throttles_let_requests_through_when_redis_is_down(client, world, caplog):  # type: ignore[no-untyped-def]
    dead = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}}
    auth = token_for(UserFactory(username="offline"))
    with override_settings(CACHES=dead, REST_FRAMEWORK=_rates(user="1/min", submissions="1/min")):
        statuses = [client.get("/api/v1/ping/", HTTP_AUTHORIZATION=auth).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    assert "throttle check failed in Redis" in caplog.text


def test_a_submission_status_is_labelled_in_the_asked_language(client, world):  # type: ignore[no-untyped-def]
    submission = world.submissions[0]
    url = f"/api/v1/submissions/{submission.run_uuid}/"
    english = client.get(url, HTTP_ACCEPT_LANGUAGE="en").json()
    chinese = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    expected = SubmissionStatus(submission.status)
    assert english["status"] == chinese["status"] == submission.status
    with translation.override("en"):
        assert english["status_display"] == str(expected.label)
    with translation.override("zh-hans"):
        assert chinese["status_display"] == str(expected.label) != english["status_display"]
