"""The bad-input corpus (tests/badinput/) against the submission API, the upload form, the price
importers and the fit calculator.

Every case must get a clear refusal naming the problem (a 4xx naming the field and the reason,
or a per-row rejection with its line and reason) and leave nothing half-written: row counts are
compared before and after. The module prints how many bad inputs it tried and how many were
refused as expected (the figure for the reliability note).
"""

from __future__ import annotations

import copy
import html
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client, override_settings
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, RawSubmission, ResultAggregate, SubmissionStatus
from benchmarks_app.services.ingest import submission_ingest
from catalog.models import ImportRun, Offer, PriceObservation, Provider
from catalog.services.prices import price_import_file
from tests.factories import UserFactory, body, make_result, submission_document, token_client
from tests.world import H100_BF16_PEAK, INGEST_WORLD, PRICE_WORLD, world_build

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("ingest_in_process")]
WORLD = INGEST_WORLD

CORPUS = Path(__file__).resolve().parent / "badinput"
MANIFEST = json.loads((CORPUS / "submissions.json").read_text(encoding="utf-8"))
FIT_CASES = json.loads((CORPUS / "fit_queries.json").read_text(encoding="utf-8"))["cases"]
PRICE_EXPECTED = json.loads((CORPUS / "prices" / "expected.json").read_text(encoding="utf-8"))
USERNAMES = json.loads((CORPUS / "usernames.json").read_text(encoding="utf-8"))
API = "/api/v1/submissions/"

TRIED: Counter[str] = Counter()
REFUSED: Counter[str] = Counter()


def tally(area: str, refused: bool) -> None:
    """Count one bad input as tried; it counts as refused once its test reaches tally_done()."""
    TRIED[area] += 1
    PENDING.append((area, refused))


def tally_done() -> None:
    """Called as a test's last line: every assertion about its inputs held."""
    for area, refused in PENDING:
        REFUSED[area] += int(refused)
    PENDING.clear()


PENDING: list[tuple[str, bool]] = []


@pytest.fixture(autouse=True)
def _forget_unfinished_tallies():  # type: ignore[no-untyped-def]
    PENDING.clear()
    yield
    PENDING.clear()


@pytest.fixture(autouse=True, scope="module")
def _report_figures(request):  # type: ignore[no-untyped-def]
    yield
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if capture is None or not TRIED:
        return
    with capture.global_and_fixture_disabled():
        print(
            f"\nbad-input corpus: {sum(TRIED.values())} bad inputs tried, {sum(REFUSED.values())} refused as expected"
        )
        for area in sorted(TRIED):
            print(f"  {area:28s} {REFUSED[area]:4d} / {TRIED[area]:4d}")


@pytest.fixture
def user():
    return UserFactory(username="corpus")


@pytest.fixture
def api(user) -> Client:
    return token_client(user, raise_request_exception=False)


def stored_counts() -> tuple[int, int, int]:
    return RawSubmission.objects.count(), BenchmarkResult.objects.count(), ResultAggregate.objects.count()


# --------------------------------------------------------------------------- building the cases


def _special(value: Any) -> Any:
    if not isinstance(value, str) or not value.startswith("@"):
        return value
    kind, _, argument = value[1:].partition(":")
    if kind == "long":
        return "x" * int(argument)
    if kind == "result":
        return make_result(median=float(argument))
    if kind == "params":
        return {f"junk_{i:02d}": i for i in range(int(argument))}
    if kind == "results":
        # As many matmul results, each with its own params (m = 1, 2, ...).
        return [make_result(params={"size": "fixed", "m": i + 1, "n": 8192, "k": 8192}) for i in range(int(argument))]
    if kind == "deep":
        nested: Any = []
        for _ in range(int(argument)):
            nested = [nested]
        return nested
    raise ValueError(f"unknown corpus value {value!r}")


def mutated_body(case: dict[str, Any]) -> bytes:
    document = submission_document()
    for path, value in case.get("sets", [case["set"]] if "set" in case else []):
        node = document
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = copy.deepcopy(_special(value))
    if "delete" in case:
        node = document
        for part in case["delete"][:-1]:
            node = node[part]
        del node[case["delete"][-1]]
    text = json.dumps(document)
    if "text" in case:
        old, new = case["text"]
        assert old in text, (case["name"], old)
        text = text.replace(old, new, 1)
    return text.encode()


