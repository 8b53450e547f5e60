"""The fit page's and the comparison's bodies are rendered once per question and data version and
shared by every visitor; what belongs to a visitor (the import form's CSRF token, the sign-in link)
is rendered around them on every request."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from gpuatlas.data_version import data_version_bump
from tests.world import DASHBOARD_WORLD, world_build

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("versioned_cache")]

FIT = "/fit/?model=llama-3-8b&mode=inference&serving=batched&tokens_per_user=20"
COMPARE = "/compare/?gpus=a100-sxm4-80-gb,h100-sxm5-80-gb,rtx-4090"
IMPORT_FORM = 'action="/fit/models/import/">'


def _templates(client: Client, url: str) -> tuple[set[str], str]:
    response = client.get(url)
    assert response.status_code == 200
    return {t.name for t in response.templates if t.name}, response.content.decode()


def _without_tokens(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)


def test_the_fit_answer_is_rendered_once_and_the_import_form_per_visitor(settings, django_capture_on_commit_callbacks):
    settings.FITCALC_HF_ONLINE = True
    settings.DATA_VERSION_DEBOUNCE_S = 0
    world_build(rows=DASHBOARD_WORLD)
    anonymous = Client()
    cold, first = _templates(anonymous, FIT)
    assert {"fitcalc/_fit_top.html", "fitcalc/_fit_bottom.html"} <= cold
    assert "Sign in to import models from Hugging Face." in first and IMPORT_FORM not in first
    warm, again = _templates(anonymous, FIT)
    assert not warm & {"fitcalc/_fit_top.html", "fitcalc/_fit_bottom.html"}
    assert _without_tokens(again) == _without_tokens(first)
    # The speed-per-user links repeat the question the body was rendered for.
    assert (
        "?model=llama-3-8b&amp;mode=inference&amp;serving=batched&amp;tokens_per_user=20&amp;tokens_per_user=10"
        in first
    )

    signed_in = Client()
    signed_in.force_login(get_user_model().objects.create_user("fitter", password="pw-fitter-123456"))
    shared, html = _templates(signed_in, FIT)
    assert not shared & {"fitcalc/_fit_top.html", "fitcalc/_fit_bottom.html"}  # the anonymous visitor's body
    assert IMPORT_FORM in html and "Sign in to import models" not in html
    assert html.count("fig-fit") == first.count("fig-fit") and 'id="serving-plan"' in html

    with django_capture_on_commit_callbacks(execute=True):
        data_version_bump()
    recomputed, _html = _templates(anonymous, FIT)
    assert "fitcalc/_fit_top.html" in recomputed


def test_the_fit_page_for_another_question_is_its_own_body():
    world_build(rows=DASHBOARD_WORLD)
    client = Client()
    _templates(client, FIT)
    other, html = _templates(client, "/fit/?model=llama-3-8b&mode=lora&tokens=1e6")
    assert "fitcalc/_fit_top.html" in other and "tokens_per_user=20" not in html


def test_a_comparison_is_rendered_once_per_data_version(django_capture_on_commit_callbacks, settings):
    settings.DATA_VERSION_DEBOUNCE_S = 0
    world_build(rows=DASHBOARD_WORLD)
    client = Client()
    cold, first = _templates(client, COMPARE)
    assert "_body_only.html" in cold
    warm, again = _templates(client, COMPARE)
    assert "_body_only.html" not in warm and _without_tokens(again) == _without_tokens(first)
    assert "H100 SXM5 80 GB" in again and 'data-figure="fig-compare"' in again
    with django_capture_on_commit_callbacks(execute=True):
        data_version_bump()
    assert "_body_only.html" in _templates(client, COMPARE)[0]


def test_a_refused_comparison_keeps_its_status_when_read_from_the_cache():
    world_build(rows=DASHBOARD_WORLD)
    client = Client()
    for _ in range(2):
        response = client.get("/compare/?gpus=nope-gpu,a100-sxm4-80-gb")
        assert response.status_code == 404 and "nope-gpu" in response.content.decode()
        assert client.get("/compare/?gpus=a100-sxm4-80-gb").status_code == 400
