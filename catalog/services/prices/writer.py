"""The one writer that turns parsed rows into offers, snapshots and append-only price history.

Order never matters: importing the same files in any order leaves the same current state.

* An offer's current price is the price of its newest sighting; an older snapshot never
  replaces it. The history holds the change points: each price with the first time it was seen
  after another price. An older snapshot imported later is put in its place in time: its price
  goes in if it differs from the one before it, and a later change point with the same price is
  then no longer a change (it is removed, and "current since" moves back to the older time). A
  price older than the newest sighting but newer than the last change point is history, and the
  current price is recorded again at the newest sighting, where it is known to hold. This gives
  the same prices, dates and histories in either order where the snapshots of one offer
  interleave once (a bundled file and a newer one); with more interleaved snapshots the
  re-recorded current price carries the newest sighting's time, which is a bound, not the first.
* ``last_seen`` is the newest snapshot that listed the offer, ``first_seen`` the oldest; the
  offer's details (GPU, counts, extra) come from the newest snapshot.
* ``available`` means "in the newest snapshot of its feed": a newer snapshot without the offer
  marks it unavailable (feeds whose files are complete listings: SkyPilot, FSDL, the tracker;
  curated rows stand alone); an offer seen only in an older snapshot than the newest one known
  is stored unavailable.

Every (feed, provider, observation time) is recorded as a ``PriceSnapshot`` with how its time
is known (a timestamp in the source, a commit or publication date, the fetch time, an estimate).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Max

from catalog.matching import GpuMatcher
from catalog.models import ImportRun, Offer, PriceObservation, PriceSnapshot, Provider, UnmatchedGpuName
from catalog.models.gpus import alias_normalise
from catalog.services.prices.common import (
    FileSummary,
    OfferRow,
    ParsedFile,
    RowError,
    RowRejection,
    offer_row_problem,
    per_gpu,
)
from catalog.services.prices.currency import NoExchangeRate, RateBook
from catalog.services.prices.derive import gpu_price_days_derive
from catalog.services.prices.linking import GpuLink, GpuLinker
from catalog.services.prices.providers import providers_get_or_create
from gpuatlas.progress import Progress, no_progress

OLDER_PRICE = "price older than the offer's newest observation (kept in history only)"
DUPLICATE = "duplicate row (same offer and price as an earlier row)"
# A source clock a little ahead of ours is tolerated; a date further ahead is a typo.
FUTURE_TOLERANCE = dt.timedelta(days=1)

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
    "first_seen",
    "last_seen",
    "source",
    "extra",
    "variant_ambiguous",
    "current_price_per_hour",
    "current_currency",
    "current_price_per_gpu_hour_usd",
    "current_observed_at",
]

Key = tuple[Any, ...]


@dataclass
class _Pending:
    offers_to_create: list[Offer] = field(default_factory=list)
    dirty: dict[int, Offer] = field(default_factory=dict)
    observations: list[tuple[Offer, PriceObservation]] = field(default_factory=list)
    # (offer, observation) pairs older than the offer's newest price: checked against history.
    older: list[tuple[Offer, PriceObservation]] = field(default_factory=list)
    changed: set[int] = field(default_factory=set)  # existing offers whose details or price changed
    # GPUs whose price history this file changes: of the observations written or removed, and
    # both GPUs of an offer linked to another one (its history moves with it).
    history_gpus: set[int] = field(default_factory=set)

    def mark(self, offer: Offer) -> None:
        if offer.pk is not None:
            self.dirty[offer.pk] = offer


@dataclass
class _Context:
    """What writing one file needs and gathers, from its first row to its last snapshot."""

    feed: str
    providers: dict[str, Provider]
    existing: dict[Key, Offer]
    pending: _Pending
    linker: GpuLinker
    rates: RateBook
    summary: FileSummary
    import_run: ImportRun | None
    provider_ids: dict[str, int] = field(default_factory=dict)
    # The newest snapshot time of the feed, moved forward as this file's newer snapshots are written.
    feed_newest: dt.datetime | None = None
    known_snapshots: set[tuple[int, dt.datetime]] = field(default_factory=set)
    snapshots: list[PriceSnapshot] = field(default_factory=list)
    unmatched_rows: dict[str, tuple[str, float | None]] = field(default_factory=dict)
    # GPU name -> the offers listing it, so a name on many rows of one offer counts once.
    unmatched_offers: dict[str, set[Key]] = field(default_factory=dict)
    ambiguous_offers: dict[str, set[Key]] = field(default_factory=dict)


def snapshot_write(
    *,
    parsed: ParsedFile,
    observed_at: dt.datetime,
    import_run: ImportRun | None,
    matcher: GpuMatcher | None = None,
    rates: RateBook | None = None,
    summary: FileSummary,
    progress: Progress = no_progress,
    date_basis: str = PriceSnapshot.DateBasis.FETCHED,
    date_note: str = "",
) -> FileSummary:
    """Write one parsed file as one or more snapshots (rows grouped by their observation time).

    ``observed_at``/``date_basis``/``date_note`` date the rows that carry no time of their own.
    Call inside a transaction: it issues bulk writes and assumes nothing else writes the
    same offers meanwhile (imports of one feed run one at a time).
    """
    linker = GpuLinker.load(matcher)
    rates = rates or RateBook.load()
    storable = _storable_rows(parsed=parsed, observed_at=observed_at, summary=summary)
    context = _context_load(
        parsed=parsed, rows=storable, linker=linker, rates=rates, summary=summary, import_run=import_run
    )
    groups: dict[tuple[dt.datetime, bool], list[OfferRow]] = {}
    for row in storable:
        groups.setdefault((row.observed_at or observed_at, row.observed_at is not None), []).append(row)
    for when, own_time in sorted(groups):
        rows = groups[(when, own_time)]
        seen, listed = _snapshot_rows_write(rows=rows, when=when, parsed=parsed, context=context, progress=progress)
        if context.feed_newest is None or when > context.feed_newest:
            if parsed.complete_snapshots:
                _withdraw_missing(context, when, seen)
            context.feed_newest = when
        basis = PriceSnapshot.DateBasis.SOURCE if own_time else date_basis
        note = "" if own_time else date_note[:500]
        _snapshots_add(listed=listed, when=when, basis=basis, note=note, context=context)

    if parsed.complete_snapshots:
        _unavailable_since_settle(context)
    summary.unmatched = {name: len(keys) for name, keys in context.unmatched_offers.items()}
    summary.ambiguous = {name: len(keys) for name, keys in context.ambiguous_offers.items()}
    _flush(context.pending, summary)
    gpu_price_days_derive(gpu_ids=context.pending.history_gpus)
    PriceSnapshot.objects.bulk_create(context.snapshots, batch_size=500)
    _record_unmatched(context.unmatched_rows, parsed.feed, summary)
    return summary


def _storable_rows(*, parsed: ParsedFile, observed_at: dt.datetime, summary: FileSummary) -> list[OfferRow]:
    """The parsed rows fit to store; the others go to the summary as rejections, with the
    parser's own rejections, skips and notes."""
    summary.rows_read = parsed.rows_read
    summary.rejected.extend(parsed.rejected)
    storable = []
    latest_allowed = dt.datetime.now(tz=dt.UTC) + FUTURE_TOLERANCE
    for candidate in parsed.rows:
        problem = offer_row_problem(candidate)
        when = candidate.observed_at or observed_at
        if problem is None and when > latest_allowed:
            problem = f"observed at {when:%Y-%m-%d %H:%M}, which is in the future"
        if problem:
            summary.rejected.append(RowRejection(candidate.line, problem))
        else:
            storable.append(candidate)
    for reason, count in parsed.skipped.items():
        summary.skipped[reason] = summary.skipped.get(reason, 0) + count
    summary.notes.extend(parsed.notes)
    return storable