SUBMISSION_CASES: dict[str, tuple[bytes | None, dict[str, Any]]] = {}
for _raw in MANIFEST["raw"]:
    SUBMISSION_CASES[f"raw:{_raw['file']}"] = (None, _raw)
for _mutation in MANIFEST["mutations"]:
    SUBMISSION_CASES[f"mutation:{_mutation['name']}"] = (None, _mutation)


def case_body(name: str) -> bytes:
    _, case = SUBMISSION_CASES[name]
    if name.startswith("raw:"):
        return (CORPUS / "submissions" / case["file"]).read_bytes()
    return mutated_body(case)


def assert_names_the_problem(errors: dict[str, list[str]], case: dict[str, Any]) -> None:
    assert case["field"] in errors, (case, errors)
    fragments = case.get("reason", "").lower().split("|")
    assert any(f in reason.lower() for f in fragments for reason in errors[case["field"]]), (
        case,
        errors[case["field"]],
    )


# --------------------------------------------------------------------------- submission API


@pytest.mark.parametrize("name", sorted(SUBMISSION_CASES))
def test_submission_api_refuses_the_case_and_stores_nothing(api, world, name):
    _, case = SUBMISSION_CASES[name]
    before = stored_counts()
    response = api.post(API, data=case_body(name), content_type="application/json")
    refused = response.status_code == case.get("status", 400)
    tally("submission API", refused)
    assert refused, (name, response.status_code, response.content[:300])
    payload = response.json()
    assert payload["detail"] and case["field"] in payload["detail"]
    assert_names_the_problem(payload["errors"], case)
    assert stored_counts() == before
    tally_done()


def test_a_body_over_the_default_limit_is_413_and_nothing_is_stored(api, world):
    from django.conf import settings

    document = submission_document(skipped=[{"workload": "matmul", "reason": "x" * 1000}] * 1100)
    payload = body(document)
    assert len(payload) > settings.SUBMISSION_MAX_BYTES
    response = api.post(API, data=payload, content_type="application/json")
    tally("submission API", response.status_code == 413)
    assert response.status_code == 413
    assert "limit" in response.json()["errors"]["$"][0]
    # A client that announces an oversized body is refused before it is read.
    announced = api.post(API, data=b"{}", content_type="application/json", CONTENT_LENGTH="5000000")
    tally("submission API", announced.status_code == 413)
    assert announced.status_code == 413
    assert stored_counts() == (0, 0, 0)
    tally_done()


@override_settings(SUBMISSION_MAX_BYTES=20_000, DATA_UPLOAD_MAX_MEMORY_SIZE=30_000)
def test_one_byte_over_a_configured_limit_is_413(api, world):
    text = json.dumps(submission_document())
    at_limit = (text[:-1] + " " * (20_000 - len(text.encode())) + "}").encode()
    assert len(at_limit) == 20_000
    assert api.post(API, data=at_limit, content_type="application/json").status_code == 201
    over = json.dumps(submission_document())
    over_limit = (over[:-1] + " " * (20_001 - len(over.encode())) + "}").encode()
    response = api.post(API, data=over_limit, content_type="application/json")
    tally("submission API", response.status_code == 413)
    assert response.status_code == 413
    assert RawSubmission.objects.count() == 1  # only the one at the limit
    tally_done()


# --------------------------------------------------------------------------- oversized bodies, every endpoint

# Every view that takes a body (and a page and an API list that take none): (path, who, kind).
OVERSIZED_TARGETS = [
    ("/api/v1/submissions/", "token", "api"),
    ("/api/v1/moderation/submissions/approve/", "staff", "api"),
    ("/api/v1/moderation/submissions/reject/", "staff", "api"),
    ("/api/v1/gpus/", "anonymous", "api"),
    ("/submit/", "user", "form"),
    ("/accounts/", "user", "form"),
    ("/accounts/tokens/1/revoke/", "user", "form"),
    ("/accounts/signup/", "anonymous", "form"),
    ("/accounts/login/", "anonymous", "form"),
    ("/accounts/logout/", "user", "form"),
    ("/i18n/setlang/", "anonymous", "form"),
    ("/admin/login/", "anonymous", "form"),
    ("/admin/benchmarks_app/rawsubmission/", "staff", "form"),
    ("/", "anonymous", "form"),
]


