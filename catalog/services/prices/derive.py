"""Prices derived from the current offers, stored after every change of the offers.

Two facts follow from the offers and are written here, in the caller's transaction, once per
price import (``importer``) and per curator's offer mapping (``mapping``):

* ``Offer.placeholder``: why a listed price is no price. The provider's own "unavailable"
  marker (SkyPilot's 700.0, flagged by the writer) or the *same round price for unrelated GPUs*:
  one provider listing one whole-dollar price per GPU-hour for GPUs of two or more families
  (H100 and H200 at 1.00) where that price is below ``PLACEHOLDER_SHARE`` of the other
  providers' typical price for one of them. A real price list that happens to price two GPUs
  alike (Oracle's 10.00 for H100 and H200) is not below the market and stays.
* ``GpuPriceDay``: each GPU's lowest price per day and provider, the GPU page's price history,
  from the observations (``gpu_price_days_derive``, for the GPUs whose observations or offers a
  price import or a mapping changed).
* ``GpuPrice``: each GPU's price by rule (typical, cheapest, spot) over machines of any size
  (``gpu_count`` 0) and of each whole GPU count, with the providers it is taken from. The rule
  is ``price_figures`` (docs/prices-rules.md); ``catalog.selectors.prices`` reads the rows, and
  applies the same function to the offers of a region when a page filters by one.

``gpu_prices_derive`` returns the ids of the GPUs whose stored prices changed: what a price
watch or a cache needs to know after an import. ``gpu_prices_rebuild`` (``manage.py
rebuild_prices``) derives them again outside an import.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, NamedTuple

from django.db import transaction
from django.db.models import Count, Max, Min, Q
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.translation import gettext_noop

from catalog.models import Gpu, GpuPrice, GpuPriceDay, GpuPriceGap, Offer, PriceObservation, PriceSnapshot, Provider
from gpuatlas.data_version import data_version_bump

PLACEHOLDER_SHARE = Decimal("0.5")
# Stored on the offer in English; pages translate it when they show it ({% translate o.placeholder %}).
MARKER_PLACEHOLDER = gettext_noop("the catalogue's own marker for a machine without a price (700.0: unavailable)")
# One sentence for every offer the round-price rule flags, so that pages can translate it; the
# offer's own row (GPU, price) on the GPU page and the health page says which GPU and what price.
SAME_ROUND_PRICE_PLACEHOLDER = gettext_noop(
    "one provider's same round price for GPUs of unrelated families, below half the other providers' typical price"
)
RULES = (GpuPrice.Rule.TYPICAL, GpuPrice.Rule.CHEAPEST, GpuPrice.Rule.SPOT)


class OfferFact(NamedTuple):
    """What the price rule reads of one current offer (a tuple: built once per offer, by the
    tens of thousands at every import)."""

    offer_id: int
    gpu_id: int
    provider_id: int
    provider_name: str
    provider_slug: str
    provider_kind: str
    instance_type: str
    region: str
    gpu_count: float
    is_spot: bool
    source: str
    last_seen: dt.datetime
    price: Decimal


@dataclass(frozen=True)
class PriceFigure:
    """One GPU's price by one rule over one set of offers, with the offers it is taken from."""

    gpu_id: int
    gpu_count: int
    rule: str
    price: Decimal
    minimum: Decimal
    typical: Decimal
    maximum: Decimal
    providers: int
    offers: int
    single_listing: bool
    credited: OfferFact  # the middle offer, the cheaper of the middle two, or the cheapest
    between: tuple[str, ...]  # the two providers a typical price is the mean of
    cheapest_of_provider: tuple[OfferFact, ...]  # by price, then provider slug


def typical_of(prices: list[Decimal]) -> Decimal:
    """The median of sorted prices; for an even count the mean of the two middle ones (6 places)."""
    middle = len(prices) // 2
    if len(prices) % 2:
        return prices[middle]
    return ((prices[middle - 1] + prices[middle]) / 2).quantize(Decimal("0.000001"))