def _context_load(
    *,
    parsed: ParsedFile,
    rows: list[OfferRow],
    linker: GpuLinker,
    rates: RateBook,
    summary: FileSummary,
    import_run: ImportRun | None,
) -> _Context:
    """The providers of ``rows`` (created if new), their stored offers and the feed's known snapshots."""
    names = {r.provider: r.extra.get("provider_name", r.provider) for r in rows}
    currencies = {r.provider: r.currency for r in rows}
    providers = providers_get_or_create(slugs=names, currency_by_slug=currencies)
    summary.providers = sorted(providers)
    provider_ids = {slug: p.pk for slug, p in providers.items()}
    existing: dict[Key, Offer] = {
        (o.provider_id, o.instance_type, o.region, o.zone, o.is_spot): o
        for o in Offer.objects.filter(provider_id__in=provider_ids.values())
    }
    feed_newest = PriceSnapshot.objects.filter(feed=parsed.feed).aggregate(newest=Max("observed_at"))["newest"]
    known_snapshots = set(
        PriceSnapshot.objects.filter(feed=parsed.feed, provider_id__in=provider_ids.values()).values_list(
            "provider_id", "observed_at"
        )
    )
    return _Context(
        feed=parsed.feed,
        providers=providers,
        existing=existing,
        pending=_Pending(),
        linker=linker,
        rates=rates,
        summary=summary,
        import_run=import_run,
        provider_ids=provider_ids,
        feed_newest=feed_newest,
        known_snapshots=known_snapshots,
    )


