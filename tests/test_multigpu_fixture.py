"""The real 2x H200 NVLink run (tests/fixtures/bench/h200x2_nvlink_multigpu.json), ingested as the demo
ingests it, on the GPU page, the compare page and /api/v1/gpus/<slug>/multi-gpu/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse

from benchmarks_app.services.ingest import submission_ingest
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.services.workloads import workload_seed
from catalog.services.catalog_import import catalog_import

FIXTURE = Path(settings.BASE_DIR) / "tests" / "fixtures" / "bench" / "h200x2_nvlink_multigpu.json"
H200 = "h200-sxm-141-gb"


@pytest.fixture
def h200_run(db):  # type: ignore[no-untyped-def]
    catalog_import()
    workload_seed()
    # Ingested here, in-process: with a broker configured the intake only queues it.
    submission = submission_intake(body=FIXTURE.read_bytes(), submitter=get_user_model().objects.create(username="lab"))
    submission_ingest(submission_id=submission.submission.pk)
    return json.loads(FIXTURE.read_text())


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_h200_pair_appears_on_its_page_the_compare_page_and_the_api(client, h200_run) -> None:  # type: ignore[no-untyped-def]
    ddp = {r["gpu_count"]: r["median"] for r in h200_run["results"] if r["workload"] == "transformer-train-ddp"}
    efficiency = ddp[2] / (2 * ddp[1])
    api = client.get(f"/api/v1/gpus/{H200}/multi-gpu/").json()
    lines = {(line["gpu_count"], line["interconnect"]): line for line in api["training"]}
    assert lines[(1, "none")]["tokens_per_s"] == ddp[1]
    assert lines[(2, "nvlink")]["scaling_efficiency"] == pytest.approx(efficiency) == pytest.approx(0.95, abs=0.005)
    host = lines[(2, "nvlink")]["host"]
    # The submitter's NCCL variables are free text from the client: never published.
    assert host["links"] == ["NV18"] and "nccl_env" not in host
    busbw = {line["bytes"]: line["busbw_gbs"] for line in api["allreduce"] if line["interconnect"] == "nvlink"}
    assert busbw[1 << 30] == pytest.approx(328.137) and busbw[64 << 20] == pytest.approx(270.445)
    # Small collectives scatter with latency (53 % at 1 MiB): their medians count all the same.
    assert busbw[1 << 20] == pytest.approx(42.59, rel=1e-3) and busbw[8 << 20] == pytest.approx(167.763, rel=1e-3)

    page = _text(client.get(reverse("dashboard:gpu-detail", args=[H200])).content.decode())
    section = page[page.index("Several GPUs: scaling and all-reduce") :]
    assert "95 %" in section and "328.1 GB/s" in section and "1 GiB" in section and "NVLink" in section
    assert "NV18" in section and "NCCL_NVLS_ENABLE" not in section  # topology yes, submitter text no

    compare = client.get(reverse("dashboard:compare"), {"gpus": f"{H200},h100-sxm5-80-gb"}).content.decode()
    row = _text(compare[compare.index('id="compare-scaling"') :].split("</tr>")[0])
    assert "2 GPUs, NVLink: 95 %" in row
    allreduce = _text(compare[compare.index('id="compare-allreduce"') :].split("</tr>")[0])
    assert "2 GPUs, NVLink: 328 GB/s" in allreduce and "1 GiB" in allreduce
    assert "not measured on several GPUs" in allreduce  # the H100 column
