"""The dashboard in a real browser: Playwright driving Debian's chromium against live_server.

Each page loads without console errors and draws its charts; a filter change redraws the chart
and lands in the URL; a script-named GPU shows as text in a chart hover. Screenshots go to
test-artifacts/screenshots/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuatlas.numbers import number_text
from tests.world import DASHBOARD_WORLD, HOSTILE_GPU, world_build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots"


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1360, "height": 900}, locale="en-GB")
    # base.html declares no favicon (the lead's); chromium's automatic request would 404.
    context.route("**/favicon.ico", lambda route: route.fulfill(status=204, body=""))
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.console_errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _load(page, url: str, charts: int) -> None:
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    if charts:
        page.wait_for_function(f"document.querySelectorAll('.main-svg').length >= {charts}")
    assert page.console_errors == [], page.console_errors


def _bar_labels(page) -> list[str]:
    return page.eval_on_selector_all("#chart-bar .yaxislayer-above .ytick text", "els => els.map(e => e.textContent)")


def test_rankings_filter_changes_chart_and_url(page, live_server):
    world_build(rows=DASHBOARD_WORLD)
    _load(page, live_server.url + "/", charts=2)
    before = _bar_labels(page)
    assert "RTX 4090" in before and "A100 SXM4 80 GB" in before
    _shot(page, "rankings")
    with page.expect_navigation():
        page.select_option("select[name=segment]", "datacenter")
    page.wait_for_function("document.querySelectorAll('#chart-bar .main-svg').length >= 1")
    assert "segment=datacenter" in page.url
    after = _bar_labels(page)
    assert set(after) == {"A100 SXM4 80 GB", "H100 SXM5 80 GB"}
    assert page.console_errors == []
    # the shared URL reproduces the view
    page.goto(page.url)
    page.wait_for_function("document.querySelectorAll('#chart-bar .main-svg').length >= 1")
    assert set(_bar_labels(page)) == set(after)


def test_script_named_gpu_is_text_in_chart_hover(page, live_server):
    world_build(rows=DASHBOARD_WORLD)
    _load(page, live_server.url + "/?segment=consumer&show=all", charts=2)
    labels = _bar_labels(page)
    # Shown literally as a tick label, cut to fit the axis on a phone (the hover holds the whole name).
    assert any(
        label == HOSTILE_GPU or (label.endswith("…") and HOSTILE_GPU.startswith(label[:-1])) for label in labels
    ), labels
    page.locator("#chart-bar .point path").first.wait_for()
    # The mouse reaches only what is in the window: the chart may start below the fold.
    page.locator("#chart-bar").scroll_into_view_if_needed()
    # Plotly's drag layer sits above the bars: move the mouse over each bar until the
    # hostile one shows its hover label.
    found = False
    for handle in page.locator("#chart-bar .point path").all():
        box = handle.bounding_box()
        if not box or box["width"] < 1:
            continue
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        # The hover label is drawn on the next frames; a busy machine takes longer.
        text = ""
        for _ in range(10):
            page.wait_for_timeout(100)
            text = " ".join(page.locator("#chart-bar .hoverlayer").all_text_contents())
            if text.strip():
                break
        if "window.__pwned" in text:
            assert HOSTILE_GPU in text
            found = True
            _shot(page, "rankings-hostile-hover")
            break
    assert found
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("table#ranking-table").inner_text().count(HOSTILE_GPU) == 1
    assert page.console_errors == []


def test_tiers_page(page, live_server):
    world_build(rows=DASHBOARD_WORLD)
    _load(page, live_server.url + "/tiers/", charts=0)
    assert "RTX 4090" in page.locator("#tier-S").inner_text()
    with page.expect_navigation():
        page.click("nav.tabs >> text=Inference, 16-bit")
    assert "use_case=inference-16bit" in page.url
    assert page.evaluate("window.__pwned === undefined")
    _shot(page, "tiers")


def test_gpu_page(page, live_server):
    world = world_build(rows=DASHBOARD_WORLD)
    _load(page, live_server.url + f"/gpus/{world.gpus['baseline'].slug}/", charts=2)
    assert page.locator("#chart-history .main-svg").count() >= 1
    assert page.locator("#chart-box .main-svg").count() >= 1
    assert "gpu_8x_a100" in page.locator("#offers-table").inner_text()
    _shot(page, "gpu-detail")
    _load(page, live_server.url + f"/gpus/{world.gpus['hostile'].slug}/", charts=1)
    assert "<img src=x" in page.locator("#offers-table").inner_text()
    assert page.evaluate("window.__pwned === undefined")


def test_compare_page(page, live_server):
    world_build(rows=DASHBOARD_WORLD)
    _load(page, live_server.url + "/compare/?gpus=h100-sxm5-80-gb,a100-sxm4-80-gb,rtx-4090", charts=1)
    legend = page.eval_on_selector_all("#chart-compare .legendtext", "els => els.map(e => e.textContent)")
    assert legend == ["H100 SXM5 80 GB", "A100 SXM4 80 GB", "RTX 4090"]
    _shot(page, "compare")
    response = page.goto(live_server.url + "/compare/?gpus=h100-sxm5-80-gb")
    assert response.status == 400
    assert "between 2 and 4" in page.locator("[role=alert]").inner_text()


def test_architectures_and_open_data_pages(page, live_server):
    world_build(rows=DASHBOARD_WORLD)
    _load(page, live_server.url + "/architectures/", charts=1)
    assert "Hopper" in page.locator("#chart-timeline").inner_text()
    _shot(page, "architectures")
    _load(page, live_server.url + "/open-data/", charts=0)
    _shot(page, "open-data")


def test_rankings_in_chinese(page, live_server, settings):
    compiled = any((Path(p) / "zh_Hans" / "LC_MESSAGES" / "django.mo").exists() for p in settings.LOCALE_PATHS)
    if not compiled:
        pytest.skip("the zh-hans catalogue is not compiled (python manage.py compilemessages)")
    world_build(rows=DASHBOARD_WORLD)
    page.goto(live_server.url + "/?show=all")
    with page.expect_navigation():
        page.select_option("select[name=language]", "zh-hans")
    page.wait_for_function("document.querySelectorAll('#chart-bar .main-svg').length >= 1")
    assert page.evaluate("document.documentElement.lang") == "zh-hans"
    assert "哪款 GPU 最物有所值" in page.locator("h1").inner_text()
    # chart labels are translated too
    legend = page.eval_on_selector_all("#chart-bar .legendtext", "els => els.map(e => e.textContent)")
    assert "按规格估算" in legend
    assert page.console_errors == []
    _shot(page, "rankings-zh")


def test_compare_picker_works_without_javascript(browser, live_server):
    """The picker is a plain form: typed names (the datalist narrows them as one types) are
    resolved by the server, so it works with JavaScript off too."""
    world_build(rows=DASHBOARD_WORLD)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + "/compare/")
    assert page.locator("datalist#gpu-names option").count() >= 4
    fields = page.locator("input[name=gpu]")
    fields.nth(0).fill("H100 SXM5 80 GB")
    fields.nth(1).fill("rtx 4090")
    with page.expect_navigation():
        page.click("#compare-form button[type=submit]")
    headers = page.locator("#compare-table thead th").all_inner_texts()
    assert any("H100 SXM5 80 GB" in h for h in headers) and any("RTX 4090" in h for h in headers)
    relative = (1.2 * 0.8) ** 0.5 / (2.5 * 3.0) ** 0.5  # the world's RTX 4090 over its H100, as in the rankings
    assert f"{number_text(relative)}×" in page.locator("#compare-table").inner_text()
    context.close()