def _snapshot_rows_write(
    *, rows: list[OfferRow], when: dt.datetime, parsed: ParsedFile, context: _Context, progress: Progress
) -> tuple[dict[Key, tuple[int, Decimal | None]], dict[int, int]]:
    """Apply the rows of one snapshot (one observation time).

    Returns the offers it lists (key -> first line and price) and how many it lists per provider id.
    """
    summary = context.summary
    seen: dict[Key, tuple[int, Decimal | None]] = {}
    listed: dict[int, int] = {}
    # Rows of a listing are current only in its newest snapshot; curated rows each stand alone.
    feed_newest = context.feed_newest
    is_newest = not parsed.complete_snapshots or feed_newest is None or when >= feed_newest
    for row in progress(rows, len(rows), parsed.feed[-40:]):
        provider_id = context.provider_ids[row.provider]
        key = (provider_id, row.instance_type, row.region, row.zone, row.is_spot)
        if key in seen:
            first_line, first_price = seen[key]
            if first_price == row.price_per_hour:
                summary.skipped[DUPLICATE] = summary.skipped.get(DUPLICATE, 0) + 1
            else:
                summary.rejected.append(
                    RowRejection(row.line, f"same offer as line {first_line} with a different price")
                )
            continue
        try:
            link = _write_row(row, key, when, is_newest, feed_newest, context)
        except RowError as exc:
            summary.rejected.append(RowRejection(row.line, str(exc)))
            continue
        seen[key] = (row.line, row.price_per_hour)
        listed[provider_id] = listed.get(provider_id, 0) + 1
        if link.gpu_id is None:
            context.unmatched_offers.setdefault(row.gpu_name_raw, set()).add(key)
        elif link.ambiguous:
            context.ambiguous_offers.setdefault(row.gpu_name_raw, set()).add(key)
    return seen, listed


def _snapshots_add(*, listed: dict[int, int], when: dt.datetime, basis: str, note: str, context: _Context) -> None:
    """A ``PriceSnapshot`` for each provider listed at ``when`` that has none there yet."""
    for provider_id, count in listed.items():
        if (provider_id, when) in context.known_snapshots:
            continue
        context.known_snapshots.add((provider_id, when))
        context.snapshots.append(
            PriceSnapshot(
                feed=context.feed,
                provider_id=provider_id,
                observed_at=when,
                date_basis=basis,
                date_note=note,
                offers=count,
                import_run=context.import_run,
            )
        )
        context.summary.snapshots.append(f"{when:%Y-%m-%d %H:%M} ({basis})")


