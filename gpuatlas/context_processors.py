"""Template context shared by every page."""

from django.http import HttpRequest

CURRENCIES = ("USD", "CNY")


def site(request: HttpRequest) -> dict[str, object]:
    currency = request.GET.get("currency", "").upper()
    return {"currency": currency if currency in CURRENCIES else "USD", "currencies": CURRENCIES}
