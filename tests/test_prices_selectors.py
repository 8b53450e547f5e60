"""Price selectors (cheapest, median, offers of a GPU, history, freshness) and the /providers/ page."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.selectors_prices import (
    cheapest_price_per_gpu,
    offers_for_gpu,
    price_freshness,
    price_history_for_gpu,
    price_summary_per_gpu,
    providers_with_stats,
)
from tests.factories import GpuFactory, OfferFactory, PriceObservationFactory, ProviderFactory

pytestmark = pytest.mark.django_db


def offer(gpu, price, **kwargs):
    return OfferFactory(gpu=gpu, current_price_per_hour=Decimal(price), **kwargs)


@pytest.fixture
def market():
    h100 = GpuFactory(name="H100 SXM5 80 GB")
    l4 = GpuFactory(name="L4", memory_gib=24)
    lam = ProviderFactory(slug="lambda", name="Lambda")
    run = ProviderFactory(slug="runpod", name="RunPod")
    offer(h100, "2.49", provider=lam, region="us-east-1")
    offer(h100, "3.00", provider=run, region="us-east-1")
    offer(h100, "16.00", provider=run, region="eu-west-1", gpu_count=8)  # 2.00 per GPU
    offer(h100, "1.20", provider=run, region="eu-west-1", is_spot=True)
    offer(h100, "0.50", provider=lam, available=False)  # left the newest snapshot
    offer(h100, "0.40", provider=lam, price_separable=False)  # host VM only
    offer(None, "0.10", provider=lam, gpu_name_raw="RTX5090")  # unmatched
    offer(l4, "0.80", provider=lam)
    return h100, l4


def test_cheapest_and_median_use_only_current_separable_offers(market):
    h100, l4 = market
    assert cheapest_price_per_gpu() == {h100.id: Decimal("2.00"), l4.id: Decimal("0.80")}
    assert cheapest_price_per_gpu(spot=True) == {h100.id: Decimal("1.20")}
    assert cheapest_price_per_gpu(provider="lambda") == {h100.id: Decimal("2.49"), l4.id: Decimal("0.80")}
    assert cheapest_price_per_gpu(region="eu-west-1") == {h100.id: Decimal("2.00")}
    summary = price_summary_per_gpu()
    assert summary[h100.id] == {"cheapest": Decimal("2.00"), "median": Decimal("2.49"), "offers": 3, "providers": 2}
    assert price_summary_per_gpu(gpu_ids=[l4.id]).keys() == {l4.id}


def test_cheapest_is_one_query(market):
    with CaptureQueriesContext(connection) as queries:
        cheapest_price_per_gpu()
    assert len(queries) == 1
    sql = queries[0]["sql"].lower()
    assert "catalog_priceobservation" not in sql and "min(" in sql


def test_offers_for_gpu_rows_for_the_table(market):
    h100, _ = market
    rows = offers_for_gpu(gpu=h100)
    assert [r["price_per_gpu_hour"] for r in rows] == [
        Decimal("1.20"),
        Decimal("2.00"),
        Decimal("2.49"),
        Decimal("3.00"),
    ]
    eight = rows[1]
    assert eight["gpu_count"] == 8 and eight["vcpus_per_gpu"] == 1 and eight["provider"] == "RunPod"
    assert eight["original_price_per_hour"] == Decimal("16.00") and eight["currency"] == "USD"
    assert [r["is_spot"] for r in offers_for_gpu(gpu=h100, spot=True)] == [True]
    with_unpriced = offers_for_gpu(gpu=h100, spot=False, include_unpriced=True)
    host = [r for r in with_unpriced if not r["price_separable"]]
    assert len(host) == 1 and host[0]["price_per_gpu_hour"] is None


def test_price_history_series(market):
    h100, _ = market
    listing = offer(h100, "2.00", provider=ProviderFactory(slug="nebius"))
    old = timezone.now() - dt.timedelta(days=40)
    PriceObservationFactory(offer=listing, observed_at=old, price_per_gpu_hour_usd=Decimal("2.50"))
    PriceObservationFactory(offer=listing, observed_at=timezone.now(), price_per_gpu_hour_usd=Decimal("2.00"))
    series = price_history_for_gpu(gpu=h100)
    assert [p["price_per_gpu_hour_usd"] for p in series] == [Decimal("2.50"), Decimal("2.00")]
    assert series[0]["provider_slug"] == "nebius" and series[0]["observed_at"] == old
    assert len(price_history_for_gpu(gpu=h100, days=30)) == 1
    assert price_history_for_gpu(gpu=h100.id, spot=True) == []


def test_freshness_and_provider_stats(market):
    h100, _ = market
    listing = offer(h100, "2.00", provider=ProviderFactory(slug="nebius", name="Nebius"))
    seen = timezone.now() - dt.timedelta(hours=5)
    PriceObservationFactory(offer=listing, observed_at=seen)
    fresh = price_freshness(gpu=h100)
    assert fresh["newest_observation"] == seen and 4.9 < fresh["age_hours"] < 5.1
    assert price_freshness(provider="lambda")["newest_observation"] is None
    stats = {p["slug"]: p for p in providers_with_stats()}
    assert stats["lambda"]["offer_count"] == 5
    assert stats["lambda"]["available_count"] == 4
    assert stats["lambda"]["priced_count"] == 2
    assert stats["lambda"]["unmatched_count"] == 1


def test_provider_page_lists_counts_and_escapes_names(client, market):
    ProviderFactory(slug="evil", name="<script>alert(1)</script>")
    response = client.get("/providers/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Lambda" in body and "RunPod" in body
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body
