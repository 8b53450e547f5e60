"""The ingest services: claims, matching, plausibility, outliers, aggregates, moderation, sweeping, retries."""

from __future__ import annotations

import datetime as dt
import statistics
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.db import OperationalError, connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, RawSubmission, ResultAggregate, SubmissionStatus, TrustLabel
from benchmarks_app.services import ingest as ingest_module
from benchmarks_app.services.comparison_keys import comparison_key_for
from benchmarks_app.services.errors import SubmissionInvalid
from benchmarks_app.services.ingest import submission_ingest, submissions_claim, submissions_sweep
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.services.moderation import gpu_name_map, submissions_approve, submissions_reject
from benchmarks_app.services.peers import PeerCache
from benchmarks_app.services.report import report_read
from benchmarks_app.services.robust_statistics import modified_z_score, summarise
from benchmarks_app.services.snapshot import catalog_snapshot_clear
from benchmarks_app.tasks import ingest_submission, submissions_enqueue
from catalog.models import GpuAlias, UnmatchedGpuName
from tests.factories import (
    GpuFactory,
    UserFactory,
    bandwidth_result,
    body,
    document_ingest,
    make_result,
    submission_document,
)
from tests.world import H100_BANDWIDTH, H100_BF16_PEAK, INGEST_WORLD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_tasks")]
WORLD = INGEST_WORLD


def store(document, user=None) -> RawSubmission:
    """Intake without running the queued task (on_commit callbacks do not fire in these tests)."""
    user = user or get_user_model().objects.get_or_create(username="submitter")[0]
    return submission_intake(body=body(document), submitter=user).submission


# ---------------------------------------------------------------- matching


@pytest.mark.parametrize(
    ("smi", "torch_name", "mib", "slug"),
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 81559, "h100-sxm5-80-gb"),
        (None, "NVIDIA H100 NVL", 95830, "h100-nvl"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 81920, "a100-sxm4-80-gb"),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", 40960, "a100-sxm4-40-gb"),
    ],
)
def test_gpu_is_matched_by_the_reported_names(world, smi, torch_name, mib, slug):
    results = [make_result(median=200.0)]
    submission = document_ingest(
        submission_document(name_smi=smi, name_torch=torch_name, memory_total_mib=mib, results=results)
    )
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    assert submission.gpu.slug == slug


def test_reported_memory_tells_variants_apart(world):
    """A bare family name is resolved by memory: 94 GiB is the NVL, not the 80 GiB SXM."""
    GpuAlias.objects.create(gpu=world.gpus["h100"], alias="NVIDIA H100", normalised="nvidiah100")
    catalog_snapshot_clear()
    results = [make_result(median=200.0)]
    nvl = document_ingest(submission_document(name_smi="NVIDIA H100", memory_total_mib=95830, results=results))
    sxm = document_ingest(submission_document(name_smi="NVIDIA H100", memory_total_mib=81559, results=results))
    assert (nvl.gpu.slug, sxm.gpu.slug) == ("h100-nvl", "h100-sxm5-80-gb")


def test_unknown_gpu_is_held_then_mapped_and_ingested(world, django_capture_on_commit_callbacks):
    document = submission_document(
        name_smi="NVIDIA GH200 480GB", name_torch="NVIDIA GH200 480GB", memory_total_mib=97871
    )
    held = document_ingest(document)
    assert held.status == SubmissionStatus.ON_HOLD
    assert held.reasons[0]["field"] == "$.environment.gpu.name_nvidia_smi"
    assert "unknown GPU" in held.reasons[0]["reason"]
    assert BenchmarkResult.objects.count() == 0
    unmatched = UnmatchedGpuName.objects.get()
    assert (unmatched.name, unmatched.context) == ("NVIDIA GH200 480GB", "submission")
    gh200 = GpuFactory(name="GH200", slug="gh200", memory_gib=96, fp32_tflops=60.0, memory_bandwidth_gbs=4000.0)
    with django_capture_on_commit_callbacks(execute=True):
        summary = gpu_name_map(name="NVIDIA GH200 480GB", gpu=gh200)
    assert summary.reingested == 1
    held.refresh_from_db()
    assert held.status == SubmissionStatus.ACCEPTED, held.reasons
    assert held.gpu == gh200
    assert GpuAlias.objects.get(normalised="nvidiagh200480gb").origin == GpuAlias.Origin.CURATOR
    assert UnmatchedGpuName.objects.get().resolved_to == gh200


# ---------------------------------------------------------------- plausibility


