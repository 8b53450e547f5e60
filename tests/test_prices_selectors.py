"""Price selectors (cheapest, median, offers of a GPU, history, freshness) and the /providers/ page."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.models import Offer
from catalog.money import display_money
from catalog.selectors.prices import (
    ALL_ON_DEMAND,
    ALL_SPOT,
    PRICE_HISTORY_PROVIDER_SERIES,
    gpu_offers,
    gpu_price_history,
    gpu_rent_prices,
)
from catalog.selectors.providers import providers_with_stats
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


def _prices(**kwargs):  # type: ignore[no-untyped-def]
    return {gpu_id: price.price_usd for gpu_id, price in gpu_rent_prices(**kwargs).items()}


def test_cheapest_and_typical_use_only_current_separable_offers(market):
    h100, l4 = market
    assert _prices(rule="cheapest") == {h100.id: Decimal("2.00"), l4.id: Decimal("0.80")}
    assert _prices(rule="spot") == {h100.id: Decimal("1.20")}
    assert _prices(rule="cheapest", provider="lambda") == {h100.id: Decimal("2.49"), l4.id: Decimal("0.80")}
    assert _prices(rule="cheapest", region="eu-west-1") == {h100.id: Decimal("2.00")}
    # Typical: the median of each provider's cheapest offer, RunPod 2.00 and Lambda 2.49: their mean.
    h100_price = gpu_rent_prices()[h100.id]
    assert (h100_price.price_usd, h100_price.minimum_usd, h100_price.maximum_usd) == (
        Decimal("2.245"), Decimal("2.00"), Decimal("2.49"),
    )  # fmt: skip
    assert (h100_price.offers, h100_price.providers, h100_price.provenance.provider) == (3, 2, "RunPod")
    assert h100_price.typical_between == ("RunPod", "Lambda") and not h100_price.one_provider
    assert gpu_rent_prices(gpu_ids=[l4.id]).keys() == {l4.id}


def test_the_price_read_is_a_fixed_number_of_queries_without_the_history(market):
    with CaptureQueriesContext(connection) as queries:
        gpu_rent_prices()
    assert len(queries) <= 3
    assert all("catalog_priceobservation" not in q["sql"].lower() for q in queries)


def test_gpu_offers_rows_for_the_table(market):
    h100, _ = market
    usd = display_money(currency="USD")
    rows, total = gpu_offers(gpu=h100, money=usd)
    # Listed, separable offers only (not the one that left the snapshot, nor the host VM), cheapest first.
    assert [r.price_per_gpu_hour for r in rows] == [1.20, 2.00, 2.49, 3.00] and total == 4
    eight = rows[1]
    assert eight.gpu_count == 8 and eight.vcpus_per_gpu == 1 and eight.provider == "RunPod"
    assert [r.is_spot for r in rows] == [True, False, False, False]
    first, total = gpu_offers(gpu=h100, money=usd, limit=1)
    assert [r.price_per_gpu_hour for r in first] == [1.20] and total == 4


def test_price_history_series(market):
    h100, _ = market
    listing = offer(h100, "2.00", provider=ProviderFactory(slug="nebius", name="Nebius"))
    old = timezone.now() - dt.timedelta(days=40)
    PriceObservationFactory(offer=listing, observed_at=old, price_per_gpu_hour_usd=Decimal("2.50"))
    PriceObservationFactory(offer=listing, observed_at=timezone.now(), price_per_gpu_hour_usd=Decimal("2.00"))
    spot = offer(h100, "1.00", provider=ProviderFactory(slug="vast", name="Vast"), is_spot=True)
    PriceObservationFactory(offer=spot, observed_at=old, price_per_gpu_hour_usd=Decimal("1.00"))
    series = gpu_price_history(gpu=h100, money=display_money(currency="USD")).series
    # The lowest price per day: over all providers (on-demand, then spot), then one series per provider.
    assert list(series) == [ALL_ON_DEMAND, ALL_SPOT, "Nebius", "Vast · spot"]
    assert series["Nebius"] == [(old.date(), 2.50), (timezone.now().date(), 2.00)]
    assert series[ALL_ON_DEMAND] == series["Nebius"] and series[ALL_SPOT] == [(old.date(), 1.00)]


def test_price_history_draws_the_providers_cheapest_on_their_latest_day(client):
    """Past the cap, a provider's series is drawn when it is among the cheapest of its kind
    (on-demand, spot) on its own latest day; the overall lows still count every provider, and the
    page says how many series were left out and where their observations are."""
    gpu = GpuFactory(name="A100 SXM4 80 GB")
    today = timezone.now()
    old = today - dt.timedelta(days=30)
    cap = PRICE_HISTORY_PROVIDER_SERIES
    for i in range(cap + 2):
        provider = ProviderFactory(slug=f"p{i:02d}", name=f"P{i:02d}")
        for spot, price in ((False, Decimal(f"{2 + i / 10:.2f}")), (True, Decimal(f"{1 + i / 10:.2f}"))):
            listing = offer(gpu, str(price), provider=provider, is_spot=spot)
            PriceObservationFactory(offer=listing, observed_at=today, price_per_gpu_hour_usd=price)
    # The dearest today was the cheapest a month ago: its old low is in the overall series, not its own line.
    dearest = Offer.objects.get(provider__slug=f"p{cap + 1:02d}", is_spot=False)
    PriceObservationFactory(offer=dearest, observed_at=old, price_per_gpu_hour_usd=Decimal("1.00"))
    usd = display_money(currency="USD")

    history = gpu_price_history(gpu=gpu, money=usd)
    providers = [name for name in history.series if name not in (ALL_ON_DEMAND, ALL_SPOT)]
    kept = [f"P{i:02d}" for i in range(cap)]
    assert providers == [name for name in kept for name in (name, f"{name} · spot")]
    assert history.series_left_out == 4
    assert dict(history.series[ALL_ON_DEMAND])[old.date()] == 1.00
    assert len(gpu_price_history(gpu=gpu, money=usd, provider_series=None).series) == 2 * (cap + 2) + 2

    page = client.get(f"/gpus/{gpu.slug}/").content.decode()
    note = page.split('id="price-history-left-out"')[1].split("</p>")[0]
    assert "4 more provider series are in" in note and f'href="/api/v1/prices/?gpu={gpu.slug}"' in note
    figure = page.split('id="fig-history"')[1].replace(" ", "")
    assert f'"name":"P{cap - 1:02d}"' in figure and f'"name":"P{cap:02d}"' not in figure


def test_freshness_and_provider_stats(market):
    h100, _ = market
    listing = offer(h100, "2.00", provider=ProviderFactory(slug="nebius", name="Nebius"))
    seen = timezone.now() - dt.timedelta(hours=5)
    PriceObservationFactory(offer=listing, observed_at=seen)
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