@pytest.mark.parametrize(("path", "who", "kind"), OVERSIZED_TARGETS, ids=[t[0] for t in OVERSIZED_TARGETS])
@pytest.mark.parametrize("encoding", ["multipart", "json"])
def test_an_oversized_body_is_a_413_with_a_message_logged_as_a_warning(path, who, kind, encoding, caplog):
    """Every endpoint and form: 413 saying what the limit is (JSON under /api/, a page elsewhere),
    one warning and no error or traceback in the log, nothing stored."""
    from django.conf import settings

    client = Client(raise_request_exception=False)
    if who == "token":
        client = token_client(UserFactory(username="big"), raise_request_exception=False)
    elif who in ("user", "staff"):
        client.force_login(UserFactory(username=who, is_staff=who == "staff", is_superuser=who == "staff"))
    size = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1
    before = RawSubmission.objects.count()
    with caplog.at_level("INFO"):
        if encoding == "multipart":
            response = client.post(path, {"text": "x" * size})
        else:
            response = client.post(path, data=b"[" + b" " * size + b"]", content_type="application/json")
    refused = response.status_code == 413
    tally("oversized bodies", refused)
    assert refused, (path, response.status_code, response.content[:200])
    limit = f"the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"
    if kind == "api":
        payload = response.json()
        assert payload["detail"].startswith("Request body too large") and limit in payload["errors"]["$"][0]
    else:
        assert response["Content-Type"].startswith("text/html")
        page = html.unescape(response.content.decode())
        assert "Request too large" in page and limit in page
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info], caplog.text
    assert [r for r in caplog.records if r.levelno == logging.WARNING and "refused" in r.getMessage()]
    assert RawSubmission.objects.count() == before
    tally_done()


def test_a_body_found_too_large_while_read_is_a_413_too(caplog):
    """A body whose Content-Length was within the limit but read as too large (a stream without
    a length): the view's RequestDataTooBig becomes the same 413, also logged as a warning."""
    from django.core.exceptions import RequestDataTooBig
    from django.test import RequestFactory

    from gpuatlas.request_limits import RequestBodyLimitMiddleware

    middleware = RequestBodyLimitMiddleware(lambda request: None)  # type: ignore[arg-type,return-value]
    request = RequestFactory().post("/api/v1/submissions/", data=b"{}", content_type="application/json")
    with caplog.at_level("INFO"):
        response = middleware.process_exception(request, RequestDataTooBig("too big"))
    assert response is not None and response.status_code == 413
    assert "over the limit" in json.loads(response.content)["errors"]["$"][0]
    assert middleware.process_exception(request, ValueError("other")) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


# --------------------------------------------------------------------------- duplicated run UUIDs


def api_post_as(username: str, document: dict[str, Any]) -> Any:
    """POST a submission with a token of a new user ``username``."""
    return token_client(UserFactory(username=username)).post(API, data=body(document), content_type="application/json")


def form_post_as(username: str, document: dict[str, Any]) -> Any:
    """Paste a submission into /submit/ as a new signed-in user ``username``."""
    browser = Client()
    browser.force_login(UserFactory(username=username))
    return browser.post("/submit/", {"text": json.dumps(document)})


def test_duplicated_run_uuids_never_make_a_second_submission(api, world, django_capture_on_commit_callbacks):
    document = submission_document()
    with django_capture_on_commit_callbacks(execute=True):
        first = api.post(API, data=body(document), content_type="application/json")
    assert first.status_code == 201
    repeat = api.post(API, data=body(document), content_type="application/json")
    assert repeat.status_code == 200 and repeat.json()["run_uuid"] == document["run_uuid"]
    changed = copy.deepcopy(document)
    changed["duration_s"] = 99.0
    conflict = api.post(API, data=body(changed), content_type="application/json")
    stolen = api_post_as("other", document)
    via_form = form_post_as("formuser", changed)
    for response in (conflict, stolen):
        tally("duplicated run UUID", response.status_code == 409)
        assert response.status_code == 409
        assert "$.run_uuid" in response.json()["errors"]
    tally("duplicated run UUID", via_form.status_code == 409)
    assert via_form.status_code == 409 and "$.run_uuid" in via_form.content.decode()
    assert RawSubmission.objects.filter(run_uuid=document["run_uuid"]).count() == 1
    submission = RawSubmission.objects.get()
    assert submission.payload == body(document).decode()  # the first payload, untouched
    assert BenchmarkResult.objects.filter(submission=submission).count() == 2
    tally_done()


