"""Lab import of the bundled Lambda tables, workload seeding, the rebuild, and the moderation admin."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from benchmarks_app.models import (
    BenchmarkResult,
    RawSubmission,
    ResultAggregate,
    SubmissionStatus,
    TrustLabel,
    Workload,
)
from benchmarks_app.services.lab_import import BUNDLED_DIR, lambda_import_directory, parse_v1_name, parse_v2_name
from benchmarks_app.services.moderation import submissions_approve, submissions_reject
from benchmarks_app.services.rebuild import results_rebuild
from benchmarks_app.services.snapshot import catalog_snapshot_clear
from catalog.models import GpuAlias
from tests.factories import GpuFactory, document_ingest, make_result, submission_document
from tests.world import INGEST_WORLD, world_build

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_tasks")]


def test_lambda_names_parse_into_gpu_count_and_memory():
    assert parse_v1_name("DellTexas 2x H100 80GB SXM5", 2.0) == parse_v1_name("2x H100 80GB SXM5", 2.0)
    config = parse_v1_name("LambdaCloud 4xV100 16GB", 4.0)
    assert (config.gpu_name, config.gpu_count, config.memory_gib) == ("V100 16GB", 4, 16.0)
    v2 = parse_v2_name("LambdaOD_2x_Texas_1xH100_80GB_SXM5_192-222-52-120_v2")
    assert (v2.gpu_name, v2.gpu_count) == ("H100 80GB SXM5", 1)
    assert parse_v2_name("ASUS_8xH200_140GB_SXM_lambda-scalar_v2").gpu_name == "H200 140GB SXM"
    assert parse_v2_name("no gpu here") is None


def test_lambda_import_writes_lab_results_with_their_source_and_is_idempotent():
    a100 = GpuFactory(name="A100 SXM4 80 GB", slug="a100-sxm4-80-gb", memory_gib=80)
    h100 = GpuFactory(name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", memory_gib=80)
    catalog_snapshot_clear()
    summary = lambda_import_directory(path=BUNDLED_DIR)
    assert summary.results_written > 0
    assert "A100 80GB SXM4" in summary.matched and "H100 80GB SXM5" in summary.matched
    assert "RTX 4090" in summary.unmatched  # no such GPU in this test catalogue: listed, not guessed
    assert summary.cells_skipped_zero > 0  # 0.0 = not measured, never a result
    results = BenchmarkResult.objects.filter(trust=TrustLabel.LAB)
    assert set(results.values_list("gpu_id", flat=True)) == {a100.pk, h100.pk}
    row = results.get(gpu=a100, workload__slug="resnet50", workload__version="1.0", precision="fp16", gpu_count=8)
    assert row.value == 7397.0 or row.value > 0
    assert row.environment["config"] == "8x A100 80GB SXM4"
    assert "github.com/lambdal/deeplearning-benchmark @ aa5addb6a536" in row.source
    assert set(results.values_list("gpu_count", flat=True)) == {1, 2, 4, 8}
    assert set(results.values_list("precision", flat=True)) == {"fp16", "fp32"}
    assert Workload.objects.filter(slug="resnet50", version__in=["1.0", "2.0"]).count() == 2
    aggregate = ResultAggregate.objects.get(comparison_key=row.comparison_key, gpu=a100)
    assert aggregate.has_lab and aggregate.n == 1 and aggregate.distinct_submitters == 1
    # The H100 SXM5 has several lab configs for one key (Dell, SMC, 1CC ...): aggregated together.
    many = ResultAggregate.objects.filter(gpu=h100, n__gt=1)
    assert many.exists()
    first = summary.results_written
    again = lambda_import_directory(path=BUNDLED_DIR)
    assert (again.results_written, again.results_removed) == (first, first)
    assert BenchmarkResult.objects.count() == first


def test_import_lambda_benchmarks_command_lists_unmatched_names(tmp_path):
    out = io.StringIO()
    call_command("import_lambda_benchmarks", str(BUNDLED_DIR), stdout=out)
    text = out.getvalue()
    assert "UNMATCHED 'RTX 4090'" in text and "lab results written: 0" in text
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="not a directory"):
        call_command("import_lambda_benchmarks", str(tmp_path / "missing"))


def test_seed_workloads_is_idempotent():
    out = io.StringIO()
    call_command("seed_workloads", stdout=out)
    first = Workload.objects.count()
    assert Workload.objects.filter(slug="matmul", version="1.0", unit="TFLOPS", category="micro").exists()
    assert Workload.objects.filter(slug="waveglow", version="2.0", category="training").exists()
    call_command("seed_workloads", stdout=out)
    assert Workload.objects.count() == first
    assert f"unchanged {first}" in out.getvalue()


def _aggregate_state():
    return sorted(
        ResultAggregate.objects.values_list(
            "gpu_id",
            "comparison_key",
            "n",
            "distinct_submitters",
            "median",
            "q1",
            "q3",
            "minimum",
            "maximum",
            "has_lab",
        )
    )


def test_rebuild_reproduces_results_aggregates_and_verdicts():
    world = world_build(rows=INGEST_WORLD)
    GpuAlias.objects.create(gpu=world.gpus["h100"], alias="H100 80GB SXM5", normalised="h10080gbsxm5")
    catalog_snapshot_clear()
    users = [get_user_model().objects.create(username=f"u{i}") for i in range(3)]
    moderator = get_user_model().objects.create(username="mod", is_staff=True)
    medians = [690.0, 700.0, 705.0, 710.0, 698.0, 702.0, 300.0, 703.0]
    ids = []
    for index, median in enumerate(medians):
        document = submission_document(
            results=[make_result(median=median), make_result(precision="fp16", median=650.0)]
        )
        ids.append(document_ingest(document, submitter=users[index % 3]).pk)
    spread = document_ingest(submission_document(results=[make_result(median=650.0, spread=0.4)]), submitter=users[0])
    document_ingest(submission_document(name_smi="Mystery GPU"), submitter=users[1])
    submissions_approve(submission_ids=[spread.pk], moderator=moderator)
    submissions_reject(submission_ids=[ids[1]], moderator=moderator)
    lambda_import_directory(path=BUNDLED_DIR)

    statuses = dict(RawSubmission.objects.values_list("pk", "status"))
    assert statuses[ids[6]] == SubmissionStatus.FLAGGED  # the 300 outlier
    assert statuses[spread.pk] == SubmissionStatus.ACCEPTED and statuses[ids[1]] == SubmissionStatus.REJECTED
    before = _aggregate_state()
    results_before = sorted(BenchmarkResult.objects.values_list("gpu_id", "comparison_key", "value", "trust"))
    assert any(row[-1] for row in before) and len(before) > 2

    summary = results_rebuild(lab_path=BUNDLED_DIR)

    assert not summary.failed
    assert _aggregate_state() == before
    assert sorted(BenchmarkResult.objects.values_list("gpu_id", "comparison_key", "value", "trust")) == results_before
    assert dict(RawSubmission.objects.values_list("pk", "status")) == statuses


def test_rebuild_results_command_prints_a_summary():
    world_build(rows=INGEST_WORLD)
    out = io.StringIO()
    call_command("rebuild_results", "--no-lab", stdout=out)
    assert "submissions re-derived: 0" in out.getvalue()


# ---------------------------------------------------------------- admin


@pytest.fixture
def staff_client():
    client = Client()
    client.force_login(get_user_model().objects.create(username="curator", is_staff=True, is_superuser=True))
    return client


def test_moderation_queue_lists_flagged_and_held_and_approves(staff_client):
    world_build(rows=INGEST_WORLD)
    user = get_user_model().objects.create(username="s")
    flagged = document_ingest(submission_document(results=[make_result(spread=0.4)]), submitter=user)
    held = document_ingest(submission_document(name_smi="<b>Odd GPU</b>"), submitter=user)
    accepted = document_ingest(submission_document(), submitter=user)
    page = staff_client.get("/admin/benchmarks_app/rawsubmission/?queue=needs").content.decode()
    assert str(flagged.run_uuid) in page and str(held.run_uuid) in page and str(accepted.run_uuid) not in page
    assert "<b>Odd GPU</b>" not in page and "&lt;b&gt;Odd GPU&lt;/b&gt;" in page
    response = staff_client.post(
        "/admin/benchmarks_app/rawsubmission/",
        {"action": "approve_selected", "_selected_action": [flagged.pk, held.pk]},
    )
    assert response.status_code == 302
    flagged.refresh_from_db()
    held.refresh_from_db()
    assert (flagged.status, held.status) == (SubmissionStatus.ACCEPTED, SubmissionStatus.ON_HOLD)


def test_admin_maps_an_unknown_gpu_name_and_reingests(staff_client, django_capture_on_commit_callbacks):
    world = world_build(rows=INGEST_WORLD)
    user = get_user_model().objects.create(username="s")
    held = document_ingest(submission_document(name_smi="NVIDIA Zixiao C100"), submitter=user)
    assert held.status == SubmissionStatus.ON_HOLD
    form = staff_client.get("/admin/benchmarks_app/rawsubmission/map-gpu/?name=NVIDIA+Zixiao+C100")
    assert form.status_code == 200 and "NVIDIA Zixiao C100" in form.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/admin/benchmarks_app/rawsubmission/map-gpu/", {"name": "NVIDIA Zixiao C100", "gpu": world.gpus["h100"].pk}
        )
    assert response.status_code == 302
    held.refresh_from_db()
    assert (held.status, held.gpu_id) == (SubmissionStatus.ACCEPTED, world.gpus["h100"].pk)
    assert GpuAlias.objects.get(alias="NVIDIA Zixiao C100").origin == GpuAlias.Origin.CURATOR


def test_moderation_is_for_staff_only():
    client = Client()
    client.force_login(get_user_model().objects.create(username="plain"))
    for url in ("/admin/benchmarks_app/rawsubmission/", "/admin/benchmarks_app/rawsubmission/map-gpu/"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response.url == f"/admin/login/?next={url}"  # to the login page, not into the queue
