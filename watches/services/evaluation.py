"""Evaluate watches after a write: read their figures, record each crossing once, queue its alerts.

A watch is *met* while its figure is at or past its threshold (at or under it for a price or a
cost, at or over it for performance per price). A crossing is recorded when a watch goes from
not met to met, with the offer or ranking row that gives the figure; it cannot alert again until
an evaluation has seen the figure back on the other side. A watch without a figure (no matching
offer, no row) keeps its state: an offer missing from one snapshot is no crossing back.

The figures are read first, outside any lock (a ranking can take a second); then, in one
transaction, the watches are locked and compared with their stored state, so that two
evaluations at once (a price import and an ingest) record a crossing once. The alerts are
separate tasks, queued once the transaction commits: a slow email server or a webhook that hangs
costs the evaluation, and the write before it, nothing.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from dataclasses import dataclass

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from gpuatlas.followups import followup_after_commit
from watches.models import Crossing, Delivery, Watch
from watches.selectors.readings import Reading, SharedReads, offer_causes, watch_readings
from watches.validation import watch_is_past

DELIVERY_TASK = "watches.tasks.delivery_send"
# Watches are read and locked in groups of this many: bounded memory and lock lists.
EVALUATION_BATCH = 2000


@dataclass(frozen=True)
class Evaluation:
    watches: int
    changed: int
    crossings: list[int]


def watches_evaluate(*, watch_ids: list[int], fresh: bool = True) -> Evaluation:
    """Evaluate these watches now (module doc); returns how many changed and the crossings recorded."""
    changed = 0
    crossings: list[int] = []
    ids = sorted(set(watch_ids))
    shared = SharedReads()  # each GPU's offers and each question's ranking, read once for all batches
    for start in range(0, len(ids), EVALUATION_BATCH):
        batch = ids[start : start + EVALUATION_BATCH]
        watches = list(Watch.objects.filter(pk__in=batch))
        readings = watch_readings(watches=watches, fresh=fresh, shared=shared)
        batch_changed, batch_crossings = _record(readings)
        changed += batch_changed
        crossings += batch_crossings
    return Evaluation(watches=len(ids), changed=changed, crossings=crossings)


def _record(readings: dict[int, Reading]) -> tuple[int, list[int]]:
    now = timezone.now()
    with transaction.atomic():
        watches = list(Watch.objects.select_for_update().filter(pk__in=list(readings)).order_by("pk"))
        # One UPDATE per new state (met, value, crossed now): watches that read the same offer or
        # row share it. Django's bulk_update writes a CASE per watch, seconds for thousands.
        states: dict[tuple[bool, float, bool], list[int]] = defaultdict(list)
        crossed: list[tuple[Watch, Reading, float]] = []
        for watch in watches:
            reading = readings[watch.pk]
            if reading.value is None:
                continue
            met = watch_is_past(watch=watch, value=reading.value)
            if met == watch.met and reading.value == watch.last_value:
                continue
            crosses = met and not watch.met
            if crosses:
                crossed.append((watch, reading, reading.value))
                watch.last_crossed_at = now
            watch.met, watch.last_value, watch.value_since = met, reading.value, now
            states[(met, reading.value, crosses)].append(watch.pk)
        for (met, value, crosses), ids in states.items():
            crossed_at = {"last_crossed_at": now} if crosses else {}
            Watch.objects.filter(pk__in=ids).update(met=met, last_value=value, value_since=now, **crossed_at)
        crossing_ids = _crossings_add(crossed, now)
    return sum(len(ids) for ids in states.values()), crossing_ids


def _crossings_add(crossed: list[tuple[Watch, Reading, float]], now: dt.datetime) -> list[int]:
    offers = offer_causes(
        offer_ids=[reading.offer_id for _watch, reading, _value in crossed if reading.offer_id is not None]
    )
    rows = [
        Crossing(
            watch=watch,
            occurred_at=now,
            value=value,
            threshold=watch.threshold,
            currency=watch.currency,
            gpu_id=reading.gpu_id,
            offer_id=reading.offer_id,
            cause=reading.cause or _offer_described(reading, watch.currency, offers),
        )
        for watch, reading, value in crossed
    ]
    Crossing.objects.bulk_create(rows)
    deliveries: list[Delivery] = []
    for crossing in rows:
        if crossing.watch.email:
            deliveries.append(Delivery(crossing=crossing, channel=Delivery.Channel.EMAIL))
        if crossing.watch.webhook_active:
            body = json.dumps(webhook_payload(crossing), cls=DjangoJSONEncoder, sort_keys=True)
            deliveries.append(Delivery(crossing=crossing, channel=Delivery.Channel.WEBHOOK, body=body))
    Delivery.objects.bulk_create(deliveries)
    for delivery in deliveries:
        followup_after_commit(DELIVERY_TASK, delivery_id=delivery.pk)
    return [crossing.pk for crossing in rows]


def _offer_described(reading: Reading, currency: str, offers: dict[int, dict[str, object]]) -> dict[str, object]:
    if reading.offer_id is None or reading.offer_id not in offers:
        return {}
    return {**offers[reading.offer_id], "currency": currency}


def webhook_payload(crossing: Crossing) -> dict[str, object]:
    """What a webhook receives for a crossing (signed as sent: the body's bytes)."""
    watch = crossing.watch
    return {
        "event": "watch.crossed",
        "delivered_for": crossing.pk,
        "occurred_at": crossing.occurred_at,
        "watch": {
            "id": watch.pk,
            "kind": watch.kind,
            "metric": watch.metric,
            "gpu": watch.gpu.slug if watch.gpu else None,
            "gpu_count": watch.gpu_count,
            "spot": watch.spot,
            "provider": watch.provider.slug if watch.provider else None,
            "region": watch.region,
            "query": watch.query,
            "threshold": str(watch.threshold),
            "currency": watch.currency,
            "feed_url": settings.SITE_URL + reverse("watches:watch-feed", args=[watch.feed_token]),
        },
        "value": crossing.value,
        "cause": crossing.cause,
    }