def _withdraw_missing(context: _Context, when: dt.datetime, seen: dict[Key, Any]) -> None:
    """Offers of the feed that a newer snapshot of it no longer lists: unavailable."""
    for key, offer in context.existing.items():
        if offer.source == context.feed and key not in seen and offer.available and offer.last_seen < when:
            offer.available = False
            offer.unavailable_since = when
            context.pending.mark(offer)
            if offer.pk is not None:
                context.pending.changed.add(offer.pk)
            context.summary.offers_marked_unavailable += 1


def _unavailable_since_settle(context: _Context) -> None:
    """Each withdrawn offer of the feed is unavailable since the feed's first snapshot after its
    last sighting: a fact of the snapshots, whichever order their files were imported in (an older
    snapshot imported after a newer one moves the date back to itself). Offers the source itself
    listed as unavailable keep the time of that listing."""
    times = set(PriceSnapshot.objects.filter(feed=context.feed).values_list("observed_at", flat=True))
    times.update(snapshot.observed_at for snapshot in context.snapshots)
    ordered = sorted(times)
    for offer in context.existing.values():
        if offer.source != context.feed or offer.available or offer.extra.get("listed_unavailable"):
            continue
        since = next((t for t in ordered if t > offer.last_seen), None)
        if since is not None and since != offer.unavailable_since:
            offer.unavailable_since = since
            context.pending.mark(offer)
            if offer.pk is not None:
                context.pending.changed.add(offer.pk)


def _write_row(
    row: OfferRow, key: Key, when: dt.datetime, is_newest: bool, newest: dt.datetime | None, context: _Context
) -> GpuLink:
    """Apply one row; returns its GPU link."""
    summary, pending = context.summary, context.pending
    price_usd: Decimal | None = None
    price_gpu: Decimal | None = None
    if row.price_per_hour is not None and row.price_separable:
        price_gpu = per_gpu(row.price_per_hour, row.gpu_count)
        if price_gpu <= 0:
            raise RowError(f"price per GPU-hour rounds to zero ({row.price_per_hour} / {row.gpu_count:g} GPUs)")
        try:
            price_usd = context.rates.to_usd(price_gpu, row.currency, when.date())
        except NoExchangeRate as exc:
            raise RowError(str(exc)) from None

    link = context.linker.link(row)
    if link.gpu_id is None:
        context.unmatched_rows.setdefault(alias_normalise(row.gpu_name_raw), (row.gpu_name_raw, link.memory_gib))
    offer = context.existing.get(key)
    created = offer is None
    before = None if offer is None else _fields(offer)
    if offer is None:
        offer = Offer(
            provider=context.providers[row.provider],
            instance_type=row.instance_type,
            region=row.region,
            zone=row.zone,
            is_spot=row.is_spot,
            first_seen=when,
            last_seen=when,
            available=False,
        )
        context.existing[key] = offer
        pending.offers_to_create.append(offer)
        summary.offers_created += 1
    elif when < offer.first_seen:
        offer.first_seen = when
        pending.mark(offer)

    if created or when >= offer.last_seen:
        _describe(offer, row, link, context)
        offer.last_seen = when
        listed_now = is_newest and not row.unavailable
        if listed_now:
            offer.available, offer.unavailable_since = True, None
        elif offer.available or created:
            offer.available = False
            offer.unavailable_since = when if row.unavailable else newest
        pending.mark(offer)
    if row.unavailable:
        summary.listed_unavailable += 1
    if link.memory_mismatch:
        summary.memory_mismatches[row.gpu_name_raw] = link.memory_mismatch
    if not row.price_separable:
        summary.not_separable += 1
    if price_gpu is not None and price_usd is not None and row.price_per_hour is not None:
        _price_write(offer, row, when, price_gpu, price_usd, context)
    if before is not None and offer.pk is not None and _fields(offer) != before:
        pending.changed.add(offer.pk)
    return link


