"""Small hardening: bounded JSON nesting on every JSON endpoint, NUL bytes in admin query
strings, a run UUID held by someone else answered without saying so, DEBUG and the secret key."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from api.parsers import MAX_JSON_DEPTH, json_depth_exceeds
from benchmarks_app.models import RawSubmission, SubmissionStatus
from tests.factories import UserFactory, body, document_ingest, submission_document, token_client
from tests.world import INGEST_WORLD

pytestmark = pytest.mark.django_db
WORLD = INGEST_WORLD
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def superuser_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create(username="root", is_staff=True, is_superuser=True))
    return client


@pytest.mark.parametrize("action", ["approve", "reject"])
@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_deeply_nested_json_to_moderation_is_a_400(superuser_client, action, depth):
    nested = "[" * depth + "]" * depth
    response = superuser_client.post(
        f"/api/v1/moderation/submissions/{action}/", data=f'{{"run_uuids": {nested}}}', content_type="application/json"
    )
    assert response.status_code == 400
    assert "nested deeper" in response.json()["detail"]


def test_nesting_is_counted_outside_strings_only():
    assert not json_depth_exceeds(json.dumps({"a": "[" * 500, "b": '{\\"' * 100}).encode(), limit=2)
    assert json_depth_exceeds(b'{"a": [[[1]]]}', limit=3)
    assert not json_depth_exceeds(b'{"a": [[1]]}', limit=3)


@pytest.mark.parametrize(
    "path",
    [
        "/admin/benchmarks_app/rawsubmission/?status=%00",
        "/admin/benchmarks_app/rawsubmission/?q=%00",
        "/admin/benchmarks_app/rawsubmission/?sta%00tus=x",
        "/admin/auth/user/?username__exact=%00",
    ],
)
def test_a_nul_byte_in_an_admin_query_string_is_a_400(superuser_client, path):
    response = superuser_client.get(path)
    assert response.status_code == 400
    assert "NUL byte" in response.content.decode()


def test_a_query_string_without_nul_still_filters_in_the_admin(superuser_client):
    assert superuser_client.get("/admin/benchmarks_app/rawsubmission/?status=on_hold").status_code == 200


def test_another_users_hidden_run_uuid_is_answered_as_any_taken_uuid(world):
    owner, other = UserFactory(username="owner"), UserFactory(username="other")
    held_document = submission_document(name_smi="NVIDIA Mystery GPU 9000", name_torch="NVIDIA Mystery GPU 9000")
    held = document_ingest(held_document, submitter=owner)
    assert held.status == SubmissionStatus.ON_HOLD
    assert token_client(other).get(f"/api/v1/submissions/{held.run_uuid}/").status_code == 404

    # The other user's valid body under the owner's hidden UUID ...
    theirs = submission_document()
    theirs["run_uuid"] = str(held.run_uuid)
    stolen = token_client(other).post("/api/v1/submissions/", data=body(theirs), content_type="application/json")
    # ... reads exactly as the owner's own reuse of a UUID with another body: nothing says whose it is.
    changed = dict(held_document, duration_s=99.0)
    own = token_client(owner).post("/api/v1/submissions/", data=body(changed), content_type="application/json")
    assert stolen.status_code == own.status_code == 409
    assert stolen.json() == own.json()
    assert "someone else" not in stolen.content.decode()
    assert RawSubmission.objects.filter(run_uuid=held.run_uuid).count() == 1


# --------------------------------------------------------------------------- DEBUG and the secret key


def _settings_debug(**env: str) -> subprocess.CompletedProcess[str]:
    code = "import django; django.setup(); from django.conf import settings; print('DEBUG', settings.DEBUG)"
    base = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "DJANGO_SETTINGS_MODULE": "gpuatlas.settings"}
    return subprocess.run(
        [sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def test_debug_is_off_unless_set():
    result = _settings_debug(SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="example.org")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "DEBUG False" in result.stdout
    assert "DEBUG True" in _settings_debug(DEBUG="1").stdout


def test_start_up_without_a_secret_key_names_the_variable():
    result = _settings_debug(ALLOWED_HOSTS="example.org")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_start_up_refuses_the_committed_development_key_with_debug_off():
    from gpuatlas import settings as project_settings

    result = _settings_debug(DEBUG="0", SECRET_KEY=project_settings._DEV_SECRET, ALLOWED_HOSTS="example.org")
    assert result.returncode != 0
    assert "SECRET_KEY is the development key committed to this repository" in result.stderr


def test_the_image_sets_debug_off():
    assert re.search(r"^\s+DEBUG=0 \\$", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