def test_an_invalid_body_with_someone_elses_run_uuid_is_a_400_for_the_body_not_a_409(api, world):
    """Only a valid body reaches the run-UUID ownership check: an invalid one learns nothing about
    whether the UUID is taken (no existence oracle), through the API or the upload form."""
    document = submission_document()
    assert api.post(API, data=body(document), content_type="application/json").status_code == 201
    invalid = copy.deepcopy(document)
    invalid["results"][0]["params"]["m"] = -1
    probe = api_post_as("prober", invalid)
    via_form = form_post_as("formprober", invalid)
    # The owner's own invalid variant is a 400 for the body too.
    own = api.post(API, data=body(invalid), content_type="application/json")
    for response in (probe, own):
        tally("run UUID oracle", response.status_code == 400)
        assert response.status_code == 400
        assert set(response.json()["errors"]) == {"$.results[0].params.m"}
    page = html.unescape(via_form.content.decode())
    tally("run UUID oracle", via_form.status_code == 400)
    assert via_form.status_code == 400 and "$.results[0].params.m: " in page and "someone else" not in page
    assert RawSubmission.objects.count() == 1
    tally_done()


# --------------------------------------------------------------------------- stored under older rules


def test_rebuild_rejects_stored_rows_that_todays_rules_refuse_and_keeps_them_as_received(world):
    """Rows stored before a rule existed (inserted here as they would have been): a rebuild must
    not crash on them; each is rejected with the reason naming the field, its payload untouched,
    and no result of it stays public. A valid row beside them is re-derived as accepted."""
    from benchmarks_app.services.payload import payload_sha256
    from benchmarks_app.services.rebuild import results_rebuild

    rows, texts = {}, {}
    for name in sorted(n for n in SUBMISSION_CASES if n.startswith("mutation:")):
        text = texts[name] = case_body(name).decode("utf-8")
        rows[name] = RawSubmission.objects.create(
            payload=text, sha256=payload_sha256(text), status=SubmissionStatus.ACCEPTED, processed_at=timezone.now()
        )
    good_text = body(submission_document()).decode()
    good = RawSubmission.objects.create(
        payload=good_text,
        sha256=payload_sha256(good_text),
        status=SubmissionStatus.ACCEPTED,
        processed_at=timezone.now(),
    )

    summary = results_rebuild(lab_path=None)

    assert summary.failed == {}
    for name, row in rows.items():
        _, case = SUBMISSION_CASES[name]
        row.refresh_from_db()
        fields = {r["field"] for r in row.reasons if r["verdict"] == "rejected"}
        refused = row.status == SubmissionStatus.REJECTED and case["field"] in fields
        tally("rebuild of stored rows", refused)
        assert refused, (name, row.status, row.reasons)
        assert row.payload == texts[name]
        assert str(row.run_uuid) in summary.newly_rejected
    good.refresh_from_db()
    assert good.status == SubmissionStatus.ACCEPTED
    assert set(BenchmarkResult.objects.values_list("submission_id", flat=True)) == {good.pk}
    tally_done()


# --------------------------------------------------------------------------- above the peak, found at ingest


def test_a_result_above_the_peak_is_rejected_at_ingest_with_the_reason(api, world):
    """Between the tolerance and the intake factor: stored, then rejected by the ingest, no results."""
    document = submission_document(results=[make_result(median=1.5 * H100_BF16_PEAK)])
    response = api.post(API, data=body(document), content_type="application/json")
    assert response.status_code == 201
    submission = RawSubmission.objects.get()
    assert submission_ingest(submission_id=submission.pk) == SubmissionStatus.REJECTED
    submission.refresh_from_db()
    reasons = {r["field"]: r["reason"] for r in submission.reasons if r["verdict"] == "rejected"}
    tally("above the GPU's peak", "$.results[0].median" in reasons)
    assert "above the dense BF16 tensor peak" in reasons["$.results[0].median"]
    assert BenchmarkResult.objects.count() == 0 and ResultAggregate.objects.count() == 0
    status = api.get(f"{API}{document['run_uuid']}/").json()
    assert status["status"] == "rejected" and status["results"] == []
    tally_done()


