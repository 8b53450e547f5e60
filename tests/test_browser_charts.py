"""Every page with a chart, on the demo data (the real catalogue, prices and benchmark results), on a
390 px phone and a 1400 px screen, in English and Chinese, in a real browser: each chart's plot area
keeps at least half the width it has to give (the viewport on a phone, where a chart spans it; the
chart's own box on a wide screen, where two may sit side by side), its title stays inside the chart,
and a chart that starts with lines hidden offers a button that shows them all.

The serving chart of a 70B model has 16 GPUs: its legend beside the plot left the x axis about
30 px on a phone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from catalog.models import Gpu
from dashboard.ranking.use_cases import USE_CASES
from tests.browser_charts import CHART_BOXES, chart_faults

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots"


def _chart_pages() -> dict[str, str]:
    pages = {f"rankings-{slug}": f"/?use_case={slug}" for slug in USE_CASES}
    h100 = Gpu.objects.get(slug="h100-sxm5-80-gb").slug
    pages |= {
        "gpu-h100": f"/gpus/{h100}/",
        "gpu-rtx4090": "/gpus/geforce-rtx-4090/",
        "compare": f"/compare/?gpus={h100},geforce-rtx-4090,a100-sxm4-80-gb",
        "fit": "/fit/",
        "tiers": "/tiers/",
        "architectures": "/architectures/",
    }
    return pages


def test_every_chart_keeps_its_plot_wide_on_a_phone_and_a_screen(demo, browser, live_server):
    faults: dict[str, list[str]] = {}
    shown_all = 0
    pages = _chart_pages()
    for language in ("en", "zh-hans"):
        for width in (390, 1400):
            context = browser.new_context(viewport={"width": width, "height": 844})
            context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
            page = context.new_page()
            try:
                for name, url in pages.items():
                    response = page.goto(live_server.url + url)
                    assert response is not None and response.status == 200, url
                    if not page.locator("[data-figure]").count():
                        continue
                    page.wait_for_function(
                        "document.querySelectorAll('.main-svg').length >= document.querySelectorAll('[data-figure]').length"
                    )
                    for fault in chart_faults(page.evaluate(CHART_BOXES), viewport=width):
                        faults.setdefault(f"{name} {width} {language}", []).append(fault)
                    more = page.locator("button.chart-more")
                    if more.count():
                        hidden = page.evaluate(
                            "document.querySelector('button.chart-more').previousElementSibling.data.length"
                        )
                        more.first.click()
                        page.wait_for_function(
                            "b => b.getAttribute('aria-pressed') === 'true'", arg=more.first.element_handle()
                        )
                        legend = page.evaluate(CHART_BOXES)
                        shown_all += 1
                        assert hidden > 0 and not chart_faults(legend, viewport=width), (name, width, legend)
                    if width == 390:
                        SHOTS.mkdir(parents=True, exist_ok=True)
                        page.screenshot(path=str(SHOTS / f"charts-{name}-{width}-{language}.png"), full_page=True)
            finally:
                context.close()
    assert faults == {}, faults
    # The serving chart of the default 70B model has more GPUs than it shows at first (both languages, both widths).
    assert shown_all >= 4, shown_all