def test_result_above_the_peak_is_rejected_with_the_reason(world):
    submission = document_ingest(submission_document(results=[make_result(median=H100_BF16_PEAK * 1.2)]))
    assert submission.status == SubmissionStatus.REJECTED
    reason = next(r for r in submission.reasons if r["verdict"] == "rejected")
    assert reason["field"] == "$.results[0].median"
    assert "above the dense BF16 tensor peak 1000" in reason["reason"]
    assert BenchmarkResult.objects.count() == 0
    assert ResultAggregate.objects.count() == 0


def test_within_tolerance_of_the_peak_is_accepted(world):
    submission = document_ingest(submission_document(results=[make_result(median=H100_BF16_PEAK * 1.04)]))
    assert submission.status == SubmissionStatus.ACCEPTED
    assert submission.reasons == []
    stored = BenchmarkResult.objects.get(submission=submission)
    assert stored.value == pytest.approx(H100_BF16_PEAK * 1.04) and stored.trust == TrustLabel.COMMUNITY


def test_bandwidth_above_memory_bandwidth_is_rejected(world):
    submission = document_ingest(submission_document(results=[bandwidth_result(median=H100_BANDWIDTH * 1.5)]))
    assert submission.status == SubmissionStatus.REJECTED
    assert "memory bandwidth" in submission.reasons[0]["reason"]


def test_ten_times_the_peak_is_refused_at_intake(world):
    with pytest.raises(SubmissionInvalid) as refused:
        store(submission_document(results=[make_result(median=H100_BF16_PEAK * 10)]))
    assert refused.value.errors[0].field == "$.results[0].median"
    assert RawSubmission.objects.count() == 0


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        (make_result(median=H100_BF16_PEAK * 0.05), "below 10%"),
        (make_result(median=700.0, spread=0.25), "spread by"),
    ],
)
def test_far_below_peak_or_wide_spread_is_flagged_and_not_aggregated(world, result, reason):
    submission = document_ingest(submission_document(results=[result, bandwidth_result()]))
    assert submission.status == SubmissionStatus.FLAGGED
    assert any(reason in r["reason"] for r in submission.reasons if r["verdict"] == "flagged")
    trusts = dict(BenchmarkResult.objects.values_list("workload__slug", "trust"))
    assert trusts == {"matmul": TrustLabel.FLAGGED, "membw-copy": TrustLabel.COMMUNITY}
    assert list(ResultAggregate.objects.values_list("workload__slug", flat=True)) == ["membw-copy"]


# ---------------------------------------------------------------- outliers and aggregates


def test_outlier_against_five_accepted_results_is_flagged(world):
    for value in (690.0, 700.0, 705.0, 710.0):
        assert (
            document_ingest(submission_document(results=[make_result(median=value)])).status
            == SubmissionStatus.ACCEPTED
        )
    # Four peers: too few to call anything an outlier.
    assert document_ingest(submission_document(results=[make_result(median=350.0)])).status == SubmissionStatus.ACCEPTED
    # The 350 joined the accepted peers; with five peers, 300 is far outside (MAD-based z < -3.5).
    low = document_ingest(submission_document(results=[make_result(median=300.0)]))
    assert low.status == SubmissionStatus.FLAGGED
    assert "outlier against 5 accepted results" in low.reasons[-1]["reason"]
    normal = document_ingest(submission_document(results=[make_result(median=702.0)]))
    assert normal.status == SubmissionStatus.ACCEPTED


def test_aggregates_hold_median_quartiles_and_distinct_submitters(world):
    alice, bob = (get_user_model().objects.create(username=name) for name in ("alice", "bob"))
    values = [600.0, 640.0, 650.0, 660.0, 700.0]
    for index, value in enumerate(values):
        document_ingest(submission_document(results=[make_result(median=value)]), submitter=alice if index < 3 else bob)
    flagged = document_ingest(submission_document(results=[make_result(median=650.0, spread=0.4)]))
    assert flagged.status == SubmissionStatus.FLAGGED
    medians = [r.value for r in BenchmarkResult.objects.filter(trust=TrustLabel.COMMUNITY)]
    aggregate = ResultAggregate.objects.get()
    expected = summarise(medians, ["a"] * 3 + ["b"] * 2)
    assert (aggregate.n, aggregate.distinct_submitters) == (5, 2)
    assert aggregate.median == pytest.approx(statistics.median(medians))
    assert (aggregate.q1, aggregate.q3) == (pytest.approx(expected.q1), pytest.approx(expected.q3))
    assert (aggregate.minimum, aggregate.maximum) == (pytest.approx(min(medians)), pytest.approx(max(medians)))
    assert aggregate.has_lab is False


