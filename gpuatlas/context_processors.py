"""Template context shared by every page."""

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from catalog.money import CURRENCIES
from catalog.selectors_prices import price_status


def site(request: HttpRequest) -> dict[str, object]:
    currency = request.GET.get("currency", "").upper()
    return {"currency": currency if currency in CURRENCIES else "USD", "currencies": CURRENCIES}


def prices(request: HttpRequest) -> dict[str, object]:
    """Whether rental prices are live or "as of" a date (the footer); read only when shown."""
    return {"price_status": SimpleLazyObject(price_status)}
