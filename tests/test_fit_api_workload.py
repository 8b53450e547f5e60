"""/api/v1/fit/ asks the serving question of the rankings and /api/v1/fit/serving/: the same
``input_len``/``output_len`` parameters, bounds and refusals, and an answer that names its workload
and gives the figure /api/v1/fit/serving/ gives for those lengths (demo data for the figures)."""

from __future__ import annotations

import pytest
from django.test import Client

from llm.question import DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS, MAX_SEQUENCE_TOKENS

pytestmark = pytest.mark.django_db

ENDPOINTS = {
    "/api/v1/fit/": {"model": "llama-3.1-70b"},
    "/api/v1/fit/serving/": {"model": "llama-3.1-70b"},
    "/api/v1/rankings/": {"use_case": "llm-serving"},
}


@pytest.mark.parametrize("field", ["input_len", "output_len"])
@pytest.mark.parametrize("value", ["0", "-3", "1.5", "1e3", "many", str(MAX_SEQUENCE_TOKENS + 1)])
def test_a_bad_length_is_a_400_naming_it_on_every_endpoint_that_takes_one(client: Client, field: str, value: str):
    for path, base in ENDPOINTS.items():
        response = client.get(path, {**base, field: value})
        assert response.status_code == 400, (path, value, response.content)
        assert list(response.json()["errors"]) == [field], (path, value)


def test_the_schema_gives_every_endpoint_the_same_length_bounds(client: Client):
    schema = client.get("/api/v1/schema/?format=json").json()
    for path in ENDPOINTS:
        parameters = {p["name"]: p for p in schema["paths"][path]["get"]["parameters"]}
        for field in ("input_len", "output_len"):
            bounds = parameters[field]["schema"]
            assert (bounds["type"], bounds["minimum"], bounds["maximum"]) == ("integer", 1, MAX_SEQUENCE_TOKENS), path
    fit = schema["components"]["schemas"]["FitResponse"]["properties"]
    assert "workload" in fit
    assert {"input_len", "output_len"} <= set(schema["components"]["schemas"]["FitInputs"]["properties"])


def _h200_counts(body: dict) -> dict[int, float | None]:
    plan = next(p for p in body["plans"] if p["gpu"]["slug"] == "h200-sxm-141-gb")
    return {c["count"]: c["throughput_per_s"] for c in plan["counts"]}


def test_the_fit_api_answers_the_lengths_asked_and_names_its_workload(demo, client: Client):  # type: ignore[no-untyped-def]
    asked = {"model": "llama-3.1-405b", "precision": "fp8", "input_len": "128", "output_len": "2048"}
    body = client.get("/api/v1/fit/", asked).json()
    assert (body["inputs"]["input_len"], body["inputs"]["output_len"]) == (128, 2048)
    workload = body["workload"]
    assert (workload["model"], workload["input_len"], workload["output_len"]) == ("llama-3.1-405b", 128, 2048)
    assert workload["precision"] == "fp8" and workload["target_tokens_per_s_per_user"] is None
    assert "128 prompt / 2,048 output tokens" in workload["label"]
    # The figure /api/v1/fit/serving/ gives for the same question, count by count.
    plans = client.get("/api/v1/fit/serving/", {**asked, "target": "max"}).json()
    options = [o for o in plans["options"] if o["gpu"] == "h200-sxm-141-gb"]
    assert options
    counts = _h200_counts(body)
    for option in options:
        assert counts[option["gpu_count"]] == pytest.approx(option["tokens_per_s"], rel=1e-3)
    # The lengths change the answer: the default 1,000/1,000 question reads another figure.
    default = client.get("/api/v1/fit/", {"model": "llama-3.1-405b", "precision": "fp8"}).json()
    assert (default["workload"]["input_len"], default["workload"]["output_len"]) == (
        DEFAULT_INPUT_TOKENS,
        DEFAULT_OUTPUT_TOKENS,
    )
    assert _h200_counts(default)[8] != pytest.approx(counts[8], rel=0.05)


def test_a_job_that_is_no_serving_question_names_no_workload(demo, client: Client):  # type: ignore[no-untyped-def]
    body = client.get("/api/v1/fit/", {"model": "llama-3.1-70b", "mode": "lora", "input_len": "512"}).json()
    assert body["workload"] is None
    body = client.get("/api/v1/fit/", {"model": "llama-3.1-70b", "serving": "single"}).json()
    assert body["workload"] is None


def test_the_fit_page_serves_the_lengths_asked(demo, client: Client):  # type: ignore[no-untyped-def]
    query = {"model": "llama-3.1-405b", "mode": "inference", "precision": "fp8", "input_len": "128",
             "output_len": "2048"}  # fmt: skip
    page = client.get("/fit/", query).content.decode()
    assert "Prompts of 128 tokens, answers of 2,048." in page
    refused = client.get("/fit/", {**query, "input_len": "0"}).content.decode()
    assert 'id="input_len-errors"' in refused
