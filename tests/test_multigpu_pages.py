"""Multi-GPU results on the GPU page, in the rankings and in the API, from host runs sent through the real ingest.

The figures are test fixtures with easy arithmetic, not measurements. Each H100 run trains at 1 and
2 GPUs over NVLink; its scaling efficiency is 2-GPU tokens/s / (2 x its own 1-GPU tokens/s):
3.10/3.20 = 0.96875, 2.85/3.00 = 0.95, 3.00/3.24 = 0.9259, so the median is 0.95, while the
ratio of the medians (3.00 / (2 x 1.60) = 0.9375) is not what the page may show.
"""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmarks_app.models import SubmissionStatus
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import rankings_compute
from dashboard.selectors.scaling import scaling_measured_by_gpu
from tests.factories import (
    UserFactory,
    allreduce_result,
    ddp_result,
    document_ingest,
    host_block,
    submission_document,
)
from tests.world import INGEST_WORLD, world_build

pytestmark = pytest.mark.django_db

H100_NAME = "NVIDIA H100 80GB HBM3"
A100_NAME = "NVIDIA A100-SXM4-80GB"
H100_RUNS = ((1_600_000.0, 3_100_000.0), (1_500_000.0, 2_850_000.0), (1_620_000.0, 3_000_000.0))
A100_RUNS = ((1_000_000.0, 1_900_000.0), (1_000_000.0, 1_900_000.0), (1_000_000.0, 1_900_000.0))
GIB, MIB = 1 << 30, 64 << 20


def _host_run(name, one, two, *, user, interconnect="nvlink", extra=(), memory_mib=81559):
    results = [ddp_result(one, 1), ddp_result(two, 2, interconnect), *extra]
    document = submission_document(
        results=results, host=host_block(2, interconnect), name_smi=name, name_torch=name, memory_total_mib=memory_mib
    )
    submission = document_ingest(document, submitter=UserFactory(username=user))
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    return submission


@pytest.fixture
def world():
    world = world_build(rows=INGEST_WORLD)
    for i, (one, two) in enumerate(H100_RUNS):
        extra = [allreduce_result(250.0, 2, MIB), allreduce_result(330.0, 2, GIB)] if i == 0 else []
        _host_run(H100_NAME, one, two, user=f"h100-owner-{i}", extra=extra)
    for i, (one, two) in enumerate(A100_RUNS):
        _host_run(A100_NAME, one, two, user=f"a100-owner-{i}")
    return world


def _training(params=None):
    return rankings_compute(params=params or RankingParams(use_case="training", show="all"))


def test_a_2_gpu_result_never_enters_the_1_gpu_ratio(world):
    """Both GPUs have 1- and 2-GPU DDP aggregates; the relative figure compares the 1-GPU ones only
    (before: the 2-GPU group was a second ratio, 3.0/1.9, in the geometric mean)."""
    rows = {row.gpu_slug: row for row in _training().rows}
    h100 = rows[world.gpus["h100"].slug]
    assert h100.perf_basis == "measured"
    assert h100.groups == 1
    assert h100.perf == pytest.approx(1_600_000.0 / 1_000_000.0)
    assert h100.n == 3  # the three 1-GPU results, not the 2-GPU ones
    assert rows[world.gpus["a100_80"].slug].perf == pytest.approx(1.0)


def test_a_pcie_run_is_not_compared_with_an_nvlink_run(client, world):
    """PCIe runs of the H100 at 2 GPUs, the baseline's over NVLink: the ranking keeps the 1-GPU ratio
    alone, and the GPU page's "vs baseline" column compares the PCIe aggregate with nothing (before:
    with the baseline's NVLink aggregate, its group's only one)."""
    for i in range(3):
        _host_run(H100_NAME, 1_600_000.0, 2_400_000.0, user=f"pcie-{i}", interconnect="pcie")
    h100 = next(row for row in _training().rows if row.gpu_slug == world.gpus["h100"].slug)
    assert h100.groups == 1 and h100.n == 6
    assert h100.perf == pytest.approx(1.6)
    lines = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["h100"].slug])).context["page"].aggregates
    relative = {
        re.search(r"interconnect=(\w+)", line.label).group(1): line.relative  # type: ignore[union-attr]
        for line in lines
        if line.gpu_count == 2 and line.unit == "tokens/s"
    }
    assert relative["pcie"] is None
    assert relative["nvlink"] == pytest.approx(3_000_000.0 / 1_900_000.0)


