"""The Simplified Chinese catalogue is complete and its compiled form is up to date."""

from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.test import Client
from django.utils import translation

LOCALE = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES"


def test_every_message_is_translated():
    po = polib.pofile(str(LOCALE / "django.po"))
    untranslated = [e.msgid for e in po.untranslated_entries()] + [e.msgid for e in po.fuzzy_entries()]
    assert untranslated == []


def test_compiled_catalogue_matches_the_source():
    po = {
        (e.msgctxt, e.msgid): e.msgstr or e.msgstr_plural.get(0, "")
        for e in polib.pofile(str(LOCALE / "django.po"))
        if not e.obsolete
    }
    mo = {(e.msgctxt, e.msgid): e.msgstr or e.msgstr_plural.get(0, "") for e in polib.mofile(str(LOCALE / "django.mo"))}
    stale = sorted(k[1] for k in po if mo.get(k) != po[k])
    assert stale == [], "run: python manage.py compilemessages -l zh_Hans"


def test_translation_is_active_for_chinese():
    with translation.override("zh-hans"):
        assert translation.gettext("Rankings") == "排名"


@pytest.mark.django_db
def test_language_switch_renders_chinese_navigation():
    client = Client()
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/gpus/"})
    body = client.get("/gpus/").content.decode()
    assert "GPU 目录" in body and "排名" in body
