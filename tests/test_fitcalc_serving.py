"""The fit calculator's serving answer (fitcalc.selectors.serving_plans, GET /api/v1/fit/serving/) on the
curated catalogue, with rental offers that are test inputs (prices and machine sizes)."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from benchmarks_app.services.moderation import submissions_approve
from catalog.models import Gpu
from fitcalc.selectors.serving_plans import serving_plans
from tests.factories import OfferFactory, ProviderFactory, UserFactory, document_ingest
from tests.world import LLM_WORLD, world_build

pytestmark = pytest.mark.django_db
# GPU slug -> (GPUs in the largest machine offered, price per GPU-hour)
OFFERED = {
    "h100-sxm5-80-gb": (8, "2.50"),
    "h200-sxm-141-gb": (8, "3.50"),
    "a100-sxm4-80-gb": (8, "1.50"),
    "h100-nvl-94-gb": (2, "2.20"),
}


@pytest.fixture
def offers():
    world_build(rows=LLM_WORLD)
    provider = ProviderFactory(slug="test-cloud", name="Test Cloud")
    for slug, (count, price) in OFFERED.items():
        gpu = Gpu.objects.get(slug=slug)
        for n in sorted({1, count}):
            OfferFactory(provider=provider, gpu=gpu, gpu_count=n, instance_type=f"{slug}-{n}x",
                         current_price_per_hour=Decimal(price) * n)  # fmt: skip


def test_the_recommendation_is_the_cheapest_per_million_tokens_and_counts_are_what_offers_rent(offers):
    plans = serving_plans(model="llama-3.1-70b", precisions=["fp8", "bf16"], target=20.0,
                          gpu_slugs=list(OFFERED))  # fmt: skip
    priced = [o for o in plans.options if o.cost_per_million is not None and o.rented]
    assert plans.recommended is not None
    assert plans.recommended.cost_per_million == min(o.cost_per_million for o in priced)
    # No configuration larger than the biggest machine an offer rents.
    for option in plans.options:
        assert option.count <= OFFERED[option.gpu_slug][0]
        assert option.count % option.tp == 0
    nvl = {o.count for o in plans.options if o.gpu_slug == "h100-nvl-94-gb"}
    assert nvl <= {1, 2}
    # The cost across counts of the recommended GPU and precision, every count it rents.
    assert [o.count for o in plans.across_counts] == sorted(o.count for o in plans.across_counts)
    assert all(o.gpu_slug == plans.recommended.gpu_slug for o in plans.across_counts)
    # Every estimate meets the target and says which all-reduce figure it used.
    for option in plans.options:
        assert option.basis == "estimated"
        assert option.tokens_per_s_per_user is not None and option.tokens_per_s_per_user >= 20.0 - 1e-6
        if option.tp > 1:
            assert option.allreduce_source.startswith(("datasheet", "measured"))


def test_fp8_plans_are_never_slower_than_bf16_on_8_h100_and_8_h200(offers):
    plans = serving_plans(model="llama-3.1-70b", precisions=["fp8", "bf16"], target=None,
                          gpu_slugs=["h100-sxm5-80-gb", "h200-sxm-141-gb"])  # fmt: skip
    by = {(o.gpu_slug, o.count, o.precision): o for o in plans.options}
    for slug in ("h100-sxm5-80-gb", "h200-sxm-141-gb"):
        fp8, bf16 = by[(slug, 8, "fp8")], by[(slug, 8, "bf16")]
        assert fp8.tokens_per_s >= bf16.tokens_per_s


def test_deepseek_v3_fp8_does_not_fit_on_8_gpus_of_80_gb(offers):
    plans = serving_plans(model="deepseek-r1", precisions=["fp8"], target=None, gpu_slugs=list(OFFERED))
    assert not [o for o in plans.options if o.gpu_slug in ("h100-sxm5-80-gb", "a100-sxm4-80-gb")]
    why = dict(plans.not_fitting)
    assert "does not fit on 8" in why["H100 SXM5 80 GB"] and "GiB" in why["H100 SXM5 80 GB"]
    assert plans.recommended is not None and plans.recommended.gpu_slug == "h200-sxm-141-gb"
    assert plans.recommended.count == 8


def test_fewest_gpus_option(offers):
    plans = serving_plans(model="llama-3.1-70b", precisions=["fp8"], target=20.0, fewest_gpus=True,
                          gpu_slugs=list(OFFERED))  # fmt: skip
    assert plans.recommended is not None and plans.recommended.count == 1


def test_api_answers_and_names_a_bad_parameter(offers, client):
    response = client.get("/api/v1/fit/serving/?model=llama-3.1-405b&precision=fp8&target=max")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["recommended"]["gpu_count"] == 8 and body["recommended"]["tensor_parallel"] == 8
    assert body["recommended"]["allreduce"].startswith("datasheet")
    bad = client.get("/api/v1/fit/serving/?model=llama-3.1-405b&precision=fp9")
    assert bad.status_code == 400 and "precision" in bad.json()["errors"]
    bad = client.get("/api/v1/fit/serving/?model=nonesuch")
    assert bad.status_code == 400 and "model" in bad.json()["errors"]
    bad = client.get("/api/v1/fit/serving/?model=llama-3.1-70b&target=-3")
    assert bad.status_code == 400 and "target" in bad.json()["errors"]


def test_a_repeated_serving_question_is_read_from_the_cache_and_typed_prices_are_part_of_it(  # type: ignore[no-untyped-def]
    offers, client, versioned_cache
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    url = "/api/v1/fit/serving/?model=llama-3.1-70b&precision=fp8&target=20"
    first = client.get(url)
    with CaptureQueriesContext(connection) as warm:
        again = client.get(url)
    # The bytes sent the first time, read back: no query, nothing serialised.
    assert again.status_code == 200 and again.content == first.content and len(warm.captured_queries) == 0
    assert again["Content-Type"] == first["Content-Type"] == "application/json"
    priced = client.get(url + "&gpu_price[h100-sxm5-80-gb]=0.01").json()
    assert priced["recommended"]["gpu"] == "h100-sxm5-80-gb" != first.json()["recommended"]["gpu"]
    # A bad parameter is refused every time, naming it, beside a cached answer.
    for _ in range(2):
        bad = client.get(url + "&input_len=0")
        assert bad.status_code == 400 and "input_len" in bad.json()["errors"]


def test_a_cached_serving_answer_is_computed_again_after_a_data_change(  # type: ignore[no-untyped-def]
    offers, client, versioned_cache, settings, django_capture_on_commit_callbacks
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from gpuatlas.data_version import data_version_bump

    settings.DATA_VERSION_DEBOUNCE_S = 0
    url = "/api/v1/fit/serving/?model=llama-3.1-70b&precision=fp8&target=20"
    first = client.get(url).json()
    cheap = Gpu.objects.get(slug=next(slug for slug in OFFERED if slug != first["recommended"]["gpu"]))
    with django_capture_on_commit_callbacks(execute=True):
        provider = ProviderFactory(slug="cheap-cloud", name="Cheap Cloud")
        for n in sorted({1, OFFERED[cheap.slug][0]}):
            OfferFactory(provider=provider, gpu=cheap, gpu_count=n, instance_type=f"cheap-{n}x",
                         current_price_per_hour=Decimal("0.01") * n)  # fmt: skip
        data_version_bump()
    with CaptureQueriesContext(connection) as computed:
        after = client.get(url).json()
    assert len(computed.captured_queries) > 0
    assert after["recommended"]["gpu"] == cheap.slug != first["recommended"]["gpu"]


def test_h200_two_gpu_plans_use_the_measured_all_reduce_of_the_real_run(client):
    """tests/fixtures/bench/h200x2_nvlink_multigpu.json: our client's all-reduce on two NVLink H200s."""
    world_build(rows=replace(LLM_WORLD, seed_workloads=True))
    run = json.loads((Path(__file__).parent / "fixtures" / "bench" / "h200x2_nvlink_multigpu.json").read_text())
    submission = document_ingest(run, submitter=UserFactory(username="h200-owner"))
    submissions_approve(submission_ids=[submission.pk], moderator=UserFactory(username="moderator", is_staff=True))
    provider = ProviderFactory(slug="test-cloud", name="Test Cloud")
    gpu = Gpu.objects.get(slug="h200-sxm-141-gb")
    for n in (1, 2, 4):
        OfferFactory(provider=provider, gpu=gpu, gpu_count=n, instance_type=f"h200-{n}x",
                     current_price_per_hour=Decimal("3.50") * n)  # fmt: skip
    plans = serving_plans(model="llama-3.1-405b", precisions=["fp8"], target=None, gpu_slugs=["h200-sxm-141-gb"])
    (four,) = [o for o in plans.options if o.count == 4]
    assert four.tp == 4 and four.allreduce_source.startswith("datasheet")
    plans = serving_plans(model="llama-3.1-70b", precisions=["bf16"], target=None, gpu_slugs=["h200-sxm-141-gb"])
    (two,) = [o for o in plans.options if o.count == 2]
    assert two.tp == 2 and two.allreduce_source.startswith("measured") and "H200" in two.allreduce_source
