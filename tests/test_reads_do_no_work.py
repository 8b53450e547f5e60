"""A read only reads: no page or API GET fits the LLM throughput model or calls the Hugging Face Hub.

Fitting (scipy's least squares, seconds) happens when the data it rests on changes, and a model's
config.json is fetched when someone imports it (POST); a GET answers from what those writes
stored. Here every name the project binds to the fitters or to ``hf_hub_download`` is replaced by
a tripwire, the demo data is loaded (as ``make run`` does), and every page and main API read is
requested: each must answer (200, or a 4xx that says what is missing) without touching a tripwire.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import huggingface_hub
import huggingface_hub.file_download
import pytest
import scipy.optimize
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

import llm.services.serving_fit
import llm.serving.fit
import llm.serving.single_stream
from catalog.models import Gpu
from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import rankings_compute
from fitcalc.models import HfModel
from fitcalc.presets import PRESETS_FILE

pytestmark = pytest.mark.django_db

#: The project's packages: every module of theirs that holds one of the work functions under any
#: name gets the tripwire under that name.
PROJECT_PACKAGES = (
    "accounts",
    "api",
    "benchmarks_app",
    "catalog",
    "dashboard",
    "fitcalc",
    "gpuatlas",
    "llm",
    "watches",
)
IMPORTED_HF_ID = "Qwen/Qwen3-8B"
NOT_IMPORTED_HF_ID = "someone/not-imported"


def _work_functions() -> dict[str, Callable[..., Any]]:
    """The functions a read must never call, by the name the report gives them."""
    return {
        "huggingface_hub.hf_hub_download": huggingface_hub.hf_hub_download,
        "huggingface_hub.file_download.get_hf_file_metadata": huggingface_hub.file_download.get_hf_file_metadata,
        "llm.serving.fit.constants_fit": llm.serving.fit.constants_fit,
        "llm.serving.fit.serving_fit_build": llm.serving.fit.serving_fit_build,
        "llm.serving.single_stream.stream_fit": llm.serving.single_stream.stream_fit,
        "scipy.optimize.least_squares": scipy.optimize.least_squares,
        "llm.services.serving_fit.serving_model_refit": llm.services.serving_fit.serving_model_refit,
    }


@pytest.fixture
def imported_model(demo) -> HfModel:  # type: ignore[no-untyped-def]
    """A Hugging Face model as an import stores it (written directly: the import is not under test)."""
    entries = json.loads(PRESETS_FILE.read_text(encoding="utf-8"))["presets"]
    config = next(entry["config"] for entry in entries if entry["slug"] == "qwen3-8b")
    return HfModel.objects.create(
        repo_id=IMPORTED_HF_ID,
        config=config,
        source_url=f"https://huggingface.co/{IMPORTED_HF_ID}/blob/main/config.json",
        revision="",
        fetched_at=timezone.now(),
    )


@pytest.fixture
def tripwires(monkeypatch: pytest.MonkeyPatch, settings) -> Iterator[list[str]]:  # type: ignore[no-untyped-def]
    """Online, as a deployment that imports models is (so a read could reach the Hub): every binding of a work function in huggingface_hub, scipy.optimize and the project's loaded
    modules replaced by one that records its name and raises; yields the names called."""
    settings.FITCALC_HF_ONLINE = True
    called: list[str] = []
    targets = {id(function): name for name, function in _work_functions().items()}

    def tripwire(name: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            called.append(name)
            raise AssertionError(f"{name} was called while answering a read")

        return refuse

    modules = [huggingface_hub, huggingface_hub.file_download, scipy.optimize] + [
        module
        for module_name, module in list(sys.modules.items())
        if module is not None and module_name.split(".")[0] in PROJECT_PACKAGES
    ]
    for module in modules:
        for attribute, value in list(vars(module).items()):
            name = targets.get(id(value))
            if name is not None:
                monkeypatch.setattr(module, attribute, tripwire(name))
    yield called


def _pages(gpu_slugs: list[str]) -> list[str]:
    pages = [reverse("dashboard:rankings")]
    for use_case in USE_CASES:
        pages += [
            f"{reverse('dashboard:rankings')}?use_case={use_case}",
            f"{reverse('dashboard:tiers')}?use_case={use_case}",
        ]
    pages += [
        reverse("dashboard:tiers"),
        reverse("dashboard:compare") + "?gpus=" + ",".join(gpu_slugs[:3]),
        reverse("dashboard:architectures"),
        reverse("dashboard:open-data"),
        reverse("dashboard:llm-model"),
        reverse("catalog:gpu-list"),
        reverse("catalog:provider-list"),
        reverse("fitcalc:fit"),
        reverse("fitcalc:fit") + "?model=llama-3.1-8b&mode=inference",
        reverse("fitcalc:fit") + "?model=llama-3.1-70b&mode=inference&serving=single",
        reverse("fitcalc:fit") + "?model=llama-3-8b&mode=full_finetune&tokens=1e8",
        reverse("fitcalc:fit") + f"?hf_model={IMPORTED_HF_ID}",
        reverse("fitcalc:fit") + f"?hf_model={NOT_IMPORTED_HF_ID}",
    ]
    pages += [reverse("dashboard:gpu-detail", args=[slug]) for slug in gpu_slugs]
    return pages


def _api_reads(gpu_slugs: list[str]) -> list[str]:
    reads = [f"/api/v1/rankings/?use_case={use_case}" for use_case in USE_CASES]
    reads += [f"/api/v1/tiers/?use_case={use_case}" for use_case in USE_CASES]
    reads += [
        "/api/v1/serving-points/",
        "/api/v1/fit/?model=llama-3.1-8b",
        "/api/v1/fit/?model=llama-3-8b&mode=lora&tokens=1e8",
        f"/api/v1/fit/?hf_model={IMPORTED_HF_ID}",
        f"/api/v1/fit/?hf_model={NOT_IMPORTED_HF_ID}",
        "/api/v1/fit/serving/?model=llama-3.1-70b",
        "/api/v1/fit/serving/?model=llama-3.1-8b&target=max",
        "/api/v1/fit/models/",
        "/api/v1/gpus/",
        "/api/v1/offers/",
        "/api/v1/prices/",
    ]
    reads += [f"/api/v1/gpus/{slug}/" for slug in gpu_slugs]
    reads += [f"/api/v1/gpus/{slug}/multi-gpu/" for slug in gpu_slugs[:2]]
    return reads


def _gpu_slugs() -> list[str]:
    """A few GPUs with LLM figures and a few without: the H100 and its peers, then the first others."""
    slugs = list(Gpu.objects.curated().order_by("slug").values_list("slug", flat=True))
    wanted = [slug for slug in slugs if slug.startswith(("h100-sxm", "a100-sxm", "l40s"))][:3]
    return wanted + [slug for slug in slugs if slug not in wanted][:3]


def test_no_page_read_fits_or_calls_the_hub(client, demo, imported_model, tripwires: list[str]) -> None:  # type: ignore[no-untyped-def]
    answered = {}
    for url in _pages(_gpu_slugs()):
        answered[url] = client.get(url).status_code
    assert tripwires == [], f"work done on a read: {tripwires}"
    assert all(status == 200 for status in answered.values()), answered


def test_no_api_read_fits_or_calls_the_hub(client, demo, imported_model, tripwires: list[str]) -> None:  # type: ignore[no-untyped-def]
    answered = {}
    for url in _api_reads(_gpu_slugs()):
        answered[url] = client.get(url).status_code
    assert tripwires == [], f"work done on a read: {tripwires}"
    refused = {url: status for url, status in answered.items() if status != 200}
    # The one read expected to refuse: an id nobody imported, a 400 naming hf_model.
    assert refused == {f"/api/v1/fit/?hf_model={NOT_IMPORTED_HF_ID}": 400}, answered
    body = client.get(f"/api/v1/fit/?hf_model={NOT_IMPORTED_HF_ID}").json()
    assert "hf_model" in body["errors"] and "POST /api/v1/fit/models/" in body["errors"]["hf_model"][0]


def test_the_tripwires_catch_a_call(tripwires: list[str]) -> None:
    """The tripwires are live: calling a work function by the name the project imports fails."""
    with pytest.raises(AssertionError):
        llm.services.serving_fit.serving_model_refit()
    with pytest.raises(AssertionError):
        huggingface_hub.hf_hub_download(repo_id="a/b", filename="config.json")
    assert tripwires == ["llm.services.serving_fit.serving_model_refit", "huggingface_hub.hf_hub_download"]


def test_the_demo_rankings_read_stored_submitter_counts(demo) -> None:  # type: ignore[no-untyped-def]
    # load_demo stores the rankings' submitter counts (the embedded default has no data-version
    # bump to ask for them): a ranking of the demo counts no submitter over the results on read.
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        ranking = rankings_compute(params=RankingParams(use_case="inference-16bit", show="all"))
    assert [row for row in ranking.rows if row.distinct_submitters]
    assert not [q["sql"] for q in queries if "COUNT(DISTINCT" in q["sql"].upper()]
