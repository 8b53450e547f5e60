"""Every page in Chinese (zh-hans) on the demo data, read as a Chinese reader would: no English
sentence outside citations, sources and product names (tests/english_left.py says what counts).

The names of the catalogue's GPUs and of the benchmark engines are products and stay English;
they are taken out of the text before it is read, except a name that holds an English phrase
("GB300 (per Blackwell Ultra GPU)"): the catalogue gives such a name in Chinese (``name_zh``).
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from benchmarks_app.models import RawSubmission
from catalog.models import Gpu
from dashboard.ranking.use_cases import USE_CASES
from tests.english_left import english_sentences

pytestmark = pytest.mark.django_db

# English the pages show from text stored in English, not yet as a key a page can translate: the
# reasons a submission's energy figures were not published (benchmarks_app/services/derive.py).
# Each must still be found where it is listed: once it is translated, the test fails until it is
# taken off this list.
STORED_IN_ENGLISH = {"/submissions/": ("energy not published: measured over a", "s window; energy needs at least")}


def _pages() -> list[str]:
    pages = [f"/?use_case={slug}" for slug in USE_CASES]
    pages += [f"/tiers/?use_case={slug}" for slug in USE_CASES]
    pages += [f"/gpus/{slug}/" for slug in ("h100-sxm5-80-gb", "h200-sxm-141-gb", "geforce-rtx-4090", "gb300", "b200")]
    pages += [
        "/",
        "/gpus/",
        "/compare/?gpus=h100-sxm5-80-gb,geforce-rtx-4090,a100-sxm4-80-gb",
        "/fit/",
        "/fit/?model=llama-3.1-70b&mode=inference",
        "/fit/?model=llama-3.1-8b&mode=train",
        "/providers/",
        "/providers/health/",
        "/submit/",
        "/open-data/",
        "/architectures/",
        "/llm-model/",
        "/accounts/",
        "/watches/new/?kind=gpu&gpu=h100-sxm5-80-gb",
        "/gpus/h100-sxm5-80-gb/results/",
        "/gpus/gb300/results/",
        "/gpus/h100-sxm5-80-gb/training-runs/",
    ]
    submission = RawSubmission.objects.order_by("id").first()
    if submission is not None:
        pages.append(f"/submissions/{submission.run_uuid}/")
    return pages


def test_no_english_sentence_is_left_on_a_chinese_page(demo, client):
    staff = get_user_model().objects.create_superuser("zh-reader", "zh@example.org", "x" * 16)
    client.force_login(staff)
    client.cookies["django_language"] = "zh-hans"
    names = sorted(
        {name for name in Gpu.objects.values_list("name", flat=True) if not english_sentences(f"<p>{name}</p>")},
        key=len,
        reverse=True,
    )
    assert "GB300 (per Blackwell Ultra GPU)" not in names  # read as any text: its Chinese name must show
    left: dict[str, list[str]] = {}
    exempt_seen: set[str] = set()
    for url in _pages():
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert 'lang="zh-hans"' in html, url
        for name in names:
            html = html.replace(name, "")
        found = set(english_sentences(html))
        for prefix, sentences in STORED_IN_ENGLISH.items():
            if url.startswith(prefix):
                exempt_seen |= found & set(sentences)
                found -= set(sentences)
        if found:
            left[url] = sorted(found)
    assert left == {}, left
    assert exempt_seen == {s for sentences in STORED_IN_ENGLISH.values() for s in sentences}


def test_the_reader_finds_english_where_it_is(demo, client):
    # The check itself: an English page is full of English sentences, a citation hides its own.
    html = client.get("/submit/").content.decode()
    assert len(english_sentences(html)) > 10
    assert english_sentences("<p>Prices are per GPU-hour.</p>") == ["Prices are per GPU-hour"]
    assert (
        english_sentences('<p><cite>The state of the art</cite>, <a href="https://x.org">All of the data</a></p>') == []
    )
    assert english_sentences('<p translate="no">Dell Pro Max with GB10</p><p>英文 GPU 名称</p>') == []


@pytest.mark.parametrize("url", ["/submit/"])
def test_the_workloads_that_were_english_read_in_chinese(demo, client, url):
    client.cookies["django_language"] = "zh-hans"
    html = client.get(url).content.decode()
    assert "张量并行的 LLM 服务扫描" in html and "固定请求速率下的在线服务" in html and "最大吞吐量" in html
    assert "InferenceX 服务运行" in html


def test_a_gpu_name_with_english_words_reads_in_chinese(demo, client):
    client.cookies["django_language"] = "zh-hans"
    for url in ("/gpus/gb300/", "/gpus/", "/?use_case=llm-serving"):
        html = client.get(url).content.decode()
        assert "GB300（每颗 Blackwell Ultra GPU）" in html, url
    client.cookies["django_language"] = "en"
    assert "GB300 (per Blackwell Ultra GPU)" in client.get("/gpus/gb300/").content.decode()