def test_ranking_rows_carry_the_measured_scaling_at_the_largest_count(world):
    rows = {row.gpu_slug: row for row in _training().rows}
    h100 = rows[world.gpus["h100"].slug]
    assert h100.scaling.gpu_count == 2
    assert h100.scaling.efficiency == pytest.approx(0.95)
    assert (h100.scaling.n, h100.scaling.distinct_submitters, h100.scaling.interconnect) == (3, 3, "nvlink")
    assert h100.scaling.tokens_per_s_per_gpu == pytest.approx(1_500_000.0)
    assert h100.scaling.one_gpu_tokens_per_s == pytest.approx(1_600_000.0)
    assert rows[world.gpus["a100_80"].slug].scaling.efficiency == pytest.approx(0.95)
    fine_tuning = rankings_compute(params=RankingParams(use_case="fine-tuning", show="all"))
    assert next(r for r in fine_tuning.rows if r.gpu_slug == world.gpus["h100"].slug).scaling.gpu_count == 2
    inference = rankings_compute(params=RankingParams(use_case="inference-16bit", show="all"))
    assert all(r.scaling is None for r in inference.rows)


def test_fewer_than_three_runs_are_shown_on_the_gpu_page_but_not_ranked(world):
    for i in range(2):
        _host_run("NVIDIA H100 NVL", 1_400_000.0, 2_660_000.0, user=f"nvl-{i}", memory_mib=95830)
    nvl = next(r for r in _training().rows if r.gpu_slug == world.gpus["h100_nvl"].slug)
    assert nvl.scaling is None
    measured = scaling_measured_by_gpu(gpu_ids=[world.gpus["h100_nvl"].pk, world.gpus["h100"].pk])
    assert measured[world.gpus["h100_nvl"].pk][2].efficiency == pytest.approx(0.95)
    assert measured[world.gpus["h100_nvl"].pk][2].n == 2 and not measured[world.gpus["h100_nvl"].pk][2].ranked
    assert measured[world.gpus["h100"].pk][2].ranked


def test_rankings_page_shows_the_scaling_line(client, world):
    page = client.get(reverse("dashboard:rankings") + "?show=all").content.decode()
    assert "scaling to 2 GPUs (NVLink): 95\u00a0%" in page
    client.cookies["django_language"] = "zh-hans"
    page = client.get(reverse("dashboard:rankings") + "?show=all").content.decode()
    assert "扩展到 2 块 GPU（NVLink）：95\u00a0%" in page


def test_gpu_page_shows_per_gpu_throughput_efficiency_n_and_the_host(client, world):
    response = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["h100"].slug]))
    section = response.context["page"].multi_gpu
    one, two = section.training
    assert (one.gpu_count, one.n, one.efficiency) == (1, 3, None)
    assert two.gpu_count == 2 and two.interconnect == "nvlink"
    assert two.efficiency == pytest.approx(0.95)
    assert (two.efficiency_n, two.n, two.distinct_submitters) == (3, 3, 3)
    assert two.efficiency_min == pytest.approx(3_000_000.0 / 3_240_000.0)
    assert two.efficiency_max == pytest.approx(3_100_000.0 / 3_200_000.0)
    assert two.tokens_per_s_per_gpu == pytest.approx(1_500_000.0)
    assert two.one_gpu_tokens_per_s == pytest.approx(1_600_000.0)
    assert two.rank_min == pytest.approx(1_425_000.0) and two.rank_max == pytest.approx(1_550_000.0)
    assert two.host.links == ("NV18",) and two.host.nccl_version == "2.28.9"
    html = response.content.decode()
    assert 'id="multi-gpu"' in html and 'id="chart-scaling"' in html
    assert "median of 3 runs, 93–97 %" in html
    assert "topology from nvidia-smi (NV18)" in html
    # A submitter's free text (NCCL variables) is not published on the page: nobody moderated it.
    assert "NCCL_NVLS_ENABLE" not in html
    figure = json.loads(html.split('<script id="fig-scaling" type="application/json">')[1].split("</script>")[0])
    efficiency = [trace for trace in figure["data"] if trace.get("yaxis") == "y2"][0]
    assert efficiency["x"] == ["1", "2"] and efficiency["y"] == pytest.approx([100.0, 95.0])


def test_gpu_page_shows_all_reduce_by_message_size_and_not_against_memory_bandwidth(client, world):
    response = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["h100"].slug]))
    page = response.context["page"]
    lines = page.multi_gpu.allreduce
    assert [(line.gpu_count, line.size_label, line.n) for line in lines] == [(2, "64 MiB", 1), (2, "1 GiB", 1)]
    assert lines[1].busbw_gbs == pytest.approx(330.0, rel=1e-6)
    assert lines[1].algbw_gbs == pytest.approx(330.0, rel=1e-6)  # 2(n-1)/n = 1 at two GPUs
    # Before: the bus bandwidth was listed as "memory" against the HBM bandwidth (11 %).
    assert [row for row in page.efficiency if row.unit == "GB/s"] == []
    html = response.content.decode()
    assert 'id="allreduce-table"' in html and "330.0 GB/s" in html and 'id="chart-allreduce"' in html


