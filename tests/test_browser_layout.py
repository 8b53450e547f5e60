"""Every page on a 390 px phone and a 1400 px screen, in English and Chinese, in a real browser:
no sideways scroll (the page is never wider than the window), every chart's plot area at least half
the width it has to give with its title inside the chart (tests/browser_charts.py), and the API
documentation pages (ReDoc, Swagger UI) load with no console error: nothing blocked by the CSP, no
broken schema.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from benchmarks_app.services.geerling_import import geerling_import
from benchmarks_app.services.mlperf_import import mlperf_import_file
from dashboard.ranking.use_cases import USE_CASES
from tests.browser_charts import CHART_BOXES, chart_faults
from tests.world import DASHBOARD_WORLD, world_build

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots"
MLPERF_EXCERPT = Path(__file__).resolve().parent / "fixtures" / "mlperf" / "summary_results_v5.1_excerpt.json"
OVERFLOW = """() => {
  const width = window.innerWidth;
  const wide = Array.from(document.querySelectorAll('body *'))
    .filter(el => el.getBoundingClientRect().right > width + 1 && el.getClientRects().length)
    .slice(0, 3).map(el => el.tagName + (el.id ? '#' + el.id : '') + '.' + String(el.className).slice(0, 40));
  return {scroll: document.scrollingElement.scrollWidth, width, wide};
}"""


def _pages(world) -> dict[str, str]:
    h100, rtx4090 = world.gpus["h100"].slug, world.gpus["rtx4090"].slug
    pages = {f"rankings-{slug}": f"/?use_case={slug}&show=all" for slug in USE_CASES}
    pages |= {
        "home": "/",
        "tiers": "/tiers/",
        "catalogue": "/gpus/",
        "gpu": f"/gpus/{h100}/",
        "gpu-results": f"/gpus/{h100}/results/",
        "gpu-llm": f"/gpus/{rtx4090}/",
        "compare": f"/compare/?gpus={h100},{rtx4090},{world.gpus['baseline'].slug}",
        "fit": "/fit/",
        "providers": "/providers/",
        "health": "/providers/health/",
        "submit": "/submit/",
        "open-data": "/open-data/",
        "architectures": "/architectures/",
        "llm-model": "/llm-model/",
        "redoc": "/api/v1/redoc/",
        "swagger": "/api/v1/docs/",
    }
    return pages


@pytest.fixture(scope="module")
def languages_compiled(django_test_environment):  # type: ignore[no-untyped-def]
    from django.conf import settings

    if not any((Path(p) / "zh_Hans" / "LC_MESSAGES" / "django.mo").exists() for p in settings.LOCALE_PATHS):
        pytest.skip("the zh-hans catalogue is not compiled (python manage.py compilemessages)")


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("width", [390, 1400])
def test_every_page_fits_the_window_and_the_docs_load_cleanly(
    browser, live_server, languages_compiled, width, language
):
    world = world_build(rows=DASHBOARD_WORLD)
    mlperf_import_file(path=MLPERF_EXCERPT, published=dt.date(2025, 9, 9))
    geerling_import()
    staff = get_user_model().objects.create_superuser("curator", "curator@example.org", "x" * 16)
    client = Client()
    client.force_login(staff)
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_cookies(
        [
            {"name": "django_language", "value": language, "url": live_server.url},
            {"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url},
        ]
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    too_wide, console, charts, pushed_down = {}, {}, {}, {}
    try:
        for name, url in _pages(world).items():
            errors.clear()
            response = page.goto(live_server.url + url)
            assert response is not None and response.status == 200, url
            assert page.evaluate("document.documentElement.lang") == language, url
            if name in ("redoc", "swagger"):
                # The schema is fetched and rendered: an operation's summary shows, or ReDoc's error.
                page.wait_for_selector("text=/rankings|排名/i", state="attached", timeout=20_000)
                page.wait_for_load_state("networkidle")
            elif page.locator("[data-figure]").count():
                page.wait_for_function(
                    "document.querySelectorAll('.main-svg').length >= document.querySelectorAll('[data-figure]').length"
                )
                if faults := chart_faults(page.evaluate(CHART_BOXES), viewport=width):
                    charts[name] = faults
                    SHOTS.mkdir(parents=True, exist_ok=True)
                    for chart in page.locator("[data-figure]").all():
                        chart.screenshot(
                            path=str(SHOTS / f"layout-{name}-{chart.get_attribute('id')}-{width}-{language}.png")
                        )
            # Nothing unseen takes room above the site's header (an icon sheet drawn at SVG's
            # default 300 x 150 once pushed every page down by 150 px).
            header_top = page.evaluate(
                "(document.querySelector('header.topbar') || document.body).getBoundingClientRect().top"
            )
            if name not in ("redoc", "swagger") and header_top > 1:
                pushed_down[name] = header_top
            found = page.evaluate(OVERFLOW)
            if found["scroll"] > found["width"]:
                too_wide[name] = found
            if errors:
                console[name] = list(errors)
            if name == "redoc":
                assert page.locator("text=Something went wrong").count() == 0
    finally:
        context.close()
    assert too_wide == {}, f"wider than {width} px: {too_wide}"
    assert pushed_down == {}, f"the header starts this many px down: {pushed_down}"
    assert charts == {}, f"charts squeezed at {width} px: {charts}"
    assert console == {}, console
