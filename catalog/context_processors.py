"""Template context of every page that reads the catalogue's data."""

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from catalog.selectors.prices import price_status


def prices(request: HttpRequest) -> dict[str, object]:
    """Whether rental prices are live or "as of" a date (the footer); read only when shown."""
    return {"price_status": SimpleLazyObject(price_status)}
