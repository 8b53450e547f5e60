"""Reads for curators: the health of the price data (stale sources, ambiguous, unmatched, outliers, fetches)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from catalog.models import ImportRun, Offer, PriceFetch, PriceSnapshot
from catalog.selectors.prices import gpu_rent_prices, price_data_newest, price_status
from catalog.services.prices.skypilot import CPU_ONLY, HOST_WITH_GPU
from catalog.services.prices.writer import DUPLICATE, OLDER_PRICE

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


@dataclass(frozen=True)
class PriceCoverage:
    """How much of the current market can be ranked per GPU: current offers, and those whose
    form factor is not stated (kept out of per-GPU rankings), with the largest groups of them."""

    current: int
    ambiguous: int
    ambiguous_groups: list[dict[str, Any]]

    @property
    def ambiguous_share(self) -> float:
        return self.ambiguous / self.current if self.current else 0.0


def price_coverage(*, groups: int = 20) -> PriceCoverage:
    """Current offers and the ambiguous ones among them (three queries)."""
    current = Offer.objects.current()
    largest = [
        dict(group)
        for group in current.ambiguous()
        .values("provider__slug", "gpu_name_raw")
        .annotate(offers=Count("id"))
        .order_by("-offers", "provider__slug", "gpu_name_raw")[:groups]
    ]
    return PriceCoverage(current.count(), current.ambiguous().count(), largest)


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


# Skips that lose no price: rows without a GPU, exact duplicates, hosts priced with their GPUs, history.
ROUTINE_SKIPS = frozenset({CPU_ONLY, HOST_WITH_GPU, DUPLICATE, OLDER_PRICE})


@dataclass(frozen=True)
class SkippedRows:
    path: str
    reason: str
    rows: int
    imported_at: dt.datetime | None


def import_skips_latest() -> list[SkippedRows]:
    """Rows the newest import of each file left out for a reason that loses a price (two queries)."""
    newest = dict(
        ImportRun.objects.filter(status=ImportRun.Status.DONE)
        .values("path")
        .annotate(last=Max("started_at"))
        .values_list("path", "last")
    )
    found = []
    runs = ImportRun.objects.filter(status=ImportRun.Status.DONE, started_at__in=set(newest.values()))
    for run in runs.order_by("path"):
        if newest.get(run.path) != run.started_at:
            continue
        for reason, count in sorted((run.summary or {}).get("skipped", {}).items()):
            if reason not in ROUTINE_SKIPS:
                found.append(SkippedRows(run.path, reason, int(count), run.finished_at))
    return found


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
        Offer.objects.unmatched()
        .filter(available=True)
        .values("provider__name", "gpu_name_raw")
        .annotate(offers=Count("id"))
        .order_by("-offers", "provider__name")[:200]
    )
    typical = gpu_rent_prices(rule="typical")
    outliers = []
    for offer in (
        Offer.objects.current()
        .sku_level()
        .priced()
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
    placeholders = list(
        Offer.objects.placeholders()
        .select_related("provider", "gpu")
        .order_by("provider__name", "gpu__name", "instance_type")[:200]
    )
    return {
        "status": price_status(now=now),
        "placeholders": placeholders,
        "placeholders_total": Offer.objects.placeholders().count(),
        "window_days": settings.PRICE_FRESHNESS_DAYS,
        "stale": stale,
        "ambiguous": ambiguous,
        "ambiguous_total": Offer.objects.listed().ambiguous().count(),
        "unmatched": unmatched,
        "outliers": outliers[:200],
        "outlier_share": OUTLIER_SHARE,
        "fetches": price_fetches_latest(),
        "skipped": import_skips_latest(),
    }