def test_sql_looking_free_text_is_data(api, world, django_capture_on_commit_callbacks):
    """SQL in a free-text field is stored as sent and harms nothing (queries are parameterised)."""
    document = submission_document()
    document["environment"]["os"] = "'; DROP TABLE benchmarks_app_rawsubmission; --"
    document["environment"]["cpu"]["model"] = "Robert'); DELETE FROM catalog_gpu; --"
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(API, data=body(document), content_type="application/json")
    assert response.status_code == 201
    stored = RawSubmission.objects.get()
    assert stored.status == SubmissionStatus.ACCEPTED and stored.payload == body(document).decode()
    assert "benchmarks_app_rawsubmission" in connection.introspection.table_names()
    assert BenchmarkResult.objects.filter(submission=stored).count() == 2


# --------------------------------------------------------------------------- upload form


FORM_CASES = sorted(name for name in SUBMISSION_CASES if name.startswith("raw:")) + [
    "mutation:NaN in a timing",
    "mutation:missing results",
    "mutation:script as the workload",
    "mutation:ten times the GPU's peak",
    "mutation:NUL escape in the GPU name",
    "mutation:negative repetition",
    "mutation:created_at on February 30",
    "mutation:created_at in year 0000",
    "mutation:script as params.size",
    "mutation:32 unknown params",
    "mutation:memory of 100,000,000 MiB",
]
BLANK_BODIES = {"raw:empty.json"}  # an empty file: the form asks for a file or text first


@pytest.mark.parametrize("name", FORM_CASES)
def test_upload_form_refuses_the_file_and_names_the_problem(user, world, name):
    _, case = SUBMISSION_CASES[name]
    browser = Client()
    browser.force_login(user)
    payload = case_body(name)
    upload = SimpleUploadedFile("result.json", payload, content_type="application/json")
    response = browser.post("/submit/", {"file": upload})
    page = html.unescape(response.content.decode())
    refused = response.status_code == 400
    tally("upload form (file)", refused)
    assert refused, (name, response.status_code)
    if name in BLANK_BODIES:
        assert "Choose a result file or paste its content" in page
    else:
        assert f"{case['field']}: " in page, name
        assert case.get("reason", "").lower() in page.lower(), name
    assert RawSubmission.objects.count() == 0
    tally_done()


@pytest.mark.parametrize("name", FORM_CASES)
def test_upload_form_refuses_the_pasted_text(user, world, name):
    _, case = SUBMISSION_CASES[name]
    try:
        text = case_body(name).decode("utf-8")
    except UnicodeDecodeError:
        pytest.skip("not text: a browser cannot paste these bytes")
    if "\x00" in text:
        pytest.skip("a browser does not send NUL characters in a text field")
    browser = Client()
    browser.force_login(user)
    response = browser.post("/submit/", {"text": text})
    refused = response.status_code == 400
    tally("upload form (pasted)", refused)
    assert refused, (name, response.status_code)
    page = html.unescape(response.content.decode())
    if not text.strip():
        assert "Choose a result file or paste its content" in page
    else:
        assert f"{case['field']}: " in page
    assert RawSubmission.objects.count() == 0
    tally_done()


# --------------------------------------------------------------------------- price importers


def price_counts() -> tuple[int, int, int]:
    return Offer.objects.count(), PriceObservation.objects.count(), Provider.objects.count()


@pytest.mark.parametrize("filename", sorted(PRICE_EXPECTED))
def test_price_file_rows_are_rejected_with_reasons_and_the_rest_imports(filename):
    if filename.startswith("_"):
        pytest.skip("comment")
    world_build(rows=PRICE_WORLD)
    expected = PRICE_EXPECTED[filename]
    summary = price_import_file(path=CORPUS / "prices" / filename)
    assert summary.error == "", summary.error
    reasons = {str(r.line): r.reason for r in summary.rejected}
    for line, fragment in expected["rejected"].items():
        tally(f"price rows ({summary.format})", line in reasons and fragment in reasons[line])
        assert line in reasons, (filename, line, reasons)
        assert fragment in reasons[line], (filename, line, reasons[line])
    assert set(reasons) == set(expected["rejected"]), reasons
    # Only the good rows were written: one offer and one observation each.
    assert sorted(Offer.objects.values_list("instance_type", flat=True)) == sorted(expected["offers"])
    assert (
        PriceObservation.objects.filter(offer__instance_type__in=expected["offers"]).count()
        == PriceObservation.objects.count()
    )
    assert not Provider.objects.filter(slug__startswith="yyyy").exists()
    run = ImportRun.objects.get(pk=summary.import_run_id)
    assert run.status == ImportRun.Status.DONE
    assert {str(r["line"]) for r in run.rejected_rows} == set(expected["rejected"])
    # Importing the same file again writes nothing new and rejects the same rows.
    before = price_counts()
    again = price_import_file(path=CORPUS / "prices" / filename)
    assert price_counts() == before
    assert {str(r.line) for r in again.rejected} == set(expected["rejected"])
    tally_done()


