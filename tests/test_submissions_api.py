"""POST /api/v1/submissions/ and GET /api/v1/submissions/<uuid>/, the upload form and the status page."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from benchmarks_app.models import BenchmarkResult, RawSubmission, ResultAggregate
from tests.factories import UserFactory, body, make_result, submission_document, token_client, with_change
from tests.world import H100_BF16_PEAK, INGEST_WORLD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_tasks")]
WORLD = INGEST_WORLD

URL = "/api/v1/submissions/"


@pytest.fixture
def user():
    return UserFactory(username="alice")


@pytest.fixture
def api(user) -> Client:
    return token_client(user)


def post(api: Client, payload: bytes | str, **extra):
    return api.post(URL, data=payload, content_type="application/json", **extra)


def test_post_goes_from_received_to_accepted(api, world, django_capture_on_commit_callbacks):
    document = submission_document()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = post(api, body(document))
    assert response.status_code == 201, response.content
    assert response.json()["status"] == "received"
    assert len(callbacks) == 1
    status = api.get(f"{URL}{document['run_uuid']}/").json()
    assert status["status"] == "accepted", status
    assert status["gpu"]["slug"] == "h100-sxm5-80-gb"
    assert {r["workload"] for r in status["results"]} == {"matmul", "membw-copy"}
    stored = RawSubmission.objects.get()
    assert stored.payload == body(document).decode()
    assert ResultAggregate.objects.filter(gpu=world.gpus["h100"]).count() == 2
    assert response["Location"] == f"{URL}{document['run_uuid']}/"


def test_repeat_of_a_run_returns_the_stored_submission(api, world, django_capture_on_commit_callbacks):
    payload = body(submission_document())
    with django_capture_on_commit_callbacks(execute=True):
        first = post(api, payload)
    second = post(api, payload)
    assert (first.status_code, second.status_code) == (201, 200)
    assert second.json()["run_uuid"] == first.json()["run_uuid"]
    assert second.json()["status"] == "accepted"
    assert RawSubmission.objects.count() == 1
    assert BenchmarkResult.objects.count() == 2


def test_same_run_uuid_with_another_payload_or_user_is_a_conflict(api, world):
    document = submission_document()
    assert post(api, body(document)).status_code == 201
    changed = with_change(document, ["duration_s"], 121.0)
    response = post(api, body(changed))
    assert response.status_code == 409
    assert "$.run_uuid" in response.json()["errors"]
    stolen = token_client(UserFactory(username="mallory")).post(
        URL, data=body(document), content_type="application/json"
    )
    assert stolen.status_code == 409
    assert RawSubmission.objects.count() == 1


def test_anonymous_and_bad_tokens_cannot_submit(world):
    payload = body(submission_document())
    assert Client().post(URL, data=payload, content_type="application/json").status_code in (401, 403)
    assert (
        Client(HTTP_AUTHORIZATION="Token nope").post(URL, data=payload, content_type="application/json").status_code
        == 401
    )
    assert RawSubmission.objects.count() == 0


def _replace_seconds(token: str) -> bytes:
    """The first result's timing.seconds_total written as ``token`` (not expressible with json.dumps)."""
    text = json.dumps(submission_document())
    assert '"seconds_total": 2.5' in text
    return text.replace('"seconds_total": 2.5', f'"seconds_total": {token}', 1).encode()


