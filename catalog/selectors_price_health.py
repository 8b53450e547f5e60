"""Reads for curators: the health of the price data (stale sources, ambiguous, unmatched, outliers, fetches)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from catalog.models import Offer, PriceFetch, PriceSnapshot
from catalog.selectors_prices import gpu_rent_prices, price_data_newest, price_status

# An on-demand offer below this share of its GPU's typical price is listed for a look.
OUTLIER_SHARE = Decimal("0.5")


@dataclass(frozen=True)
class StaleSource:
    provider: str
    feed: str
    newest: dt.datetime
    behind_days: float
    date_basis: str
    offers: int

    @property
    def date_basis_label(self) -> str:
        """How the snapshot's date is known, in words (the code when it is not one we know)."""
        known = dict(PriceSnapshot.DateBasis.choices)
        return str(known.get(self.date_basis, self.date_basis))


def price_fetches_latest() -> list[PriceFetch]:
    """The last fetch of each catalogue file, newest first (two queries)."""
    newest = PriceFetch.objects.values("source").annotate(last=Max("started_at")).values_list("source", "last")
    wanted = dict(newest)
    fetches = PriceFetch.objects.filter(started_at__in=set(wanted.values())).order_by("source", "-started_at")
    seen: dict[str, PriceFetch] = {}
    for fetch in fetches:
        if wanted.get(fetch.source) == fetch.started_at:
            seen.setdefault(fetch.source, fetch)
    return sorted(seen.values(), key=lambda f: f.started_at, reverse=True)


def price_data_health(*, now: dt.datetime | None = None) -> dict[str, Any]:
    """What a curator should look at, with the reason for each list."""
    now = now or timezone.now()
    newest = price_data_newest()
    window = dt.timedelta(days=settings.PRICE_FRESHNESS_DAYS)
    stale: list[StaleSource] = []
    if newest is not None:
        latest = (
            PriceSnapshot.objects.values("feed", "provider_id", "provider__name")
            .annotate(at=Max("observed_at"))
            .order_by("provider__name", "feed")
        )
        bases = {
            (s["feed"], s["provider_id"], s["observed_at"]): (s["date_basis"], s["offers"])
            for s in PriceSnapshot.objects.values("feed", "provider_id", "observed_at", "date_basis", "offers")
        }
        for row in latest:
            if row["at"] < newest - window:
                basis, offers = bases.get((row["feed"], row["provider_id"], row["at"]), ("", 0))
                behind = round((newest - row["at"]).total_seconds() / 86400, 1)
                stale.append(StaleSource(row["provider__name"], row["feed"], row["at"], behind, basis, offers))
    ambiguous = list(
        Offer.objects.listed()
        .ambiguous()
        .values("provider__name", "instance_type", "gpu_name_raw", "gpu__name")
        .annotate(offers=Count("id"))
        .order_by("-offers", "provider__name")[:200]
    )
    unmatched = list(
        Offer.objects.filter(gpu__isnull=True, available=True)
        .values("provider__name", "gpu_name_raw")
        .annotate(offers=Count("id"))
        .order_by("-offers", "provider__name")[:200]
    )
    typical = gpu_rent_prices(rule="typical")
    outliers = []
    for offer in (
        Offer.objects.current()
        .sku_level()
        .on_demand()
        .filter(gpu_id__in=list(typical))
        .select_related("provider", "gpu")
        .order_by("current_price_per_gpu_hour_usd")
    ):
        reference = typical.get(offer.gpu_id or 0)
        price = offer.current_price_per_gpu_hour_usd
        if reference is None:
            continue
        if price is not None and reference.providers >= 2 and price < reference.typical_usd * OUTLIER_SHARE:
            outliers.append({"offer": offer, "typical": reference.typical_usd, "share": price / reference.typical_usd})
    return {
        "status": price_status(now=now),
        "window_days": settings.PRICE_FRESHNESS_DAYS,
        "stale": stale,
        "ambiguous": ambiguous,
        "ambiguous_total": Offer.objects.listed().ambiguous().count(),
        "unmatched": unmatched,
        "outliers": outliers[:200],
        "outlier_share": OUTLIER_SHARE,
        "fetches": price_fetches_latest(),
    }
