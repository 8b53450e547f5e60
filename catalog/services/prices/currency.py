"""Currency conversion at the price's date: ECB reference rates, then the ExchangeRate table.

For the currencies the European Central Bank publishes (CNY, EUR, GBP, JPY...), the rate is
the ECB euro reference rate of the price's date (or the last business day before it) as the
``currencyconverter`` package ships it, crossed through EUR to USD; a date after the shipped
series uses its last day, and every rate carries its own date so pages can show it. Other
currencies use the admin-editable ExchangeRate table (newest rate on or before the date).
There is no made-up fallback: a currency with neither is reported ("no exchange rate for X").
"""

from __future__ import annotations

import bisect
import csv
import datetime as dt
import functools
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from importlib.metadata import version
from pathlib import Path

from currency_converter import CurrencyConverter, RateNotFoundError

from catalog.models import ExchangeRate

USD = "USD"
RATE_QUANTUM = Decimal("0.00000001")
AMOUNT_QUANTUM = Decimal("0.000001")


class NoExchangeRate(LookupError):
    """No rate for the currency on or before the date: the caller shows "no exchange rate"."""


@dataclass(frozen=True)
class Rate:
    currency: str
    date: dt.date
    usd_per_unit: Decimal
    source: str


ECB_SOURCE = (
    "ECB euro reference rates, {currency}/EUR and USD/EUR of {date}, via the currencyconverter package {version}"
)
# Weekends and TARGET holidays have no ECB rate: look back this many days for the last one.
ECB_LOOKBACK_DAYS = 10


@functools.cache
def _ecb() -> CurrencyConverter:
    """The ECB series shipped with currencyconverter, parsed once per process."""
    return CurrencyConverter(fallback_on_missing_rate=False, fallback_on_wrong_date=False)


@functools.lru_cache(maxsize=4096)
def ecb_rate(currency: str, on: dt.date) -> Rate | None:
    """The ECB rate of ``currency`` in USD on ``on`` or the last business day before; None if not covered."""
    converter = _ecb()
    if currency not in converter.currencies or currency == USD:
        return None
    first = max(converter.bounds[currency].first_date, converter.bounds[USD].first_date)
    last = min(converter.bounds[currency].last_date, converter.bounds[USD].last_date)
    day = min(on, last)
    for _ in range(ECB_LOOKBACK_DAYS):
        if day < first:
            return None
        try:
            value = converter.convert(1, currency, USD, date=day)
        except RateNotFoundError:
            day -= dt.timedelta(days=1)
            continue
        source = ECB_SOURCE.format(currency=currency, date=day.isoformat(), version=version("CurrencyConverter"))
        return Rate(currency, day, Decimal(str(value)).quantize(RATE_QUANTUM, rounding=ROUND_HALF_UP), source)
    return None


@dataclass
class RateBook:
    """All exchange rates in memory, for imports and selectors that convert many prices."""

    rates: dict[str, list[Rate]] = field(default_factory=dict)

    @classmethod
    def load(cls) -> RateBook:
        book = cls()
        for row in ExchangeRate.objects.order_by("currency", "date"):
            book.rates.setdefault(row.currency.upper(), []).append(
                Rate(row.currency.upper(), row.date, row.usd_per_unit, row.source)
            )
        return book

    def rate(self, currency: str, on: dt.date | None = None) -> Rate:
        """The ECB rate of ``on`` (today when None), else the newest table rate on or before it."""
        currency = currency.upper()
        if currency == USD:
            return Rate(USD, on or dt.date.today(), Decimal(1), "")
        published = ecb_rate(currency, on or dt.date.today())
        if published is not None:
            return published
        series = self.rates.get(currency, [])
        if not series:
            raise NoExchangeRate(f"no exchange rate for {currency}: add one in the admin (Exchange rates)")
        if on is None:
            return series[-1]
        index = bisect.bisect_right([r.date for r in series], on)
        if index == 0:
            raise NoExchangeRate(f"no exchange rate for {currency} on or before {on:%Y-%m-%d}")
        return series[index - 1]

    def to_usd(self, amount: Decimal, currency: str, on: dt.date | None = None) -> Decimal:
        if currency.upper() == USD:
            return amount
        return (amount * self.rate(currency, on).usd_per_unit).quantize(AMOUNT_QUANTUM, rounding=ROUND_HALF_UP)

    def from_usd(self, amount_usd: Decimal, currency: str, on: dt.date | None = None) -> Decimal:
        if currency.upper() == USD:
            return amount_usd
        return (amount_usd / self.rate(currency, on).usd_per_unit).quantize(AMOUNT_QUANTUM, rounding=ROUND_HALF_UP)


def exchange_rate_upsert(*, currency: str, date: dt.date, usd_per_unit: Decimal, source: str) -> ExchangeRate:
    """Create or correct the rate of ``currency`` for ``date`` (history is kept by simple_history)."""
    currency = currency.strip().upper()
    if len(currency) != 3 or not currency.isalpha():
        raise ValueError(f"currency {currency!r} is not a 3-letter ISO code")
    if usd_per_unit <= 0:
        raise ValueError(f"usd_per_unit {usd_per_unit} must be positive")
    if not source.strip():
        raise ValueError("an exchange rate needs a source")
    rate, _ = ExchangeRate.objects.update_or_create(
        currency=currency,
        date=date,
        defaults={
            "usd_per_unit": usd_per_unit.quantize(RATE_QUANTUM, rounding=ROUND_HALF_UP),
            "source": source.strip(),
        },
    )
    return rate


def exchange_rates_import_csv(*, path: Path) -> int:
    """Load ``currency,date,usd_per_unit,source`` rows (the bundled, sourced rates); returns rows written."""
    written = 0
    with path.open(newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                exchange_rate_upsert(
                    currency=row["currency"],
                    date=dt.date.fromisoformat(row["date"].strip()),
                    usd_per_unit=Decimal(row["usd_per_unit"].strip()),
                    source=row["source"],
                )
            except (KeyError, ValueError, InvalidOperation, AttributeError) as exc:
                raise ValueError(f"{path.name} line {line}: {exc}") from None
            written += 1
    return written
