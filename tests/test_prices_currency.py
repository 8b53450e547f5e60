"""Curated CSV prices in other currencies, the dated exchange-rate table and CNY display.

The CNY figures below are test inputs for the format, not any provider's prices.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from catalog.models import Offer, PriceObservation
from catalog.money import display_money, display_rate
from catalog.selectors.prices import gpu_offers
from catalog.services.prices import (
    NoExchangeRate,
    RateBook,
    currency,
    exchange_rate_upsert,
    price_import_file,
)
from catalog.services.prices.currency import ecb_rate
from tests.world import PRICE_WORLD, world_build

pytestmark = pytest.mark.django_db

HEADER = "provider,provider_name,instance_type,region,gpu_name,gpu_memory_gib,gpu_count,vcpus_per_gpu,ram_gib_per_gpu,price_per_hour,price_unit,spot_price_per_hour,currency,observed_at,source\n"


def curated(tmp_path, body, name="testcloud.csv"):
    path = tmp_path / "curated" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def test_table_rates_serve_currencies_the_ecb_does_not_publish():
    # TWD is not among the ECB reference rates: the admin table's newest rate on or before the date.
    exchange_rate_upsert(currency="twd", date=dt.date(2026, 1, 1), usd_per_unit=Decimal("0.03"), source="test")
    exchange_rate_upsert(currency="TWD", date=dt.date(2026, 2, 1), usd_per_unit=Decimal("0.04"), source="test")
    book = RateBook.load()
    assert book.rate("TWD", dt.date(2026, 1, 15)).usd_per_unit == Decimal("0.03")
    assert book.rate("TWD", dt.date(2026, 2, 1)).usd_per_unit == Decimal("0.04")
    assert book.to_usd(Decimal("10"), "TWD", dt.date(2026, 3, 1)) == Decimal("0.4")
    assert book.from_usd(Decimal("0.4"), "TWD") == Decimal("10")
    with pytest.raises(NoExchangeRate, match="on or before 2025-12-31"):
        book.rate("TWD", dt.date(2025, 12, 31))
    with pytest.raises(NoExchangeRate, match="no exchange rate for XPT"):
        book.rate("XPT")


def test_cny_uses_the_ecb_rate_of_the_date_not_a_2017_figure():
    exchange_rate_upsert(currency="CNY", date=dt.date(2017, 12, 1), usd_per_unit=Decimal("0.15120129"), source="old")
    book = RateBook.load()
    friday = book.rate("CNY", dt.date(2025, 11, 14))
    assert friday.date == dt.date(2025, 11, 14) and "ECB" in friday.source
    assert Decimal("0.13") < friday.usd_per_unit < Decimal("0.15")
    # A Sunday takes the Friday before; a date after the shipped series takes its last day, dated.
    assert book.rate("CNY", dt.date(2025, 11, 16)) == friday
    beyond = book.rate("CNY", dt.date(2099, 1, 1))
    assert beyond.date < dt.date(2099, 1, 1) and beyond.date == ecb_rate("CNY", dt.date(2099, 1, 1)).date


def test_rate_validation():
    with pytest.raises(ValueError, match="3-letter"):
        exchange_rate_upsert(currency="RMB1", date=dt.date(2026, 1, 1), usd_per_unit=Decimal("0.1"), source="x")
    with pytest.raises(ValueError, match="positive"):
        exchange_rate_upsert(currency="CNY", date=dt.date(2026, 1, 1), usd_per_unit=Decimal("0"), source="x")
    with pytest.raises(ValueError, match="source"):
        exchange_rate_upsert(currency="CNY", date=dt.date(2026, 1, 1), usd_per_unit=Decimal("0.1"), source=" ")


def test_curated_cny_prices_per_gpu_with_per_gpu_cpu_and_ram(tmp_path):
    catalogue = world_build(rows=PRICE_WORLD)
    path = curated(
        tmp_path,
        "testcloud,Test Cloud,RTX 4090 x2,Region A,RTX4090,24,2,16,120,2.50,gpu,,CNY,2026-02-02,https://example.org/prices\n",
    )
    summary = price_import_file(path=path)
    assert summary.ok and summary.rejected == [] and summary.format == "curated-csv"
    offer = Offer.objects.get()
    assert offer.gpu_id == catalogue.gpus["rtx4090"].id
    assert (offer.vcpus, offer.ram_gib, offer.vcpus_per_gpu, offer.ram_gib_per_gpu) == (32, 240, 16, 120)
    # Listed per GPU: the instance costs 2 x 2.50 CNY; per GPU 2.50 CNY at the ECB rate of 2026-02-02.
    assert offer.current_price_per_hour == Decimal("5.00") and offer.current_currency == "CNY"
    rate = ecb_rate("CNY", dt.date(2026, 2, 2))
    assert rate.date == dt.date(2026, 2, 2)
    assert offer.current_price_per_gpu_hour_usd == (Decimal("2.5") * rate.usd_per_unit).quantize(Decimal("0.000001"))
    observation = PriceObservation.objects.get()
    assert (observation.currency, observation.price_per_gpu_hour) == ("CNY", Decimal("2.5"))
    assert offer.current_observed_at == dt.datetime(2026, 2, 2, tzinfo=dt.UTC)
    assert offer.provider.default_currency == "CNY" and offer.provider.name == "Test Cloud"


def test_curated_rows_without_a_rate_are_rejected_not_converted_with_a_guess(tmp_path):
    world_build(rows=PRICE_WORLD)
    path = curated(
        tmp_path,
        "testcloud,,RTX 4090 x1,,RTX4090,24,1,16,120,2.50,gpu,,TWD,2026-02-01,https://example.org/prices\n"
        "testcloud,,RTX 4090 x1b,,RTX4090,24,1,16,120,0.40,gpu,,USD,2026-02-01,https://example.org/prices\n",
    )
    summary = price_import_file(path=path)
    assert [(r.line, r.reason) for r in summary.rejected] == [
        (2, "no exchange rate for TWD: add one in the admin (Exchange rates)")
    ]
    assert list(Offer.objects.values_list("instance_type", flat=True)) == ["RTX 4090 x1b"]


def test_curated_format_errors_name_the_column(tmp_path):
    world_build(rows=PRICE_WORLD)
    path = curated(
        tmp_path,
        "testcloud,,a,,RTX4090,24,1,,,1.0,gpu,,RM,2026-02-01,https://example.org\n"
        "testcloud,,b,,RTX4090,24,1,,,1.0,hour,,USD,2026-02-01,https://example.org\n"
        "testcloud,,c,,RTX4090,24,1,,,1.0,gpu,,USD,01/02/2026,https://example.org\n"
        "testcloud,,d,,RTX4090,24,1,,,1.0,gpu,,USD,2026-02-01,\n",
    )
    summary = price_import_file(path=path)
    reasons = [r.reason for r in summary.rejected]
    assert "currency 'RM' is not a 3-letter ISO code" in reasons
    assert any("price_unit 'hour'" in r for r in reasons)
    assert any("observed_at '01/02/2026'" in r for r in reasons)
    assert any("source is empty" in r for r in reasons)
    assert not Offer.objects.exists()


def test_cny_display_shows_the_rate_and_its_date(monkeypatch):
    catalogue = world_build(rows=PRICE_WORLD)
    from tests.factories import OfferFactory

    OfferFactory(gpu=catalogue.gpus["h100_sxm"], current_price_per_hour=Decimal("2.00"))
    rate = ecb_rate("CNY", dt.date.today())
    money = display_money(currency="CNY")
    rows, _total = gpu_offers(gpu=catalogue.gpus["h100_sxm"], money=money)
    assert money.currency == "CNY" and money.rate_date == rate.date and money.missing is False
    shown_rate = display_rate(currency="CNY")["units_per_usd"]
    assert shown_rate == (1 / rate.usd_per_unit).quantize(Decimal("0.0001"))
    assert rows[0].price_per_gpu_hour == pytest.approx(2.00 * float(shown_rate))
    assert display_rate(currency="CNY")["rate_date"] == rate.date
    # A currency without any rate is said to have none, never converted with a guess: USD is shown.
    monkeypatch.setattr(currency, "ecb_rate", lambda currency, on: None)
    money = display_money(currency="CNY")
    rows, _total = gpu_offers(gpu=catalogue.gpus["h100_sxm"], money=money)
    assert money.missing is True and money.currency == "USD" and money.usd_per_unit is None
    assert rows[0].price_per_gpu_hour == 2.00
