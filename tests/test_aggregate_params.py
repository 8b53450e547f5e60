"""Each aggregate stores its comparison key's parameters, written by the ingest and the rebuild, so
that the fit calculator reads the transformer block's shapes from the aggregates, not from every
result (one decoded JSON per result per request at scale)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmarks_app.models import BenchmarkResult, ResultAggregate, Workload
from benchmarks_app.services.aggregates import aggregates_rebuild
from benchmarks_app.services.ingest import submission_ingest
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.services.workloads import workload_seed
from catalog.services.catalog_import import catalog_import
from dashboard.multi_gpu_maths import HOST_WORKLOADS
from fitcalc.forms import FitForm
from fitcalc.selectors.fit import fit_compute
from fitcalc.selectors.fit_request import fit_request_from_form

pytestmark = pytest.mark.django_db

RUN = Path(settings.BASE_DIR) / "tests" / "fixtures" / "bench" / "h100_run.json"
BLOCKS = ("transformer-train", "transformer-infer")


@pytest.fixture
def ingested(db):  # type: ignore[no-untyped-def]
    catalog_import()
    workload_seed()
    user = get_user_model().objects.create(username="client")
    submission_ingest(submission_id=submission_intake(body=RUN.read_bytes(), submitter=user).submission.pk)


def _stored() -> dict[tuple[int, str], dict]:
    return {(a.gpu_id, a.comparison_key): a.params for a in ResultAggregate.objects.all()}


def _results_params() -> dict[tuple[int, str], dict]:
    return {(r.gpu_id, r.comparison_key): r.params for r in BenchmarkResult.objects.trusted()}


@pytest.mark.usefixtures("ingested")
def test_the_ingest_and_the_rebuild_store_each_keys_parameters():
    expected = _results_params()
    blocks = ResultAggregate.objects.filter(workload__slug__in=BLOCKS)
    assert blocks.exists() and all(a.params.get("d_model") for a in blocks)  # the shapes the fit reads
    assert _stored() == {pair: expected[pair] for pair in _stored()}
    ResultAggregate.objects.update(params={})
    aggregates_rebuild()
    assert _stored() == {pair: expected[pair] for pair in _stored()}


@pytest.mark.usefixtures("ingested")
def test_a_training_fit_reads_no_result():
    form = FitForm(data={"model": "llama-3-8b", "mode": "lora"})
    request = fit_request_from_form(form=form)
    assert request is not None, form.errors
    with CaptureQueriesContext(connection) as queries:
        result = fit_compute(request=request)
    h100 = next(plan for plan in result.plans if plan.gpu.slug == "h100-sxm5-80-gb")
    assert h100.gpu.throughput_per_s  # the H100's rate, from its measured block
    result_table = BenchmarkResult._meta.db_table
    reads = [q["sql"] for q in queries if f'FROM "{result_table}"' in q["sql"]]
    # Only the multi-GPU runs are read as results (each run's hosts: dashboard.selectors.scaling),
    # by their workloads' ids; the single-GPU blocks' shapes come from their aggregates.
    host_workloads = set(Workload.objects.filter(slug__in=HOST_WORKLOADS).values_list("id", flat=True))
    read_workloads = [re.search(r'"workload_id" IN \(([\d, ]+)\)', sql) for sql in reads]
    assert reads and all(found is not None for found in read_workloads)
    assert all({int(i) for i in found.group(1).split(",")} <= host_workloads for found in read_workloads if found)