def test_comparison_key_ignores_number_spelling_and_separates_gpu_count_and_mode():
    base = {"workload_slug": "matmul", "version": "1.0", "precision": "bf16", "params": {"m": 8192}, "gpu_count": 1}
    assert comparison_key_for(**base).key == comparison_key_for(**{**base, "version": "1.0.7"}).key
    assert comparison_key_for(**base).key != comparison_key_for(**{**base, "gpu_count": 2}).key
    assert comparison_key_for(**base).key != comparison_key_for(**{**base, "version": "1.1"}).key
    a = make_result(params={"m": 8192})
    b = make_result(params={"m": 8192.0})
    doc = submission_document(results=[a, {**b, "mode": "sustained"}, b])
    keys = [r.key().key for r in report_read(doc).results]
    assert keys[0] == keys[2] != keys[1]


def test_modified_z_score_matches_the_formula():
    peers = [10.0, 11.0, 12.0, 13.0, 14.0]
    # median 12, MAD 1: 0.6745 * (20 - 12) / 1
    assert modified_z_score(20.0, peers) == pytest.approx(0.6745 * 8)


# ---------------------------------------------------------------- claims, retries, sweeping


def test_a_submission_is_claimed_once(world):
    submission = store(submission_document())
    assert submissions_claim(submission_id=submission.pk, batch_size=1)[1] == [submission.pk]
    assert submissions_claim(submission_id=submission.pk, batch_size=1)[1] == []
    assert submission_ingest(submission_id=submission.pk) is None  # already claimed: not ours
    submission.refresh_from_db()
    assert (submission.status, submission.attempts) == (SubmissionStatus.PROCESSING, 1)


def test_ingesting_twice_writes_results_once(world):
    submission = store(submission_document())
    assert submission_ingest(submission_id=submission.pk) == SubmissionStatus.ACCEPTED
    assert submission_ingest(submission_id=submission.pk) is None
    assert BenchmarkResult.objects.count() == 2
    assert ResultAggregate.objects.get(workload__slug="matmul").n == 1


