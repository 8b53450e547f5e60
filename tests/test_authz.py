"""Who may do what: submitting, tokens, pending submissions, moderation, mass assignment.

Complements tests/test_api_auth.py (API moderation: anonymous 401, non-staff 403, staff decide,
CSRF on a staff session) and tests/test_submissions_api.py (anonymous API POST, another user's
pending submission is a 404): here the web side (account tokens, /submit/, the admin's
moderation actions and GPU-mapping form), raw payload privacy and mass assignment.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from accounts.models import ApiToken
from accounts.services import api_token_create
from benchmarks_app.models import BenchmarkResult, RawSubmission, SubmissionStatus
from benchmarks_app.services.ingest import submission_ingest
from catalog.models import GpuAlias
from tests.factories import UserFactory, body, document_ingest, make_result, submission_document
from tests.world import INGEST_WORLD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("ingest_in_process")]
WORLD = INGEST_WORLD

API = "/api/v1/submissions/"
ADMIN_CHANGELIST = "/admin/benchmarks_app/rawsubmission/"
ADMIN_MAP_GPU = "/admin/benchmarks_app/rawsubmission/map-gpu/"
SECRET_OS = "Linux-secret-kernel-marker-7f3a"


def browser_for(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def stored(user, *, flagged: bool = False, name: str = "NVIDIA H100 80GB HBM3") -> RawSubmission:  # type: ignore[no-untyped-def]
    """A submission of ``user``, stored and (unless on hold) ingested."""
    results = [make_result(median=50.0)] if flagged else None  # 5 % of the peak: flagged, far below it
    document = submission_document(results=results, name_smi=name, name_torch=name)
    document["environment"]["os"] = SECRET_OS
    return document_ingest(document, submitter=user)


# --------------------------------------------------------------------------- anonymous


def test_anonymous_cannot_submit_through_the_form_or_the_api(world):
    document = submission_document()
    form = Client().post("/submit/", {"text": json.dumps(document)})
    assert form.status_code == 302 and form["Location"].startswith("/accounts/login/")
    api = Client().post(API, data=body(document), content_type="application/json")
    assert api.status_code == 401
    revoked, key = api_token_create(user=UserFactory(username="gone"), name="old")
    ApiToken.objects.filter(pk=revoked.pk).update(revoked_at="2026-01-01T00:00:00Z")
    with_revoked = Client(HTTP_AUTHORIZATION=f"Token {key}").post(
        API, data=body(document), content_type="application/json"
    )
    assert with_revoked.status_code == 401
    assert RawSubmission.objects.count() == 0


@pytest.mark.parametrize("url", [ADMIN_CHANGELIST, ADMIN_MAP_GPU, "/admin/benchmarks_app/benchmarkresult/"])
def test_anonymous_and_non_staff_users_are_sent_to_the_admin_login(world, url):
    for client in (Client(), browser_for(UserFactory(username="plain"))):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), url


# --------------------------------------------------------------------------- tokens


def test_a_user_cannot_see_or_revoke_another_users_token(world):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    alice_token, alice_key = api_token_create(user=alice, name="alice-laptop")
    bob_token, _ = api_token_create(user=bob, name="bob-server")
    as_bob = browser_for(bob)
    page = as_bob.get("/accounts/").content.decode()
    assert "bob-server" in page and "alice-laptop" not in page and alice_token.prefix not in page
    response = as_bob.post(f"/accounts/tokens/{alice_token.pk}/revoke/", follow=True)
    assert response.status_code == 200
    assert "No such active token on your account." in response.content.decode()
    alice_token.refresh_from_db()
    assert alice_token.revoked_at is None
    # Alice's key still works; Bob can revoke his own.
    assert Client(HTTP_AUTHORIZATION=f"Token {alice_key}").get("/api/v1/ping/").status_code == 200
    as_bob.post(f"/accounts/tokens/{bob_token.pk}/revoke/")
    bob_token.refresh_from_db()
    assert bob_token.revoked_at is not None


def test_revoking_needs_a_signed_in_post(world):
    alice = UserFactory(username="alice")
    token, _ = api_token_create(user=alice, name="t")
    anonymous = Client().post(f"/accounts/tokens/{token.pk}/revoke/")
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    assert browser_for(alice).get(f"/accounts/tokens/{token.pk}/revoke/").status_code == 405
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_token_authenticates_as_its_owner_only(world):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    _, bob_key = api_token_create(user=bob, name="b")
    document = submission_document()
    response = Client(HTTP_AUTHORIZATION=f"Token {bob_key}").post(
        API, data=body(document), content_type="application/json"
    )
    assert response.status_code == 201
    assert RawSubmission.objects.get().submitter == bob
    assert not RawSubmission.objects.filter(submitter=alice).exists()


# --------------------------------------------------------------------------- pending submissions and payloads


def test_pending_submissions_and_raw_payloads_stay_with_their_submitter_and_staff(world):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    staff = UserFactory(username="curator", is_staff=True)
    held = stored(alice, name="NVIDIA Mystery GPU 9000")  # unknown GPU: on hold
    accepted = stored(alice)
    assert (held.status, accepted.status) == (SubmissionStatus.ON_HOLD, SubmissionStatus.ACCEPTED)
    as_alice, as_bob, as_staff = browser_for(alice), browser_for(bob), browser_for(staff)

    held_page = f"/submissions/{held.run_uuid}/"
    assert as_bob.get(held_page).status_code == 404
    assert Client().get(held_page).status_code == 404
    assert as_bob.get(f"{API}{held.run_uuid}/").status_code == 404
    assert SECRET_OS in as_alice.get(held_page).content.decode()
    assert SECRET_OS in as_staff.get(held_page).content.decode()
    # Bob's account page lists his submissions only.
    assert str(held.run_uuid)[:10] not in as_bob.get("/accounts/").content.decode()
    assert str(held.run_uuid)[:10] in as_alice.get("/accounts/").content.decode()

    # A decided submission is public, but its raw payload (environment details) is not.
    accepted_page = f"/submissions/{accepted.run_uuid}/"
    public = as_bob.get(accepted_page)
    assert public.status_code == 200 and SECRET_OS not in public.content.decode()
    assert SECRET_OS not in Client().get(accepted_page).content.decode()
    assert SECRET_OS not in json.dumps(Client().get(f"{API}{accepted.run_uuid}/").json())
    assert SECRET_OS in as_alice.get(accepted_page).content.decode()


# --------------------------------------------------------------------------- moderation in the admin


def _admin_action(client: Client, action: str, submission: RawSubmission):  # type: ignore[no-untyped-def]
    return client.post(ADMIN_CHANGELIST, {"action": action, "_selected_action": [str(submission.pk)]})


def test_only_staff_with_the_change_permission_moderate_in_the_admin(world):
    alice = UserFactory(username="alice")
    flagged = stored(alice, flagged=True)
    assert flagged.status == SubmissionStatus.FLAGGED

    # A signed-in user who is not staff: sent to the admin login, nothing changes.
    response = _admin_action(browser_for(alice), "approve_selected", flagged)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    # Staff without the permission on submissions: refused.
    bare_staff = UserFactory(username="intern", is_staff=True)
    assert _admin_action(browser_for(bare_staff), "approve_selected", flagged).status_code == 403
    assert browser_for(bare_staff).post(ADMIN_MAP_GPU, {"name": "x", "gpu": world.gpus["h100"].pk}).status_code == 403
    flagged.refresh_from_db()
    assert flagged.status == SubmissionStatus.FLAGGED
    assert not GpuAlias.objects.filter(alias="x").exists()

    curator = UserFactory(username="curator", is_staff=True)
    curator.user_permissions.add(Permission.objects.get(codename="change_rawsubmission"))
    response = _admin_action(browser_for(curator), "approve_selected", flagged)
    assert response.status_code == 302
    flagged.refresh_from_db()
    assert flagged.status == SubmissionStatus.ACCEPTED and flagged.moderated_by == curator
    assert set(BenchmarkResult.objects.filter(submission=flagged).values_list("trust", flat=True)) == {"community"}


def test_raw_submissions_cannot_be_edited_or_deleted_even_by_a_superuser(world):
    alice = UserFactory(username="alice")
    submission = stored(alice)
    admin = browser_for(UserFactory(username="root", is_staff=True, is_superuser=True))
    change_url = f"{ADMIN_CHANGELIST}{submission.pk}/change/"
    assert admin.get(change_url).status_code == 200
    admin.post(change_url, {"payload": "{}", "status": "rejected", "sha256": "0" * 64})
    assert admin.post(f"{ADMIN_CHANGELIST}{submission.pk}/delete/", {"post": "yes"}).status_code == 403
    before = (submission.payload, submission.status, submission.sha256)
    submission.refresh_from_db()
    assert (submission.payload, submission.status, submission.sha256) == before


# --------------------------------------------------------------------------- mass assignment


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["status"], "accepted"),
        (["trust"], "lab"),
        (["trust_label"], "lab"),
        (["submitter"], 1),
        (["submitter_id"], 1),
        (["moderated_by"], 1),
        (["gpu"], "h100-sxm5-80-gb"),
        (["sha256"], "0" * 64),
        (["reasons"], []),
        (["results", 0, "trust"], "lab"),
        (["results", 0, "source"], "Lambda Labs"),
    ],
)
def test_mass_assignment_fields_are_refused_and_nothing_is_stored(world, path, value):
    user = UserFactory(username="alice")
    _, key = api_token_create(user=user, name="t")
    document = submission_document()
    node = document
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    response = Client(HTTP_AUTHORIZATION=f"Token {key}").post(API, data=body(document), content_type="application/json")
    assert response.status_code == 400, response.content
    field = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    assert field in response.json()["errors"], response.json()
    assert RawSubmission.objects.count() == 0 and BenchmarkResult.objects.count() == 0


def test_query_string_and_form_fields_cannot_set_status_or_submitter(world, django_capture_on_commit_callbacks):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    _, key = api_token_create(user=alice, name="t")
    document = submission_document(results=[make_result(median=50.0)])  # flagged on ingest
    response = Client(HTTP_AUTHORIZATION=f"Token {key}").post(
        f"{API}?status=accepted&submitter={bob.pk}&trust=lab", data=body(document), content_type="application/json"
    )
    assert response.status_code == 201 and response.json()["status"] == "received"
    api_row = RawSubmission.objects.get(run_uuid=document["run_uuid"])
    assert (api_row.submitter, api_row.status) == (alice, SubmissionStatus.RECEIVED)
    form_document = submission_document()
    with django_capture_on_commit_callbacks(execute=True):
        browser_for(alice).post(
            "/submit/", {"text": json.dumps(form_document), "status": "accepted", "submitter": bob.pk, "channel": "api"}
        )
    form_row = RawSubmission.objects.get(run_uuid=form_document["run_uuid"])
    assert (form_row.submitter, form_row.channel) == (alice, "form")
    submission_ingest(submission_id=api_row.pk)  # if the form's task did not take it in its batch
    api_row.refresh_from_db()
    assert api_row.status == SubmissionStatus.FLAGGED  # the ingest decides, not the request
