"""Performance per kW on the rankings divides by the power drawn at the ranked point: measured where
the client measured it, else estimated from the GPU class's power curve (fitted to the real H200
sweeps, never above the board limit), and the catalogue TDP only as the fallback; each row, the API
and the CSV say which."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

import pytest
from django.urls import reverse

from dashboard.fragments import RANKING_ROWS_PER_PAGE
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import rankings_compute
from llm.selectors.energy import power_curves_current
from tests.factories import document_ingest
from tests.world import LLM_WORLD

WORLD = dataclasses.replace(LLM_WORLD, seed_workloads=True)  # the real catalogue and the client's workloads
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "bench"
SERVING_8B = {"use_case": "llm-serving", "model_size": "8b", "interactivity": "100", "show": "all"}


@pytest.fixture
def h200_sweeps(world):
    """The two H200 sweeps with 5 s energy windows; their ingest refits the serving model and the
    power curves."""
    for name in ("h200_serving_sweep_energy.json", "h200_serving_sweep_energy_4096.json"):
        document_ingest(json.loads((FIXTURES / name).read_text()))
    assert "hopper/8b" in power_curves_current()


@pytest.mark.django_db
def test_perf_per_kw_divides_by_the_power_at_the_ranked_point_and_says_which(h200_sweeps):
    rows = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(**SERVING_8B)).rows}
    for row in rows.values():
        if row.perf_per_kw is None:
            assert (row.perf_per_kw_basis, row.perf_per_kw_power_w) == ("", None), row.gpu_slug
            continue
        assert row.perf_per_kw == pytest.approx(row.perf / (row.perf_per_kw_power_w / 1000)), row.gpu_slug
        if row.perf_per_kw_basis == "tdp":
            assert row.perf_per_kw_power_w == row.tdp_w
        else:
            assert row.perf_per_kw_basis in ("measured", "estimated"), row.gpu_slug
            if row.tdp_w:  # an estimate never draws more than the board: never below the TDP's figure
                assert row.perf_per_kw_power_w <= row.tdp_w
                assert row.perf_per_kw >= row.perf / (row.tdp_w / 1000) * (1 - 1e-9)
    # Hopper has a power curve (the H200's measured points); Ada has none, so its TDP stands in.
    for slug in ("h200-sxm-141-gb", "h100-sxm5-80-gb"):
        assert rows[slug].perf_per_kw_basis == "estimated" and rows[slug].perf_per_kw_power_w < 700
    assert (rows["l40s"].perf_per_kw_basis, rows["l40s"].perf_per_kw_power_w) == ("tdp", 350)
    # No TDP in the catalogue and no curve of its class: no figure, rather than a guess.
    assert (rows["geforce-rtx-4070"].perf_per_kw, rows["geforce-rtx-4070"].perf_per_kw_basis) == (None, "")


@pytest.mark.django_db
def test_a_use_case_without_power_readings_divides_by_the_tdp(h200_sweeps):
    rows = rankings_compute(params=RankingParams(use_case="inference-16bit", show="all")).rows
    assert rows
    for row in rows:
        assert row.perf_per_kw_basis == ("tdp" if row.perf_per_kw is not None else "")
        if row.perf_per_kw is not None:
            assert row.perf_per_kw == pytest.approx(row.perf / (row.tdp_w / 1000))


@pytest.mark.django_db
def test_the_page_the_api_and_the_csv_say_what_perf_per_kw_divides_by(h200_sweeps, client):
    ranking = {r.gpu_slug: r for r in rankings_compute(params=RankingParams(**SERVING_8B)).rows}
    body = client.get("/api/v1/rankings/", SERVING_8B).json()
    for row in body["results"]:
        expected = ranking[row["gpu"]]
        assert (row["perf_per_kw_basis"], row["perf_per_kw_power_w"]) == (
            expected.perf_per_kw_basis,
            expected.perf_per_kw_power_w,
        )
    response = client.get(reverse("dashboard:rankings"), {**SERVING_8B, "format": "csv"})
    by_slug = {r["gpu_slug"]: r for r in csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))}
    assert by_slug["h200-sxm-141-gb"]["perf_per_kw_basis"] == "estimated"
    assert by_slug["l40s"]["perf_per_kw_basis"] == "tdp" and float(by_slug["l40s"]["perf_per_kw_power_w"]) == 350
    h200_watts = f"{ranking['h200-sxm-141-gb'].perf_per_kw_power_w:.0f}"
    # The table is paged: ask for the page the H200's row is on.
    order = list(ranking)
    table_page = {"page": str(order.index("h200-sxm-141-gb") // RANKING_ROWS_PER_PAGE + 1)}
    page = client.get(reverse("dashboard:rankings"), {**SERVING_8B, **table_page}).content.decode()
    assert "Perf. per kW" in page and "Perf. per kW of TDP" not in page
    assert f"of {h200_watts} W estimated" in page and "of TDP" in page
    chinese = client.get(
        reverse("dashboard:rankings"), {**SERVING_8B, **table_page}, HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    assert f"按估算 {h200_watts} W" in chinese and "按 TDP" in chinese
