"""Money on a page: the currencies a page can show and the one conversion of USD figures to them.

Prices are stored and compared in USD; a page shows them in its currency at the newest recorded
rate (``Money``), or in USD with a warning when no rate for that currency is recorded. Every page,
the API and the fit calculator convert through here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from catalog.services.prices.currency import USD, NoExchangeRate, RateBook

CURRENCIES = ("USD", "CNY")


def currency_from_query(value: str | None) -> str:
    """The page currency a ``currency`` GET parameter asks for; USD for anything else."""
    currency = (value or "").strip().upper()
    return currency if currency in CURRENCIES else USD


def display_rate(*, currency: str, rates: RateBook | None = None) -> dict[str, Any]:
    """How USD prices are shown in ``currency``: {currency, rate_date, units_per_usd, source, missing}.

    ``units_per_usd`` is rounded to four decimals: the figure the page prints beside its prices,
    so that a reader who multiplies gets the prices shown."""
    currency = currency.upper()
    if currency == USD:
        return {"currency": USD, "rate_date": None, "units_per_usd": Decimal(1), "source": "", "missing": False}
    rates = rates or RateBook.load()
    try:
        rate = rates.rate(currency)
    except NoExchangeRate:
        return {"currency": currency, "rate_date": None, "units_per_usd": None, "source": "", "missing": True}
    return {
        "currency": currency,
        "rate_date": rate.date,
        "units_per_usd": (Decimal(1) / rate.usd_per_unit).quantize(Decimal("0.0001")),
        "source": rate.source,
        "missing": False,
    }


@dataclass
class Money:
    """Converts USD amounts to the page currency, or says why it cannot.

    ``currency`` is the currency figures are shown in: USD when the one asked for has no rate
    (``missing``); ``usd_per_unit`` is None for USD (nothing is converted)."""

    do_not_call_in_templates = True  # templates read .currency; calling needs an amount

    currency: str
    usd_per_unit: float | None
    rate_date: dt.date | None = None
    rate_source: str = ""
    missing: bool = False
    units_per_usd: float | None = None  # the rate as printed beside the figures

    def __call__(self, usd: float | None) -> float | None:
        if usd is None:
            return None
        return usd / self.usd_per_unit if self.usd_per_unit else usd

    @property
    def exchange_rate(self) -> dict[str, Any] | None:
        """The rate behind the figures, as pages and the API state it; None in USD."""
        if self.usd_per_unit is None:
            return None
        return {
            "usd_per_unit": self.usd_per_unit,
            "units_per_usd": self.units_per_usd,
            "date": self.rate_date,
            "source": self.rate_source,
        }


def display_money(*, currency: str, rates: RateBook | None = None) -> Money:
    """USD, or another currency at its newest recorded rate (its date kept); USD with
    ``missing=True`` when none is recorded. ``rates``: a rate table already read, to save the query."""
    if currency == USD:
        return Money(USD, None)
    rate = display_rate(currency=currency, rates=rates)
    if rate["missing"]:
        return Money(USD, None, missing=True)
    return Money(
        currency,
        float(1 / rate["units_per_usd"]),
        rate["rate_date"],
        rate["source"],
        units_per_usd=float(rate["units_per_usd"]),
    )
