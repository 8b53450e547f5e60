"""The figure each watch follows, read now: a price watch's cheapest matching offer, a ranking
watch's row. Reads only; the evaluation (watches/services/evaluation.py) compares and writes.

Both read many watches at once and share the work between those that ask the same thing: one
query for the current offers of every GPU watched, one ranking per distinct question (a question
is the ranking's normalised query, evaluated with ``ranking_params_from_query`` and
``rankings_compute``, so that a parameter the rankings gain reaches the watches unchanged). An
evaluation that reads its watches in several batches passes one ``SharedReads`` to all of them,
so that each GPU's offers and each question's ranking are read once per evaluation, not per batch.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from catalog.models import Offer
from catalog.money import Money, display_money
from catalog.selectors.prices import exchange_rates
from dashboard.selectors.ranking_params import RankingParamError, ranking_params_from_query
from dashboard.selectors.ranking_rows import Ranking, RankingRow, ranking_row_columns
from dashboard.selectors.rankings import rankings_compute
from watches.models import HIGHER_IS_BETTER, Watch, WatchKind

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reading:
    """A watch's figure now (None: nothing to read, e.g. no matching offer), in the watch's
    currency, with the GPU, the offer and the ranking row that gives it (a price watch's offer is
    described by ``offer_cause`` once it causes a crossing)."""

    value: float | None
    gpu_id: int | None = None
    offer_id: int | None = None
    cause: dict[str, Any] = field(default_factory=dict)


NOTHING = Reading(value=None)


# (offer id, GPU count, provider id, region casefolded, price USD): what matching needs; the rest of
# the offer is read for the one that matches.
_OfferLine = tuple[int, float, int, str, Decimal]
_OFFER_COLUMNS = (
    "id", "gpu__slug", "gpu__name", "gpu_count", "is_spot", "provider__slug", "provider__name", "instance_type",
    "region", "current_price_per_gpu_hour_usd", "last_seen",
)  # fmt: skip


@dataclass
class SharedReads:
    """What the batches of one evaluation read once: current offers by (GPU id, spot), for the GPUs
    in ``offer_gpus``, and rankings (or the refusal of their question) by question."""

    offers: dict[tuple[int, bool], list[_OfferLine]] = field(default_factory=dict)
    offer_gpus: set[int] = field(default_factory=set)
    rankings: dict[str, Ranking | RankingParamError] = field(default_factory=dict)


def _current_offers(gpu_ids: set[int]) -> dict[tuple[int, bool], list[_OfferLine]]:
    """(gpu id, spot) -> the current SKU-level offers, cheapest first: one query."""
    rows = (
        Offer.objects.current()
        .sku_level()
        .filter(gpu_id__in=sorted(gpu_ids))
        .order_by("current_price_per_gpu_hour_usd", "id")
        .values_list("id", "gpu_id", "is_spot", "gpu_count", "provider_id", "region", "current_price_per_gpu_hour_usd")
    )
    found: dict[tuple[int, bool], list[_OfferLine]] = defaultdict(list)
    for offer_id, gpu_id, is_spot, gpu_count, provider_id, region, price in rows:
        if price is not None:  # current() offers have a price: for the type checker
            found[(gpu_id, is_spot)].append((offer_id, gpu_count, provider_id, region.casefold(), price))
    return found


def offer_causes(*, offer_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The offers behind price watches' figures, as a crossing keeps them, by offer id: one query
    for the offers that cause crossings, not for every offer compared."""
    causes: dict[int, dict[str, Any]] = {}
    for row in Offer.objects.filter(pk__in=sorted(set(offer_ids))).values_list(*_OFFER_COLUMNS):
        values = dict(zip(_OFFER_COLUMNS, row, strict=True))
        causes[values["id"]] = {
            "offer": values["id"],
            "gpu": values["gpu__slug"],
            "gpu_name": values["gpu__name"],
            "provider": values["provider__name"],
            "provider_slug": values["provider__slug"],
            "instance_type": values["instance_type"],
            "region": values["region"],
            "gpu_count": values["gpu_count"],
            "spot": values["is_spot"],
            "price_per_gpu_hour_usd": str(values["current_price_per_gpu_hour_usd"]),
            "observed_at": values["last_seen"].isoformat(),
        }
    return causes


def offer_cause(*, offer_id: int) -> dict[str, Any]:
    return offer_causes(offer_ids=[offer_id])[offer_id]


def _price_key(watch: Watch) -> tuple[Any, ...]:
    return (watch.gpu_id, watch.gpu_count, watch.spot, watch.provider_id, watch.region.casefold(), watch.currency)


def _cheapest(watch: Watch, offers: list[_OfferLine], money: Money) -> Reading:
    region = watch.region.casefold()
    for offer_id, gpu_count, provider_id, offer_region, price_usd in offers:  # cheapest first
        if watch.gpu_count is not None and gpu_count != watch.gpu_count:
            continue
        if watch.provider_id is not None and provider_id != watch.provider_id:
            continue
        if region and region not in offer_region:
            continue
        value = money(float(price_usd))
        return Reading(
            value=round(value, 6) if value is not None else None,
            gpu_id=watch.gpu_id,
            offer_id=offer_id,
        )
    return NOTHING


