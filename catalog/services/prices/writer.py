"""The one writer that turns parsed rows into offers and append-only price history."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from catalog.matching import GpuMatcher
from catalog.models import ImportRun, Offer, PriceObservation, Provider, UnmatchedGpuName
from catalog.models.gpus import alias_normalise
from catalog.services.prices.common import (
    FileSummary,
    OfferRow,
    ParsedFile,
    Progress,
    RowError,
    RowRejection,
    no_progress,
    offer_row_problem,
    per_gpu,
    providers_get_or_create,
)
from catalog.services.prices.currency import NoExchangeRate, RateBook
from catalog.services.prices.linking import GpuLinker


@dataclass
class _Pending:
    offers_to_create: list[Offer] = field(default_factory=list)
    dirty: dict[int, Offer] = field(default_factory=dict)
    observations: list[tuple[Offer, PriceObservation]] = field(default_factory=list)
    updated_ids: set[int] = field(default_factory=set)
    # Offers whose only change is "seen again": one UPDATE per snapshot time, not a bulk_update.
    touched: dict[dt.datetime, set[int]] = field(default_factory=dict)

    def touch(self, offer: Offer, when: dt.datetime) -> None:
        if offer.pk is not None:
            self.touched.setdefault(when, set()).add(offer.pk)


_OFFER_UPDATE_FIELDS = [
    "gpu",
    "gpu_name_raw",
    "gpu_memory_gib_raw",
    "gpu_count",
    "vcpus",
    "ram_gib",
    "price_separable",
    "available",
    "unavailable_since",
    "last_seen",
    "source",
    "extra",
    "current_price_per_hour",
    "current_currency",
    "current_price_per_gpu_hour_usd",
    "current_observed_at",
]


def snapshot_write(
    *,
    parsed: ParsedFile,
    observed_at: dt.datetime,
    import_run: ImportRun | None,
    matcher: GpuMatcher | None = None,
    rates: RateBook | None = None,
    summary: FileSummary,
    progress: Progress = no_progress,
) -> FileSummary:
    """Write one parsed file as one or more snapshots (rows grouped by their observation time).

    Call inside a transaction: it issues bulk writes and assumes nothing else writes the
    same offers meanwhile (imports of one feed run one at a time).
    """
    linker = GpuLinker(matcher or GpuMatcher.load())
    rates = rates or RateBook.load()
    summary.rows_read = parsed.rows_read
    summary.rejected.extend(parsed.rejected)
    storable = []
    for candidate in parsed.rows:
        problem = offer_row_problem(candidate)
        if problem:
            summary.rejected.append(RowRejection(candidate.line, problem))
        else:
            storable.append(candidate)
    parsed.rows = storable
    for reason, count in parsed.skipped.items():
        summary.skipped[reason] = summary.skipped.get(reason, 0) + count
    summary.notes.extend(parsed.notes)

    names = {r.provider: r.extra.get("provider_name", r.provider) for r in parsed.rows}
    currencies = {r.provider: r.currency for r in parsed.rows}
    providers = providers_get_or_create(slugs=names, currency_by_slug=currencies)
    summary.providers = sorted(providers)
    provider_ids = {slug: p.pk for slug, p in providers.items()}
    existing: dict[tuple[Any, ...], Offer] = {
        (o.provider_id, o.instance_type, o.region, o.zone, o.is_spot): o
        for o in Offer.objects.filter(provider_id__in=provider_ids.values())
    }
    feed_offers = [o for o in existing.values() if o.source == parsed.feed]
    pending = _Pending()
    unmatched_rows: dict[str, tuple[str, float | None]] = {}
    unmatched_offers: dict[str, set[tuple[Any, ...]]] = {}

    groups: dict[dt.datetime, list[OfferRow]] = {}
    for row in parsed.rows:
        groups.setdefault(row.observed_at or observed_at, []).append(row)
    for when in sorted(groups):
        seen: dict[tuple[Any, ...], tuple[int, Decimal | None]] = {}
        rows = groups[when]
        for row in progress(rows, len(rows), parsed.feed[-40:]):
            key = (provider_ids[row.provider], row.instance_type, row.region, row.zone, row.is_spot)
            if key in seen:
                first_line, first_price = seen[key]
                if first_price == row.price_per_hour:
                    summary.skipped["duplicate row (same offer and price as an earlier row)"] = (
                        summary.skipped.get("duplicate row (same offer and price as an earlier row)", 0) + 1
                    )
                else:
                    summary.rejected.append(
                        RowRejection(row.line, f"same offer as line {first_line} with a different price")
                    )
                continue
            try:
                gpu_matched = _write_row(
                    row,
                    key,
                    when,
                    parsed.feed,
                    providers[row.provider],
                    existing,
                    pending,
                    linker,
                    rates,
                    summary,
                    import_run,
                    unmatched_rows,
                )
            except RowError as exc:
                summary.rejected.append(RowRejection(row.line, str(exc)))
                continue
            seen[key] = (row.line, row.price_per_hour)
            if not gpu_matched and not row.touch_only:
                unmatched_offers.setdefault(row.gpu_name_raw, set()).add(key)
        for offer in feed_offers:
            ident = (offer.provider_id, offer.instance_type, offer.region, offer.zone, offer.is_spot)
            if ident not in seen and offer.available and offer.last_seen < when:
                offer.available = False
                offer.unavailable_since = when
                _mark_dirty(offer, pending)
                summary.offers_marked_unavailable += 1
        feed_offers = [o for o in existing.values() if o.source == parsed.feed]

    summary.unmatched = {name: len(keys) for name, keys in unmatched_offers.items()}
    _flush(pending, summary)
    _record_unmatched(unmatched_rows, parsed.feed, summary)
    return summary


def _mark_dirty(offer: Offer, pending: _Pending) -> None:
    if offer.pk is not None:
        pending.dirty[offer.pk] = offer
        pending.updated_ids.add(offer.pk)


def _write_row(
    row: OfferRow,
    key: tuple[Any, ...],
    when: dt.datetime,
    feed: str,
    provider: Provider,
    existing: dict[tuple[Any, ...], Offer],
    pending: _Pending,
    linker: GpuLinker,
    rates: RateBook,
    summary: FileSummary,
    import_run: ImportRun | None,
    unmatched_rows: dict[str, tuple[str, float | None]],
) -> bool:
    """Apply one row; returns whether its GPU is known."""
    offer = existing.get(key)
    if row.touch_only:
        if offer is not None and when > offer.last_seen:
            offer.last_seen = when
            pending.touch(offer, when)
        return True
    price_usd: Decimal | None = None
    price_gpu: Decimal | None = None
    if row.price_per_hour is not None and row.price_separable:
        price_gpu = per_gpu(row.price_per_hour, row.gpu_count)
        if price_gpu <= 0:
            raise RowError(f"price per GPU-hour rounds to zero ({row.price_per_hour} / {row.gpu_count:g} GPUs)")
        try:
            price_usd = rates.to_usd(price_gpu, row.currency, when.date())
        except NoExchangeRate as exc:
            raise RowError(str(exc)) from None

    link = linker.link(row)
    if link.gpu_id is None:
        normalised = alias_normalise(row.gpu_name_raw)
        unmatched_rows.setdefault(normalised, (row.gpu_name_raw, link.memory_gib))
    extra = dict(row.extra)
    extra.pop("provider_name", None)
    if link.memory_mismatch:
        extra["memory_mismatch"] = link.memory_mismatch
        summary.memory_mismatches[row.gpu_name_raw] = link.memory_mismatch
    if not row.price_separable:
        summary.not_separable += 1
        if row.price_per_hour is not None:
            extra["host_price_per_hour"] = str(row.price_per_hour)
            extra["host_price_currency"] = row.currency

    created = offer is None
    if offer is None:
        offer = Offer(
            provider=provider,
            instance_type=row.instance_type,
            region=row.region,
            zone=row.zone,
            is_spot=row.is_spot,
            first_seen=when,
            last_seen=when,
        )
        existing[key] = offer
        pending.offers_to_create.append(offer)
        summary.offers_created += 1
    before = _snapshot_fields(offer)
    last_seen_before = offer.last_seen
    offer.gpu_id = (
        link.gpu_id
        if link.gpu_id is not None
        else (offer.gpu_id if not created and offer.gpu_name_raw == row.gpu_name_raw else None)
    )
    offer.gpu_name_raw = row.gpu_name_raw[:200]
    offer.gpu_memory_gib_raw = link.memory_gib
    offer.gpu_count = row.gpu_count
    offer.vcpus = row.vcpus
    offer.ram_gib = row.ram_gib
    offer.price_separable = row.price_separable
    offer.source = feed
    offer.extra = extra
    if when > offer.last_seen:
        offer.last_seen = when
    if row.unavailable:
        summary.listed_unavailable += 1
        if offer.available or created:
            offer.available = False
            offer.unavailable_since = when
    elif when >= offer.last_seen or created:
        offer.available = True
        offer.unavailable_since = None

    if price_gpu is not None and price_usd is not None and row.price_per_hour is not None:
        newest = offer.current_observed_at
        changed = offer.current_price_per_hour != row.price_per_hour or offer.current_currency != row.currency
        if newest is None or (when > newest and changed):
            observation = PriceObservation(
                observed_at=when,
                price_per_hour=row.price_per_hour,
                currency=row.currency,
                price_per_gpu_hour=price_gpu,
                price_per_gpu_hour_usd=price_usd,
                import_run=import_run,
            )
            pending.observations.append((offer, observation))
            offer.current_price_per_hour = row.price_per_hour
            offer.current_currency = row.currency
            offer.current_price_per_gpu_hour_usd = price_usd
            offer.current_observed_at = when
        elif when < newest and changed:
            summary.skipped["price older than the offer's newest observation (kept out of history)"] = (
                summary.skipped.get("price older than the offer's newest observation (kept out of history)", 0) + 1
            )
    if not created and _snapshot_fields(offer) != before:
        _mark_dirty(offer, pending)
    elif not created and offer.last_seen != last_seen_before:
        pending.touch(offer, offer.last_seen)  # seen again, unchanged: not counted as an update
    return link.gpu_id is not None


def _snapshot_fields(offer: Offer) -> tuple[Any, ...]:
    return (
        offer.gpu_id,
        offer.gpu_name_raw,
        offer.gpu_count,
        offer.vcpus,
        offer.ram_gib,
        offer.price_separable,
        offer.available,
        offer.current_price_per_hour,
        offer.current_currency,
        offer.extra,
    )


def _flush(pending: _Pending, summary: FileSummary) -> None:
    Offer.objects.bulk_create(pending.offers_to_create, batch_size=1000)
    for when, ids in sorted(pending.touched.items()):
        Offer.objects.filter(pk__in=ids - pending.dirty.keys()).update(last_seen=when)
    if pending.dirty:
        Offer.objects.bulk_update(list(pending.dirty.values()), _OFFER_UPDATE_FIELDS, batch_size=500)
    observations = []
    for offer, observation in pending.observations:
        observation.offer_id = offer.pk
        observations.append(observation)
    PriceObservation.objects.bulk_create(observations, batch_size=1000)
    summary.observations_added += len(observations)
    summary.offers_updated += len(pending.updated_ids)


def _record_unmatched(unmatched_rows: dict[str, tuple[str, float | None]], context: str, summary: FileSummary) -> None:
    if not unmatched_rows:
        return
    known = {u.normalised: u for u in UnmatchedGpuName.objects.filter(normalised__in=list(unmatched_rows))}
    waiting: dict[str, int] = {}
    for raw in Offer.objects.filter(gpu__isnull=True).values_list("gpu_name_raw", flat=True):
        norm = alias_normalise(raw)
        if norm in unmatched_rows:
            waiting[norm] = waiting.get(norm, 0) + 1
    for normalised, (name, memory) in unmatched_rows.items():
        row = known.get(normalised)
        if row is None:
            row, created = UnmatchedGpuName.objects.get_or_create(
                normalised=normalised[:200],
                defaults={
                    "name": name[:200],
                    "context": context[:200],
                    "memory_gib": memory,
                    "occurrences": max(waiting.get(normalised, 0), 1),
                },
            )
            if created:
                continue
        row.occurrences = max(waiting.get(normalised, 0), 1)
        row.context = context[:200]
        if memory is not None:
            row.memory_gib = memory
        row.save(update_fields=["occurrences", "context", "memory_gib", "last_seen"])
