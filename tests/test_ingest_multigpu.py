"""The server takes the client's LLM and multi-GPU results: the real H100 run, host submissions, link-bound units."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks_app.models import BenchmarkResult, ResultAggregate, SubmissionStatus, TrustLabel
from benchmarks_app.services.errors import SubmissionInvalid
from benchmarks_app.services.intake import submission_intake
from tests.factories import (
    body,
    ddp_result,
    document_ingest,
    host_block,
    make_result,
    per_gpu_entries,
    submission_document,
)
from tests.world import INGEST_WORLD

pytestmark = pytest.mark.django_db
WORLD = INGEST_WORLD

REAL_LLM_RUN = Path(__file__).resolve().parent / "fixtures" / "bench" / "h100_run_llm.json"


def test_the_real_h100_llm_run_is_stored_with_its_params_and_the_failed_fp8_check_flagged(world):
    document = json.loads(REAL_LLM_RUN.read_text())
    submission = document_ingest(document)
    assert submission.gpu_id == world.gpus["h100"].pk
    # fp8 decode at batch 1 missed its consistency tolerance (0.1004 > 0.1): kept, flagged.
    assert submission.status == SubmissionStatus.FLAGGED
    rows = {
        (r.workload.slug, r.precision, r.params.get("phase"), r.params.get("batch")): r
        for r in BenchmarkResult.objects.select_related("workload")
    }
    assert len(rows) == 10
    decode = rows[("llm-decode", "bf16", "decode", 1)]
    assert decode.value == pytest.approx(131.269)
    assert decode.params["generated_tokens"] == 128 and decode.params["prompt_len"] == 512
    assert decode.gpu_count == 1 and decode.trust == TrustLabel.COMMUNITY
    assert rows[("llm-decode", "fp8", "decode", 1)].trust == TrustLabel.FLAGGED
    ddp = rows[("transformer-train-ddp", "bf16", None, 8)]
    assert ddp.environment["host"]["nccl_version"] == "2.28.9"
    assert ddp.environment["host"]["interconnect"] == "none"
    assert [entry["rank"] for entry in ddp.environment["per_gpu"]] == [0]
    assert "host" not in decode.environment


def test_a_host_submission_stores_gpu_count_per_gpu_figures_and_the_interconnect(world):
    one, two = ddp_result(1_600_000.0, 1, "none"), ddp_result(3_100_000.0, 2, "nvlink")
    submission = document_ingest(submission_document(results=[one, two], host=host_block(2)))
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    stored = {r.gpu_count: r for r in BenchmarkResult.objects.all()}
    assert set(stored) == {1, 2}
    assert [entry["rank"] for entry in stored[2].environment["per_gpu"]] == [0, 1]
    assert stored[2].environment["host"]["interconnect"] == "nvlink"
    assert stored[2].environment["host"]["link_matrix"] == [["X", "NV18"], ["NV18", "X"]]
    aggregates = dict(ResultAggregate.objects.values_list("gpu_count", "median"))
    assert aggregates == {1: pytest.approx(one["median"]), 2: pytest.approx(two["median"])}


def test_allreduce_bus_bandwidth_is_not_judged_against_memory_bandwidth(world):
    # 2x H100 over NVLink: about 330 GB/s of bus bandwidth, a tenth of HBM; never "far below the peak".
    params = {"bytes": 1073741824, "dtype": "float32", "op": "avg", "interconnect": "nvlink"}
    result = make_result(
        workload="allreduce-busbw", precision="fp32", unit="GB/s", median=330.0, params=params, gpu_count=2
    )
    result["per_gpu"] = per_gpu_entries(result["median"] * 2, 2)
    submission = document_ingest(submission_document(results=[result], host=host_block(2)))
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    assert BenchmarkResult.objects.get().trust == TrustLabel.COMMUNITY


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ("duplicate rank", "$.results[0].per_gpu", "one entry for each rank 0 to 1"),
        ("more gpus than ran", "$.results[0].gpu_count", "host.ranks says the run used at most 1"),
    ],
)
def test_inconsistent_multi_gpu_results_are_refused_at_intake_naming_the_field(world, change, field, reason):
    result = ddp_result(3_100_000.0, 2, "nvlink")
    host = host_block(2)
    if change == "duplicate rank":
        result["per_gpu"][1]["rank"] = 0
    else:
        host["ranks"] = 1
    with pytest.raises(SubmissionInvalid) as refused:
        submission_intake(body=body(submission_document(results=[result], host=host)), submitter=None)
    assert any(error.field == field and reason in error.reason for error in refused.value.errors)
