"""The LLM use cases on imported real rows: rankings, tiers, API, GPU page, method page, command."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from benchmarks_app.services.geerling_import import geerling_import
from benchmarks_app.services.mlperf_import import mlperf_import_file
from benchmarks_app.services.xiongjiedai_import import xiongjiedai_import
from catalog.models import Gpu
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import rankings_compute
from dashboard.selectors.tiers import tiers_compute
from llm.models import ServingModelFit
from llm.services.serving_points import serving_points_rebuild
from tests.factories import OfferFactory, ProviderFactory
from tests.support import ranking_by_slug
from tests.world import LLM_WORLD, world_build

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent / "fixtures" / "mlperf"
PRICES = {"h200-sxm-141-gb": "3.00", "h100-sxm5-80-gb": "2.00", "b200": "5.00", "geforce-rtx-4090": "0.40"}


@pytest.fixture
def llm_world():  # type: ignore[no-untyped-def]
    world_build(rows=LLM_WORLD)
    mlperf_import_file(path=FIXTURES / "summary_results_v5.1_excerpt.json", published=dt.date(2025, 9, 9))
    geerling_import()
    provider = ProviderFactory(slug="cloud")
    for slug, price in PRICES.items():
        OfferFactory(gpu=Gpu.objects.get(slug=slug), provider=provider, current_price_per_hour=Decimal(price))
    # The data-centre parts are rented in eights too (same price per GPU-hour).
    for slug in ("h200-sxm-141-gb", "h100-sxm5-80-gb", "b200"):
        OfferFactory(gpu=Gpu.objects.get(slug=slug), provider=provider, gpu_count=8,
                     current_price_per_hour=Decimal(PRICES[slug]) * 8)  # fmt: skip


def _rows(**params: str) -> dict[str, object]:
    return ranking_by_slug(RankingParams(**params))  # type: ignore[arg-type]


def test_mlperf_llama2_points_do_not_answer_the_llama_31_workload(llm_world):
    """MLPerf's Llama 2 70B rows measure another model (fewer parameters, another vocabulary) at
    request lengths the results do not give: no row of the Llama 3.1 70B, 1,000/1,000 ranking is
    measured from them, whatever the MLPerf filter; each row's cost is the one formula."""
    rows = _rows(use_case="llm-serving", model_size="70b", interactivity="max")
    h200, h100 = rows["h200-sxm-141-gb"], rows["h100-sxm5-80-gb"]
    assert h200.perf_basis == "estimated" and "serving model" in h200.llm_source and "1000/1000" in h200.llm_source
    assert h200.llm_precision == "fp8" and h200.llm_gpu_count in h200.llm_rented_counts == [1, 8]
    assert h200.cost_per_million_tokens == pytest.approx(3.0 / (h200.perf * 3600) * 1e6)
    assert h100.perf_basis == "estimated" and h100.llm_gpu_count in (1, 8)
    assert "1,000 prompt / 1,000 output tokens" in h200.llm_workload
    with_open = _rows(use_case="llm-serving", model_size="70b", mlperf="all", interactivity="max")
    assert with_open["radeon-instinct-mi355x"].perf_basis == "estimated"
    # Model sizes are kept apart, and the B200's MLPerf 8B rows (lengths not given) are no answer either.
    assert rows["b200"].perf_basis == "estimated"
    assert _rows(use_case="llm-serving", model_size="8b", interactivity="max")["b200"].perf_basis == "estimated"
    measured_only = _rows(use_case="llm-serving", model_size="70b", basis="measured", interactivity="max")
    assert all(r.perf_basis == "measured" for r in measured_only.values())
    # Ranked by one figure, measured and estimated alike (an estimate at its conservative end):
    # the cheapest million tokens first.
    ranked = [
        r
        for r in rankings_compute(params=RankingParams(use_case="llm-serving", interactivity="max")).rows
        if r.cost_per_million_tokens
    ]
    values = [r.ranked_value for r in ranked]
    assert values == sorted(values, reverse=True)


def test_chat_prefers_one_gpu_and_charges_every_gpu_of_the_stream(llm_world):
    rows = _rows(use_case="llm-chat", model_size="3b")
    rtx4090 = rows["geforce-rtx-4090"]
    assert rtx4090.perf_basis == "measured" and rtx4090.perf == pytest.approx(334.67)
    assert "Intel 265K Custom PC" in rtx4090.llm_source
    assert rtx4090.cost_per_million_tokens == pytest.approx(0.40 / (334.67 * 3600) * 1e6)
    assert rows["gb10"].perf == pytest.approx(97.93)  # DGX Spark, a catalogue GPU
    big = _rows(use_case="llm-chat", model_size="70b", precision="16bit")
    estimated = big["geforce-rtx-4090"]
    # 131.4 GiB of FP16 weights and one sequence's cache in 24 GiB cards less the 1.34 GiB runtime reserve.
    assert estimated.perf_basis == "estimated" and estimated.llm_gpu_count == 6
    assert estimated.cost_per_million_tokens == pytest.approx(0.40 * 6 / (estimated.perf * 3600) * 1e6)
    tiers = tiers_compute(params=RankingParams(use_case="llm-chat", model_size="3b"))
    assert any(row.gpu_slug == "geforce-rtx-4090" for rows_ in tiers.tiers.values() for row in rows_)


