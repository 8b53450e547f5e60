"""Production settings and the security of every response and form.

- ``manage.py check --deploy`` passes with no warning under production settings (a subprocess,
  because settings are read at import), and fails when a protection is turned off;
- responses carry CSP, HSTS (over HTTPS), X-Frame-Options, Referrer-Policy and nosniff;
- the Content-Security-Policy allows scripts from our origin only, with the documented
  widening for the API documentation pages only;
- request bodies and uploads are size-limited;
- every POST form of the site carries a CSRF token and is refused (403) without one.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings

from accounts.models import ApiToken
from accounts.services import api_token_create
from benchmarks_app.models import RawSubmission
from gpuatlas.security import ContentSecurityPolicyMiddleware, csp_header_value, csp_policy_merge
from tests.factories import UserFactory
from tests.world import DASHBOARD_WORLD

ROOT = Path(__file__).resolve().parents[1]


def production_env(**extra: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(60)[:60],
        "ALLOWED_HOSTS": "example.org",
        **extra,
    }


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT
    )


# --------------------------------------------------------------------------- check --deploy


def test_production_settings_pass_check_deploy_with_no_warnings():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNING" not in result.stderr + result.stdout


def test_check_deploy_fails_when_hsts_is_turned_off():
    """The check above can fail: switching a protection off is reported."""
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=production_env(SECURE_HSTS_SECONDS="0"))
    assert result.returncode != 0
    assert "security.W004" in result.stderr + result.stdout


_HEADERS_SCRIPT = """
import json, django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="example.org")
secure = client.get("/api/v1/ping/", secure=True)
plain = client.get("/api/v1/ping/")
print(json.dumps({"secure": dict(secure.headers), "secure_status": secure.status_code,
                  "plain_status": plain.status_code, "plain_location": plain.headers.get("Location", "")}))
