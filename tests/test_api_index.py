"""/api/v1/ lists the endpoints and the documentation (it answered 404); the docs follow the page's language."""

from __future__ import annotations

import pytest
from django.urls import get_resolver

pytestmark = pytest.mark.django_db


def test_api_index_lists_every_endpoint_and_the_docs(client):
    response = client.get("/api/v1/")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["documentation"]["swagger_ui"].endswith("/api/v1/docs/")
    assert body["documentation"]["redoc"].endswith("/api/v1/redoc/")
    assert body["site"].endswith("/")
    _prefix, resolver = get_resolver().namespace_dict["api"]
    named = {p.name for p in resolver.url_patterns if p.name} - {"index", "not-found", "schema", "docs", "redoc"}
    listed = {e["name"]: e for e in body["endpoints"]}
    assert set(listed) == named
    assert all(e["purpose"] for e in listed.values())
    assert listed["rankings"]["path"] == "/api/v1/rankings/"
    # the listed paths without parameters answer (not the JSON 404 of unknown API paths)
    for endpoint in listed.values():
        if "<" not in endpoint["path"] and "moderation" not in endpoint["path"]:
            assert client.get(endpoint["path"]).status_code != 404, endpoint["path"]
    assert client.get("/api/v1/no-such-thing/").status_code == 404


def test_api_docs_are_in_the_page_language_and_link_back(client):
    """The API docs were English on Chinese pages and had no way back to the site."""
    client.cookies["django_language"] = "zh-hans"
    docs = client.get("/api/v1/docs/").content.decode()
    assert "lang=zh-hans" in docs.replace("\\u003D", "=").replace("\\u002D", "-")
    schema = client.get("/api/v1/schema/", {"lang": "zh-hans", "format": "json"}).json()
    assert "[返回 GPU Atlas](/)" in schema["info"]["description"]
    summaries = {op.get("summary") for path in schema["paths"].values() for op in path.values()}
    assert "GPU 排名：性能、价格与性价比" in summaries
    client.cookies["django_language"] = "en"
    english = client.get("/api/v1/schema/", {"format": "json"}).json()
    assert "[Back to GPU Atlas](/)" in english["info"]["description"]
