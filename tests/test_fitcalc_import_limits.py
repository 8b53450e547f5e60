"""Hugging Face model imports need an account and are throttled, on the page and in the API, and
the list of imported models is paginated without their configs.

Before: anonymous clients imported, the page form took 30 imports in 1.8 s, and after 61 large
configs ``GET /api/v1/fit/models/`` returned 55 MB (each config in full, every row at once).
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils import timezone

from fitcalc.models import HfModel
from tests.factories import UserFactory
from tests.test_fitcalc_hub import IMPORT_PAGE, MODELS_URL, online, preset_config, serve  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def importer(settings) -> Client:  # type: ignore[no-untyped-def]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "hf_import": "3/hour"},
    }
    client = Client()
    client.force_login(UserFactory(username="importer"))
    return client


def test_anonymous_imports_are_refused_on_the_page_and_in_the_api(online) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    serve(online, "Qwen/Qwen3-8B", json.dumps(preset_config("qwen3-8b")).encode())
    anonymous = Client()
    api = anonymous.post(MODELS_URL, {"hf_id": "Qwen/Qwen3-8B"}, content_type="application/json")
    assert api.status_code == 401 and "detail" in api.json()
    page = anonymous.post(IMPORT_PAGE, {"hf_id": "Qwen/Qwen3-8B"})
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert not online.log and not HfModel.objects.exists()
    offer = anonymous.get("/fit/", {"hf_model": "Qwen/Qwen3-8B"}).content.decode()
    assert "Sign in to import models from Hugging Face." in offer and 'name="hf_id"' not in offer


def test_page_and_api_imports_share_one_allowance(importer, online) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    serve(online, "Qwen/Qwen3-8B", json.dumps(preset_config("qwen3-8b")).encode())
    statuses = [importer.post(IMPORT_PAGE, {"hf_id": "Qwen/Qwen3-8B"}).status_code for _ in range(2)]
    statuses.append(importer.post(MODELS_URL, {"hf_id": "Qwen/Qwen3-8B"}, content_type="application/json").status_code)
    refused_api = importer.post(MODELS_URL, {"hf_id": "Qwen/Qwen3-8B"}, content_type="application/json")
    refused_page = importer.post(IMPORT_PAGE, {"hf_id": "Qwen/Qwen3-8B"})
    assert statuses == [302, 302, 201]
    assert refused_api.status_code == 429 and int(refused_api["Retry-After"]) > 0
    assert refused_page.status_code == 429
    hub_requests = len(online.log)
    assert importer.get(MODELS_URL).status_code == 200  # reads spend nothing
    assert len(online.log) == hub_requests


def test_the_list_is_paginated_and_leaves_the_configs_out(client) -> None:  # type: ignore[no-untyped-def]
    large = {"model_type": "llama", "padding": "x" * 200_000}
    HfModel.objects.bulk_create(
        HfModel(repo_id=f"owner/model-{index:03d}", config=large, source_url="https://huggingface.co/x",
                fetched_at=timezone.now())
        for index in range(120)
    )  # fmt: skip
    first = client.get(MODELS_URL)
    body = first.json()
    assert first.status_code == 200 and body["count"] == 120 and len(body["results"]) == 50
    assert set(body["results"][0]) == {"hf_id", "revision", "source_url", "fetched_at"}
    assert len(first.content) < 20_000
    assert client.get(MODELS_URL, {"limit": 101}).status_code == 400
    last = client.get(MODELS_URL, {"limit": 100, "offset": 100}).json()
    assert [row["hf_id"] for row in last["results"]][-1] == "owner/model-119" and last["next"] is None
