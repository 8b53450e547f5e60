"""The demo's heaviest pages stay under 150 KB of HTML: what is the same on every point of a chart
or every row of a table is said once (a source's title in a trace's hover template, a feed's note
on its estimated dates under the offers, a table's column names in its header)."""

from __future__ import annotations

import json
import re

import pytest

from dashboard.figures.serving import _shared_and_own
from tests.support import hover_text

pytestmark = pytest.mark.django_db

BYTE_BUDGET = 150_000
H200 = "h200-sxm-141-gb"


def _figure(html: str, element_id: str) -> dict:
    return json.loads(html.split(f'id="{element_id}" type="application/json">', 1)[1].split("</script>", 1)[0])


def test_every_gpu_page_the_home_links_and_the_llm_rankings_are_under_the_budget(demo, client):
    home = client.get("/").content.decode()
    slugs = sorted(set(re.findall(r'href="/gpus/([a-z0-9-]+)/"', home)))
    assert len(slugs) >= 20 and H200 in slugs
    urls = [f"/gpus/{slug}/" for slug in slugs] + ["/?use_case=llm-serving", "/?use_case=llm-chat"]
    sizes = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        sizes[url] = len(response.content)
    chinese = client.get(f"/gpus/{H200}/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "测量" in chinese.content.decode()
    sizes[f"/gpus/{H200}/ (zh-hans)"] = len(chinese.content)
    assert {url: size for url, size in sizes.items() if size >= BYTE_BUDGET} == {}
    # The H200's page (five energy tables, fifty InferenceX points) is the heaviest and no longer empty.
    assert sizes[f"/gpus/{H200}/"] > 100_000


def test_a_points_hover_says_its_whole_label_once(demo, client):
    figure = _figure(client.get(f"/gpus/{H200}/").content.decode(), "fig-serving")
    # A model's measured points share a trace whatever their source (DeepSeek-R1's InferenceX runs
    # beside NVIDIA's guide run), so the InferenceX points are found by what their hover says.
    inferencex = [
        (trace, i)
        for trace in figure["data"]
        if trace["mode"] == "markers"
        for i in range(len(trace["x"]))
        if "InferenceX" in hover_text(trace, i)
    ]
    assert len(inferencex) >= 20
    for trace, i in inferencex:
        label = hover_text(trace, i).split("\n")[1]
        parts = label.split(" · ")
        # The run's title names its engine, precision and lengths: the line does not repeat them.
        assert len(parts) == len(set(parts)), label
        assert label.count("SGLang") + label.count("TensorRT-LLM") + label.count("vLLM") <= 1, label
        assert re.search(r"\d+ in flight", label) and "1024/1024 tokens" not in label, label


def test_the_offers_say_each_feeds_note_on_its_estimated_dates_once(demo, client):
    html = client.get(f"/gpus/{H200}/").content.decode()
    table = html.split('id="offers-table"', 1)[1].split("</table>", 1)[0]
    notes = re.findall(r'<li id="offer-date-(\d+)" value="\d+">([^<]+)</li>', html)
    estimated = table.count("date unknown, file of")
    assert estimated >= 10 and 1 <= len(notes) < estimated
    references = re.findall(r'<sup><a href="#offer-date-(\d+)">\d+</a></sup>', table)
    # Every estimated date points to its note, every note is pointed to, and no note is in a row.
    assert len(references) == estimated and set(references) == {number for number, _note in notes}
    for _number, note in notes:
        assert html.count(note) == 1, note


@pytest.mark.parametrize(
    "labels",
    [
        ["A · B · x 1", "A · B · x 2", "A · C · x 3"],
        ["only · one"],
        ["A · B", "A · B"],
        ["P · Q", "R · S"],
        ["A · x · Z", "A · Z", "A · y · Z"],
        ["x · Z", "Z"],
        ["A · x", "A"],
        ["A · B · C", "A · B · D · C"],
    ],
)
def test_a_traces_labels_split_into_shared_and_own_parts_read_as_before(labels):
    prefix, own, suffix = _shared_and_own(labels)
    assert len(own) == len(labels)
    for label, middle in zip(labels, own, strict=True):
        assert prefix + middle + suffix == label, (prefix, middle, suffix)
