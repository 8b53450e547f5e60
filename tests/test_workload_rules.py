"""The submission rules of each workload (services.workload_rules): the format in workloads.json,
the client's real results passing them, and rules kept per workload version.

The hostile inputs themselves are in the bad-input corpus (tests/badinput/submissions.json).
"""

from __future__ import annotations

import copy
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from benchmarks_app.models import SubmissionStatus, Workload
from benchmarks_app.services.ingest import submission_ingest
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.services.snapshot import catalog_snapshot_clear
from benchmarks_app.services.workload_rules import result_params_errors, workload_rules_parse
from benchmarks_app.services.workloads import client_workloads_path, workload_seed
from tests.factories import UserFactory, body, make_result, submission_document
from tests.world import INGEST_WORLD, world_build

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "bench"
EXAMPLE = (
    Path(__file__).resolve().parents[1] / "bench_client" / "gpuatlas_bench" / "examples" / "submission-example.json"
)


def _client_entries() -> list[dict[str, Any]]:
    path = client_workloads_path()
    assert path is not None
    return json.loads(path.read_text(encoding="utf-8"))["workloads"]


@pytest.mark.parametrize("entry", _client_entries(), ids=lambda e: e["id"])
def test_every_client_workload_declares_valid_rules(entry):
    rules = workload_rules_parse(raw=entry, label=entry["id"])
    assert rules.precisions == tuple(entry["precisions"])
    assert rules.results_per_run >= 1


@pytest.mark.django_db
@pytest.mark.parametrize("path", [*sorted(FIXTURES.glob("*.json")), EXAMPLE], ids=lambda p: p.name)
def test_the_clients_real_runs_pass_the_rules(path):
    """Runs measured by the client on an H100 (and the client's example) are stored and accepted."""
    world_build(rows=INGEST_WORLD)
    catalog_snapshot_clear()
    outcome = submission_intake(body=path.read_bytes(), submitter=UserFactory())
    assert outcome.created
    status = submission_ingest(submission_id=outcome.submission.pk)
    outcome.submission.refresh_from_db()
    assert status != SubmissionStatus.REJECTED, outcome.submission.reasons


BASE = {"precisions": ["fp32", "fp8"], "results_per_run": 2, "params": {}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"results_per_run": 0}, "results_per_run must be a positive integer"),
        ({"precisions": []}, "precisions must be a non-empty list"),
        ({"max_gpu_count": 0}, "max_gpu_count must be an integer from 1"),
        ({"params": None}, "params must be an object"),
        ({"params": {"size": {"type": "string"}}}, "a string needs an enum"),
        ({"params": {"m": {"type": "integer", "minimum": 1}}}, "needs both minimum and maximum"),
        ({"params": {"m": {"type": "integer"}}}, "or both minimum and maximum"),
        ({"params": {"m": {"type": "integer", "minimum": 9, "maximum": 1}}}, "minimum <= maximum"),
        ({"params": {"m": {"type": "float", "enum": [1]}}}, "needs a type"),
        ({"params": {"m": {"type": "integer", "enum": ["8192"]}}}, "enum must be a non-empty list of integer"),
        ({"params": {"m": {"type": "integer", "enum": [1], "default": 1}}}, "unknown keywords ['default']"),
        ({"params": {"Size": {"type": "boolean"}}}, "must match"),
        ({"params": {"m": {"type": "integer", "enum": [1], "when": {"size": ["fixed"]}}}}, "not another param"),
        (
            {
                "params": {
                    "size": {"type": "string", "enum": ["fixed"]},
                    "m": {"type": "integer", "enum": [1], "when": {"size": ["huge"]}},
                }
            },
            "values 'size' cannot take",
        ),
        ({"params": {"f": {"type": "boolean", "precisions": ["bf16"]}}}, "precisions not among"),
    ],
)
def test_a_definition_that_would_let_junk_in_is_refused(change, message):
    with pytest.raises(ValueError) as caught:
        workload_rules_parse(raw={**BASE, **change}, label="demo 1.0")
    assert message in str(caught.value)


def test_ranges_and_integral_floats():
    rules = workload_rules_parse(
        raw={**BASE, "params": {"batch": {"type": "integer", "minimum": 1, "maximum": 65536}}}, label="demo 1.0"
    )
    check = lambda value: result_params_errors(  # noqa: E731
        rules=rules, params={"batch": value}, precision="fp32", path="$.results[3]"
    )
    assert check(64) == [] and check(64.0) == []  # 64.0 is 64, as in the comparison key
    [error] = check(0)
    assert str(error) == "$.results[3].params.batch: must be an integer between 1 and 65536"
    assert check(True) and check(1.5) and check("64") and check(65537)


@pytest.mark.django_db
def test_seeding_refuses_a_client_workload_without_rules(tmp_path):
    entries = copy.deepcopy(_client_entries())
    del entries[0]["params"]
    path = tmp_path / "workloads.json"
    path.write_text(json.dumps({"workloads": entries}), encoding="utf-8")
    with pytest.raises(CommandError, match="lacks params"):
        call_command("seed_workloads", "--client-file", str(path), stdout=StringIO())
    assert not Workload.objects.exists()


@pytest.mark.django_db
def test_each_workload_version_keeps_its_own_rules(tmp_path):
    """A new version of a workload brings its own rules; runs of the old version are still judged by
    the old version's (stored with its row), today and in every rebuild."""
    world_build(rows=INGEST_WORLD)
    entries = copy.deepcopy(_client_entries())
    matmul = next(e for e in entries if e["id"] == "matmul")
    matmul["version"] = "2.0"
    matmul["params"]["m"] = {"type": "integer", "minimum": 1024, "maximum": 32768, "when": {"size": ["fixed"]}}
    path = tmp_path / "workloads.json"
    path.write_text(json.dumps({"workloads": entries}), encoding="utf-8")
    workload_seed(client_path=path)
    catalog_snapshot_clear()
    assert Workload.objects.get(slug="matmul", version="1.0").submission_rules["params"]["m"]["enum"] == [8192]

    old = submission_document(results=[make_result()])
    assert submission_intake(body=body(old), submitter=UserFactory()).created
    new_run = make_result(params={"size": "fixed", "m": 4096, "n": 8192, "k": 8192})
    new_run["workload_version"] = "2.0"
    assert submission_intake(body=body(submission_document(results=[new_run])), submitter=UserFactory()).created


@pytest.mark.django_db(transaction=True)
def test_an_upgraded_site_gets_the_rules_of_its_existing_workloads():
    """Migration 0006 fills the rules from workloads.json: without it every submission would be
    refused until someone ran seed_workloads. Lab workloads keep none."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("benchmarks_app", "0004_rawsubmission_payload_lz4")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old_workload = executor.loader.project_state(before).apps.get_model("benchmarks_app", "Workload")
    for slug in ("matmul", "resnet50"):
        old_workload.objects.create(slug=slug, version="1.0", name=slug, unit="TFLOPS", category="micro")
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    matmul = Workload.objects.get(slug="matmul")
    assert matmul.submission_rules["results_per_run"] == 10
    assert workload_rules_parse(raw=matmul.submission_rules, label="matmul 1.0").params["size"].enum == (
        "fixed",
        "preferred",
    )
    assert Workload.objects.get(slug="resnet50").submission_rules is None