def _fields(offer: Offer) -> tuple[Any, ...]:
    """What an update changes beyond "seen again"."""
    return (
        offer.gpu_id,
        offer.variant_ambiguous,
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


def _describe(offer: Offer, row: OfferRow, link: GpuLink, context: _Context) -> None:
    """The offer's details as its newest snapshot gives them."""
    extra = dict(row.extra)
    extra.pop("provider_name", None)
    if link.memory_mismatch:
        extra["memory_mismatch"] = link.memory_mismatch
    if link.ambiguous:
        extra["variant_candidates"] = list(link.candidates)
    if link.how:
        extra["gpu_link"] = link.how
    if row.unavailable:
        extra["listed_unavailable"] = True
    if not row.price_separable and row.price_per_hour is not None:
        extra["host_price_per_hour"] = str(row.price_per_hour)
        extra["host_price_currency"] = row.currency
    if offer.pk is not None and offer.gpu_id != link.gpu_id:
        context.pending.history_gpus.update(g for g in (offer.gpu_id, link.gpu_id) if g is not None)
    offer.gpu_id = link.gpu_id
    offer.variant_ambiguous = link.ambiguous
    offer.gpu_name_raw = row.gpu_name_raw[:200]
    offer.gpu_memory_gib_raw = link.memory_gib
    offer.gpu_count = row.gpu_count
    offer.vcpus = row.vcpus
    offer.ram_gib = row.ram_gib
    offer.price_separable = row.price_separable
    offer.source = context.feed
    offer.extra = extra


def _price_write(
    offer: Offer, row: OfferRow, when: dt.datetime, price_gpu: Decimal, price_usd: Decimal, context: _Context
) -> None:
    assert row.price_per_hour is not None
    observation = PriceObservation(
        observed_at=when,
        price_per_hour=row.price_per_hour,
        currency=row.currency,
        price_per_gpu_hour=price_gpu,
        price_per_gpu_hour_usd=price_usd,
        import_run=context.import_run,
    )
    newest = offer.current_observed_at
    same = offer.current_price_per_hour == row.price_per_hour and offer.current_currency == row.currency
    current, current_usd = offer.current_price_per_hour, offer.current_price_per_gpu_hour_usd
    if newest is not None and newest < when < offer.last_seen and not same and current and current_usd:
        # Seen between the last change point and a newer sighting at the current price: history.
        context.pending.older.append((offer, observation))
        current_again = PriceObservation(
            observed_at=offer.last_seen,
            price_per_hour=current,
            currency=offer.current_currency,
            price_per_gpu_hour=per_gpu(current, offer.gpu_count),
            price_per_gpu_hour_usd=current_usd,
            import_run=context.import_run,
        )
        context.pending.older.append((offer, current_again))
        offer.current_observed_at = offer.last_seen
        context.pending.mark(offer)
        context.summary.skipped[OLDER_PRICE] = context.summary.skipped.get(OLDER_PRICE, 0) + 1
    elif newest is None or (when > newest and not same):
        context.pending.observations.append((offer, observation))
        offer.current_price_per_hour = row.price_per_hour
        offer.current_currency = row.currency
        offer.current_price_per_gpu_hour_usd = price_usd
        offer.current_observed_at = when
        context.pending.mark(offer)
    elif when < newest:
        context.pending.older.append((offer, observation))
        context.summary.skipped[OLDER_PRICE] = context.summary.skipped.get(OLDER_PRICE, 0) + 1
    elif when == newest and not same:
        raise RowError(f"a different price for this offer at {when:%Y-%m-%d %H:%M} is already stored")


def _older_observations_to_add(
    older: list[tuple[Offer, PriceObservation]], pending: _Pending
) -> tuple[list[tuple[Offer, PriceObservation]], list[tuple[int, dt.datetime]]]:
    """Older prices that differ from the history's price in effect at their time, and the later
    change points (offer id, time) they make redundant (the same price right after them)."""
    if not older:
        return [], []
    history: dict[int, list[tuple[dt.datetime, Decimal, str]]] = {}
    ids = {offer.pk for offer, _ in older if offer.pk is not None}
    for offer_id, at, price, currency in (
        PriceObservation.objects.filter(offer_id__in=ids)
        .order_by("offer_id", "observed_at")
        .values_list("offer_id", "observed_at", "price_per_hour", "currency")
    ):
        history.setdefault(offer_id, []).append((at, price, currency))
    for offer, observation in pending.observations:  # this file's newer change points
        if offer.pk is not None:
            history.setdefault(offer.pk, []).append(
                (observation.observed_at, observation.price_per_hour, observation.currency)
            )
    chosen: list[tuple[Offer, PriceObservation]] = []
    redundant: list[tuple[int, dt.datetime]] = []
    for offer, observation in sorted(older, key=lambda pair: pair[1].observed_at):
        if offer.pk is None:
            continue
        series = sorted(history.setdefault(offer.pk, []))
        key = (observation.price_per_hour, observation.currency)
        if any(at == observation.observed_at for at, _, _ in series):
            continue
        before = [(at, price, currency) for at, price, currency in series if at < observation.observed_at]
        after = [(at, price, currency) for at, price, currency in series if at > observation.observed_at]
        if before and (before[-1][1], before[-1][2]) == key:
            continue
        if after and (after[0][1], after[0][2]) == key:
            # The later point is no longer a change: this older one replaces it.
            series.remove(after[0])
            redundant.append((offer.pk, after[0][0]))
            chosen = [(o, obs) for o, obs in chosen if not (o.pk == offer.pk and obs.observed_at == after[0][0])]
            if offer.current_observed_at == after[0][0]:
                offer.current_observed_at = observation.observed_at
                pending.mark(offer)
        series.append((observation.observed_at, observation.price_per_hour, observation.currency))
        history[offer.pk] = sorted(series)
        chosen.append((offer, observation))
    return chosen, redundant


def _flush(pending: _Pending, summary: FileSummary) -> None:
    Offer.objects.bulk_create(pending.offers_to_create, batch_size=1000)
    older, redundant = _older_observations_to_add(pending.older, pending)
    created = {id(o) for o in pending.offers_to_create}
    dirty = [o for o in pending.dirty.values() if id(o) not in created]
    if dirty:
        Offer.objects.bulk_update(dirty, _OFFER_UPDATE_FIELDS, batch_size=500)
    gone = {(offer_id, at) for offer_id, at in redundant}
    observations = []
    for offer, observation in [*pending.observations, *older]:
        if offer.gpu_id is not None:
            pending.history_gpus.add(offer.gpu_id)
        if (offer.pk, observation.observed_at) in gone:
            continue
        observation.offer_id = offer.pk
        observations.append(observation)
    for offer_id, at in sorted(gone):
        PriceObservation.objects.filter(offer_id=offer_id, observed_at=at).delete()
    PriceObservation.objects.bulk_create(observations, batch_size=1000)
    summary.observations_added += len(observations)
    summary.offers_updated += len(pending.changed)


def _record_unmatched(unmatched_rows: dict[str, tuple[str, float | None]], context: str, summary: FileSummary) -> None:
    if not unmatched_rows:
        return
    known = {u.normalised: u for u in UnmatchedGpuName.objects.filter(normalised__in=list(unmatched_rows))}
    waiting: dict[str, int] = {}
    for raw in Offer.objects.unmatched().values_list("gpu_name_raw", flat=True):
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
