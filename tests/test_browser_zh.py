"""Every page in Chinese, in a real browser: no English UI string from the list below, Plotly's
dates in Chinese, no doubled title, no table column squeezed to one character per line.

The list holds English strings that pages showed on zh-hans before (the issue's list and what a
look at every page found), and the labels most likely to slip through untranslated. Chart text
is read from the SVG Plotly draws, so axis ticks and legends count too. The fit calculator
(/fit/) is checked by its own tests.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from benchmarks_app.services.geerling_import import geerling_import
from benchmarks_app.services.mlperf_import import mlperf_import_file
from catalog.models import SpecCitation
from tests.factories import ResultAggregateFactory, TensorPeakFactory, WorkloadFactory
from tests.world import DASHBOARD_WORLD, world_build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots"
MLPERF_EXCERPT = Path(__file__).resolve().parent / "fixtures" / "mlperf" / "summary_results_v5.1_excerpt.json"
# Names that keep their English on Chinese pages: benchmarks, data sets and engines.
NAMES = (
    "MLPerf Inference", "MLPerf Training", "geerlingguy/ai-benchmarks", "XiongjieDai/GPU-Benchmarks-on-LLM-Inference", "llama.cpp",
    "gpuatlas-bench", "InferenceX",
)  # fmt: skip

ENGLISH_UI = (
    # the list
    "Covered by the US export rule", "not sold to China", "Export control", "Dense; datasheet", "with sparsity",
    "FP32 accumulate", "No tensor cores", "Dense matrix multiply", "fine-tuning (SQuAD)", "What it measures",
    "Device memory bandwidth", "Host-to-device", "Stress test", "seed 00", "Training", "Inference",
    # pages and charts
    "Which GPU gives", "measured", "estimated from specs", "Performance", "Price", "Memory", "per GPU-hour",
    "Pareto frontier", "Lowest price per GPU-hour", "Share of the best", "Tier S", "Tier A", "How the figures",
    "Needs", "cannot do this", "Show all", "Measured only", "Download CSV", "Link to this view", "Compare",
    "Side by side", "Cheapest offer", "Typical offer", "Dense tensor", "not supported", "How to read this",
    "GPU catalogue", "Deep-learning GPUs", "Typical price", "Released", "Architecture timeline", "Specifications",
    "Cloud offers", "Measured results", "Measured efficiency", "Host link", "Datasheet figure", "Sources",
    "Open data", "Columns", "Meaning", "Stable identifier", "Submit a benchmark", "Workloads", "Category",
    "Sign in", "Password", "Rankings", "Tiers", "Providers", "Architectures", "Method", "error unknown",
    # LLM use cases, the LLM method page and the LLM rows of the comparison
    "tokens/s", "Tokens/s", "Output tokens", "per million tokens", "Cost per million", "Model size",
    "median of", "estimate ·", "limited by", "closed, available", "backend not stated", "batch ", "prompt ",
    "Leave-one-GPU-out", "Worst", "Fitted on", "measured rows", "does not fit", "The model", "serving",
    # where a price comes from, the price data health page (staff) and the 413 page
    "d old", "estimated date", "date unknown", "file of", "one provider only", "Typical offer", "no current offer", "Stale sources",
    "Date is", "published", "timestamp in the source", "Request too large", "Nothing was stored",
    "one provider", "one listing", "sets the typical price", "Typical rental price", "no offer in the imported",
    "Placeholder prices",
    # Plotly's own English: month and day names on date axes, the tool bar
    "Jan ", "Feb ", "Mar ", "Apr ", "Jun ", "Jul ", "Aug ", "Sep ", "Oct ", "Nov ", "Dec ", "Autoscale", "Reset axes",
)  # fmt: skip


@pytest.fixture
def zh_page(browser, live_server, settings):
    compiled = any((Path(p) / "zh_Hans" / "LC_MESSAGES" / "django.mo").exists() for p in settings.LOCALE_PATHS)
    if not compiled:
        pytest.skip("the zh-hans catalogue is not compiled (python manage.py compilemessages)")
    context = browser.new_context(viewport={"width": 1360, "height": 900}, locale="zh-CN")
    context.add_cookies([{"name": "django_language", "value": "zh-hans", "url": live_server.url}])
    context.route("**/favicon.ico", lambda route: route.fulfill(status=204, body=""))
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.console_errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def _zh_world():
    world = world_build(rows=DASHBOARD_WORLD)
    h100 = world.gpus["h100"]
    h100.export_control_note = "Covered by the US export rule of 2022-10-07: not sold to China"
    h100.export_control_note_zh = "受 2022-10-07 美国出口管制规则限制：不对中国销售"
    h100.bus_interface = "PCIe 5.0 x16"
    h100.save()
    peak = h100.tensor_peaks.get(precision="bf16")
    peak.note, peak.note_zh = "Dense; datasheet 1979 is with sparsity", "稠密；数据手册的 1979 是稀疏数值"
    peak.source = "seed:001_f1dc36c8095f8c1a.txt"
    peak.save()
    TensorPeakFactory(
        gpu=h100, precision="fp4", supported=False, dense_tflops=None, note="No tensor cores", note_zh="无"
    )
    SpecCitation.objects.create(
        gpu=h100, field="memory_gib", value="80", source="seed:002_4e6dd78a261bc337.txt", as_of=dt.date(2023, 1, 16),
        note="FP32 accumulate", note_zh="FP32 累加",
    )  # fmt: skip
    for slug, unit, median in (("pcie-d2h", "GB/s", 55.1), ("membw-copy", "GB/s", 2900.0), ("matmul", "TFLOPS", 680.0)):
        workload = WorkloadFactory(slug=slug, category="micro", unit=unit, name="Device memory bandwidth: copy")
        ResultAggregateFactory(gpu=h100, workload=workload, median=median, precision="fp32")
    WorkloadFactory(
        slug="matmul-stress", category="micro", name="Stress test (performance help page)", description="What it does"
    )
    h100.offers.update(current_price_per_gpu_hour_usd=Decimal("5.00"))
    # LLM figures: MLPerf serving rows (H100) and single-stream rows (RTX 4090), real excerpts.
    mlperf_import_file(path=MLPERF_EXCERPT, published=dt.date(2025, 9, 9))
    geerling_import()
    return world


def _texts(page) -> str:
    body = page.evaluate("document.body.innerText")
    svg = page.evaluate("Array.from(document.querySelectorAll('svg text')).map(t => t.textContent).join('\\n')")
    return body + "\n" + svg


def _english(text: str, names: set[str]) -> list[str]:
    for name in sorted(names | set(NAMES), key=len, reverse=True):  # names are names, in any language
        text = text.replace(name, "")
    return [phrase for phrase in ENGLISH_UI if phrase in text]


def test_every_page_in_chinese_has_no_english_ui(zh_page, live_server, settings):
    world = _zh_world()
    names = {
        g.name
        for g in (
            world.gpus["baseline"],
            world.gpus["h100"],
            world.gpus["rtx4090"],
            world.gpus["small"],
            world.gpus["hostile"],
        )
    }
    names |= {"Lambda", "Other Cloud", world.providers["hostile-cloud"].name}
    pages = {
        "rankings": ("/", 2),
        "rankings-all": ("/?show=all&use_case=inference-8bit", 2),
        "tiers": ("/tiers/", 1),
        "gpus": ("/gpus/", 0),
        "gpu": (f"/gpus/{world.gpus['h100'].slug}/", 2),
        "compare": (f"/compare/?gpus={world.gpus['h100'].slug},{world.gpus['rtx4090'].slug}", 1),
        "compare-empty": ("/compare/", 0),
        "rankings-llm-serving": ("/?use_case=llm-serving&show=all", 2),
        "rankings-llm-chat": ("/?use_case=llm-chat&show=all", 2),
        "tiers-llm": ("/tiers/?use_case=llm-serving", 1),
        "gpu-llm": (f"/gpus/{world.gpus['rtx4090'].slug}/", 1),
        "llm-model": ("/llm-model/", 0),
        "architectures": ("/architectures/", 1),
        "providers": ("/providers/", 0),
        "submit": ("/submit/", 0),
        "open-data": ("/open-data/", 0),
        "login": ("/accounts/login/", 0),
        "signup": ("/accounts/signup/", 0),
    }
    SHOTS.mkdir(parents=True, exist_ok=True)
    found = {}
    for name, (url, charts) in pages.items():
        response = zh_page.goto(live_server.url + url)
        assert response is not None and response.status == 200, url
        assert zh_page.evaluate("document.documentElement.lang") == "zh-hans"
        if charts:
            zh_page.wait_for_function(f"document.querySelectorAll('.main-svg').length >= {charts}")
        zh_page.screenshot(path=str(SHOTS / f"zh-{name}.png"), full_page=True)
        english = _english(_texts(zh_page), names)
        if english:
            found[url] = english
    # The 413 page: a body over the limit, posted with the page's cookies (its language).
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    response = zh_page.request.post(
        live_server.url + "/submit/", data="x" * (limit + 1), headers={"Content-Type": "application/json"}
    )
    assert response.status == 413
    zh_page.set_content(response.text())
    if english := _english(_texts(zh_page), names):
        found["413"] = english
    # Pages for staff: the price data health page.
    staff = get_user_model().objects.create_superuser("curator", "curator@example.org", "x" * 16)
    client = Client()
    client.force_login(staff)
    zh_page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    for name, url in (("providers-health", "/providers/health/"),):
        response = zh_page.goto(live_server.url + url)
        assert response is not None and response.status == 200, url
        zh_page.screenshot(path=str(SHOTS / f"zh-{name}.png"), full_page=True)
        if english := _english(_texts(zh_page), names):
            found[url] = english
    assert found == {}
    assert zh_page.console_errors == []


def test_chinese_dates_title_and_table_layout(zh_page, live_server):
    world = _zh_world()
    # Plotly's month names come from our zh-CN locale: the architecture timeline's date axis
    zh_page.goto(live_server.url + "/architectures/")
    zh_page.wait_for_function("document.querySelectorAll('#chart-timeline .main-svg').length >= 1")
    ticks = zh_page.eval_on_selector_all("#chart-timeline .xtick text", "els => els.map(e => e.textContent)")
    assert ticks and all(not any(c.isascii() and c.isalpha() for c in t) for t in ticks), ticks
    # the price history of one GPU: dates as days, not times of day
    zh_page.goto(live_server.url + f"/gpus/{world.gpus['baseline'].slug}/")
    zh_page.wait_for_function("document.querySelectorAll('#chart-history .main-svg').length >= 1")
    ticks = zh_page.eval_on_selector_all("#chart-history .xtick text", "els => els.map(e => e.textContent)")
    assert ticks and all(":" not in t for t in ticks), ticks
    # "GPU 天梯图 天梯图": the Chinese name is not repeated on the Chinese page
    zh_page.goto(live_server.url + "/tiers/")
    assert zh_page.locator("h1").inner_text().count("天梯图") == 1
    # the category column of /submit/ wrapped one character per line
    zh_page.goto(live_server.url + "/submit/")
    lines = zh_page.eval_on_selector_all(
        "td.nowrap",
        "els => els.map(e => { const r = document.createRange(); r.selectNodeContents(e); return r.getClientRects().length; })",
    )
    assert lines and max(lines) == 1, lines
    cells = zh_page.eval_on_selector_all("td.nowrap", "els => els.map(e => e.innerText)")
    assert "训练" in cells or "微基准" in " ".join(cells)
