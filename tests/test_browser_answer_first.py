"""The answer first on a phone, in a real browser: on the GPU page and /fit/ the answer (the GPU's
standings and price, the fit verdict and its cost) sits above every long section, and those
sections start closed at 390 px and open at 1,400 px; no option of the fit form's "Inference"
select, and no select's chosen option, is wider than its select shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.world import DASHBOARD_WORLD, world_build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "screenshots"
FOLDS = """() => Array.from(document.querySelectorAll('details[data-phone-closed]')).map(d => ({
  summary: d.querySelector('summary').textContent.trim(), open: d.open,
  top: d.getBoundingClientRect().top + window.scrollY}))"""
# Chromium draws a select's arrow in about 20 px at the right, inside its padding box.
CUT_OPTIONS = """() => {
  const pen = document.createElement('canvas').getContext('2d');
  const cut = [];
  document.querySelectorAll('form.fit-form select').forEach(s => {
    const style = getComputedStyle(s);
    pen.font = style.fontWeight + ' ' + style.fontSize + ' ' + style.fontFamily;
    const room = s.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
    const options = s.name === 'serving' ? Array.from(s.options) : [s.options[s.selectedIndex]];
    options.filter(o => o && pen.measureText(o.text).width > room + 1)
      .forEach(o => cut.push(s.name + ': ' + o.text + ' (' + Math.round(pen.measureText(o.text).width) + ' px of ' + Math.round(room) + ')'));
  });
  return cut;
}"""


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("width", [390, 1400])
def test_the_answer_comes_first_and_long_sections_fold_on_a_phone(browser, live_server, width, language):
    world = world_build(rows=DASHBOARD_WORLD)
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page = context.new_page()
    pages = {
        "gpu": (f"/gpus/{world.gpus['h100'].slug}/", "#standing"),
        "fit": ("/fit/?model=llama-3.1-70b&mode=inference", "#fit-answer"),
    }
    try:
        for name, (url, answer) in pages.items():
            response = page.goto(live_server.url + url)
            assert response is not None and response.status == 200, url
            folds = page.evaluate(FOLDS)
            assert folds, f"{url}: no folded section"
            answer_top = page.locator(answer).bounding_box()["y"] + page.evaluate("window.scrollY")
            assert all(answer_top < fold["top"] for fold in folds), (url, answer_top, folds)
            if width < 700:
                assert [f["summary"] for f in folds if f["open"]] == [], url
                assert answer_top < 900, f"{url}: the answer starts below the first screen ({answer_top:.0f} px)"
            else:
                assert [f["summary"] for f in folds if not f["open"]] == [], url
            if name == "fit":
                assert page.evaluate(CUT_OPTIONS) == []
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"answer-first-{name}-{width}-{language}.png"))
    finally:
        context.close()
