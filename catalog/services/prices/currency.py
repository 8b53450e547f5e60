"""Currency conversion through the dated ExchangeRate table (admin-editable).

The newest rate on or before a date applies. There is no built-in fallback rate: a price in a
currency without any rate is reported as such ("no exchange rate for CNY") instead of being
converted with a made-up figure.
"""

from __future__ import annotations

import bisect
import csv
import datetime as dt
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

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
        """The newest rate on or before ``on`` (today when None)."""
        currency = currency.upper()
        if currency == USD:
            return Rate(USD, on or dt.date.today(), Decimal(1), "")
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
