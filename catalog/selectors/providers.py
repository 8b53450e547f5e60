"""Reads for the providers page (/providers/): each provider's offers, how many are priced or
unmatched, its newest snapshot (with how its date is known) and last import. Whether the prices
as a whole are fresh is ``catalog.selectors.prices.price_status``'s decision, not this module's."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Q
from django.utils import timezone

from catalog.models import ImportRun, PriceSnapshot, Provider


def providers_with_stats() -> list[dict[str, Any]]:
    """Providers for /providers/: offer counts, priced GPU offers, unmatched offers, freshness, last import."""
    providers = Provider.objects.annotate(
        offer_count=Count("offers"),
        available_count=Count("offers", filter=Q(offers__available=True)),
        priced_count=Count(
            "offers",
            filter=Q(
                offers__available=True,
                offers__price_separable=True,
                offers__gpu__isnull=False,
                offers__current_price_per_gpu_hour_usd__isnull=False,
            ),
        ),
        unmatched_count=Count("offers", filter=Q(offers__gpu__isnull=True)),
        gpu_count=Count("offers__gpu", distinct=True, filter=Q(offers__available=True)),
        newest=Max("offers__current_observed_at"),
        last_seen=Max("offers__last_seen"),
    ).order_by("name")
    last_runs = dict(
        ImportRun.objects.filter(provider__isnull=False, status=ImportRun.Status.DONE)
        .order_by()
        .values("provider_id")
        .annotate(last=Max("finished_at"))
        .values_list("provider_id", "last")
    )
    estimated = _newest_snapshot_is_estimate()
    now = timezone.now()
    return [
        {
            "provider": p,
            "name": p.name,
            "slug": p.slug,
            "kind": p.get_kind_display(),
            "url": p.url,
            "name_source": p.name_source,
            "offer_count": p.offer_count,
            "available_count": p.available_count,
            "priced_count": p.priced_count,
            "unmatched_count": p.unmatched_count,
            "gpu_count": p.gpu_count,
            "newest_observation": p.newest,
            "last_seen": p.last_seen,
            # No age where the date is an estimate: "6 days old" would read as fresh.
            "date_is_estimate": estimated.get(p.pk, False),
            "age_days": (
                round((now - p.last_seen).total_seconds() / 86400, 1)
                if p.last_seen and not estimated.get(p.pk, False)
                else None
            ),
            "last_import": last_runs.get(p.pk),
        }
        for p in providers
    ]


def _newest_snapshot_is_estimate() -> dict[int, bool]:
    """provider id -> whether its newest snapshot's date is an estimate (two queries)."""
    newest = dict(
        PriceSnapshot.objects.order_by()
        .values("provider_id")
        .annotate(at=Max("observed_at"))
        .values_list("provider_id", "at")
    )
    found: dict[int, bool] = {}
    for provider_id, at, basis in PriceSnapshot.objects.filter(observed_at__in=set(newest.values())).values_list(
        "provider_id", "observed_at", "date_basis"
    ):
        if newest.get(provider_id) == at:
            # Of several feeds listing the provider at that time, a known date wins.
            found[provider_id] = found.get(provider_id, True) and basis == PriceSnapshot.DateBasis.ESTIMATE
    return found
