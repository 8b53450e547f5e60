"""rankings/ and tiers/ serve the same data as the pages / and /tiers/ for the same filters."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.world import DASHBOARD_WORLD, world_build

pytestmark = pytest.mark.django_db

QUERIES = [
    "",
    "use_case=inference-8bit",
    "use_case=training&precision=32bit&sort=perf",
    "mode=buy&condition=new",
    "price=spot",
    "price=median&provider=other-cloud",
    "vendor=nvidia&segment=consumer&min_vram=16",
    "basis=measured",
    "region=eu-west",
    "baseline=h100-sxm5-80-gb&sort=perf_per_kw",
]


def _page_rows(ranking) -> list[dict]:  # type: ignore[no-untyped-def]
    return [
        {
            "gpu": row.gpu_slug,
            "rank": row.rank,
            "perf": row.perf,
            "perf_basis": row.perf_basis,
            "n": row.n,
            "price": row.price.amount,
            "perf_per_dollar": row.perf_per_dollar,
            "perf_per_kw": row.perf_per_kw,
            "tier": row.tier,
        }
        for row in ranking.rows
    ]


def _api_rows(rows: list[dict]) -> list[dict]:
    keys = ("gpu", "rank", "perf", "perf_basis", "n", "price", "perf_per_dollar", "perf_per_kw", "tier")
    return [{key: row[key] for key in keys} for row in rows]


@pytest.mark.parametrize("query", QUERIES)
def test_rankings_api_matches_the_rankings_page(client, query):  # type: ignore[no-untyped-def]
    cache.clear()
    world_build(rows=DASHBOARD_WORLD)
    page = client.get(f"/?{query}")
    assert page.status_code == 200
    api = client.get(f"/api/v1/rankings/?{query}")
    assert api.status_code == 200, api.content[:300]
    body = api.json()
    page_rows = _page_rows(page.context["ranking"])
    assert page_rows, "the world should rank something for every query"
    assert _api_rows(body["results"]) == page_rows
    assert body["baseline"]["gpu"] == page.context["ranking"].baseline_slug
    assert body["currency"] == page.context["ranking"].currency


def test_measured_rows_carry_n_and_estimates_do_not(client):  # type: ignore[no-untyped-def]
    cache.clear()
    world_build(rows=DASHBOARD_WORLD)
    rows = client.get("/api/v1/rankings/?show=all").json()["results"]
    measured = [row for row in rows if row["measured"]]
    estimated = [row for row in rows if not row["measured"]]
    assert measured and estimated
    assert all(row["n"] >= 1 and row["perf_measured"] == row["perf"] for row in measured)
    assert all(row["n"] == 0 and row["perf_estimated"] == row["perf"] for row in estimated)


@pytest.mark.parametrize("query", ["", "use_case=inference-16bit", "mode=buy"])
def test_tiers_api_matches_the_tiers_page(client, query):  # type: ignore[no-untyped-def]
    cache.clear()
    world_build(rows=DASHBOARD_WORLD)
    page = client.get(f"/tiers/?{query}")
    assert page.status_code == 200
    body = client.get(f"/api/v1/tiers/?{query}").json()
    tier_list = page.context["tier_list"]
    assert {t["tier"]: [row["gpu"] for row in t["results"]] for t in body["tiers"]} == {
        name: [row.gpu_slug for row in rows] for name, rows in tier_list.tiers.items()
    }
    assert [row["gpu"] for row in body["below_floor"]] == [row.gpu_slug for row in tier_list.below_floor]
    assert [row["gpu"] for row in body["without_price"]] == [row.gpu_slug for row in tier_list.without_price]
    assert body["memory_floor_gib"] == tier_list.memory_floor_gib


def test_hostile_names_come_back_verbatim_as_json_data(client):  # type: ignore[no-untyped-def]
    cache.clear()
    world = world_build(rows=DASHBOARD_WORLD)
    rows = client.get("/api/v1/rankings/?show=all").json()["results"]
    assert world.gpus["hostile"].name in {row["gpu_name"] for row in rows}
