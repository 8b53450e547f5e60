"""Typical and cheapest prices as derived state, how thin a price is, placeholder prices, file dates.

The rule (docs/prices-rules.md) is ``catalog.services.prices.derive.price_figures``; the stored
rows (``GpuPrice``) are what every page reads, written by the import and by curators' mappings.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import GpuPrice, Offer, PriceSnapshot, Provider
from catalog.selectors.prices import gpu_counts_rented, gpu_price_gaps, gpu_rent_prices
from catalog.services.prices import BUNDLED_PRICES_DIR, price_import_file
from catalog.services.prices.derive import (
    SAME_ROUND_PRICE_PLACEHOLDER,
    OfferFact,
    gpu_prices_derive,
    offer_facts,
    price_figures,
)
from tests.factories import GpuFactory, OfferFactory, ProviderFactory

pytestmark = pytest.mark.django_db

OCI = BUNDLED_PRICES_DIR / "skypilot-catalog" / "v8" / "oci" / "vms.csv"
WHEN = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def _fact(offer_id: int, provider: str, price: str, *, count: float = 1, kind: str = "cloud") -> OfferFact:
    return OfferFact(
        offer_id, 1, ord(provider), provider.title(), provider, kind, f"i{offer_id}", "r", count, False,
        "feed", WHEN, Decimal(price),
    )  # fmt: skip


def test_the_rule_takes_each_providers_cheapest_and_the_median_of_those_in_any_order():
    facts = [
        _fact(1, "a", "0.10"), _fact(2, "a", "3.00", count=8), _fact(3, "b", "1.90"),
        _fact(4, "c", "2.10", count=8), _fact(5, "c", "2.00"), _fact(6, "d", "2.40", count=8),
    ]  # fmt: skip
    expected = None
    for seed in range(20):
        random.Random(seed).shuffle(facts)
        figures = {(f.gpu_count, f.rule): f for r in ("typical", "cheapest") for f in price_figures(facts, rule=r)}
        summary = {
            key: (f.price, f.providers, f.offers, f.credited.provider_slug, f.between) for key, f in figures.items()
        }
        expected = expected or summary
        assert summary == expected
    # Any size: providers' cheapest 0.10, 1.90, 2.00, 2.40 -> the mean of B and C, credited to B.
    assert expected[(0, "typical")] == (Decimal("1.950000"), 4, 6, "b", ("B", "C"))
    assert expected[(0, "cheapest")][0] == Decimal("0.10")
    # 8-GPU machines only: 2.10 (C), 2.40 (D), 3.00 (A) -> D's, the middle one.
    assert expected[(8, "typical")] == (Decimal("2.40"), 3, 3, "d", ())


def test_prices_are_stored_on_import_read_with_one_query_and_the_repriced_gpus_are_returned(real_catalogue):
    summary = price_import_file(path=OCI, observed_at=WHEN)
    assert summary.ok
    mi300x = GpuPrice.objects.get(gpu__slug="radeon-instinct-mi300x", rule="typical", gpu_count=0)
    assert summary.gpus_repriced and mi300x.gpu_id in summary.gpus_repriced
    # BM.GPU.MI300X.8 at 48 USD an hour for 8 GPUs.
    assert mi300x.price_usd == Decimal("6") and mi300x.providers == 1 and mi300x.provider_name == "Oracle Cloud"
    with CaptureQueriesContext(connection) as queries:
        prices = gpu_rent_prices()
    assert len(queries) == 1
    assert prices[mi300x.gpu_id].price_usd == Decimal("6")
    # The same file again changes no stored price.
    assert price_import_file(path=OCI, observed_at=WHEN).gpus_repriced == []
    # Machines of 8 GPUs are a count of their own; the counts rented come from the same rows.
    assert gpu_rent_prices(gpu_count=8)[mi300x.gpu_id].price_usd == Decimal("6")
    assert gpu_counts_rented(gpu_ids=[mi300x.gpu_id]) == {mi300x.gpu_id: frozenset({8})}


def test_stored_prices_equal_the_rule_applied_to_the_current_offers(real_catalogue):
    price_import_file(path=OCI, observed_at=WHEN)
    price_import_file(path=BUNDLED_PRICES_DIR / "skypilot-catalog/v8/lambda/vms.csv", observed_at=WHEN)
    facts = offer_facts(Offer.objects.current().sku_level().priced())
    for rule in ("typical", "cheapest", "spot"):
        computed = {f.gpu_id: f.price for f in price_figures(facts, rule=rule) if f.gpu_count == 0}
        assert {g: p.price_usd for g, p in gpu_rent_prices(rule=rule).items()} == computed
    # A region filter applies the same rule to that region's offers.
    regional = gpu_rent_prices(region="us-east")
    assert regional and all(p.provenance.region.startswith("us-east") for p in regional.values())


def test_a_price_resting_on_one_marketplace_listing_is_not_a_typical_price(client):
    gpu = GpuFactory(name="GeForce RTX 5090", slug="geforce-rtx-5090", memory_gib=32)
    vast = ProviderFactory(slug="vast", name="Vast.ai", kind=Provider.Kind.MARKETPLACE)
    OfferFactory(gpu=gpu, provider=vast, current_price_per_hour=Decimal("0.43"))
    price = gpu_rent_prices()[gpu.id]
    assert price.single_listing and price.providers == 1
    page = client.get(f"/gpus/{gpu.slug}/").content.decode()
    assert "Price of its one listing" in page and "one marketplace listing, not a typical price" in page
    assert "Typical rental price" not in page
    # A second listing on the same marketplace: still one provider, no longer one listing.
    OfferFactory(gpu=gpu, provider=vast, current_price_per_hour=Decimal("0.50"))
    price = gpu_rent_prices()[gpu.id]
    assert not price.single_listing and price.thin


def test_the_gpu_page_credits_every_provider_behind_a_typical_price(client):
    gpu = GpuFactory(name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", family="H100", variant="SXM", memory_gib=80)
    for slug, name, price in (("verda", "Verda", "2.20"), ("hyperstack", "Hyperstack", "2.50"), ("x", "X", "9")):
        OfferFactory(gpu=gpu, provider=ProviderFactory(slug=slug, name=name), current_price_per_hour=Decimal(price))
    Offer.objects.filter(provider__slug="x").delete()
    gpu_prices_derive()
    price = gpu_rent_prices()[gpu.id]
    assert price.price_usd == Decimal("2.35") and price.typical_between == ("Verda", "Hyperstack")
    page = client.get(f"/gpus/{gpu.slug}/").content.decode()
    credits = page.split('id="price-credits"', 1)[1].split("</table>", 1)[0]
    assert "Verda" in credits and "Hyperstack" in credits and credits.count("sets the typical price") == 2
    assert "the mean of Verda and Hyperstack" in page


def test_one_providers_same_round_price_for_unrelated_gpus_below_the_market_is_a_placeholder(admin_client):
    h100 = GpuFactory(name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", family="H100", variant="SXM", memory_gib=80)
    h200 = GpuFactory(name="H200 SXM 141 GB", slug="h200-sxm-141-gb", family="H200", variant="SXM", memory_gib=141)
    for slug, h100_price, h200_price in (("a", "2.29", "3.39"), ("b", "2.49", "3.59"), ("c", "2.19", "3.29")):
        provider = ProviderFactory(slug=slug, name=slug.upper())
        OfferFactory(gpu=h100, provider=provider, current_price_per_hour=Decimal(h100_price))
        OfferFactory(gpu=h200, provider=provider, current_price_per_hour=Decimal(h200_price))
    cheap = ProviderFactory(slug="cheap", name="Cheap")
    OfferFactory(gpu=h100, provider=cheap, current_price_per_hour=Decimal("1.00"))
    OfferFactory(gpu=h200, provider=cheap, current_price_per_hour=Decimal("1.00"))
    # A price list at the same round figure above the market (Oracle's 10.00 for both) stays.
    dear = ProviderFactory(slug="dear", name="Dear")
    OfferFactory(gpu=h100, provider=dear, current_price_per_hour=Decimal("10.00"))
    OfferFactory(gpu=h200, provider=dear, current_price_per_hour=Decimal("10.00"))
    flagged = set(Offer.objects.placeholders().values_list("provider__slug", flat=True))
    assert flagged == {"cheap"}
    assert Offer.objects.placeholders().first().placeholder == SAME_ROUND_PRICE_PLACEHOLDER
    prices = gpu_rent_prices(rule="cheapest")
    assert prices[h100.id].price_usd == Decimal("2.19") and prices[h200.id].price_usd == Decimal("3.29")
    assert gpu_rent_prices()[h200.id].providers == 4  # a, b, c, dear; not cheap
    health = admin_client.get("/providers/health/").content.decode()
    assert "Placeholder prices (2)" in health and "Cheap" in health.split("Placeholder prices", 1)[1]


def test_oracles_identical_real_prices_for_h100_and_h200_are_not_placeholders(real_catalogue):
    # BM.GPU.H100.8 and BM.GPU.H200.8 are both 80 USD an hour for 8 GPUs in Oracle's catalogue.
    price_import_file(path=OCI, observed_at=WHEN)
    assert not Offer.objects.placeholders().exists()


def test_a_gpu_without_a_price_says_why(real_catalogue):
    price_import_file(path=OCI, observed_at=WHEN)
    gaps = gpu_price_gaps(
        gpu_ids=list(Offer.objects.filter(variant_ambiguous=True).values_list("gpu_id", flat=True).distinct())
    )
    # BM.GPU.RTXPRO.8: "RTXPRO6000" does not say the edition (Server or Workstation).
    assert any("do not say the form factor" in gap.text or "does not say" in gap.text for gap in gaps.values())
    unpriced = GpuFactory(slug="no-offers", name="No Offers")
    assert gpu_price_gaps(gpu_ids=[unpriced.id])[unpriced.id].text == (
        "no price: no offer in the imported price catalogues"
    )


def test_a_file_without_a_stated_date_is_dated_by_an_estimate_in_every_format(real_catalogue, tmp_path, client):
    path = tmp_path / "v8" / "oci" / "vms.csv"
    path.parent.mkdir(parents=True)
    path.write_bytes(OCI.read_bytes())
    copied = dt.datetime(2026, 10, 3, 12, tzinfo=dt.UTC)
    os.utime(path, (copied.timestamp(), copied.timestamp()))
    assert price_import_file(path=path).ok
    snapshot = PriceSnapshot.objects.get()
    assert snapshot.date_basis == PriceSnapshot.DateBasis.ESTIMATE and snapshot.observed_at == copied
    price = gpu_rent_prices()[GpuPrice.objects.filter(gpu__slug="gb200").first().gpu_id]
    assert price.provenance.date_is_estimate and price.provenance.age_days is None
    page = client.get("/gpus/gb200/").content.decode()
    assert "date unknown, file of 2026-10-03" in page and "d old" not in page


def test_a_curators_mapping_reprices_the_gpu(real_catalogue):
    from catalog.models import Gpu
    from catalog.services.prices.mapping import offer_gpu_map

    price_import_file(path=OCI, observed_at=WHEN)
    server = Gpu.objects.get(slug="rtx-pro-6000-blackwell-server")
    assert server.id not in gpu_rent_prices()
    offer_gpu_map(offers=Offer.objects.filter(gpu_name_raw="RTXPRO6000"), gpu=server, note="test")
    assert gpu_rent_prices()[server.id].price_usd == Decimal("4.5")  # 36 USD an hour for 8 GPUs
