"""Providers are shown under their curated names (catalog/data/curated/providers.toml), never
their slugs, everywhere a provider is named; /providers/ is one card per provider on a phone."""

from __future__ import annotations

import datetime as dt
import tomllib
from decimal import Decimal

import pytest

from catalog.models import Provider
from catalog.services.prices import BUNDLED_PRICES_DIR, price_import_file
from catalog.services.prices.providers import CATALOGUE_PATH, provider_catalogue, providers_catalogue_sync
from tests.factories import GpuFactory, OfferFactory

TRACKER = BUNDLED_PRICES_DIR / "tugot17-gpu-price-tracker"
CODE_NAMES = ("dc_gnu", "dc_roan", "dc_wildebeest", "primecompute")


def test_every_catalogued_provider_has_a_name_a_kind_and_a_source_for_its_name():
    with CATALOGUE_PATH.open("rb") as handle:
        table = tomllib.load(handle)["providers"]
    for slug, entry in table.items():
        assert entry["name"] and entry["name"] != slug, slug
        assert entry["name_source"].startswith("https://"), slug
        assert entry["kind"] in Provider.Kind.values, slug
    entries, aliases = provider_catalogue()
    for code in CODE_NAMES:
        entry = entries[code.replace("_", "-")]
        assert code not in entry.name and "Prime Intellect" in entry.name
        assert entry.name_source == "https://docs.primeintellect.ai/api-reference/introduction"
    assert aliases["lambdalabs"] == "lambda" and aliases["datacrunch"] == "verda"


@pytest.mark.django_db
def test_the_trackers_code_named_providers_show_real_names_and_stored_slugs_are_renamed(real_catalogue, client):
    # {"by_config": {"8x": {..., "best_deal": {"provider": "dc_roan", ...}}}} in H200_141GB.jsonl
    Provider.objects.create(slug="dc-gnu", name="dc_gnu")  # as an earlier import stored it
    for name in ("H100_80GB_SXM5.jsonl", "H200_141GB.jsonl", "B200_180GB.jsonl"):
        assert price_import_file(path=TRACKER / name).ok
    names = dict(
        Provider.objects.filter(slug__in=["dc-gnu", "dc-roan", "dc-wildebeest", "primecompute"]).values_list(
            "slug", "name"
        )
    )
    assert names == {
        "dc-gnu": "Prime Intellect data centre “Gnu”",
        "dc-roan": "Prime Intellect data centre “Roan”",
        "dc-wildebeest": "Prime Intellect data centre “Wildebeest”",
        "primecompute": "Prime Compute (Prime Intellect)",
    }
    assert providers_catalogue_sync() == 0  # already in line with the file
    providers = client.get("/providers/").content.decode()
    ranking = client.get("/").content.decode()
    for page in (providers, ranking):
        assert "Prime Intellect data centre “Roan”" in page or "Prime Intellect data centre &ldquo;Roan&rdquo;" in page
        assert not any(f">{code}<" in page for code in CODE_NAMES)
    assert 'href="https://docs.primeintellect.ai/api-reference/introduction"' in providers


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_providers_are_cards_on_a_phone(browser, live_server):
    gpu = GpuFactory(name="H100 SXM5 80 GB", slug="h100-sxm5-80-gb", family="H100", variant="SXM", memory_gib=80)
    for slug in ("dc-roan", "verda", "vast"):
        entry = provider_catalogue()[0][slug]
        provider = Provider.objects.create(slug=slug, name=entry.name, kind=entry.kind, name_source=entry.name_source)
        OfferFactory(
            gpu=gpu, provider=provider, current_price_per_hour=Decimal("2.50"), last_seen=dt.datetime.now(dt.UTC)
        )
    context = browser.new_context(viewport={"width": 390, "height": 900})
    page = context.new_page()
    try:
        page.goto(live_server.url + "/providers/")
        assert not page.locator("#providers-table thead").is_visible()
        for row in range(3):
            cells = page.locator(f"#providers-table tbody tr:nth-child({row + 1}) td")
            for index in range(cells.count()):
                box = cells.nth(index).bounding_box()
                assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390 + 1, (row, index, box)
        # Every figure keeps its column's name beside it.
        newest = page.locator("#providers-table tbody tr:first-child td[data-label]").first
        assert newest.evaluate("el => getComputedStyle(el, '::before').content") not in ("none", "normal", "")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    finally:
        context.close()