OFFER_FACT_COLUMNS = (
    "id", "gpu_id", "provider_id", "provider__name", "provider__slug", "provider__kind", "instance_type",
    "region", "gpu_count", "is_spot", "source", "last_seen", "current_price_per_gpu_hour_usd",
)  # fmt: skip


def offer_facts(offers: Any) -> list[OfferFact]:
    """The price rule's view of ``offers`` (a queryset of current, SKU-level offers): one query."""
    return [OfferFact._make(row) for row in offers.order_by().values_list(*OFFER_FACT_COLUMNS)]


def price_figures(facts: Iterable[OfferFact], *, rule: str, by_count: bool = True) -> list[PriceFigure]:
    """Each GPU's figure by ``rule`` over ``facts``: machines of any size, and (``by_count``)
    machines of each whole GPU count. The rule of docs/prices-rules.md, in one place.

    Each provider counts once, with its cheapest offer (ties: the most recently seen, then the
    lowest offer id), so that one provider's many regions cannot move the median; the typical
    price is the median of those (the mean of the middle two for an even count); the cheapest
    is the lowest of them. Independent of the order of ``facts``.
    """
    spot = rule == GpuPrice.Rule.SPOT
    groups: dict[tuple[int, int], list[OfferFact]] = defaultdict(list)
    for fact in facts:
        if fact.is_spot != spot:
            continue
        groups[(fact.gpu_id, 0)].append(fact)
        if by_count and fact.gpu_count >= 1 and float(fact.gpu_count).is_integer():
            groups[(fact.gpu_id, int(fact.gpu_count))].append(fact)
    return [_figure(gpu_id, count, rule, group) for (gpu_id, count), group in sorted(groups.items())]


def _figure(gpu_id: int, gpu_count: int, rule: str, offers: list[OfferFact]) -> PriceFigure:
    best: dict[int, OfferFact] = {}
    for fact in offers:
        held = best.get(fact.provider_id)
        if held is None or (fact.price, -fact.last_seen.timestamp(), fact.offer_id) < (
            held.price,
            -held.last_seen.timestamp(),
            held.offer_id,
        ):
            best[fact.provider_id] = fact
    ranked = tuple(sorted(best.values(), key=lambda f: (f.price, f.provider_slug)))
    prices = [f.price for f in ranked]
    typical = typical_of(prices)
    middle = (len(ranked) - 1) // 2
    credited = ranked[0] if rule != GpuPrice.Rule.TYPICAL else ranked[middle]
    between: tuple[str, ...] = ()
    if rule == GpuPrice.Rule.TYPICAL and len(ranked) % 2 == 0:
        between = (ranked[middle].provider_name, ranked[middle + 1].provider_name)
    return PriceFigure(
        gpu_id=gpu_id,
        gpu_count=gpu_count,
        rule=rule,
        price=typical if rule == GpuPrice.Rule.TYPICAL else credited.price,
        minimum=prices[0],
        typical=typical,
        maximum=prices[-1],
        providers=len(ranked),
        offers=len(offers),
        single_listing=len(offers) == 1 and ranked[0].provider_kind == Provider.Kind.MARKETPLACE,
        credited=credited,
        between=between,
        cheapest_of_provider=ranked,
    )


def snapshot_dates_of(facts: Iterable[OfferFact]) -> dict[tuple[str, int, dt.datetime], tuple[str, str]]:
    """(feed, provider id, snapshot time) -> (date basis, note) for the snapshots of ``facts`` (one query)."""
    facts = list(facts)
    if not facts:
        return {}
    rows = PriceSnapshot.objects.filter(
        provider_id__in={f.provider_id for f in facts}, observed_at__gte=min(f.last_seen for f in facts)
    ).values_list("feed", "provider_id", "observed_at", "date_basis", "date_note")
    return {(feed, provider_id, at): (basis, note) for feed, provider_id, at, basis, note in rows}


