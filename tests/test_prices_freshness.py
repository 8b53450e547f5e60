"""Freshness: only offers within the window of the newest price data are current; "prices as of"
once the newest data is itself old; the demo's top-10 rows use current, on-demand, SKU-level prices."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from catalog.models import Offer, PriceSnapshot, Provider
from catalog.selectors.prices import gpu_rent_prices, price_status
from catalog.services.prices.derive import gpu_prices_derive
from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.rankings import rankings_compute
from tests.factories import GpuFactory, OfferFactory, ProviderFactory

pytestmark = pytest.mark.django_db


def test_a_stale_source_never_sets_a_price_beside_fresh_ones(settings):
    settings.PRICE_FRESHNESS_DAYS = 14
    gpu = GpuFactory(name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", family="H100", variant="SXM", memory_gib=80)
    now = timezone.now()
    fresh = ProviderFactory(slug="fresh", name="Fresh")
    old = ProviderFactory(slug="old", name="Old")
    OfferFactory(gpu=gpu, provider=fresh, current_price_per_hour=Decimal("2.50"), last_seen=now)
    # Last seen 20 days before the newest data: stale, although still "available" in its own feed.
    OfferFactory(gpu=gpu, provider=old, current_price_per_hour=Decimal("0.69"), last_seen=now - dt.timedelta(days=20))
    prices = gpu_rent_prices(rule="cheapest")
    assert prices[gpu.id].price_usd == Decimal("2.50") and prices[gpu.id].provenance.provider == "Fresh"
    assert Offer.objects.listed().count() == 2 and Offer.objects.current().count() == 1
    settings.PRICE_FRESHNESS_DAYS = 30
    gpu_prices_derive()  # a wider window is a new rule for the stored prices: derived again
    assert gpu_rent_prices(rule="cheapest")[gpu.id].price_usd == Decimal("0.69")


def test_typical_is_the_median_of_provider_minimums_and_one_listing_cannot_set_it():
    gpu = GpuFactory(name="L40S", slug="l40s", memory_gib=48)
    for slug, prices in (("a", ["0.10", "3.00"]), ("b", ["1.90"]), ("c", ["2.10", "2.00"]), ("d", ["2.40"])):
        provider = ProviderFactory(slug=slug, name=slug.upper())
        for price in prices:
            OfferFactory(gpu=gpu, provider=provider, current_price_per_hour=Decimal(price))
    OfferFactory(gpu=gpu, provider=ProviderFactory(slug="e"), current_price_per_hour=Decimal("0.05"), is_spot=True)
    typical = gpu_rent_prices()[gpu.id]
    # Providers' cheapest: 0.10, 1.90, 2.00, 2.40 -> the mean of the middle two, 1.95 (B and C);
    # the 0.10 listing cannot set it, and the price is inside the providers' range, not its top.
    assert (typical.price_usd, typical.provenance.provider_slug) == (Decimal("1.95"), "b")
    assert typical.typical_between == ("B", "C")
    ProviderFactory(slug="f", name="F")
    OfferFactory(gpu=gpu, provider=Provider.objects.get(slug="f"), current_price_per_hour=Decimal("9.00"))
    odd = gpu_rent_prices()[gpu.id]  # 0.10, 1.90, 2.00, 2.40, 9.00: the middle one, provider C
    assert (odd.price_usd, odd.provenance.provider_slug, odd.typical_between) == (Decimal("2.00"), "c", ())
    Offer.objects.filter(provider__slug="f").delete()
    gpu_prices_derive()  # offers removed behind the writer's back: derived again
    typical = gpu_rent_prices()[gpu.id]
    assert (typical.minimum_usd, typical.maximum_usd, typical.providers, typical.offers) == (
        Decimal("0.10"),
        Decimal("2.40"),
        4,
        6,
    )
    assert gpu_rent_prices(rule="cheapest")[gpu.id].price_usd == Decimal("0.10")
    assert gpu_rent_prices(rule="spot")[gpu.id].price_usd == Decimal("0.05")
    assert gpu_rent_prices(rule="median")[gpu.id].rule == "typical"
    with pytest.raises(ValueError, match="unknown price rule"):
        gpu_rent_prices(rule="lowest")


def snapshot_of(offer: Offer, basis: str) -> None:
    PriceSnapshot.objects.create(
        feed=offer.source, provider=offer.provider, observed_at=offer.last_seen, date_basis=basis, offers=1
    )


def test_pages_say_prices_as_of_a_date_once_the_newest_data_is_old(client, settings):
    settings.PRICE_FRESHNESS_DAYS = 14
    gpu = GpuFactory(slug="l4", name="L4")
    seen = timezone.now() - dt.timedelta(days=30)
    snapshot_of(OfferFactory(gpu=gpu, last_seen=seen), PriceSnapshot.DateBasis.FETCHED)
    status = price_status()
    assert not status.live and status.as_of == seen.date()
    footer = client.get("/providers/").content.decode()
    assert f"rental prices as of {seen:%Y-%m-%d}" in footer and "live rental prices" not in footer
    # Recent data whose date is only an estimate (a bundled snapshot) is not live either.
    recent = OfferFactory(gpu=gpu, last_seen=timezone.now() - dt.timedelta(days=2))
    snapshot_of(recent, PriceSnapshot.DateBasis.ESTIMATE)
    assert not price_status().live and price_status().as_of == recent.last_seen.date()
    snapshot_of(OfferFactory(gpu=gpu, last_seen=timezone.now()), PriceSnapshot.DateBasis.FETCHED)
    assert price_status().live
    assert "live rental prices" in client.get("/providers/").content.decode()


def test_demo_top_ten_rows_use_current_on_demand_sku_level_prices_with_provider_and_date(demo, client, settings):
    newest = Offer.objects.order_by("-last_seen").values_list("last_seen", flat=True).first()
    window = dt.timedelta(days=settings.PRICE_FRESHNESS_DAYS)
    for use_case in USE_CASES:
        ranking = rankings_compute(params=RankingParams(use_case=use_case))
        top = [row for row in ranking.rows if row.rank][:10]
        assert len(top) == 10, use_case
        for row in top:
            prices = gpu_rent_prices(gpu_ids=[row.gpu_id])[row.gpu_id]
            chosen = Offer.objects.get(pk=prices.provenance.offer_id)
            assert not chosen.is_spot and not chosen.variant_ambiguous and chosen.available
            assert chosen.last_seen >= newest - window
            assert row.price.provider == chosen.provider.name and row.price.observed_at == chosen.last_seen
            snapshot = PriceSnapshot.objects.get(
                feed=chosen.source, provider=chosen.provider, observed_at=chosen.last_seen
            )
            assert row.price.date_estimated == (snapshot.date_basis == PriceSnapshot.DateBasis.ESTIMATE)
        page = client.get("/", {"use_case": use_case}).content.decode()
        for row in top:
            date = f"{row.price.observed_at:%Y-%m-%d}"
            shown = f"date unknown, file of {date}" if row.price.date_estimated else date
            # A mean of two middle providers names both (the cheaper one's date).
            credit = f"mean of {' and '.join(row.price.between)}" if row.price.between else row.price.provider
            assert f"{credit} · {shown}" in page
