"""The server takes the client's serving sweep (llm-decode phase serve) and its tensor-parallel variant."""

from __future__ import annotations

import pytest

from benchmarks_app.models import BenchmarkResult, SubmissionStatus
from benchmarks_app.services import ingest
from benchmarks_app.services.errors import SubmissionInvalid
from benchmarks_app.services.intake import submission_intake
from tests.factories import body, document_ingest, host_block, make_result, per_gpu_entries, submission_document
from tests.world import INGEST_WORLD

pytestmark = pytest.mark.django_db
WORLD = INGEST_WORLD
FP8 = {"format": "e4m3", "scaling": "static-per-tensor"}


def serve_point(precision: str, context: int, concurrency: int, step_ms: float) -> dict:
    """One serving point as gpuatlas-bench writes it (the figures of an H100-like step)."""
    params = {"model": "llama3-8b", "phase": "serve", "context_len": context, "concurrency": concurrency}
    if precision == "fp8":
        params.update(FP8)
    tokens_per_s = concurrency / (step_ms / 1000)
    result = make_result(
        workload="llm-decode", precision=precision, unit="tokens/s", median=tokens_per_s, params=params
    )
    result["extra"] = {
        "cuda_graph": True,
        "step_ms": step_ms,
        "tokens_per_s_per_gpu": tokens_per_s,
        "tokens_per_s_per_user": 1000 / step_ms,
        "joules_per_token": 0.5 / concurrency,
        "kv_limit_sequences": 488,
    }
    return result


def tp_point(precision: str, tp: int, concurrency: int, step_ms: float, interconnect: str = "nvlink") -> dict:
    params = {
        "model": "llama3-70b",
        "context_len": 1024,
        "concurrency": concurrency,
        "tp": tp,
        "interconnect": "none" if tp == 1 else interconnect,
    }
    if precision == "fp8":
        params.update(FP8)
    result = make_result(
        workload="llm-decode-tp",
        precision=precision,
        unit="tokens/s",
        median=concurrency / (step_ms / 1000),
        params=params,
        gpu_count=tp,
    )
    result["per_gpu"] = per_gpu_entries(result["median"], tp)
    return result


def test_a_serving_sweep_is_stored_point_by_point_with_its_skipped_limit(world):
    points = [serve_point(p, c, n, 6.0 + n / 50) for p in ("bf16", "fp8") for c in (1024, 4096) for n in (1, 2, 4)]
    limit = {
        "workload": "llm-decode",
        "precision": "bf16",
        "params": {"model": "llama3-8b", "phase": "serve", "context_len": 4096, "concurrency": 128},
        "mode": "burst",
        "reason": "llama3-8b bf16: 128 sequences at context 4096 need about 80.5 GiB per GPU; 78.5 GiB are free",
    }
    submission = document_ingest(submission_document(results=points, skipped=[limit]))
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    stored = {
        (r.precision, r.params["context_len"], r.params["concurrency"]): r
        for r in BenchmarkResult.objects.filter(workload__slug="llm-decode")
    }
    assert len(stored) == 12
    one = stored[("fp8", 4096, 4)]
    assert one.params == {"model": "llama3-8b", "phase": "serve", "context_len": 4096, "concurrency": 4, **FP8}
    assert one.value == pytest.approx(4 / 0.00608, rel=1e-4)


def test_the_old_prefill_and_decode_results_are_still_accepted_beside_the_sweep(world):
    decode = make_result(
        workload="llm-decode",
        unit="tokens/s",
        median=131.0,
        params={"model": "llama3-8b", "phase": "decode", "batch": 1, "prompt_len": 512, "generated_tokens": 128},
    )
    submission = document_ingest(submission_document(results=[decode, serve_point("bf16", 1024, 1, 6.1)]))
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons


def test_a_tensor_parallel_host_run_is_stored_with_gpu_count_tp_and_interconnect(world):
    results = [tp_point("fp8", 1, 1, 24.0), tp_point("fp8", 2, 1, 13.0), tp_point("bf16", 2, 8, 27.0)]
    submission = document_ingest(submission_document(results=results, host=host_block(2)))
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    stored = {(r.precision, r.gpu_count): r for r in BenchmarkResult.objects.filter(workload__slug="llm-decode-tp")}
    assert set(stored) == {("fp8", 1), ("fp8", 2), ("bf16", 2)}
    two = stored[("fp8", 2)]
    assert two.params["tp"] == 2 and two.params["interconnect"] == "nvlink"
    assert two.environment["host"]["interconnect"] == "nvlink"


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"concurrency": 3}, "$.results[0].params.concurrency", "one of 1, 2, 4"),
        ({"context_len": 2048}, "$.results[0].params.context_len", "one of 1024, 4096"),
        ({"batch": 1}, "$.results[0].params.batch", ""),
    ],
)
def test_a_serving_point_with_params_the_client_never_sends_is_refused(world, change, field, reason):
    result = serve_point("bf16", 1024, 1, 6.1)
    result["params"].update(change)
    with pytest.raises(SubmissionInvalid) as refused:
        submission_intake(body=body(submission_document(results=[result])), submitter=None)
    assert any(error.field == field and reason in error.reason for error in refused.value.errors), [
        (error.field, error.reason) for error in refused.value.errors
    ]


def test_a_tensor_parallel_size_the_client_never_runs_is_refused(world):
    result = tp_point("bf16", 2, 1, 13.0)
    result["params"]["tp"] = 3
    with pytest.raises(SubmissionInvalid) as refused:
        submission_intake(body=body(submission_document(results=[result], host=host_block(2))), submitter=None)
    assert any(error.field == "$.results[0].params.tp" for error in refused.value.errors)


def test_the_serving_model_follows_a_batch_with_serving_results_and_only_such_a_batch(world, monkeypatch):
    asked: list[tuple[str, dict]] = []

    def follow(name: str, **kwargs) -> None:
        if name.startswith("llm."):  # the watches' evaluation follows every batch; this test is the model's
            asked.append((name, kwargs))

    monkeypatch.setattr(ingest, "followup_after_commit", follow)
    document_ingest(submission_document(results=[make_result()]))
    assert asked == []  # a matmul run: nothing of the serving model changes
    submission = document_ingest(submission_document(results=[serve_point("bf16", 1024, 1, 6.1)]))
    assert asked == [("llm.tasks.serving_points_refresh", {"submission_ids": [submission.pk]})]
