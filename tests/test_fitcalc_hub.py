"""Importing a model by its Hugging Face id (the write: fitcalc.services.hf_model_import, POST
/api/v1/fit/models/, the page's import button), against a real local HTTP server standing in for
the Hub (HF_ENDPOINT points huggingface_hub at it); and the reads that then use the stored config
without asking the Hub again. The config served is a preset's own config.json keys
(fitcalc/data/presets.json), so the imported model must equal the preset."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import huggingface_hub.utils._http
import pytest
from django.utils import timezone
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from fitcalc import PRESETS, FitInputError
from fitcalc.models import HfModel
from fitcalc.presets import PRESETS_FILE
from fitcalc.selectors.hf_models import hf_model_spec
from fitcalc.services import hf_model_import
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _signed_in(client) -> None:  # type: ignore[no-untyped-def]
    """Imports need an account (tests/test_fitcalc_import_limits.py covers the anonymous refusal)."""
    client.force_login(UserFactory(username="importer"))


COMMIT = "0123456789abcdef0123456789abcdef01234567"
URL = "/api/v1/fit/"
MODELS_URL = "/api/v1/fit/models/"
PAGE = "/fit/"
IMPORT_PAGE = "/fit/models/import/"


def preset_config(slug: str) -> dict:  # type: ignore[type-arg]
    entries = json.loads(PRESETS_FILE.read_text(encoding="utf-8"))["presets"]
    return next(entry["config"] for entry in entries if entry["slug"] == slug)


def serve(httpserver: HTTPServer, repo: str, body: bytes | None, *, status: int = 200, error_code: str = "") -> None:
    """Answer huggingface_hub's HEAD and GET for ``repo``'s config.json as the Hub does."""
    path = f"/{repo}/resolve/main/config.json"

    def handler(request: Request) -> Response:
        headers = {"X-Repo-Commit": COMMIT, "ETag": '"etag-1"'}
        if error_code:
            headers["X-Error-Code"] = error_code
            headers["X-Error-Message"] = error_code
        if status != 200:
            return Response("", status=status, headers=headers)
        assert body is not None
        return Response(body, status=200, headers=headers)  # the server drops the body of a HEAD

    httpserver.expect_request(path).respond_with_handler(handler)


@pytest.fixture
def online(settings, httpserver: HTTPServer, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    # The Hub client retries a 5xx with exponential backoff (about 23 s of sleeping); the retries
    # still reach the test server, only the waits between them are skipped.
    monkeypatch.setattr(huggingface_hub.utils._http, "time", SimpleNamespace(sleep=lambda seconds: None))
    settings.FITCALC_HF_ONLINE = True
    settings.HF_ENDPOINT = httpserver.url_for("").rstrip("/")
    settings.FITCALC_HF_CACHE_DIR = str(tmp_path / "hf-cache")
    settings.FITCALC_HF_TIMEOUT_S = 1
    return httpserver


def test_an_imported_hub_config_reads_as_the_same_model_as_the_preset(online: HTTPServer) -> None:  # type: ignore[no-untyped-def]
    serve(online, "Qwen/Qwen3-30B-A3B", json.dumps(preset_config("qwen3-30b-a3b")).encode())
    stored = hf_model_import(repo_id=" Qwen/Qwen3-30B-A3B ")
    assert stored.repo_id == "Qwen/Qwen3-30B-A3B" and stored.revision == COMMIT
    assert stored.source_url.endswith(f"Qwen/Qwen3-30B-A3B/blob/{COMMIT}/config.json")
    assert stored.config == preset_config("qwen3-30b-a3b")
    requests_made = len(online.log)
    spec = hf_model_spec(repo_id="Qwen/Qwen3-30B-A3B")
    assert len(online.log) == requests_made  # the read used the stored config
    preset = PRESETS["qwen3-30b-a3b"]
    assert (spec.params, spec.active_params, spec.experts, spec.kv_values_per_token) == (
        preset.params,
        preset.active_params,
        preset.experts,
        preset.kv_values_per_token,
    )
    assert spec.slug == "hf:Qwen/Qwen3-30B-A3B" and spec.citations[0].url == stored.source_url
    assert spec.citations[0].date == stored.fetched_at.date().isoformat()


def test_importing_again_replaces_the_stored_config(online: HTTPServer) -> None:  # type: ignore[no-untyped-def]
    serve(online, "Qwen/Qwen3-8B", json.dumps(preset_config("qwen3-8b")).encode())
    first = hf_model_import(repo_id="Qwen/Qwen3-8B")
    second = hf_model_import(repo_id="Qwen/Qwen3-8B")
    assert HfModel.objects.count() == 1 and second.pk == first.pk and second.fetched_at >= first.fetched_at


#: (repo, body served, status served, Hub error code, fragment of the reason, status of the import API)
FAILURES = [
    ("nobody/nothing", None, 404, "RepoNotFound", "no public model called nobody/nothing", 404),
    ("meta-llama/Llama-3.1-8B", None, 403, "GatedRepo", "gated", 403),
    ("someone/weights-only", None, 404, "EntryNotFound", "has no config.json", 404),
    ("someone/broken", b"{not json", 200, "", "not valid JSON", 400),
    ("someone/list", b"[1, 2]", 200, "", "not a JSON object", 400),
    (
        "someone/vision",
        json.dumps({"model_type": "siglip", "hidden_size": 8}).encode(),
        200,
        "",
        "num_hidden_layers",
        400,
    ),
    ("someone/down", None, 500, "", "answered 500", 400),
]


@pytest.mark.parametrize(("repo", "body", "status", "error_code", "fragment", "api_status"), FAILURES)
def test_hub_failures_name_the_problem_and_store_nothing(
    online: HTTPServer, repo, body, status, error_code, fragment, api_status
) -> None:  # type: ignore[no-untyped-def]
    serve(online, repo, body, status=status, error_code=error_code)
    with pytest.raises(FitInputError) as caught:
        hf_model_import(repo_id=repo)
    assert caught.value.field == "hf_model"
    assert fragment in caught.value.message, caught.value.message
    assert not HfModel.objects.exists()


@pytest.mark.parametrize(("repo", "body", "status", "error_code", "fragment", "api_status"), FAILURES)
def test_api_import_failures_are_4xx_naming_hf_id(
    client, online: HTTPServer, repo, body, status, error_code, fragment, api_status
) -> None:  # type: ignore[no-untyped-def]
    serve(online, repo, body, status=status, error_code=error_code)
    response = client.post(MODELS_URL, {"hf_id": repo}, content_type="application/json")
    assert response.status_code == api_status, response.content
    assert any(fragment in message for message in response.json()["errors"]["hf_id"]), response.json()


def test_a_hub_that_does_not_answer_in_time_is_a_timeout(online: HTTPServer) -> None:  # type: ignore[no-untyped-def]
    def slow(request: Request) -> Response:
        time.sleep(2.5)
        return Response("{}", status=200)

    online.expect_request("/slow/model/resolve/main/config.json").respond_with_handler(slow)
    with pytest.raises(FitInputError) as caught:
        hf_model_import(repo_id="slow/model")
    assert "did not answer within 1 s" in caught.value.message or "could not be reached" in caught.value.message


@pytest.mark.parametrize("repo_id", ["no-slash", "a/b/c", "../etc/passwd", "owner/" + "x" * 200, ""])
def test_malformed_ids_are_refused_before_any_request(client, online: HTTPServer, repo_id: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FitInputError) as caught:
        hf_model_import(repo_id=repo_id)
    assert "model id" in caught.value.message
    response = client.post(MODELS_URL, {"hf_id": repo_id}, content_type="application/json")
    assert response.status_code == 400 and "hf_id" in response.json()["errors"]
    assert not online.log


def test_offline_deployments_say_so(settings, client) -> None:  # type: ignore[no-untyped-def]
    settings.FITCALC_HF_ONLINE = False
    with pytest.raises(FitInputError) as caught:
        hf_model_import(repo_id="Qwen/Qwen3-8B")
    assert "offline" in caught.value.message and "presets" in caught.value.message
    refused = client.post(MODELS_URL, {"hf_id": "Qwen/Qwen3-8B"}, content_type="application/json")
    assert refused.status_code == 403 and "offline" in refused.json()["errors"]["hf_id"][0]
    body = client.get(URL, {"hf_model": "Qwen/Qwen3-8B"}).json()
    assert any("offline" in message for message in body["errors"]["hf_model"])
    page = client.get(PAGE, {"hf_model": "Qwen/Qwen3-8B"}).content.decode()
    assert "not imported yet" in page and IMPORT_PAGE not in page  # no button that can only fail


def test_api_imports_a_hub_id_then_reads_it_without_the_hub(client, online: HTTPServer) -> None:  # type: ignore[no-untyped-def]
    serve(online, "Qwen/Qwen3-8B", json.dumps(preset_config("qwen3-8b")).encode())
    before = client.get(URL, {"hf_model": "Qwen/Qwen3-8B", "precision": "awq"})
    assert before.status_code == 400 and not online.log
    assert any("POST /api/v1/fit/models/" in message for message in before.json()["errors"]["hf_model"])
    created = client.post(MODELS_URL, {"hf_id": "Qwen/Qwen3-8B"}, content_type="application/json")
    assert created.status_code == 201, created.content
    assert set(created.json()) == {"hf_id", "revision", "source_url", "fetched_at", "config"}
    assert created.json()["hf_id"] == "Qwen/Qwen3-8B" and created.json()["revision"] == COMMIT
    requests_made = len(online.log)
    body = client.get(URL, {"hf_model": "Qwen/Qwen3-8B", "precision": "awq"}).json()
    assert body["model"]["params"] == PRESETS["qwen3-8b"].params and body["inputs"]["hf_model"] == "Qwen/Qwen3-8B"
    assert [row["hf_id"] for row in client.get(MODELS_URL).json()["results"]] == ["Qwen/Qwen3-8B"]
    assert len(online.log) == requests_made


def test_the_page_offers_the_import_and_then_shows_the_model(client, online: HTTPServer) -> None:  # type: ignore[no-untyped-def]
    serve(online, "Qwen/Qwen3-8B", json.dumps(preset_config("qwen3-8b")).encode())
    page = client.get(PAGE, {"hf_model": "Qwen/Qwen3-8B"})
    html = page.content.decode()
    assert page.status_code == 200 and "Qwen/Qwen3-8B is not imported yet" in html
    assert f'action="{IMPORT_PAGE}"' in html and 'name="hf_id" value="Qwen/Qwen3-8B"' in html
    assert not online.log
    imported = client.post(IMPORT_PAGE, {"hf_id": "Qwen/Qwen3-8B"})
    assert imported.status_code == 302 and imported["Location"] == f"{PAGE}?hf_model=Qwen%2FQwen3-8B"
    shown = client.get(imported["Location"]).content.decode()
    assert "not imported yet" not in shown and 'id="memory-table"' in shown and "Qwen/Qwen3-8B" in shown
    serve(online, "nobody/nothing", None, status=404, error_code="RepoNotFound")
    refused = client.post(IMPORT_PAGE, {"hf_id": "nobody/nothing"})
    assert refused.status_code == 400 and "no public model called nobody/nothing" in refused.content.decode()


def test_an_imported_model_shows_at_once_on_a_page_cached_before_the_import(  # type: ignore[no-untyped-def]
    client, online: HTTPServer, versioned_cache
) -> None:
    """The fit page's body is cached by its query and the data version; an import moves neither
    the query nor (within the debounce period) the version, yet the page must answer at once."""
    serve(online, "Qwen/Qwen3-8B", json.dumps(preset_config("qwen3-8b")).encode())
    for _ in range(2):  # the second from the cache
        assert "Qwen/Qwen3-8B is not imported yet" in client.get(PAGE, {"hf_model": "Qwen/Qwen3-8B"}).content.decode()
    imported = client.post(IMPORT_PAGE, {"hf_id": "Qwen/Qwen3-8B"})
    shown = client.get(imported["Location"]).content.decode()
    assert "not imported yet" not in shown and 'id="memory-table"' in shown


def test_the_api_answers_a_new_import_of_a_model_whose_answer_it_sent_before(  # type: ignore[no-untyped-def]
    client, online: HTTPServer, versioned_cache
) -> None:
    """The API's answers are cached as the bytes sent, by the query and the data version; a new
    import of the same id (another config) moves neither, yet the next answer is the new model's."""
    config = preset_config("qwen3-8b")
    serve(online, "Qwen/Qwen3-8B", json.dumps(config).encode())
    hf_model_import(repo_id="Qwen/Qwen3-8B")
    query = {"hf_model": "Qwen/Qwen3-8B"}
    first = client.get(URL, query)
    assert first.status_code == 200 and client.get(URL, query).content == first.content
    # A new import of the id, as hf_model_import stores it (the Hub's newer config of it).
    HfModel.objects.filter(repo_id="Qwen/Qwen3-8B").update(
        config={**config, "num_hidden_layers": 2 * config["num_hidden_layers"]}, fetched_at=timezone.now()
    )
    again = client.get(URL, query)
    assert again.status_code == 200 and again.json()["model"]["params"] > first.json()["model"]["params"]


def test_the_page_escapes_the_id_it_echoes(client, online: HTTPServer) -> None:  # type: ignore[no-untyped-def]
    hostile = '<script>alert(1)</script>/x"'
    for response in (client.get(PAGE, {"hf_model": hostile}), client.post(IMPORT_PAGE, {"hf_id": hostile})):
        html = response.content.decode()
        assert response.status_code in (200, 400) and "<script>alert(1)</script>" not in html
        assert "&lt;script&gt;" in html
    assert not online.log


def test_the_import_speaks_chinese(client, online: HTTPServer) -> None:  # type: ignore[no-untyped-def]
    client.cookies["django_language"] = "zh-hans"
    html = client.get(PAGE, {"hf_model": "Qwen/Qwen3-8B"}).content.decode()
    assert "Qwen/Qwen3-8B 尚未导入" in html and "从 Hugging Face 导入此模型" in html
    body = client.get(URL, {"hf_model": "Qwen/Qwen3-8B"}, HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert "尚未导入" in body["errors"]["hf_model"][0]