def test_database_error_rolls_back_and_the_task_retries(world):
    submission = store(submission_document())
    real = ingest_module.submissions_derive
    calls = []

    def flaky(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            BenchmarkResult.objects.create(
                gpu=world.gpus["h100"], workload_id=1, precision="bf16", comparison_key="x", comparison_label="x",
                value=1.0, trust="community", measured_at=timezone.now(),
            )  # fmt: skip
            raise OperationalError("server closed the connection unexpectedly")
        return real(**kwargs)

    with mock.patch.object(ingest_module, "submissions_derive", side_effect=flaky):
        ingest_submission.apply(args=[submission.pk])
    submission.refresh_from_db()
    assert len(calls) == 2
    assert (submission.status, submission.attempts) == (SubmissionStatus.ACCEPTED, 2)
    assert not BenchmarkResult.objects.filter(comparison_key="x").exists()  # the first attempt rolled back
    assert BenchmarkResult.objects.count() == 2


def test_an_invalid_stored_payload_is_rejected_without_retry(world):
    submission = store(submission_document())
    RawSubmission.objects.filter(pk=submission.pk).update(payload='{"schema_version": 2}')
    with mock.patch.object(ingest_submission, "retry", side_effect=AssertionError("must not retry")):
        ingest_submission.apply(args=[submission.pk])
    submission.refresh_from_db()
    assert (submission.status, submission.attempts) == (SubmissionStatus.REJECTED, 1)
    assert {r["field"] for r in submission.reasons} >= {"$.schema_version", "$.client"}


@override_settings(INGEST_CLAIM_GRACE_S=60, INGEST_RECEIVED_GRACE_S=30, INGEST_BATCH_SIZE=1)
def test_sweeper_recovers_dead_claims_and_lost_messages(world, django_capture_on_commit_callbacks):
    crashed = store(submission_document())
    lost = store(submission_document())
    fresh = store(submission_document())
    now = timezone.now()
    RawSubmission.objects.filter(pk=crashed.pk).update(
        status="processing", attempts=1, claimed_at=now - dt.timedelta(seconds=120)
    )
    RawSubmission.objects.filter(pk=lost.pk).update(received_at=now - dt.timedelta(seconds=60))
    summary = submissions_sweep(now=now)
    assert summary.reclaimed == 1
    assert summary.waiting == sorted([crashed.pk, lost.pk])  # the fresh one is still in the queue
    assert submissions_enqueue(submission_ids=summary.waiting) == summary.waiting
    for submission in (crashed, lost, fresh):
        submission.refresh_from_db()
    assert (crashed.status, lost.status, fresh.status) == ("accepted", "accepted", "received")
    assert crashed.attempts == 2
    assert BenchmarkResult.objects.filter(submission=crashed).count() == 2


@override_settings(INGEST_CLAIM_GRACE_S=60)
def test_a_submission_that_keeps_crashing_is_put_on_hold(world):
    poison = store(submission_document())
    RawSubmission.objects.filter(pk=poison.pk).update(
        status="processing", attempts=ingest_module.MAX_ATTEMPTS, claimed_at=timezone.now() - dt.timedelta(seconds=120)
    )
    summary = submissions_sweep()
    poison.refresh_from_db()
    assert summary.given_up == [poison.pk]
    assert poison.status == SubmissionStatus.ON_HOLD
    assert "failed" in poison.reasons[0]["reason"]


def test_a_task_claims_waiting_submissions_in_one_batch(world):
    waiting = [store(submission_document()) for _ in range(5)]
    with override_settings(INGEST_BATCH_SIZE=3):
        assert ingest_submission.apply(args=[waiting[2].pk]).get() == SubmissionStatus.ACCEPTED
    statuses = [RawSubmission.objects.get(pk=s.pk).status for s in waiting]
    # Its own submission, then the oldest waiting ones; their own tasks will find nothing to do.
    assert statuses == ["accepted", "accepted", "accepted", "received", "received"]
    assert submission_ingest(submission_id=waiting[0].pk) is None


# ---------------------------------------------------------------- moderation


def test_approving_a_flagged_submission_counts_its_results(world):
    moderator = UserFactory(username="curator", is_staff=True)
    flagged = document_ingest(submission_document(results=[make_result(median=650.0, spread=0.4)]))
    assert flagged.status == SubmissionStatus.FLAGGED and not ResultAggregate.objects.exists()
    summary = submissions_approve(submission_ids=[flagged.pk], moderator=moderator)
    assert summary.changed == [str(flagged.run_uuid)]
    flagged.refresh_from_db()
    assert (flagged.status, flagged.moderated_by) == (SubmissionStatus.ACCEPTED, moderator)
    assert BenchmarkResult.objects.get().trust == TrustLabel.COMMUNITY
    assert ResultAggregate.objects.get().n == 1


def test_rejecting_removes_results_from_the_aggregates(world):
    moderator = UserFactory(username="curator", is_staff=True)
    keep = document_ingest(submission_document(results=[make_result(median=700.0)]))
    drop = document_ingest(submission_document(results=[make_result(median=600.0)]))
    assert ResultAggregate.objects.get().n == 2
    held = document_ingest(submission_document(name_smi="Mystery GPU", name_torch="Mystery GPU"))
    submissions_reject(submission_ids=[drop.pk, held.pk], moderator=moderator)
    aggregate = ResultAggregate.objects.get()
    assert (aggregate.n, aggregate.median) == (1, pytest.approx(700.0))
    assert BenchmarkResult.objects.filter(submission=keep).count() == 1
    drop.refresh_from_db()
    held.refresh_from_db()
    assert (drop.status, held.status) == (SubmissionStatus.REJECTED, SubmissionStatus.REJECTED)


def test_approve_skips_what_is_not_flagged(world):
    held = document_ingest(submission_document(name_smi="Mystery GPU", name_torch="Mystery GPU"))
    summary = submissions_approve(submission_ids=[held.pk], moderator=UserFactory(is_staff=True))
    assert summary.changed == [] and "map its GPU name first" in summary.skipped[str(held.run_uuid)]


@pytest.mark.parametrize(
    ("first", "second"),
    [({"m": 1}, {"m": 1.0}), ({"m": 1}, {"m": True}), ({"m": 0.0}, {"m": -0.0}), ({"m": "1"}, {"m": 1})],
)
def test_comparison_keys_tell_apart_values_python_thinks_equal(first, second):  # type: ignore[no-untyped-def]
    base = {"workload_slug": "matmul", "version": "1.0", "precision": "bf16", "gpu_count": 1}
    assert comparison_key_for(**base, params=first) == comparison_key_for(**base, params=dict(first))
    assert comparison_key_for(**base, params=first).key != comparison_key_for(**base, params=second).key


@pytest.mark.postgres
def test_stored_payloads_are_compressed_with_lz4_where_the_server_has_it(world):

    with connection.cursor() as cursor:
        cursor.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        methods = cursor.fetchone()[0] or []
    if "lz4" not in methods:
        pytest.skip("this PostgreSQL server was built without lz4")
    document = submission_document()
    submission = store(document)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(payload), payload FROM benchmarks_app_rawsubmission WHERE id = %s",
            [submission.pk],
        )
        method, payload = cursor.fetchone()
    assert method == "lz4"
    assert payload == body(document).decode()


