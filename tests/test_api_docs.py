"""The API documentation: a valid OpenAPI 3.0 document (ReDoc stopped at the submission body's
``$defs``), pages that load nothing from another site, and the unversioned addresses people guess."""

from __future__ import annotations

import json

import pytest

from api.openapi import openapi_schema_from_json_schema
from benchmarks_app.services.schema import submission_schema

pytestmark = pytest.mark.django_db


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_every_reference_of_the_schema_resolves_inside_the_document(client):
    schema = client.get("/api/v1/schema/?format=json").json()
    refs = _refs(schema)
    assert refs, "the schema references its components"
    for ref in refs:
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.removeprefix("#/components/schemas/") in schema["components"]["schemas"], ref
    assert "$defs" not in json.dumps(schema)


def test_the_openapi_document_is_valid(client):
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(client.get("/api/v1/schema/?format=json").json())


def test_the_submission_body_keeps_the_json_schemas_rules_that_openapi_30_can_say():
    body = openapi_schema_from_json_schema(submission_schema())
    text = json.dumps(body)
    assert "$defs" not in text and "$ref" not in text and '"null"' not in text and "const" not in text
    environment = body["properties"]["environment"]
    # optionalText: a string of 1-200 characters or null.
    assert environment["properties"]["driver_version"] == {
        "type": "string", "minLength": 1, "maxLength": 200, "nullable": True,
    }  # fmt: skip
    # A description beside a reference wins over the definition's.
    assert environment["properties"]["cuda_version"]["description"].startswith("The CUDA runtime")
    measurement = body["properties"]["results"]["items"]["properties"]["median"]
    assert measurement["minimum"] == 0 and measurement["exclusiveMinimum"] is True
    assert body["required"] == submission_schema()["required"]


def test_an_unresolvable_reference_is_an_error_not_a_dangling_ref():
    with pytest.raises(ValueError, match="#/\\$defs/missing"):
        openapi_schema_from_json_schema({"$defs": {}, "properties": {"a": {"$ref": "#/$defs/missing"}}})


@pytest.mark.parametrize(
    ("guess", "target"),
    [
        ("/api/docs/", "/api/v1/docs/"),
        ("/api/redoc/", "/api/v1/redoc/"),
        ("/api/", "/api/v1/"),
        ("/api/docs", "/api/docs/"),
    ],
)
def test_unversioned_doc_addresses_redirect(client, guess, target):
    response = client.get(guess)
    assert response.status_code in (301, 302), guess
    assert response["Location"] == target


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("page", ["/api/v1/docs/", "/api/v1/redoc/"])
def test_doc_pages_load_nothing_from_another_site_and_need_no_inline_script(client, page, language):
    client.cookies["django_language"] = language
    html = client.get(page).content.decode()
    assert "googleapis" not in html and "gstatic" not in html and "//" not in html.replace("http://testserver", "")
    assert "<script>" not in html
    assert f'lang="{language}"' in html
    assert "'unsafe-inline'" not in client.get(page)["Content-Security-Policy"].split("style-src")[0]


def test_swagger_start_up_script_is_a_file_of_its_own_in_the_page_language(client):
    client.cookies["django_language"] = "zh-hans"
    script = client.get("/api/v1/docs/", {"script": "", "lang": "zh-hans"})
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert "lang=zh-hans" in script.content.decode().replace("\\u003D", "=").replace("\\u002D", "-")