def price_readings(*, watches: Sequence[Watch], shared: SharedReads | None = None) -> dict[int, Reading]:
    """Watch id -> the cheapest current offer that matches the price watch (GPU, GPU count, on-demand
    or spot, provider, region), per GPU-hour in the watch's currency. Two queries (offers of the
    GPUs ``shared`` has not read yet, rates)."""
    if not watches:
        return {}
    shared = shared if shared is not None else SharedReads()
    unread = {watch.gpu_id for watch in watches if watch.gpu_id is not None} - shared.offer_gpus
    if unread:
        shared.offers.update(_current_offers(unread))
        shared.offer_gpus |= unread
    offers = shared.offers
    rates = exchange_rates() if any(watch.currency != "USD" for watch in watches) else None
    moneys: dict[str, Money] = {}
    by_key: dict[tuple[Any, ...], Reading] = {}
    readings: dict[int, Reading] = {}
    for watch in watches:
        key = _price_key(watch)
        if key not in by_key:
            money = moneys.setdefault(watch.currency, display_money(currency=watch.currency, rates=rates))
            by_key[key] = _cheapest(watch, offers.get((watch.gpu_id or 0, watch.spot), []), money)
        readings[watch.pk] = by_key[key]
    return readings


def question_key(query: dict[str, Any]) -> str:
    """The identity of a ranking question: its normalised query, canonically written."""
    return json.dumps(query, sort_keys=True, separators=(",", ":"))


def _row_cause(row: RankingRow, ranking: Ranking) -> dict[str, Any]:
    """The row's published columns, as JSON stores them, with the question's currency."""
    columns = json.loads(json.dumps(ranking_row_columns(row), cls=DjangoJSONEncoder))
    return {**columns, "use_case": ranking.use_case.slug}


def _row_reading(watch: Watch, row: RankingRow | None, ranking: Ranking) -> Reading:
    value = getattr(row, watch.metric, None) if row is not None else None
    if row is None or value is None:
        return NOTHING
    return Reading(value=round(float(value), 6), gpu_id=row.gpu_id, cause=_row_cause(row, ranking))


def _best_row(rows: Iterable[RankingRow], metric: str) -> RankingRow | None:
    candidates = [row for row in rows if row.eligible and getattr(row, metric, None) is not None]
    if not candidates:
        return None
    pick = max if metric in HIGHER_IS_BETTER else min
    return pick(candidates, key=lambda row: getattr(row, metric))


def _ranking_computer(fresh: bool) -> Callable[..., Ranking]:
    # After a write the data version may not have moved yet (its bump is debounced): a cached
    # ranking could be the one before the write. Fresh reads skip that cache.
    return getattr(rankings_compute, "uncached", rankings_compute) if fresh else rankings_compute


def ranking_readings(
    *, watches: Sequence[Watch], fresh: bool = True, shared: SharedReads | None = None
) -> dict[int, Reading]:
    """Watch id -> its ranking row's figure (one GPU), or the best eligible row's (any GPU).

    One ranking per distinct question (per evaluation, with ``shared``). ``fresh``: computed from
    the database now, not taken from the cache of the current data version (``rankings_compute``'s).
    """
    compute = _ranking_computer(fresh)
    shared = shared if shared is not None else SharedReads()
    groups: dict[str, list[Watch]] = defaultdict(list)
    for watch in watches:
        groups[question_key(watch.query)].append(watch)
    readings: dict[int, Reading] = {}
    for key, group in groups.items():
        if key not in shared.rankings:
            try:
                shared.rankings[key] = compute(params=ranking_params_from_query(group[0].query))
            except RankingParamError as exc:
                shared.rankings[key] = exc
        ranking = shared.rankings[key]
        if isinstance(ranking, RankingParamError):
            # A question the rankings no longer accept (a use case or model size withdrawn).
            logger.warning("watches %s: their ranking question is refused: %s", [w.pk for w in group], ranking)
            readings.update({watch.pk: NOTHING for watch in group})
            continue
        rows = [*ranking.rows, *ranking.ineligible_rows]
        by_gpu = {row.gpu_id: row for row in rows}
        best: dict[str, RankingRow | None] = {}
        for watch in group:
            if watch.gpu_id is None:
                if watch.metric not in best:
                    best[watch.metric] = _best_row(ranking.rows, watch.metric)
                row = best[watch.metric]
            else:
                row = by_gpu.get(watch.gpu_id)
            readings[watch.pk] = _row_reading(watch, row, ranking)
    return readings


def watch_readings(
    *, watches: Sequence[Watch], fresh: bool = True, shared: SharedReads | None = None
) -> dict[int, Reading]:
    """Watch id -> its figure now, for watches of both kinds."""
    price = [watch for watch in watches if watch.kind == WatchKind.PRICE]
    ranking = [watch for watch in watches if watch.kind == WatchKind.RANKING]
    return {
        **price_readings(watches=price, shared=shared),
        **ranking_readings(watches=ranking, fresh=fresh, shared=shared),
    }


def watch_preview(*, fields: dict[str, Any]) -> Reading:
    """The figure a watch with these fields (``watch_spec_check``'s) would follow now; the cached
    ranking of the current data version serves (the page that linked here has just read it)."""
    watch = Watch(**fields)
    reading = watch_readings(watches=[watch], fresh=False).get(watch.pk, NOTHING)
    if reading.offer_id is not None and not reading.cause:
        reading = replace(reading, cause=offer_cause(offer_id=reading.offer_id))
    return reading