def test_sources_are_cited_by_readable_title_not_by_import_key(llm_world):
    xiongjiedai_import()
    rows = _rows(use_case="llm-chat", model_size="8b")
    rtx4090 = rows["geforce-rtx-4090"]
    assert rtx4090.perf_basis == "measured"
    assert "llama.cpp benchmarks by Xiongjie Dai, Llama 3 tables, 2024-05" in rtx4090.llm_source
    assert "xiongjiedai" not in rtx4090.llm_source
    geerling = _rows(use_case="llm-chat", model_size="3b")["geforce-rtx-4090"].llm_source
    assert geerling.startswith("Jeff Geerling's AI benchmarks") and "geerlingguy" not in geerling


def test_llm_rows_stay_out_of_the_relative_inference_use_cases(llm_world):
    rows = _rows(use_case="inference-8bit")
    assert "h200-sxm-141-gb" not in rows or rows["h200-sxm-141-gb"].perf_basis == "estimated"


def test_api_rankings_carry_the_llm_fields_and_check_the_size(llm_world, client):
    data = client.get("/api/v1/rankings/?use_case=llm-serving&model_size=70b&interactivity=max").json()
    assert data["params"]["model_size"] == "70b" and data["params"]["mlperf"] == "closed-available"
    assert data["params"]["interactivity"] == "max"
    h200 = next(r for r in data["results"] if r["gpu"] == "h200-sxm-141-gb")
    assert h200["cost_per_million_tokens"] == pytest.approx(3.0 / (h200["perf"] * 3600) * 1e6)
    assert h200["llm_gpu_count"] in (1, 8) and h200["llm_price_basis"] == "offer"
    assert h200["llm_workload"] == data["workload"] and "maximum throughput" in data["workload"]
    bad = client.get("/api/v1/rankings/?use_case=llm-chat&model_size=mixtral")
    assert bad.status_code == 400 and "model_size" in bad.json()["errors"]
    assert client.get("/api/v1/rankings/?use_case=llm-serving&model_size=nope").status_code == 400


def test_pages_show_tokens_cost_the_model_error_and_what_does_not_fit(llm_world, client):
    page = client.get(reverse("dashboard:rankings") + "?use_case=llm-serving&model_size=70b")
    html = page.content.decode()
    assert page.status_code == 200 and "per million tokens" in html and "tokens/s" in html
    # Every estimate says how far it can be off; before a serving fit is stored, that it is not known.
    assert "error not measured yet" in html
    method = client.get(reverse("dashboard:llm-model")).content.decode()
    assert "Held-out error of the serving model" in method and 'id="llm-single-stream"' in method
    assert "Mac Studio (M3 Ultra 512GB)" in method  # Apple systems shown apart
    gpu = client.get(reverse("dashboard:gpu-detail", args=["geforce-rtx-4090"])).content.decode()
    assert 'id="llm"' in gpu and "ran partly on the CPU" in gpu and "Llama 3.1 70B" in gpu


def test_command_prints_the_held_out_errors_of_the_one_model(llm_world, capsys, client):
    call_command("llm_model_fit")
    out = capsys.readouterr().out
    assert "leave one GPU out" in out and "leave one model out" in out
    assert "single stream" in out and "llama.cpp" in out and "median" in out
    assert "catalogue GPUs with a trusted measured result" in out
    # The method page lists the constants one class to a line, to three significant digits (a
    # phone-width cell, not a dictionary's repr).
    method = client.get(reverse("dashboard:llm-model")).content.decode()
    table = method.split('id="llm-constants"', 1)[1].split("</table>", 1)[0]
    assert re.findall(r"<span><code>[a-z0-9.-]+</code> \d", table) and not re.findall(r"\d\.\d{4,}", table)
    assert "{'" not in table and "<code>block_scale_decode_share</code>" in table


