"""POST /api/v1/submissions/dry-run/: the verdict a run would get, nothing stored; a CPU-only run of the
real client is checked there and answered, end to end through `gpuatlas-bench submit` as well."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuatlas_bench.cli import main

from accounts.services import api_token_create
from benchmarks_app.models import BenchmarkResult, RawSubmission
from benchmarks_app.services.dry_run import CHECKED
from tests.factories import UserFactory, body, make_result, submission_document, token_client, with_change
from tests.world import H100_BF16_PEAK, INGEST_WORLD, world_build

pytest.importorskip("torch", reason="the CPU trial runs the client through PyTorch")

WORLD = INGEST_WORLD
URL = "/api/v1/submissions/dry-run/"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "bench"


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory) -> dict:
    """A result of the real client run with --device cpu (two bandwidth workloads: seconds)."""
    out = tmp_path_factory.mktemp("cpu") / "cpu.json"
    code = main(["run", "--device", "cpu", "--quick", "--quiet", "--workloads", "membw-copy", "membw-triad",
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    return json.loads(out.read_text())


@pytest.fixture
def api(db):
    return token_client(UserFactory(username="trier"))


def dry_run(api, payload):
    return api.post(URL, data=payload if isinstance(payload, str | bytes) else body(payload),
                    content_type="application/json")  # fmt: skip


def test_a_cpu_run_is_checked_and_answered_and_nothing_is_stored(api, world, cpu_run):
    assert cpu_run["cpu_only"] is True
    answer = dry_run(api, cpu_run)
    assert answer.status_code == 200, answer.content
    report = answer.json()
    assert report["dry_run"] is True and report["verdict"] == CHECKED and report["cpu_only"] is True
    assert report["gpu"] is None
    assert [r["workload"] for r in report["results"]] == [r["workload"] for r in cpu_run["results"]]
    assert report["results"][0]["value"] == cpu_run["results"][0]["median"]
    assert (
        report["reasons"][0]["field"] == "$.cpu_only" and "never stored nor published" in report["reasons"][0]["reason"]
    )
    assert not RawSubmission.objects.exists()
    # The real endpoint refuses the same body.
    refused = api.post("/api/v1/submissions/", data=body(cpu_run), content_type="application/json")
    assert refused.status_code == 400 and "$.cpu_only" in refused.json()["errors"]


def test_a_cpu_run_that_breaks_a_rule_is_refused_with_the_field(api, world, cpu_run):
    broken = with_change(cpu_run, ["results", 0, "median"], cpu_run["results"][0]["max"] * 2)
    answer = dry_run(api, broken)
    assert answer.status_code == 400
    assert "must lie between min and max" in answer.json()["errors"]["$.results[0].median"][0]
    assert dry_run(api, "{not json").status_code == 400
    assert not RawSubmission.objects.exists()


def test_a_gpu_run_gets_the_verdict_it_would_get_with_its_energy_notes(api, world):
    accepted = dry_run(api, submission_document())
    assert accepted.status_code == 200
    assert accepted.json()["verdict"] == "accepted" and accepted.json()["gpu"]["slug"] == "h100-sxm5-80-gb"
    # A result above the GPU's peak would be rejected: the dry run says so, field by field.
    over = submission_document(results=[make_result(median=H100_BF16_PEAK * 1.5)])  # 2x would be a 400
    rejected = dry_run(api, over).json()
    assert rejected["verdict"] == "rejected"
    assert any(r["verdict"] == "rejected" and r["field"] == "$.results[0].median" for r in rejected["reasons"])
    assert not RawSubmission.objects.exists() and not BenchmarkResult.objects.exists()
    # The real H100 sweep: its throughput stands; the energy read over half a second is not published.
    sweep = dry_run(api, (FIXTURES / "h100_serving_sweep.json").read_text()).json()
    assert sweep["verdict"] in ("accepted", "flagged")
    energy = {r["field"]: r["reason"] for r in sweep["reasons"] if r["reason"].startswith("energy not published")}
    assert len(energy) == len([r for r in sweep["results"] if r["params"].get("phase") == "serve"]) > 30
    assert any("833.1 W per GPU is above the board's 700 W limit" in reason for reason in energy.values())


def test_a_dry_run_needs_a_token(client, world, cpu_run):
    assert client.post(URL, data=body(cpu_run), content_type="application/json").status_code == 401


def test_the_dry_run_is_in_the_openapi_schema(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/submissions/dry-run/"]["post"]
    assert operation["operationId"] == "submissions_dry_run"
    assert set(operation["responses"]) >= {"200", "400", "401"}


@pytest.mark.django_db(transaction=True)
def test_the_whole_loop_without_a_gpu_runs_submits_and_reads_the_answer(live_server, cpu_run, tmp_path, capsys,
                                                                         monkeypatch):  # fmt: skip
    world_build(rows=WORLD)
    _, key = api_token_create(user=UserFactory(username="looper"), name="loop")
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(cpu_run))
    monkeypatch.setenv("GPUATLAS_TOKEN", key)
    assert main(["submit", str(path), "--url", live_server.url, "--attempts", "1"]) == 0
    out = capsys.readouterr()
    assert "sent as a dry run" in out.err
    assert f"dry run of run {cpu_run['run_uuid']}: verdict checked" in out.out and "nothing was stored" in out.out
    assert not RawSubmission.objects.exists()