def test_gpu_page_in_chinese(client, world):
    client.cookies["django_language"] = "zh-hans"
    html = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["h100"].slug])).content.decode()
    for text in ("多 GPU：扩展与 all-reduce", "扩展效率", "3 次运行的中位数，93–97 %", "总线带宽"):
        assert text in html, text
    for english in ("Scaling efficiency", "median of 3 runs", "Newest run", "Hosts", "Message per GPU", "peer access"):
        assert english not in html, english


def test_a_gpu_measured_on_one_gpu_only_says_so(client):
    world = world_build(rows=INGEST_WORLD)
    document = submission_document(results=[ddp_result(1_577_840.0, 1)], host=host_block(1, "none"))
    document["host"]["link_matrix"] = None
    submission = document_ingest(document, submitter=UserFactory(username="one-gpu"))
    assert submission.status == SubmissionStatus.ACCEPTED, submission.reasons
    response = client.get(reverse("dashboard:gpu-detail", args=[world.gpus["h100"].slug]))
    section = response.context["page"].multi_gpu
    assert not section.measured_on_several and [line.gpu_count for line in section.training] == [1]
    html = response.content.decode()
    assert 'id="multi-gpu-one-only"' in html and 'id="chart-scaling"' not in html


def test_api_multi_gpu_endpoint_serves_the_page_figures(client, world):
    body = client.get(f"/api/v1/gpus/{world.gpus['h100'].slug}/multi-gpu/").json()
    assert body["gpu"] == world.gpus["h100"].slug and body["measured_on_several_gpus"] is True
    two = next(line for line in body["training"] if line["gpu_count"] == 2)
    assert two["scaling_efficiency"] == pytest.approx(0.95)
    assert (two["efficiency_n"], two["interconnect"]) == (3, "nvlink")
    assert two["one_gpu_tokens_per_s"] == pytest.approx(1_600_000.0)
    assert "nccl_env" not in two["host"] and two["host"]["links"] == ["NV18"]
    assert [line["bytes"] for line in body["allreduce"]] == [MIB, GIB]
    assert body["scaling_by_gpu_count"] == [
        {
            "gpu_count": 2,
            "scaling_efficiency": pytest.approx(0.95),
            "n": 3,
            "distinct_submitters": 3,
            "interconnect": "nvlink",
            "tokens_per_s_per_gpu": pytest.approx(1_500_000.0),
            "one_gpu_tokens_per_s": pytest.approx(1_600_000.0),
            "ranked": True,
        }
    ]
    assert "median of the per-run efficiencies" in body["method"]
    missing = client.get("/api/v1/gpus/no-such-gpu/multi-gpu/")
    assert missing.status_code == 404 and missing.json()["detail"]


def test_api_ranking_rows_carry_the_scaling_fields(client, world):
    rows = {row["gpu"]: row for row in client.get("/api/v1/rankings/?show=all").json()["results"]}
    h100 = rows[world.gpus["h100"].slug]
    assert h100["scaling_gpu_count"] == 2 and h100["scaling_efficiency"] == pytest.approx(0.95)
    assert (h100["scaling_n"], h100["scaling_interconnect"]) == (3, "nvlink")
    assert h100["perf"] == pytest.approx(1.6)
    csv = client.get(reverse("dashboard:rankings") + "?show=all&format=csv")
    text = b"".join(csv.streaming_content).decode() if csv.streaming else csv.content.decode()
    header = text.splitlines()[0].split(",")
    assert "scaling_efficiency" in header


def test_multi_gpu_reads_are_one_query_each_whatever_the_runs(client, world):
    """The GPU page reads its multi-GPU results in one query and each training ranking (its standings
    compute training and fine-tuning) its scaling in one more, however many runs there are."""

    def multi_gpu_queries():
        with CaptureQueriesContext(connection) as page:
            assert client.get(reverse("dashboard:gpu-detail", args=[world.gpus["h100"].slug])).status_code == 200
        with CaptureQueriesContext(connection) as ranking:
            _training()
        mine = [
            len([q for q in queries.captured_queries if "transformer-train-ddp" in q["sql"]])
            for queries in (page, ranking)
        ]
        return mine, len(ranking)

    before = multi_gpu_queries()
    for i in range(4):
        _host_run(H100_NAME, 1_600_000.0, 3_000_000.0, user=f"more-{i}", extra=[allreduce_result(300.0, 2, GIB)])
    assert multi_gpu_queries() == before == ([3, 1], before[1])
    # rankings_compute's documented bound, plus the scaling's two (the workloads' ids, then their results).
    assert before[1] <= 12
