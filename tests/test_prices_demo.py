"""The demo data (the bundled price snapshot): how much of the market ranks, typical prices a buyer
recognises, and dates that do not mislead on every page that shows a price."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from catalog.models import Gpu, Offer
from catalog.selectors.price_health import price_coverage
from catalog.selectors.prices import gpu_rent_prices, price_status
from catalog.services.catalog_import import catalog_import
from catalog.services.prices import BUNDLED_PRICES_DIR, prices_import_directory

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo_prices():
    catalog_import()
    assert all(s.ok for s in prices_import_directory(path=BUNDLED_PRICES_DIR))


def test_demo_market_ranks_and_typical_prices_sit_inside_the_providers_range(demo_prices, admin_client):
    coverage = price_coverage()
    # Before the documented instance families: 251 of 1,117 current offers (22.5 %) were ambiguous.
    assert coverage.current > 1000 and coverage.ambiguous_share <= 0.15, coverage
    # RunPod's A100-80GB rows are its PCIe card, in every region.
    runpod = Offer.objects.current().filter(provider__slug="runpod", gpu_name_raw="A100-80GB")
    assert runpod.count() > 100
    assert set(runpod.values_list("gpu__slug", "variant_ambiguous")) == {("a100-pcie-80-gb", False)}
    gpus = dict(Gpu.objects.filter(slug__in=["a100-sxm4-80-gb", "h100-pcie-80-gb"]).values_list("slug", "pk"))
    prices = gpu_rent_prices(gpu_ids=gpus.values())
    for slug, pk in gpus.items():
        price = prices[pk]
        assert price.providers >= 2, slug
        assert price.minimum_usd <= price.typical_usd < price.maximum_usd, (slug, price)
    out = io.StringIO()
    call_command("price_coverage", stdout=out)
    assert f"{coverage.ambiguous} ({coverage.ambiguous_share:.1%})" in out.getvalue()


def test_no_page_shows_an_age_for_an_estimated_date_and_the_freshness_sentences_agree(
    demo_prices, admin_client, client
):
    status = price_status()
    # Every current bundled price is dated by the copy of its SkyPilot file: an estimate.
    assert status.newest_is_estimate and not status.live
    estimated = f"date unknown, file of {status.as_of:%Y-%m-%d}"
    sentence = f"Date unknown: the newest prices come from files of {status.as_of:%Y-%m-%d}"
    providers = client.get("/providers/").content.decode()
    health = admin_client.get("/providers/health/").content.decode()
    assert sentence in providers and sentence in health
    assert f"The newest price with a known date is from {status.newest_dated:%Y-%m-%d}" in providers
    assert "Newest price observation" not in providers and " days ago" not in providers
    # RunPod's newest snapshot is the bundled SkyPilot file: no age beside its date.
    runpod = providers.split(">RunPod</a>", 1)[1].split("</tr>", 1)[0]
    assert "date unknown, file of" in runpod and "days old" not in runpod
    h100 = Gpu.objects.get(slug="h100-sxm5-80-gb")
    for url in (
        "/gpus/",
        f"/gpus/{h100.slug}/",
        "/",
        "/tiers/",
        f"/compare/?gpus={h100.slug},l4",
        "/fit/?model=llama-3-8b",
    ):
        page = client.get(url).content.decode()
        assert " d old" not in page, url
    assert estimated in client.get("/gpus/").content.decode()
    assert "rental prices from a snapshot of" in client.get("/gpus/").content.decode()