"""


def test_production_responses_carry_the_security_headers():
    env = production_env(DJANGO_SETTINGS_MODULE="gpuatlas.settings", LOG_LEVEL="ERROR")
    result = subprocess.run(
        [sys.executable, "-c", _HEADERS_SCRIPT], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    headers = seen["secure"]
    assert seen["secure_status"] == 200
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "strict-origin-when-cross-origin"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    # Plain HTTP is redirected to HTTPS.
    assert seen["plain_status"] == 301 and seen["plain_location"].startswith("https://example.org/")


# --------------------------------------------------------------------------- Content-Security-Policy


def directives(header: str) -> dict[str, list[str]]:
    parsed = {}
    for part in header.split(";"):
        name, *sources = part.split()
        parsed[name] = sources
    return parsed


# A catalogue with prices and results, so that the chart pages render their charts.
WORLD = DASHBOARD_WORLD


@pytest.mark.parametrize("path", ["/", "/fit/", "/submit/", "/gpus/", "/accounts/login/", "/api/v1/gpus/"])
def test_pages_allow_scripts_from_our_origin_only(client, world, path):
    response = client.get(path)
    assert response.status_code == 200, path
    policy = directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["img-src"] == ["'self'", "data:"]
    assert policy["style-src"] == ["'self'", "'unsafe-inline'"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["Referrer-Policy"] == "strict-origin-when-cross-origin"


@pytest.mark.parametrize(
    "path",
    ["/", "/fit/", "/submit/", "/gpus/", "/gpus/h100-sxm5-80-gb/", "/accounts/login/", "/tiers/", "/architectures/"],
)
def test_our_pages_have_no_inline_script_code(client, world, path):
    """script-src 'self' would block inline code: only external scripts and JSON data blocks."""

    class Scripts(HTMLParser):
        inline: list[str] = []

        def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
            self.current = dict(attrs) if tag == "script" else None

        def handle_data(self, data):  # type: ignore[no-untyped-def]
            attrs = getattr(self, "current", None)
            if attrs is not None and "src" not in attrs and attrs.get("type") != "application/json" and data.strip():
                self.inline.append(data.strip()[:80])

        def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
            self.current = None

    parser = Scripts()
    parser.inline = []
    response = client.get(path)
    assert response.status_code == 200
    parser.feed(response.content.decode())
    assert parser.inline == [], (path, parser.inline)
    assert " onclick=" not in response.content.decode() and " onload=" not in response.content.decode()


@pytest.mark.django_db
def test_api_docs_pages_get_their_allowances_and_no_more(client):
    swagger = directives(client.get("/api/v1/docs/")["Content-Security-Policy"])
    # Swagger UI's start-up script is a file of its own: the page needs no inline script.
    assert swagger["script-src"] == ["'self'"]
    assert swagger["frame-ancestors"] == ["'none'"]
    redoc = directives(client.get("/api/v1/redoc/")["Content-Security-Policy"])
    assert redoc["script-src"] == ["'self'"]
    assert redoc["worker-src"] == ["'self'", "blob:"]
    # The widening is by path prefix: the schema and other API paths keep the site policy.
    assert directives(client.get("/api/v1/schema/")["Content-Security-Policy"])["script-src"] == ["'self'"]
    assert "worker-src" not in directives(client.get("/")["Content-Security-Policy"])


def test_csp_header_value_and_merge():
    assert csp_header_value({"a-src": ["'self'", "data:"], "b-src": []}) == "a-src 'self' data:; b-src"
    merged = csp_policy_merge({"a-src": ["'self'"], "b-src": ["x:"]}, {"b-src": ["y:"], "c-src": ["z:"]})
    assert merged == {"a-src": ["'self'"], "b-src": ["y:"], "c-src": ["z:"]}


@pytest.mark.parametrize(
    "policy",
    [{"script-src": "'self'"}, {"script-src": ["'self'; report-uri x"]}, {"Script-Src": ["'self'"]}, {"a b": ["x"]}],
)
def test_malformed_csp_settings_fail_at_start_up(policy):
    with pytest.raises(ImproperlyConfigured):
        csp_header_value(policy)


def test_the_longest_path_prefix_wins_and_a_views_own_header_is_kept():
    from django.http import HttpResponse
    from django.test import RequestFactory

    overrides = {"/a/": {"script-src": ["'self'", "one:"]}, "/a/b/": {"script-src": ["'self'", "two:"]}}
    with override_settings(CSP_POLICY={"script-src": ["'self'"]}, CSP_PATH_OVERRIDES=overrides):
        middleware = ContentSecurityPolicyMiddleware(lambda request: HttpResponse())
        own = ContentSecurityPolicyMiddleware(
            lambda request: HttpResponse(headers={"Content-Security-Policy": "default-src 'none'"})
        )
    factory = RequestFactory()
    assert middleware(factory.get("/a/b/c"))["Content-Security-Policy"] == "script-src 'self' two:"
    assert middleware(factory.get("/a/x"))["Content-Security-Policy"] == "script-src 'self' one:"
    assert middleware(factory.get("/z"))["Content-Security-Policy"] == "script-src 'self'"
    assert own(factory.get("/"))["Content-Security-Policy"] == "default-src 'none'"
    with override_settings(CSP_POLICY={}), pytest.raises(ImproperlyConfigured):
        ContentSecurityPolicyMiddleware(lambda request: HttpResponse())


# --------------------------------------------------------------------------- upload size


@pytest.mark.django_db
@override_settings(SUBMISSION_MAX_BYTES=10_000, DATA_UPLOAD_MAX_MEMORY_SIZE=20_000, FILE_UPLOAD_MAX_MEMORY_SIZE=20_000)
def test_an_uploaded_file_over_the_limit_is_refused_and_nothing_stored():
    browser = Client()
    browser.force_login(UserFactory(username="uploader"))
    big = SimpleUploadedFile("result.json", b'{"a": "' + b"x" * 15_000 + b'"}', content_type="application/json")
    response = browser.post("/submit/", {"file": big})
    assert response.status_code == 413
    assert "the limit is 10000 bytes" in response.content.decode()
    assert RawSubmission.objects.count() == 0


@pytest.mark.django_db
@override_settings(SUBMISSION_MAX_BYTES=10_000, DATA_UPLOAD_MAX_MEMORY_SIZE=20_000)
def test_a_pasted_body_over_the_request_limit_is_a_413_not_a_crash():
    browser = Client(raise_request_exception=False)
    browser.force_login(UserFactory(username="paster"))
    response = browser.post("/submit/", {"text": "x" * 30_000})
    assert response.status_code == 413
    assert RawSubmission.objects.count() == 0


def test_request_bodies_are_bounded_by_default():
    from django.conf import settings

    assert 0 < settings.SUBMISSION_MAX_BYTES <= 1_000_000
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE <= settings.SUBMISSION_MAX_BYTES + 64 * 1024
    assert settings.FILE_UPLOAD_MAX_MEMORY_SIZE <= settings.SUBMISSION_MAX_BYTES + 64 * 1024
    assert settings.DATA_UPLOAD_MAX_NUMBER_FIELDS is not None


# --------------------------------------------------------------------------- CSRF on every form


class PostForms(HTMLParser):
    """Collects the action of every <form method="post"> and whether it carries a CSRF token."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, object]] = []
        self._open: dict[str, object] | None = None

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        attributes = dict(attrs)
        if tag == "form" and (attributes.get("method") or "get").lower() == "post":
            self._open = {"action": attributes.get("action") or "", "csrf": False}
            self.forms.append(self._open)
        elif tag == "input" and self._open is not None and attributes.get("name") == "csrfmiddlewaretoken":
            self._open["csrf"] = True

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        if tag == "form":
            self._open = None


PAGES = ["/", "/fit/", "/gpus/", "/submit/", "/accounts/", "/accounts/signup/", "/accounts/login/", "/admin/"]


def test_every_post_form_has_a_csrf_token_and_is_refused_without_it(world):
    user = UserFactory(username="formuser", is_staff=True, is_superuser=True)
    token, _ = api_token_create(user=user, name="mine")
    browser = Client()
    browser.force_login(user)
    targets: dict[str, str] = {}
    for page in PAGES:
        response = browser.get(page)
        assert response.status_code == 200, page
        parser = PostForms()
        parser.feed(response.content.decode())
        for form in parser.forms:
            assert form["csrf"], f"a POST form on {page} has no CSRF token: {form}"
            targets.setdefault(str(form["action"]) or page, page)
    # The forms this site has: language switch (every page), submit, token create/revoke, sign
    # out, sign up, sign in and the admin's. Losing one of them from the crawl would weaken this test.
    assert {"/i18n/setlang/", "/submit/", "/accounts/", f"/accounts/tokens/{token.pk}/revoke/"} <= set(targets)
    assert {"/accounts/logout/", "/accounts/signup/", "/accounts/login/"} <= set(targets)

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    for action, page in sorted(targets.items()):
        response = strict.post(action, {"name": "x", "text": "{}"})
        assert response.status_code == 403, (
            f"POST {action} (form on {page}) without a CSRF token: {response.status_code}"
        )
    token.refresh_from_db()
    assert token.revoked_at is None  # the refused revoke changed nothing
    assert ApiToken.objects.filter(user=user).count() == 1  # nor did the refused token creation
    assert RawSubmission.objects.count() == 0