def test_client_llm_decode_results_feed_both_use_cases(llm_world):
    """The benchmark client's llm-decode workload (params as gpuatlas-bench writes them) on an H100."""
    from benchmarks_app.models import TrustLabel
    from tests.factories import BenchmarkResultFactory, UserFactory, WorkloadFactory

    workload = WorkloadFactory(slug="llm-decode", version="1.0", unit="tokens/s", category="inference")
    h100 = Gpu.objects.get(slug="h100-sxm5-80-gb")
    runs = [
        ("bf16", {"model": "llama3-8b", "phase": "decode", "batch": 1, "prompt_len": 512, "generated_tokens": 128}, 131.269),
        ("fp8", {"model": "llama3-8b", "phase": "decode", "batch": 128, "prompt_len": 512, "generated_tokens": 128,
                 "format": "e4m3", "scaling": "static-per-tensor"}, 12022.3),
        ("bf16", {"model": "llama3-8b", "phase": "prefill", "batch": 1, "prompt_len": 512}, 31441.8),
    ]  # fmt: skip
    for precision, params, value in runs:
        for submitter in range(3):  # community results count from three submissions
            BenchmarkResultFactory(gpu=h100, workload=workload, precision=precision, params=params, value=value,
                                   trust=TrustLabel.COMMUNITY, comparison_key=f"{precision}-{params['phase']}-{params['batch']}",
                                   submitter=UserFactory(), submitter_key=f"user:{submitter}")  # fmt: skip
    serving_points_rebuild(source="client")  # what the ingest derives on write
    chat = _rows(use_case="llm-chat", model_size="8b", precision="16bit")["h100-sxm5-80-gb"]
    assert chat.perf_basis == "measured" and chat.perf == pytest.approx(131.269) and chat.n == 3
    assert "gpuatlas-bench llm-decode" in chat.llm_source
    # Batch 128 on one GPU, 12,022 tokens/s per GPU: a decode microbenchmark (no prefill, no
    # scheduler, no output length), drawn and labelled as such, never the measured answer to a
    # full serving question.
    ranking = rankings_compute(params=RankingParams(use_case="llm-serving", model_size="8b"))
    serving = next(r for r in ranking.rows if r.gpu_slug == "h100-sxm5-80-gb")
    assert serving.perf_basis == "estimated"
    points = ranking.serving_choices[serving.gpu_id].measured
    assert any(p.decode_only and "decode microbenchmark" in p.label and p.tokens_per_s_per_gpu == pytest.approx(
        12022.3) for p in points)  # fmt: skip
    # Two submissions are not enough for the ranking, as for every other use case.
    BenchmarkResultFactory._meta.model.objects.filter(workload=workload, submitter_key="user:2").delete()
    assert _rows(use_case="llm-chat", model_size="8b", precision="16bit")["h100-sxm5-80-gb"].perf_basis == "estimated"


def test_mlperf_serving_figure_is_the_median_over_the_newest_rounds_systems():
    from llm.selectors.rows import LlmRow, mlperf_serving_figure

    def row(system: str, value: float, recency: str = "00005.10", gpus: int = 8, key: str = "k") -> LlmRow:
        return LlmRow(gpu_id=1, comparison_key=key, kind="serving", model="llama-2-70b", benchmark="llama2-70b",
                      precision="fp8", quant="", gpu_count=gpus, value=value, context_tokens=0, split="tensor",
                      source_rank=0, recency=recency, default_basis=True, label=f"x · {system}", url="u",
                      submitter_key="lab", trust="lab", system=system)  # fmt: skip

    figure = mlperf_serving_figure(
        [
            row("A", 100.0),
            row("A", 104.0, key="k99.9"),
            row("B", 300.0, gpus=16),
            row("C", 200.0),
            row("D", 9999.0, recency="00004.10"),
        ]  # fmt: skip
    )
    assert figure is not None
    assert (figure.tokens_per_s, figure.systems, figure.gpu_count) == (200.0, 3, 8)  # A=102, B=300, C=200
    assert "median of 3 systems" in figure.label and figure.keys == {"k", "k99.9"}
    assert mlperf_serving_figure([]) is None


def _serving_fit_store() -> None:
    """A stored serving fit whose measured range is Hopper on TensorRT-LLM over several GPUs: 12 %
    held-out error inside it, 35 % outside."""
    cell = {
        "inside": {"n": 5, "median_pct": 12.0, "p90_pct": 30.0},
        "outside": {"n": 5, "median_pct": 35.0, "p90_pct": 60.0},
    }
    ServingModelFit.objects.create(
        constants={"serving": {"measured_regimes": [["hopper", "tensorrt-llm", "tp"]]}},
        errors={"serving": {"gpu": {"scenario:server": cell, "scenario:offline": cell}}},
        fitted_at=timezone.now(), points=10, inputs_digest="test",
    )  # fmt: skip


