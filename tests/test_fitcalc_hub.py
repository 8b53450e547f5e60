"""A model by its Hugging Face id, against a real local HTTP server standing in for the Hub
(HF_ENDPOINT points huggingface_hub at it). The config served is a preset's own config.json keys
(fitcalc/data/presets.json), so the loaded model must equal the preset."""

from __future__ import annotations

import json
import time

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from fitcalc import PRESETS, FitInputError
from fitcalc.hub import hf_model_spec
from fitcalc.presets import PRESETS_FILE

COMMIT = "0123456789abcdef0123456789abcdef01234567"
URL = "/api/v1/fit/"


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
def online(settings, httpserver: HTTPServer, tmp_path):  # type: ignore[no-untyped-def]
    settings.FITCALC_HF_ONLINE = True
    settings.HF_ENDPOINT = httpserver.url_for("").rstrip("/")
    settings.FITCALC_HF_CACHE_DIR = str(tmp_path / "hf-cache")
    settings.FITCALC_HF_TIMEOUT_S = 1
    return httpserver


def test_a_hub_config_loads_to_the_same_model_as_the_preset(online: HTTPServer) -> None:
    serve(online, "Qwen/Qwen3-30B-A3B", json.dumps(preset_config("qwen3-30b-a3b")).encode())
    spec = hf_model_spec(repo_id="Qwen/Qwen3-30B-A3B")
    preset = PRESETS["qwen3-30b-a3b"]
    assert (spec.params, spec.active_params, spec.experts, spec.kv_values_per_token) == (
        preset.params,
        preset.active_params,
        preset.experts,
        preset.kv_values_per_token,
    )
    assert spec.slug == "hf:Qwen/Qwen3-30B-A3B" and spec.citations[0].url.endswith(
        "Qwen/Qwen3-30B-A3B/blob/main/config.json"
    )


@pytest.mark.parametrize(
    ("repo", "body", "status", "error_code", "fragment"),
    [
        ("nobody/nothing", None, 404, "RepoNotFound", "no public model called nobody/nothing"),
        ("meta-llama/Llama-3.1-8B", None, 403, "GatedRepo", "gated"),
        ("someone/weights-only", None, 404, "EntryNotFound", "has no config.json"),
        ("someone/broken", b"{not json", 200, "", "not valid JSON"),
        ("someone/list", b"[1, 2]", 200, "", "not a JSON object"),
        (
            "someone/vision",
            json.dumps({"model_type": "siglip", "hidden_size": 8}).encode(),
            200,
            "",
            "num_hidden_layers",
        ),
        ("someone/down", None, 500, "", "answered 500"),
    ],
)
def test_hub_failures_name_the_problem(online: HTTPServer, repo, body, status, error_code, fragment) -> None:  # type: ignore[no-untyped-def]
    serve(online, repo, body, status=status, error_code=error_code)
    with pytest.raises(FitInputError) as caught:
        hf_model_spec(repo_id=repo)
    assert caught.value.field == "hf_model"
    assert fragment in caught.value.message, caught.value.message


def test_a_hub_that_does_not_answer_in_time_is_a_timeout(online: HTTPServer) -> None:
    def slow(request: Request) -> Response:
        time.sleep(2.5)
        return Response("{}", status=200)

    online.expect_request("/slow/model/resolve/main/config.json").respond_with_handler(slow)
    with pytest.raises(FitInputError) as caught:
        hf_model_spec(repo_id="slow/model")
    assert "did not answer within 1 s" in caught.value.message or "could not be reached" in caught.value.message


@pytest.mark.parametrize("repo_id", ["no-slash", "a/b/c", "../etc/passwd", "owner/" + "x" * 200, ""])
def test_malformed_ids_are_refused_before_any_request(online: HTTPServer, repo_id: str) -> None:
    with pytest.raises(FitInputError) as caught:
        hf_model_spec(repo_id=repo_id)
    assert "model id" in caught.value.message
    assert not online.log


def test_offline_deployments_say_so(settings) -> None:  # type: ignore[no-untyped-def]
    settings.FITCALC_HF_ONLINE = False
    with pytest.raises(FitInputError) as caught:
        hf_model_spec(repo_id="Qwen/Qwen3-8B")
    assert "offline" in caught.value.message and "presets" in caught.value.message


@pytest.mark.django_db
def test_api_takes_a_hub_id_and_answers_400_naming_it_when_it_fails(client, online: HTTPServer) -> None:  # type: ignore[no-untyped-def]
    serve(online, "Qwen/Qwen3-8B", json.dumps(preset_config("qwen3-8b")).encode())
    body = client.get(URL, {"hf_model": "Qwen/Qwen3-8B", "precision": "awq"}).json()
    assert body["model"]["params"] == PRESETS["qwen3-8b"].params and body["inputs"]["hf_model"] == "Qwen/Qwen3-8B"
    serve(online, "nobody/nothing", None, status=404, error_code="RepoNotFound")
    response = client.get(URL, {"hf_model": "nobody/nothing"})
    assert response.status_code == 400
    assert "hf_model" in response.json()["errors"]