def offers_placeholder_mark(*, facts: list[OfferFact]) -> set[int]:
    """Set ``Offer.placeholder`` on every offer by the rules above and clear it where they no
    longer hold; returns the ids of the current offers that are placeholders. ``facts``: the
    current, SKU-level offers."""
    # Spot and on-demand offers are judged apart, each against the other providers' offers of
    # its kind: a provider's spot list at one round figure is as much a placeholder as its
    # on-demand list (it would set the cheapest spot price), and a real spot discount on one GPU
    # is not compared with on-demand prices.
    wanted = _same_round_price([f for f in facts if not f.is_spot])
    wanted.update(_same_round_price([f for f in facts if f.is_spot]))
    for offer_id in Offer.objects.filter(extra__listed_unavailable=True).values_list("pk", flat=True):
        wanted[offer_id] = MARKER_PLACEHOLDER
    stored = dict(Offer.objects.placeholders().values_list("pk", "placeholder"))
    for offer_id in stored.keys() - wanted.keys():
        Offer.objects.filter(pk=offer_id).update(placeholder="")
    by_reason: dict[str, list[int]] = defaultdict(list)
    for offer_id, reason in wanted.items():
        if stored.get(offer_id) != reason:
            by_reason[reason].append(offer_id)
    for reason, ids in by_reason.items():
        Offer.objects.filter(pk__in=ids).update(placeholder=reason[:300])
    return {f.offer_id for f in facts if f.offer_id in wanted}


def _same_round_price(facts: list[OfferFact]) -> dict[int, str]:
    """Offer id -> reason, for one provider's identical whole-dollar price on GPUs of several
    families where it is below half the other providers' typical price for one of them."""
    families = dict(Gpu.objects.filter(pk__in={f.gpu_id for f in facts}).values_list("pk", "family"))
    groups: dict[tuple[int, Decimal], list[OfferFact]] = defaultdict(list)
    for fact in facts:
        if fact.price >= 1 and fact.price == fact.price.to_integral_value():
            groups[(fact.provider_id, fact.price)].append(fact)
    cheapest: dict[tuple[int, int], Decimal] = {}
    for fact in facts:
        key = (fact.gpu_id, fact.provider_id)
        cheapest[key] = min(cheapest.get(key, fact.price), fact.price)
    found: dict[int, str] = {}
    for (provider_id, price), group in groups.items():
        gpus = {f.gpu_id for f in group}
        if len({families.get(g) or g for g in gpus}) < 2:
            continue
        below = False
        for gpu_id in gpus:
            others = sorted(p for (g, prov), p in cheapest.items() if g == gpu_id and prov != provider_id)
            if others and price < typical_of(others) * PLACEHOLDER_SHARE:
                below = True
        if below:
            found.update({f.offer_id: SAME_ROUND_PRICE_PLACEHOLDER for f in group})
    return found


def gpu_prices_derive(*, now: dt.datetime | None = None) -> set[int]:
    """Recompute the placeholders and every GPU's ``GpuPrice`` rows from the current offers; write
    only what changed; return the ids of the GPUs whose rows changed (were added, altered or removed)."""
    now = now or timezone.now()
    facts = offer_facts(Offer.objects.current().sku_level())
    placeholders = offers_placeholder_mark(facts=facts)
    facts = [f for f in facts if f.offer_id not in placeholders]
    dates = snapshot_dates_of(facts)
    figures = {(f.rule, f.gpu_count, f.gpu_id): f for rule in RULES for f in price_figures(facts, rule=rule)}
    digests = {key: figure_digest(figure, dates) for key, figure in figures.items()}
    stored = {
        (rule, count, gpu_id): (pk, digest)
        for pk, rule, count, gpu_id, digest in GpuPrice.objects.values_list(
            "pk", "rule", "gpu_count", "gpu_id", "digest"
        )
    }
    records: dict[int, dict[str, Any]] = {}  # one credit per offer, shared by the rows it appears in
    # A changed row is replaced (deleted and written anew): many rows at once are far cheaper to
    # insert than to update field by field, and nothing refers to a row's id.
    rows = [
        gpu_price_row(figure, dates, now, records=records, digest=digests[key])
        for key, figure in figures.items()
        if stored.get(key, (0, ""))[1] != digests[key]
    ]
    replaced = {(row.rule, row.gpu_count, row.gpu_id) for row in rows}
    gone = [pk for key, (pk, _digest) in stored.items() if key not in figures or key in replaced]
    changed = {key[2] for key in stored.keys() - figures.keys()} | {row.gpu_id for row in rows}
    GpuPrice.objects.filter(pk__in=gone).delete()
    GpuPrice.objects.bulk_create(rows, batch_size=1000)
    priced = {gpu_id for rule, count, gpu_id in figures if rule == GpuPrice.Rule.TYPICAL and count == 0}
    _gaps_write(priced=priced, placeholders=placeholders)
    return changed


