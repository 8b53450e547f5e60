"""Energy on the demo's serving curves: the H200's measured J/token on its 8B chart, the H100's 8B
curve with energy estimated from the Hopper power curve (never above its board limit), the rankings'
buy mode with electricity, the fit calculator's owned cost, and no stored point above its limit."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from catalog.models import Gpu
from dashboard.figures.serving import serving_curve_line
from dashboard.selectors.gpus import SERVING_QUESTION, gpu_page_compute
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import rankings_compute
from llm.models import ServingPoint
from llm.selectors.energy import power_curves_current
from llm.selectors.serving_target import gpu_serving_choices
from tests.support import hover_text

pytestmark = pytest.mark.django_db

H100, H200 = "h100-sxm5-80-gb", "h200-sxm-141-gb"


def _traces(slug: str, name: str) -> list[dict]:
    page = gpu_page_compute(gpu=Gpu.objects.get(slug=slug))
    assert page.serving_figure is not None
    return [t for t in page.serving_figure["data"] if t["name"].startswith(name)]


def test_no_stored_point_of_the_demo_has_power_above_its_board_limit(demo):
    points = ServingPoint.objects.with_measured_energy().select_related("gpu")
    assert points.count() >= 40
    for point in points:
        assert point.energy_window_s >= 5
        assert point.power_w <= point.power_limit_w <= point.gpu.tdp_w


def test_the_h200_8b_chart_shows_the_measured_energy_of_its_sweeps(demo):
    marks = [t for t in _traces(H200, "Llama 3.1 8B") if "measured energy" in t["name"]]
    assert len(marks) == 1
    texts = [hover_text(marks[0], i) for i in range(len(marks[0]["x"]))]
    bf16 = {re.search(r"concurrency (\d+)", text)[1]: text for text in texts
            if "BF16" in text and "1024 tokens of context" in text}  # fmt: skip
    # The re-run with 5 s windows (tests/fixtures/bench/h200_serving_sweep_energy.json).
    for concurrency, joules in (("1", "2.6"), ("32", "0.131"), ("64", "0.09"), ("128", "0.0633"), ("256", "0.0535")):
        assert f"{joules} J per output token (measured)" in bf16[concurrency], bf16[concurrency]
        assert "tokens per kWh" in bf16[concurrency] and "W per GPU measured" in bf16[concurrency]
    assert "450 W per GPU measured" in bf16["1"]


def test_the_h100_8b_curve_shows_energy_estimated_from_the_hopper_curve_within_its_limit(demo):
    curves = power_curves_current()
    assert curves["hopper/8b"].points >= 30
    lines = [t for t in _traces(H100, "Llama 3.1 8B") if t["mode"] == "lines"]
    assert lines
    texts = [hover_text(lines[0], i) for i in range(len(lines[0]["x"]))]
    assert texts and all("estimated" in t and "hopper/8b" in t and "J per output token" in t for t in texts)
    # No measured energy of its own (its sweep's windows were half a second): no energy marks.
    assert not [t for t in _traces(H100, "Llama 3.1 8B") if "measured energy" in t["name"]]
    gpu = Gpu.objects.get(slug=H100)
    choice = gpu_serving_choices(gpu=gpu, question=SERVING_QUESTION)["8b"]
    line = serving_curve_line(choice=choice, key="8b", name="8B", price=None, power_curves=curves)
    assert line is not None and line.curve_energy
    # The curve's rates are estimates: the joules' interval holds the rate's typical error either way,
    # and even at the slow end of it the board draws no more than its limit.
    slow = 1 / (1 + line.curve_error_pct / 100)
    for energy, (_user, per_gpu) in zip(line.curve_energy, line.curve, strict=True):
        assert energy is not None and energy.basis == "estimated"
        assert energy.power_w <= gpu.tdp_w
        assert energy.high_j >= energy.power_w / (per_gpu * slow) * (1 - 1e-9)
        assert energy.high_j * per_gpu * slow <= gpu.tdp_w + 1e-6


def test_the_gpu_pages_render_the_energy(demo, client):
    for slug in (H100, H200):
        response = client.get(reverse("dashboard:gpu-detail", args=[slug]))
        assert response.status_code == 200
    assert "Tokens/s per measured kW" in response.content.decode()


def test_the_rankings_buy_mode_adds_the_electricity_of_a_million_tokens(demo, client):
    params = RankingParams(use_case="llm-serving", model_size="8b", mode="buy", kwh_price=0.15, show="all")
    rows = {r.gpu_slug: r for r in rankings_compute(params=params).rows}
    for slug in (H100, H200):
        row = rows[slug]
        assert row.energy_basis in ("measured", "estimated"), slug
        assert row.electricity_per_million_tokens == pytest.approx(row.joules_per_token * 1e6 / 3.6e6 * 0.15)
        if row.energy_basis == "estimated":
            assert row.joules_per_token_low <= row.joules_per_token <= row.joules_per_token_high
            # At the slowest rate the row's interval allows, the board still draws within its limit.
            slowest = row.perf_low if row.perf_low is not None else row.perf
            assert row.joules_per_token_high * slowest <= 700 + 1e-6
    without = rankings_compute(params=RankingParams(use_case="llm-serving", model_size="8b", mode="buy", show="all"))
    assert all(r.electricity_per_million_tokens is None for r in without.rows)
    page = client.get(
        reverse("dashboard:rankings"),
        {"use_case": "llm-serving", "model_size": "8b", "mode": "buy", "kwh_price": "0.15"},
    )
    assert page.status_code == 200 and "electricity" in page.content.decode()
    bad = client.get("/api/v1/rankings/", {"use_case": "llm-serving", "mode": "buy", "kwh_price": "-3"})
    assert bad.status_code == 400 and "kwh_price" in bad.content.decode()


def test_the_fit_calculator_counts_electricity_in_the_owned_cost_per_million_tokens(demo, client):
    query = {"model": "llama-3-8b", "mode": "inference", "serving": "batched", "precision": "bf16", "context": "2048",
             "users": "32", "tokens": "100000000", "electricity_price_per_kwh": "0.15", "hours_per_day": "24"}  # fmt: skip
    response = client.get(reverse("fitcalc:fit"), query)
    assert response.status_code == 200
    body = response.content.decode()
    assert "owned-per-million" in body, re.findall(r'class="errorlist[^<]*<li>[^<]*', body)
    assert "J per token" in body
    # The H100 owns a purchase and a rental price in the demo: its owned cost counts the electricity.
    row = re.search(rf'<tr data-gpu="{H100}">(.*?)</tr>', body, re.S)
    assert row is not None
    cell = re.search(r'class="num owned-per-million">(.*?)</td>', row[1], re.S)
    assert cell is not None and "J per token" in cell[1] and "without electricity" not in cell[1]