def test_a_price_file_that_is_not_utf8_is_refused_whole():
    world_build(rows=PRICE_WORLD)
    before = price_counts()
    summary = price_import_file(path=CORPUS / "prices" / "curated-latin1.csv", format="curated-csv")
    tally("price files", "not UTF-8" in summary.error)
    assert "not UTF-8 (byte" in summary.error
    assert price_counts() == before
    assert ImportRun.objects.get(pk=summary.import_run_id).status == ImportRun.Status.FAILED
    tally_done()


def test_the_import_command_reports_rejections_without_a_traceback(tmp_path):
    from io import StringIO

    from django.core.management import call_command

    world_build(rows=PRICE_WORLD)
    out, err = StringIO(), StringIO()
    call_command("import_prices", str(CORPUS / "prices" / "curated-bad-rows.csv"), stdout=out, stderr=err)
    text = out.getvalue() + err.getvalue()
    assert "Traceback" not in text
    assert "line 7" in text or "7" in text  # the rejected lines are listed
    assert Offer.objects.count() == 2


# --------------------------------------------------------------------------- usernames


def _sign_up(username: str) -> Any:
    password = "a long enough passphrase 2026"
    return Client().post("/accounts/signup/", {"username": username, "password1": password, "password2": password})


@pytest.mark.parametrize("case", USERNAMES["confusable"], ids=lambda c: c["why"])
def test_a_username_that_reads_like_an_existing_one_is_refused(case):
    UserFactory(username=case["existing"])
    response = _sign_up(case["new"])
    errors = response.context["form"].errors if response.context else {}
    refused = response.status_code == 200 and "looks the same as an existing one" in " ".join(
        errors.get("username", [])
    )
    tally("usernames", refused)
    assert refused, (case, response.status_code, errors)
    assert not get_user_model().objects.filter(username=case["new"]).exists()
    tally_done()


@pytest.mark.parametrize("case", USERNAMES["distinct"], ids=lambda c: c["new"])
def test_a_username_that_only_resembles_an_existing_one_is_accepted(case):
    UserFactory(username=case["existing"])
    response = _sign_up(case["new"])
    assert response.status_code == 302, response.context["form"].errors if response.context else None
    assert get_user_model().objects.filter(username=case["new"]).exists()


# --------------------------------------------------------------------------- fit calculator


def _fit_query(query: dict[str, str]) -> str:
    parts = []
    for key, value in query.items():
        if value.startswith("@bytes:"):
            encoded = "".join(f"%{byte}" for byte in value.removeprefix("@bytes:").split())
        else:
            encoded = quote(str(_special(value)), safe="")
        parts.append(f"{key}={encoded}")
    return "&".join(parts)


@pytest.mark.parametrize("index", range(len(FIT_CASES)), ids=lambda i: urlencode(FIT_CASES[i]["query"])[:60])
def test_fit_api_refuses_the_query_naming_the_field(client, index):
    case = FIT_CASES[index]
    response = client.get(f"/api/v1/fit/?{_fit_query(case['query'])}")
    refused = response.status_code == 400
    tally("fit API", refused)
    assert refused, (case, response.status_code, response.content[:300])
    payload = response.json()
    assert case["field"] in payload["errors"], (case, payload)
    assert payload["errors"][case["field"]][0]
    assert case["field"] in payload["detail"]
    tally_done()


@pytest.mark.parametrize("index", range(len(FIT_CASES)), ids=lambda i: urlencode(FIT_CASES[i]["query"])[:60])
def test_fit_page_shows_the_error_beside_the_field_and_no_result(client, index):
    case = FIT_CASES[index]
    response = client.get(f"/fit/?{_fit_query(case['query'])}")
    page = response.content.decode()
    # The page re-renders its GET form with the error (tests/test_fitcalc_web.py pins 200).
    assert response.status_code in (200, 400)
    marker = f'id="{case["field"]}-errors"'
    refused = marker in page and 'id="fit-table"' not in page
    tally("fit page", refused)
    assert refused, case
    start = page.index(marker)
    assert page[start : page.index("</ul>", start)].count("<li") >= 1
    assert "<script>alert(1)</script>" not in page
    tally_done()