def gpu_price_days_derive(*, gpu_ids: Iterable[int] | None = None) -> int:
    """Write ``GpuPriceDay`` again from the observations, for ``gpu_ids`` (every GPU when None):
    the lowest price per GPU-hour per UTC day, provider and on-demand or spot. Returns the rows
    written. Reads those GPUs' observations: the cost is on the write, the page reads the days."""
    observations = PriceObservation.objects.filter(offer__gpu__isnull=False)
    stored = GpuPriceDay.objects.all()
    gpus = Gpu.objects.all()
    if gpu_ids is not None:
        ids = sorted(set(gpu_ids))
        if not ids:
            return 0
        observations = observations.filter(offer__gpu_id__in=ids)
        stored = stored.filter(gpu_id__in=ids)
        gpus = gpus.filter(id__in=ids)
    lows = (
        observations.annotate(day=TruncDate("observed_at", tzinfo=dt.UTC))
        .order_by()
        .values("offer__gpu_id", "day", "offer__provider_id", "offer__is_spot")
        .annotate(low=Min("price_per_gpu_hour_usd"))
    )
    with transaction.atomic():
        # Two writers of one GPU's days (two feeds imported at once) take turns: the GPU rows are
        # locked in one order, so the second deletes what the first wrote rather than colliding.
        list(gpus.order_by("id").select_for_update().values_list("id", flat=True))
        rows = [
            GpuPriceDay(
                gpu_id=row["offer__gpu_id"],
                day=row["day"],
                provider_id=row["offer__provider_id"],
                is_spot=row["offer__is_spot"],
                low_usd=row["low"],
            )
            for row in lows.iterator(chunk_size=5000)
        ]
        stored.delete()
        GpuPriceDay.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


@transaction.atomic
def gpu_prices_rebuild() -> set[int]:
    """Derive every stored price again from the offers in the database, outside an import: for a
    database whose offers were written before the stored prices existed, or after a change of the
    rule or of the freshness window. Returns the ids of the GPUs whose prices changed."""
    changed = gpu_prices_derive()
    gpu_price_days_derive()
    data_version_bump()  # cached rankings and GPU pages read these prices and the gaps beside them
    return changed


def _gaps_write(*, priced: set[int], placeholders: set[int]) -> None:
    """``GpuPriceGap``: for each GPU with offers but no typical price, the first reason that holds
    (one grouped query over the offers)."""
    current = Offer.objects.current()
    on_demand_current = Q(pk__in=current.on_demand().values("pk"))
    counts = (
        Offer.objects.filter(gpu__isnull=False)
        .exclude(gpu_id__in=priced)
        .values("gpu_id")
        .annotate(
            offers=Count("id"),
            newest=Max("last_seen"),
            placeholder=Count("id", filter=on_demand_current & Q(pk__in=placeholders, variant_ambiguous=False)),
            spot=Count("id", filter=Q(pk__in=current.spot().sku_level().values("pk"))),
            ambiguous=Count("id", filter=Q(pk__in=current.values("pk"), variant_ambiguous=True)),
            listed=Count("id", filter=Q(pk__in=Offer.objects.listed().values("pk"))),
            available=Count("id", filter=Q(available=True)),
        )
        .order_by()
    )
    gaps = []
    for row in counts:
        reason, offers = _gap_reason(row)
        gaps.append(GpuPriceGap(gpu_id=row["gpu_id"], reason=reason, offers=offers, newest=row["newest"]))
    GpuPriceGap.objects.all().delete()
    GpuPriceGap.objects.bulk_create(gaps, batch_size=1000)