def _row(submission: RawSubmission) -> dict:
    return {f.attname: getattr(submission, f.attname) for f in RawSubmission._meta.concrete_fields}


def test_the_intake_stores_the_row_it_hands_back(world):
    document = submission_document()
    before = timezone.now()
    submission = store(document)
    stored = RawSubmission.objects.get(pk=submission.pk)
    # What the intake hands back (the 201's source) is what the database holds.
    assert _row(submission) == _row(stored)
    assert stored.payload == body(document).decode()
    assert str(stored.run_uuid) == document["run_uuid"]
    assert stored.status == SubmissionStatus.RECEIVED and stored.reasons == [] and stored.attempts == 0
    assert stored.channel == RawSubmission.Channel.API and stored.submitter.username == "submitter"
    assert stored.received_at >= before and timezone.is_aware(stored.received_at)
    assert stored.claimed_at is None and stored.processed_at is None and stored.gpu_id is None
    assert not submission._state.adding
    # The unique run UUID still tells a repeat apart: the stored row comes back, nothing is added.
    assert submission_intake(body=body(document), submitter=stored.submitter).created is False
    assert RawSubmission.objects.filter(run_uuid=document["run_uuid"]).count() == 1


def test_peer_sets_load_without_sorting_the_results(world):
    # The model's default order (newest first) would make the database sort every trusted
    # result of the pair, hundreds of thousands for a busy GPU, for an order nobody uses.
    document_ingest(submission_document())
    result = BenchmarkResult.objects.order_by("pk")[0]
    with CaptureQueriesContext(connection) as queries:
        found = PeerCache(validate=False).load(gpu_id=result.gpu_id, comparison_keys=[result.comparison_key])
    peer_set = found[result.comparison_key]
    assert (list(peer_set.values), dict(peer_set.submitters), peer_set.lab) == (
        [result.value],
        {result.submitter_key: 1},
        0,
    )
    assert len(queries) == 1 and "ORDER BY" not in queries[0]["sql"].upper()


def test_a_failing_batch_is_redone_one_by_one(world):
    stored = [store(submission_document()) for _ in range(3)]
    real = ingest_module._derive_claimed
    calls: list[list[int]] = []

    def batch_fails(ids, claimed_at):  # type: ignore[no-untyped-def]
        calls.append(list(ids))
        if len(ids) > 1:
            raise RuntimeError("a bug that only batches hit")
        return real(ids, claimed_at)

    with mock.patch.object(ingest_module, "_derive_claimed", side_effect=batch_fails):
        assert submission_ingest(submission_id=stored[1].pk) == SubmissionStatus.ACCEPTED
    assert calls == [[s.pk for s in stored], *([s.pk] for s in stored)]
    assert set(RawSubmission.objects.values_list("status", flat=True)) == {SubmissionStatus.ACCEPTED}


def test_a_submission_that_fails_alone_in_a_batch_is_given_back(world):
    stored = [store(submission_document()) for _ in range(3)]
    real = ingest_module._derive_claimed

    def poison(ids, claimed_at):  # type: ignore[no-untyped-def]
        if stored[0].pk in ids:
            raise RuntimeError("a bug this submission hits")
        return real(ids, claimed_at)

    with mock.patch.object(ingest_module, "_derive_claimed", side_effect=poison):
        assert submission_ingest(submission_id=stored[2].pk) == SubmissionStatus.ACCEPTED
    statuses = dict(RawSubmission.objects.values_list("pk", "status"))
    assert statuses == {stored[0].pk: "received", stored[1].pk: "accepted", stored[2].pk: "accepted"}
    assert RawSubmission.objects.get(pk=stored[0].pk).attempts == 1  # the next claim counts again


def test_claims_take_the_own_submission_then_the_oldest_waiting_once(world):
    stored = [store(submission_document()) for _ in range(4)]
    _claimed_at, first = submissions_claim(submission_id=stored[3].pk, batch_size=2)
    _claimed_at, second = submissions_claim(submission_id=stored[1].pk, batch_size=2)
    _claimed_at, third = submissions_claim(submission_id=stored[0].pk, batch_size=2)
    assert (first, second, third) == ([stored[0].pk, stored[3].pk], [stored[1].pk, stored[2].pk], [])
    assert set(RawSubmission.objects.values_list("attempts", flat=True)) == {1}