BAD_INPUTS = {
    "malformed JSON": (lambda: b'{"schema_version": 1,', "$", "malformed JSON"),
    "not an object": (lambda: b"[1, 2]", "$", "JSON object"),
    "wrong type": (
        lambda: body(with_change(submission_document(), ["results", 0, "gpu_count"], "one")),
        "$.results[0].gpu_count",
        "integer",
    ),
    "missing field": (
        lambda: body({k: v for k, v in submission_document().items() if k != "environment"}),
        "$.environment",
        "required",
    ),
    "NaN": (lambda: _replace_seconds("NaN"), "$", "NaN"),
    "Infinity": (lambda: _replace_seconds("-Infinity"), "$", "Infinity"),
    "number overflowing to infinity": (
        lambda: _replace_seconds("1e999"),
        "$.results[0].timing.seconds_total",
        "finite",
    ),
    "negative timing": (
        lambda: body(with_change(submission_document(), ["results", 0, "repetitions", 3], -1.5)),
        "$.results[0].repetitions[3]",
        "minimum",
    ),
    "zero timing": (
        lambda: body(with_change(submission_document(), ["results", 0, "timing", "seconds_total"], 0)),
        "$.results[0].timing.seconds_total",
        "minimum",
    ),
    "ten times the peak": (
        lambda: body(submission_document(results=[make_result(median=10 * H100_BF16_PEAK)])),
        "$.results[0].median",
        "impossible",
    ),
    "unknown workload": (
        lambda: body(submission_document(results=[make_result(workload="bogus-workload")])),
        "$.results[0].workload",
        "unknown workload",
    ),
    "unit not the workload's": (
        lambda: body(submission_document(results=[make_result(unit="GB/s")])),
        "$.results[0].unit",
        "not the unit",
    ),
    "cpu only": (lambda: body(submission_document(cpu_only=True)), "$.cpu_only", "CPU-only"),
    "mass assignment": (lambda: body(submission_document(status="accepted")), "$.status", "unexpected"),
    "duplicated key": (lambda: b'{"schema_version": 1, "schema_version": 1}', "$", "duplicated key"),
    "deep nesting": (lambda: ("[" * 5000 + "]" * 5000).encode(), "$", "nested"),
    "not UTF-8": (lambda: b'{"a": "\xff\xfe"}', "$", "UTF-8"),
    "median not the window's median": (
        lambda: body(with_change(submission_document(), ["results", 0, "median"], 705.0)),
        "$.results[0].median",
        "not the median",
    ),
    "duplicate result": (
        lambda: body(submission_document(results=[make_result(), make_result()])),
        "$.results[1]",
        "repeats",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(api, world, case):
    make_body, field, reason_part = BAD_INPUTS[case]
    response = post(api, make_body())
    assert response.status_code == 400, (case, response.content)
    errors = response.json()["errors"]
    assert field in errors, (case, errors)
    assert any(reason_part.lower() in reason.lower() for reason in errors[field]), (case, errors[field])
    assert RawSubmission.objects.count() == 0
    assert BenchmarkResult.objects.count() == 0


@override_settings(SUBMISSION_MAX_BYTES=50_000, DATA_UPLOAD_MAX_MEMORY_SIZE=60_000)
def test_payload_over_the_limit_is_refused(api, world):
    document = submission_document(skipped=[{"workload": "matmul", "reason": "x" * 400} for _ in range(150)])
    payload = body(document)
    assert len(payload) > 50_000
    response = post(api, payload)
    assert response.status_code == 413
    assert "limit" in response.json()["errors"]["$"][0]
    assert RawSubmission.objects.count() == 0


def test_html_and_script_are_stored_as_sent_and_shown_escaped(api, user, world, django_capture_on_commit_callbacks):
    script = "<script>alert('x')</script>"
    document = submission_document(name_smi=f"<img src=x onerror=alert(1)>{script}", name_torch="RTX <b>9999</b>")
    document["environment"]["os"] = script
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api, body(document))
    assert response.status_code == 201
    stored = RawSubmission.objects.get()
    assert script in stored.payload
    assert stored.status == "on_hold"
    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/submissions/{document['run_uuid']}/").content.decode()
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_pending_submissions_are_private_decided_ones_public(api, user, world):
    document = submission_document()
    assert post(api, body(document)).status_code == 201  # no on_commit: it stays received
    url = f"{URL}{document['run_uuid']}/"
    assert api.get(url).status_code == 200
    assert Client().get(url).status_code == 404
    other = Client()
    other.force_login(UserFactory(username="bob"))
    assert other.get(url).status_code == 404
    assert other.get(f"/submissions/{document['run_uuid']}/").status_code == 404
    RawSubmission.objects.update(status="accepted")
    assert Client().get(url).json()["status"] == "accepted"
    assert Client().get(f"{URL}{uuid.uuid4()}/").status_code == 404


def test_upload_form_stores_and_redirects_and_refuses_anonymous(user, world, django_capture_on_commit_callbacks):
    document = submission_document()
    anonymous = Client().post("/submit/", {"text": json.dumps(document)})
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    assert RawSubmission.objects.count() == 0
    browser = Client()
    browser.force_login(user)
    assert "gpuatlas-bench run" in browser.get("/submit/").content.decode()
    upload = SimpleUploadedFile("result.json", body(document), content_type="application/json")
    with django_capture_on_commit_callbacks(execute=True):
        response = browser.post("/submit/", {"file": upload})
    assert response.status_code == 302
    assert response["Location"] == f"/submissions/{document['run_uuid']}/"
    stored = RawSubmission.objects.get()
    assert (stored.channel, stored.status, stored.submitter) == ("form", "accepted", user)
    page = browser.get(response["Location"]).content.decode()
    assert 'data-status="accepted"' in page


def test_upload_form_shows_the_field_and_reason(user, world):
    browser = Client()
    browser.force_login(user)
    bad = with_change(submission_document(), ["results", 0, "repetitions", 0], -3)
    response = browser.post("/submit/", {"text": json.dumps(bad)})
    assert response.status_code == 400
    assert "$.results[0].repetitions[0]" in response.content.decode()
    assert RawSubmission.objects.count() == 0


def test_openapi_schema_documents_the_submission_endpoints():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    create = schema["paths"]["/api/v1/submissions/"]["post"]
    assert {"200", "201", "400", "401", "409", "413"} <= set(create["responses"])
    assert "application/json" in create["requestBody"]["content"]
    detail = schema["paths"]["/api/v1/submissions/{run_uuid}/"]["get"]
    assert {"200", "404"} <= set(detail["responses"])