def _gap_reason(row: Mapping[str, Any]) -> tuple[str, int]:
    reasons = GpuPriceGap.Reason
    if row["placeholder"]:
        return reasons.PLACEHOLDER, row["placeholder"]
    if row["spot"]:
        return reasons.SPOT_ONLY, row["spot"]
    if row["ambiguous"]:
        return reasons.AMBIGUOUS, row["ambiguous"]
    if row["listed"]:
        return reasons.STALE, row["listed"]
    if not row["available"]:
        return reasons.WITHDRAWN, row["offers"]
    return reasons.UNPRICED, row["available"]


def figure_digest(figure: PriceFigure, dates: dict[tuple[str, int, dt.datetime], tuple[str, str]]) -> str:
    """A hash of everything a stored row says about ``figure``: equal hashes, equal rows."""

    def offer(fact: OfferFact) -> tuple[Any, ...]:
        basis = dates.get((fact.source, fact.provider_id, fact.last_seen))
        return (fact.offer_id, fact.provider_name, str(fact.price), fact.last_seen.timestamp(), basis)

    credits = figure.cheapest_of_provider if figure.gpu_count == 0 else ()
    parts = (
        str(figure.price), str(figure.minimum), str(figure.typical), str(figure.maximum), figure.providers,
        figure.offers, figure.single_listing, figure.between, offer(figure.credited), figure.credited.instance_type,
        figure.credited.region, figure.credited.gpu_count, figure.credited.source, tuple(offer(f) for f in credits),
    )  # fmt: skip
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def gpu_price_row(
    figure: PriceFigure,
    dates: dict[tuple[str, int, dt.datetime], tuple[str, str]],
    now: dt.datetime,
    *,
    records: dict[int, dict[str, Any]] | None = None,
    digest: str = "",
    credit_providers: bool | None = None,
) -> GpuPrice:
    # The providers behind a figure are stored where pages show them: machines of any size.
    credit = figure.gpu_count == 0 if credit_providers is None else credit_providers
    credited = figure.credited
    basis, note = dates.get(
        (credited.source, credited.provider_id, credited.last_seen), (PriceSnapshot.DateBasis.ESTIMATE, "")
    )
    return GpuPrice(
        gpu_id=figure.gpu_id,
        gpu_count=figure.gpu_count,
        rule=figure.rule,
        price_usd=figure.price,
        minimum_usd=figure.minimum,
        typical_usd=figure.typical,
        maximum_usd=figure.maximum,
        providers=figure.providers,
        offers=figure.offers,
        single_listing=figure.single_listing,
        offer_id=credited.offer_id,
        provider_name=credited.provider_name[:120],
        provider_slug=credited.provider_slug,
        instance_type=credited.instance_type[:200],
        region=credited.region[:200],
        offer_gpu_count=credited.gpu_count,
        observed_at=credited.last_seen,
        date_basis=basis,
        date_note=note[:500],
        source=credited.source[:500],
        typical_between=list(figure.between),
        contributors=[_record(f, dates, records) for f in figure.cheapest_of_provider] if credit else [],
        digest=digest,
        derived_at=now,
    )


def _record(
    fact: OfferFact,
    dates: dict[tuple[str, int, dt.datetime], tuple[str, str]],
    records: dict[int, dict[str, Any]] | None,
) -> dict[str, Any]:
    if records is None:
        return contributor_record(fact, dates)
    if fact.offer_id not in records:
        records[fact.offer_id] = contributor_record(fact, dates)
    return records[fact.offer_id]


def contributor_record(fact: OfferFact, dates: dict[tuple[str, int, dt.datetime], tuple[str, str]]) -> dict[str, Any]:
    """One provider's cheapest offer as stored beside a price: what the GPU page credits."""
    basis, _note = dates.get((fact.source, fact.provider_id, fact.last_seen), (PriceSnapshot.DateBasis.ESTIMATE, ""))
    return {
        "offer": fact.offer_id,
        "provider": fact.provider_name,
        "slug": fact.provider_slug,
        "kind": fact.provider_kind,
        "price": str(fact.price),
        "instance_type": fact.instance_type,
        "region": fact.region,
        "gpu_count": fact.gpu_count,
        "observed_at": fact.last_seen.isoformat(),
        "date_basis": basis,
    }
