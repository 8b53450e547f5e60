"""Reads for the account page, the API and the feeds: a user's own watches, a watch's crossings,
a GPU's price cuts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import F, OuterRef, QuerySet, Subquery, Window
from django.db.models.functions import Lag

from catalog.models import Gpu, PriceObservation
from watches.models import Crossing, Delivery, Watch


def _last_delivery(channel: str, column: str) -> Subquery:
    newest = Delivery.objects.filter(crossing__watch=OuterRef("pk"), channel=channel).order_by("-created_at", "-id")
    return Subquery(newest.values(column)[:1])


def watches_of_user(*, user: object) -> QuerySet[Watch]:
    """The user's own watches, newest first, with the state of their last email and webhook delivery
    (``last_email_status``, ``last_webhook_status``, ``last_webhook_error``): one query."""
    return (
        Watch.objects.of_user(user)
        .select_related("gpu", "provider")
        .annotate(
            last_email_status=_last_delivery(Delivery.Channel.EMAIL, "status"),
            last_webhook_status=_last_delivery(Delivery.Channel.WEBHOOK, "status"),
            last_webhook_error=_last_delivery(Delivery.Channel.WEBHOOK, "error"),
        )
    )


def watch_of_user(*, user: object, watch_id: int) -> Watch | None:
    return watches_of_user(user=user).filter(pk=watch_id).first()


def watch_by_feed_token(*, token: str) -> Watch | None:
    return Watch.objects.select_related("gpu", "provider").filter(feed_token=token).first()


def watch_crossings(*, watch: Watch, limit: int = 50) -> list[Crossing]:
    """The watch's newest crossings, each with its watch (for its words)."""
    crossings = list(Crossing.objects.filter(watch=watch).order_by("-occurred_at", "-id")[:limit])
    for crossing in crossings:
        crossing.watch = watch
    return crossings


def deliveries_of_watch(*, watch: Watch, limit: int = 20) -> list[Delivery]:
    """The delivery log of a watch, newest first."""
    return list(Delivery.objects.filter(crossing__watch=watch).select_related("crossing")[:limit])


@dataclass(frozen=True)
class PriceCut:
    """An offer of a GPU listed at a lower price than before."""

    observation_id: int
    gpu_slug: str
    observed_at: dt.datetime
    provider: str
    instance_type: str
    region: str
    gpu_count: float
    is_spot: bool
    before_usd: float
    after_usd: float


def gpu_price_cuts(*, gpu: Gpu, limit: int = 30) -> list[PriceCut]:
    """The GPU's newest price cuts: each price observation lower than the one before it for the
    same offer (SKU-level offers), newest first, per GPU-hour in USD. One query."""
    rows = (
        PriceObservation.objects.filter(offer__gpu=gpu, offer__variant_ambiguous=False)
        .annotate(
            before=Window(Lag("price_per_gpu_hour_usd"), partition_by=[F("offer_id")], order_by=F("observed_at").asc())
        )
        .filter(before__gt=F("price_per_gpu_hour_usd"))
        .order_by("-observed_at", "-id")
        .values_list(
            "id", "observed_at", "offer__provider__name", "offer__instance_type", "offer__region",
            "offer__gpu_count", "offer__is_spot", "before", "price_per_gpu_hour_usd",
        )[:limit]
    )  # fmt: skip
    return [
        PriceCut(
            observation_id=pk,
            gpu_slug=gpu.slug,
            observed_at=at,
            provider=provider,
            instance_type=instance,
            region=region,
            gpu_count=count,
            is_spot=spot,
            before_usd=float(before),
            after_usd=float(after),
        )
        for pk, at, provider, instance, region, count, spot, before, after in rows
    ]
