"""The server takes the client's llm-train results by the rules of workloads.json, and the training
rankings read them as measured LLM training."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks_app.models import BenchmarkResult, SubmissionStatus, Workload
from benchmarks_app.services.errors import SubmissionInvalid
from benchmarks_app.services.intake import submission_intake
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import rankings_compute
from tests.factories import body, document_ingest, make_result, submission_document
from tests.world import DASHBOARD_WORLD, INGEST_WORLD, world_build

pytestmark = pytest.mark.django_db
WORLD = INGEST_WORLD
PARAMS = {"model": "llama3-8b", "n_layers": 4, "seq_len": 4096, "batch": 8}
FLOPS_PER_TOKEN = 6 * 4 * 218_103_808 + 6 * 4 * 4096 * 4096


def train_result(tokens_per_s: float) -> dict:
    """An llm-train result as gpuatlas-bench writes it on an 80 GB GPU (one micro-batch of 8)."""
    result = make_result(workload="llm-train", unit="tokens/s", median=tokens_per_s, params=dict(PARAMS))
    result["correctness"] = {"method": "output and fp32 master weights finite", "passed": True}
    result["extra"] = {
        "model_flops_per_token": float(FLOPS_PER_TOKEN),
        "model_tflops": round(tokens_per_s * FLOPS_PER_TOKEN / 1e12, 3),
        "micro_batch": 8,
        "gradient_accumulation_steps": 1,
        "optimizer": "AdamW, fused (torch.optim.AdamW(fused=True))",
        "attention": "flash",
    }
    return result


def test_the_seeded_workload_carries_the_clients_rules(world):
    workload = Workload.objects.get(slug="llm-train", version="1.0")
    assert workload.category == "training" and workload.unit == "tokens/s"
    rules = workload.submission_rules
    assert rules["precisions"] == ["bf16"] and rules["results_per_run"] == 1 and rules["max_gpu_count"] == 1
    assert {name: rule["enum"] for name, rule in rules["params"].items()} == {
        name: [value] for name, value in PARAMS.items()
    }


def test_a_run_is_accepted_and_stored_with_its_params_and_flop_rate(world):
    submission = document_ingest(submission_document(results=[train_result(95_000.0)]))
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    stored = BenchmarkResult.objects.get(workload__slug="llm-train")
    assert stored.params == PARAMS and stored.precision == "bf16" and stored.gpu_count == 1
    assert stored.value == pytest.approx(95_000.0)
    assert stored.gpu.slug == "h100-sxm5-80-gb"


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"n_layers": 32}, "$.results[0].params.n_layers", "equal to 4"),
        ({"seq_len": 2048}, "$.results[0].params.seq_len", "equal to 4096"),
        ({"batch": 1}, "$.results[0].params.batch", "equal to 8"),
        ({"micro_batch": 8}, "$.results[0].params.micro_batch", ""),
    ],
)
def test_a_result_with_params_the_client_never_sends_is_refused(world, change, field, reason):
    result = train_result(95_000.0)
    result["params"].update(change)
    with pytest.raises(SubmissionInvalid) as refused:
        submission_intake(body=body(submission_document(results=[result])), submitter=None)
    assert any(error.field == field and reason in error.reason for error in refused.value.errors), [
        (error.field, error.reason) for error in refused.value.errors
    ]


def test_a_flop_rate_above_the_dense_peak_is_rejected(world):
    """tokens/s x FLOP per token above the H100's dense BF16 peak: an MFU above 1 is not a fast GPU."""
    submission = document_ingest(submission_document(results=[train_result(200_000.0)]))
    assert submission.status == SubmissionStatus.REJECTED
    assert any("extra.model_tflops" in reason["reason"] for reason in submission.reasons), submission.reasons


@pytest.mark.parametrize("use_case", ["training", "fine-tuning"])
def test_the_training_rankings_rank_on_llm_train(use_case):
    """Measured figures from llm-train alone: each GPU's tokens/s over the baseline's."""
    world_build(
        rows=dataclasses.replace(
            DASHBOARD_WORLD,
            seed_workloads=True,
            workloads={"llm-train": {}},
            aggregates=tuple(
                {"gpu": gpu, "workload": "llm-train", "precision": "bf16", "median": median, "n": 2}
                for gpu, median in (("baseline", 30_000.0), ("h100", 90_000.0), ("rtx4090", 18_000.0))
            ),
            results=(),
        )
    )
    ranking = rankings_compute(params=RankingParams(use_case=use_case, baseline="a100-sxm4-80-gb", show="all"))
    rows = {row.gpu_slug: row for row in [*ranking.rows, *ranking.ineligible_rows]}
    for slug, ratio in (("a100-sxm4-80-gb", 1.0), ("h100-sxm5-80-gb", 3.0), ("rtx-4090", 0.6)):
        assert rows[slug].perf_basis == "measured" and rows[slug].perf_measured == pytest.approx(ratio)
