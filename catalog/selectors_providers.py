"""Reads for the providers page (/providers/): each provider's offers, how many are priced or
unmatched, its newest price data and last import; the freshness of the price data."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max, Q
from django.utils import timezone

from catalog.models import Gpu, ImportRun, PriceObservation, Provider


def price_freshness(*, gpu: Gpu | int | None = None, provider: str | None = None) -> dict[str, Any]:
    """Age of the newest price observation (over a GPU's or a provider's offers, or all)."""
    observations = PriceObservation.objects.all()
    if gpu is not None:
        observations = observations.filter(offer__gpu_id=gpu if isinstance(gpu, int) else gpu.pk)
    if provider:
        observations = observations.filter(offer__provider__slug=provider)
    newest = observations.aggregate(newest=Max("observed_at"))["newest"]
    age = (timezone.now() - newest) if newest else None
    return {
        "newest_observation": newest,
        "age": age,
        "age_hours": round(age.total_seconds() / 3600, 1) if age else None,
    }


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
    now = timezone.now()
    return [
        {
            "provider": p,
            "name": p.name,
            "slug": p.slug,
            "kind": p.get_kind_display(),
            "url": p.url,
            "offer_count": p.offer_count,
            "available_count": p.available_count,
            "priced_count": p.priced_count,
            "unmatched_count": p.unmatched_count,
            "gpu_count": p.gpu_count,
            "newest_observation": p.newest,
            "last_seen": p.last_seen,
            "age_days": round((now - p.last_seen).total_seconds() / 86400, 1) if p.last_seen else None,
            "last_import": last_runs.get(p.pk),
        }
        for p in providers
    ]