def test_estimates_outside_the_measured_range_are_marked_with_their_wider_error(llm_world, client):
    """An estimate of a class no measured point contains carries the model's error when it
    extrapolates and says why, on the page and in the API; one inside carries the smaller error."""
    _serving_fit_store()
    rows = _rows(use_case="llm-serving", model_size="70b")
    # B200 (Blackwell): no measured point of its hardware class.
    b200 = rows["b200"]
    assert b200.perf_basis == "estimated" and b200.estimate_outside_range
    assert b200.estimate_outside_reasons == ["architecture"] and b200.estimate_error_pct == 35.0
    # H100 at 20 tokens/s per user: its measured points (Offline, Server at 5 per user) do not reach
    # the target, so the model answers, inside its range when split over several GPUs.
    h100 = rows["h100-sxm5-80-gb"]
    assert h100.perf_basis == "estimated" and h100.llm_gpu_count in h100.llm_rented_counts
    if h100.llm_configuration != "single":
        assert not h100.estimate_outside_range and h100.estimate_error_pct == 12.0
    else:
        assert h100.estimate_outside_reasons == ["configuration"] and h100.estimate_error_pct == 35.0
    # The RTX 4090 is rented one at a time: 70B does not fit on one, so it is not ranked at all.
    assert "geforce-rtx-4090" not in rows
    html = client.get(reverse("dashboard:rankings") + "?use_case=llm-serving&model_size=70b").content.decode()
    assert "outside the measured range" in html and "no measured row of this architecture" in html
    assert "±35 % when extrapolating" in html
    api = {r["gpu"]: r for r in client.get("/api/v1/rankings/?use_case=llm-serving&model_size=70b").json()["results"]}
    assert api["b200"]["estimate_outside_range"] is True and api["b200"]["estimate_outside_reasons"] == ["architecture"]
    assert api["b200"]["estimate_error_pct"] == 35.0


def test_compare_shows_llm_tokens_and_cost_per_million_at_the_default_size(llm_world, client):
    """The compare page showed the LLM use cases only as a ratio to the first GPU, with "error
    unknown" beside estimates: now tokens/s and the cost of a million tokens, as the rankings
    (at their default target, 20 tokens/s per user)."""
    _serving_fit_store()
    response = client.get(reverse("dashboard:compare"), {"gpus": "h200-sxm-141-gb,radeon-instinct-mi355x"})
    assert response.status_code == 200
    serving = _rows(use_case="llm-serving")  # the default size: 70B
    h200, mi355x = response.context["columns"]
    html = response.content.decode()
    assert "Output tokens/s per GPU" in html and "Tokens/s of one stream" in html and "70B class" in html
    for column, slug in ((h200, "h200-sxm-141-gb"), (mi355x, "radeon-instinct-mi355x")):
        cell, row = column.cells["llm-serving"].row, serving[slug]
        assert (cell.perf, cell.perf_basis, cell.estimate_error_pct) == (
            row.perf,
            row.perf_basis,
            row.estimate_error_pct,
        )
    priced = serving["h200-sxm-141-gb"]
    assert f"{priced.perf:,.0f}</span> tokens/s" in html and f"{priced.cost_per_million_tokens:.3f}" in html
    # MI355X: no AMD point in this small world, so its estimate is outside the measured range.
    assert serving["radeon-instinct-mi355x"].estimate_outside_range
    assert "±35 % when extrapolating" in html


def test_llm_points_are_classified_once_per_data_version_and_are_each_gpus_own(
    llm_world, versioned_cache, monkeypatch, django_capture_on_commit_callbacks, settings
):
    """The chat ranking and every GPU page read the points of every LLM result: classified once per
    data version, a GPU's lines are the points of its own results."""
    import llm.selectors.rows as rows_module
    from gpuatlas.data_version import data_version_bump
    from llm.selectors.figures import llm_gpu_measurements

    settings.DATA_VERSION_DEBOUNCE_S = 0
    h100 = Gpu.objects.get(slug="h100-sxm5-80-gb")
    own = rows_module.llm_points(rows_module.llm_rows(gpu_ids=[h100.id]))
    assert own
    reads = []
    real = rows_module.llm_rows
    monkeypatch.setattr(rows_module, "llm_rows", lambda **kw: reads.append(kw) or real(**kw))
    rankings_compute(params=RankingParams(use_case="llm-chat"))
    lines, _does_not_fit = llm_gpu_measurements(gpu=h100)
    llm_gpu_measurements(gpu=Gpu.objects.get(slug="h200-sxm-141-gb"))
    assert len(reads) == 1
    assert sorted((line.tokens_per_s, line.n, line.gpu_count, line.precision) for line in lines) == sorted(
        (p.tokens_per_s, p.n, p.gpu_count, p.precision) for p in own
    )
    with django_capture_on_commit_callbacks(execute=True):
        data_version_bump()
    llm_gpu_measurements(gpu=h100)
    assert len(reads) == 2
