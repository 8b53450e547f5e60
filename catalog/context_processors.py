"""Template context of every page: the page currency and whether rental prices are live."""

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from catalog.money import CURRENCIES
from catalog.selectors.prices import price_status


def currency(request: HttpRequest) -> dict[str, object]:
    """The currency the page's prices are shown in (``?currency=``; USD when absent or unknown)."""
    asked = request.GET.get("currency", "").upper()
    return {"currency": asked if asked in CURRENCIES else "USD", "currencies": CURRENCIES}


def prices(request: HttpRequest) -> dict[str, object]:
    """Whether rental prices are live or "as of" a date (the footer); read only when shown."""
    return {"price_status": SimpleLazyObject(price_status)}
