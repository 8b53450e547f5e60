"""Reads over prices: the one price read of the product (rent, purchase, offers of a GPU, history).

Every page, the API's rankings and the fit calculator read prices here:
``gpu_rent_prices`` is what every surface that shows "the price of a GPU" reads (rankings,
tiers, compare, GPU page, catalogue, fit calculator, API, CSV): the figure by the chosen rule, its
spread, every provider it is taken from and its provenance (provider, observation date, age, how
the date is known). It reads the derived ``GpuPrice`` rows (one indexed query on rule, GPU count
and GPU), written after every price import by ``catalog.services.prices.derive``;
``gpu_price_gaps`` says why a GPU has none. ``gpu_purchase_prices`` is the newest purchase price
per GPU (rankings' buy mode, fit calculator); ``gpu_offers`` and ``gpu_price_history`` are the GPU
page's offers table and price chart. How USD figures are shown in the page currency:
catalog/money.py.

The offer selectors read the denormalised ``Offer.current_*`` fields through
``Offer.objects.current()``; only the history selector reads ``PriceObservation``.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, F, Max, Min, OuterRef, Q, Subquery
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from catalog.models import (
    Gpu,
    GpuPrice,
    GpuPriceDay,
    GpuPriceGap,
    Offer,
    PriceSnapshot,
    Provider,
    PurchasePrice,
)
from catalog.money import Money
from catalog.money import display_rate as display_rate  # the fit calculator imports it from here
from catalog.services.prices.currency import NoExchangeRate, RateBook
from catalog.services.prices.derive import gpu_price_row, offer_facts, price_figures, snapshot_dates_of
from catalog.services.prices.derive import typical_of as typical_of  # the rule's median, imported from here by tests
from gpuatlas.data_version import data_versioned

# typical: the median of each provider's cheapest current on-demand offer (for an even count, the
# mean of the two middle ones: with two providers at 1.38 and 2.79 a buyer expects about 2.09,
# not the dearer one); cheapest: the cheapest current on-demand offer; spot: the cheapest
# current spot offer. "median" is an alias of "typical", accepted so that saved links keep working.
PRICE_RULES = ("typical", "cheapest", "spot")


@dataclass(frozen=True)
class PriceProvenance:
    """Where a price figure comes from: one offer, its provider and its observation date."""

    offer_id: int
    provider: str
    provider_slug: str
    instance_type: str
    region: str
    gpu_count: float
    is_spot: bool
    observed_at: dt.datetime  # the newest snapshot that listed the offer at this price
    age_days: float | None  # None where the date is an estimate: an age would read as fresh
    date_basis: str  # PriceSnapshot.DateBasis: source | published | fetched | estimate
    date_is_estimate: bool
    date_note: str
    source: str  # the feed (file) the offer comes from


@dataclass(frozen=True)
class ProviderPrice:
    """One provider's cheapest current offer of a GPU: one of the prices a typical price is taken from."""

    provider: str
    provider_slug: str
    price_usd: Decimal
    instance_type: str
    region: str
    gpu_count: float
    observed_at: dt.datetime
    date_is_estimate: bool
    marketplace: bool


@dataclass(frozen=True)
class GpuRentPrice:
    """One GPU's rental price by a rule, USD per GPU-hour, with its spread and provenance."""

    gpu_id: int
    rule: str
    price_usd: Decimal
    minimum_usd: Decimal  # cheapest provider (over the offers the rule reads: on-demand or spot)
    typical_usd: Decimal  # median of the providers' cheapest offers (mean of the middle two)
    maximum_usd: Decimal  # the most expensive provider's cheapest offer
    providers: int
    offers: int
    provenance: PriceProvenance  # for a mean of two middle offers: the cheaper of the two
    typical_between: tuple[str, ...] = ()  # the two providers a typical price is the mean of
    # Every provider the figure is taken from, cheapest first (the GPU page credits them all).
    contributors: tuple[ProviderPrice, ...] = ()
    # The only offer is one marketplace listing: a price, not a typical one (pages say so).
    single_listing: bool = False

    @property
    def one_provider(self) -> bool:
        return self.providers == 1

    @property
    def thin(self) -> bool:
        """Resting on one provider: pages mark it beside the figure and on tier cards."""
        return self.providers == 1


@data_versioned("price_data_newest")  # perf: read by every page's footer; changes only with an import
def price_data_newest() -> dt.datetime | None:
    """The newest snapshot time in the database ("the newest price data")."""
    return Offer.objects.aggregate(newest=Max("last_seen"))["newest"]


def gpu_rent_prices(
    *,
    gpu_ids: Iterable[int] | None = None,
    rule: str = "typical",
    provider: str = "",
    region: str = "",
    now: dt.datetime | None = None,
    gpu_count: int = 0,
    with_providers: bool = False,
) -> dict[int, GpuRentPrice]:
    """{gpu_id: GpuRentPrice} by ``rule`` from the derived prices (``GpuPrice``): one indexed query.

    The prices are taken from current, SKU-level, non-placeholder offers when they change
    (``catalog.services.prices.derive``; docs/prices-rules.md). ``rule`` is one of PRICE_RULES
    ("median" reads as "typical"); ``gpu_count`` 0 reads machines of any size, N machines of N
    GPUs; ``provider`` (a slug) narrows a price to that provider's cheapest offer, read from the
    stored providers of the figure. ``region`` (a substring of the offer's region) is a filter no
    stored figure can answer: the same rule is applied to the current offers of that region.
    ``with_providers``: fill ``contributors`` (every provider behind each figure: the GPU page's
    credits); without it they are not read, which keeps the read of every GPU's price light.
    """
    rule = "typical" if rule == "median" else rule
    if rule not in PRICE_RULES:
        raise ValueError(f"unknown price rule {rule!r}; expected one of {', '.join(PRICE_RULES)}")
    now = now or timezone.now()
    if region or (provider and gpu_count):
        # Filters no stored row answers (a region; one provider's machines of N GPUs, whose
        # providers are stored for machines of any size only): the rule over those offers.
        rows = _rows_of(gpu_ids=gpu_ids, rule=rule, region=region, gpu_count=gpu_count, now=now)
    else:
        stored = GpuPrice.objects.filter(rule=rule, gpu_count=gpu_count)
        if gpu_ids is not None:
            stored = stored.filter(gpu_id__in=list(gpu_ids))
        if not (provider or with_providers):
            stored = stored.defer("contributors")
        rows = list(stored)
    if provider:
        return {
            row.gpu_id: price
            for row in rows
            if (price := _price_of_provider(row, provider=provider, now=now)) is not None
        }
    return {row.gpu_id: _price_of_row(row, now=now, with_providers=with_providers) for row in rows}


def _rows_of(
    *, gpu_ids: Iterable[int] | None, rule: str, region: str, gpu_count: int, now: dt.datetime
) -> list[GpuPrice]:
    """The rule applied to the current, priced offers (of one region, if given): unsaved
    ``GpuPrice`` rows, with their providers whatever the GPU count."""
    offers = Offer.objects.current().sku_level().priced().filter(region__icontains=region)
    if gpu_ids is not None:
        offers = offers.filter(gpu_id__in=list(gpu_ids))
    facts = offer_facts(offers)
    dates = snapshot_dates_of(facts)
    return [
        gpu_price_row(figure, dates, now, credit_providers=True)
        for figure in price_figures(facts, rule=rule, by_count=gpu_count > 0)
        if figure.gpu_count == gpu_count
    ]


def _age_days(observed_at: dt.datetime, estimate: bool, now: dt.datetime) -> float | None:
    return None if estimate else round((now - observed_at).total_seconds() / 86400, 1)


def _contributors(row: GpuPrice) -> tuple[ProviderPrice, ...]:
    return tuple(
        ProviderPrice(
            provider=c["provider"],
            provider_slug=c["slug"],
            price_usd=Decimal(c["price"]),
            instance_type=c["instance_type"],
            region=c["region"],
            gpu_count=float(c["gpu_count"]),
            observed_at=dt.datetime.fromisoformat(c["observed_at"]),
            date_is_estimate=c["date_basis"] == PriceSnapshot.DateBasis.ESTIMATE,
            marketplace=c["kind"] == Provider.Kind.MARKETPLACE,
        )
        for c in row.contributors
    )


def _price_of_row(row: GpuPrice, *, now: dt.datetime, with_providers: bool) -> GpuRentPrice:
    estimate = row.date_basis in (PriceSnapshot.DateBasis.ESTIMATE, "")
    provenance = PriceProvenance(
        offer_id=row.offer_id or 0,
        provider=row.provider_name,
        provider_slug=row.provider_slug,
        instance_type=row.instance_type,
        region=row.region,
        gpu_count=row.offer_gpu_count,
        is_spot=row.rule == GpuPrice.Rule.SPOT,
        observed_at=row.observed_at,
        age_days=_age_days(row.observed_at, estimate, now),
        date_basis=row.date_basis or PriceSnapshot.DateBasis.ESTIMATE,
        date_is_estimate=estimate,
        date_note=row.date_note,
        source=row.source,
    )
    return GpuRentPrice(
        gpu_id=row.gpu_id,
        rule=row.rule,
        price_usd=row.price_usd,
        minimum_usd=row.minimum_usd,
        typical_usd=row.typical_usd,
        maximum_usd=row.maximum_usd,
        providers=row.providers,
        offers=row.offers,
        provenance=provenance,
        typical_between=tuple(row.typical_between),
        contributors=_contributors(row) if with_providers else (),
        single_listing=row.single_listing,
    )


def _price_of_provider(row: GpuPrice, *, provider: str, now: dt.datetime) -> GpuRentPrice | None:
    """A figure narrowed to one provider: that provider's cheapest offer, by every rule."""
    record = next((c for c in row.contributors if c["slug"] == provider), None)
    if record is None:
        return None
    price = Decimal(record["price"])
    observed = dt.datetime.fromisoformat(record["observed_at"])
    estimate = record["date_basis"] == PriceSnapshot.DateBasis.ESTIMATE
    contributor = next(c for c in _contributors(row) if c.provider_slug == provider)
    provenance = PriceProvenance(
        offer_id=record["offer"],
        provider=record["provider"],
        provider_slug=provider,
        instance_type=record["instance_type"],
        region=record["region"],
        gpu_count=float(record["gpu_count"]),
        is_spot=row.rule == GpuPrice.Rule.SPOT,
        observed_at=observed,
        age_days=_age_days(observed, estimate, now),
        date_basis=record["date_basis"],
        date_is_estimate=estimate,
        date_note="",
        source="",
    )
    return GpuRentPrice(
        gpu_id=row.gpu_id,
        rule=row.rule,
        price_usd=price,
        minimum_usd=price,
        typical_usd=price,
        maximum_usd=price,
        providers=1,
        offers=1,
        provenance=provenance,
        contributors=(contributor,),
        single_listing=contributor.marketplace and row.providers == 1 and row.single_listing,
    )


@dataclass(frozen=True)
class PriceGap:
    """Why a GPU has no typical price, in a sentence a page shows in the price's place."""

    gpu_id: int
    reason: str  # GpuPriceGap.Reason, or NO_OFFER
    offers: int
    newest: dt.datetime | None

    @property
    def text(self) -> str:
        date = f"{self.newest:%Y-%m-%d}" if self.newest else ""
        reasons = GpuPriceGap.Reason
        if self.reason == reasons.PLACEHOLDER:
            return _("no price: its offers list only placeholder prices")
        if self.reason == reasons.SPOT_ONLY:
            return _("no on-demand price: only spot offers")
        if self.reason == reasons.AMBIGUOUS:
            return ngettext(
                "no price: %(count)d offer does not say the form factor (waiting for a curator)",
                "no price: %(count)d offers do not say the form factor (waiting for a curator)",
                self.offers,
            ) % {"count": self.offers}
        if self.reason == reasons.STALE:
            return _("no current price: its newest offer (%(date)s) is older than the freshness window") % {
                "date": date
            }
        if self.reason == reasons.WITHDRAWN:
            return _("no current price: its offers are no longer listed (last seen %(date)s)") % {"date": date}
        if self.reason == reasons.UNPRICED:
            return _("no price: its offers are listed without a price per GPU")
        return _("no price: no offer in the imported price catalogues")


NO_OFFER = "no-offer"


def gpu_price_gaps(*, gpu_ids: Iterable[int]) -> dict[int, PriceGap]:
    """For each of ``gpu_ids`` without a typical price, why (two queries): the stored reason
    (``GpuPriceGap``, derived with the prices), else "no offer at all"."""
    ids = set(gpu_ids)
    priced = set(
        GpuPrice.objects.filter(rule=GpuPrice.Rule.TYPICAL, gpu_count=0, gpu_id__in=ids).values_list(
            "gpu_id", flat=True
        )
    )
    missing = ids - priced
    stored = {
        gap.gpu_id: PriceGap(gap.gpu_id, gap.reason, gap.offers, gap.newest)
        for gap in GpuPriceGap.objects.filter(gpu_id__in=missing)
    }
    return {gpu_id: stored.get(gpu_id, PriceGap(gpu_id, NO_OFFER, 0, None)) for gpu_id in missing}


def gpu_counts_rented(*, gpu_ids: Iterable[int]) -> dict[int, frozenset[int]]:
    """gpu id -> the whole numbers of that GPU that current on-demand offers put in one machine
    (SKU-level, priced offers; a fraction of a shared GPU is no configuration to serve a model
    on): the GPU counts of the derived prices. One query."""
    rows = (
        GpuPrice.objects.filter(rule=GpuPrice.Rule.TYPICAL, gpu_count__gte=1, gpu_id__in=list(gpu_ids))
        .order_by()
        .values_list("gpu_id", "gpu_count")
    )
    counts: dict[int, set[int]] = {}
    for gpu_id, count in rows:
        counts.setdefault(gpu_id, set()).add(count)
    return {gpu_id: frozenset(found) for gpu_id, found in counts.items()}


def snapshot_dates(*, offers: Iterable[Offer]) -> dict[tuple[str, int, dt.datetime], tuple[str, str]]:
    """(feed, provider id, snapshot time) -> (date basis, note) for the snapshots of ``offers`` (one query)."""
    offers = list(offers)
    if not offers:
        return {}
    rows = PriceSnapshot.objects.filter(
        provider_id__in={o.provider_id for o in offers}, observed_at__in={o.last_seen for o in offers}
    ).values_list("feed", "provider_id", "observed_at", "date_basis", "date_note")
    return {(feed, provider_id, at): (basis, note) for feed, provider_id, at, basis, note in rows}


@data_versioned("price_snapshot_newest")  # perf: read by every page's footer; changes only with an import
def price_snapshot_newest() -> tuple[dt.datetime | None, dt.datetime | None]:
    """(newest snapshot time, newest snapshot time whose date is known, not estimated): one query."""
    newest = PriceSnapshot.objects.aggregate(
        newest=Max("observed_at"),
        dated=Max("observed_at", filter=~Q(date_basis=PriceSnapshot.DateBasis.ESTIMATE)),
    )
    return newest["newest"], newest["dated"]


@dataclass(frozen=True)
class PriceStatus:
    """Whether the prices shown are live, or "as of" a date because the newest data is old."""

    newest: dt.datetime | None  # the newest price data, whatever its date basis
    newest_dated: dt.datetime | None  # the newest price data with a known (not estimated) date
    window_days: int
    live: bool

    @property
    def as_of(self) -> dt.date | None:
        return self.newest.date() if self.newest else None

    @property
    def newest_is_estimate(self) -> bool:
        """The newest prices come from a snapshot whose observation date is unknown (estimated)."""
        return self.newest is not None and self.newest != self.newest_dated


def price_status(*, now: dt.datetime | None = None) -> PriceStatus:
    """Live while price data with a known date lies within PRICE_FRESHNESS_DAYS of today.

    The one decision on freshness: the footer, /providers/, the health page and the rankings all
    say what this says. A bundled snapshot dated by an estimate (the day its files were copied)
    is never "live" and has no age: pages say "date unknown, file of" its date.
    """
    newest, dated = price_snapshot_newest()
    window = settings.PRICE_FRESHNESS_DAYS
    live = dated is not None and dated >= (now or timezone.now()) - dt.timedelta(days=window)
    return PriceStatus(newest=newest, newest_dated=dated, window_days=window, live=live)


def exchange_rates() -> RateBook:
    """Every recorded exchange rate, for converting many prices with one query."""
    return RateBook.load()


@dataclass(frozen=True)
class GpuPurchasePrice:
    """The newest purchase price recorded for a GPU in one condition, as recorded and in USD.

    ``usd_then`` converts at the rate of the day it was observed (what the price was worth in USD
    then: the rankings' buy mode); ``usd_now`` at the newest rate (what it costs in USD today: the
    fit calculator's break-even). Each is None when no rate covers that day.
    """

    gpu_id: int
    condition: str
    price: Decimal
    currency: str
    observed_on: dt.date
    source: str
    usd_then: float | None
    usd_now: float | None


def gpu_purchase_prices(
    *, gpu_ids: Iterable[int], condition: str, rates: RateBook | None = None
) -> dict[int, GpuPurchasePrice]:
    """gpu id -> its newest purchase price of ``condition`` (one query, and one for the rates
    unless ``rates`` is given)."""
    rates = rates or exchange_rates()
    found: dict[int, GpuPurchasePrice] = {}
    rows = (
        PurchasePrice.objects.filter(gpu_id__in=list(gpu_ids), condition=condition)
        .order_by("gpu_id", "-observed_on")
        .values("gpu_id", "price", "currency", "observed_on", "source")
    )
    for row in rows:
        if row["gpu_id"] in found:
            continue
        found[row["gpu_id"]] = GpuPurchasePrice(
            gpu_id=row["gpu_id"],
            condition=condition,
            price=row["price"],
            currency=row["currency"],
            observed_on=row["observed_on"],
            source=row["source"],
            usd_then=_to_usd(rates, row["price"], row["currency"], row["observed_on"]),
            usd_now=_to_usd(rates, row["price"], row["currency"], None),
        )
    return found


def _to_usd(rates: RateBook, amount: Decimal, currency: str, on: dt.date | None) -> float | None:
    try:
        return float(rates.to_usd(amount, currency, on))
    except NoExchangeRate:
        return None


@dataclass
class OfferLine:
    provider: str
    provider_slug: str
    instance_type: str
    region: str
    gpu_count: float
    vcpus_per_gpu: float | None
    ram_gib_per_gpu: float | None
    price_per_gpu_hour: float | None
    is_spot: bool
    last_seen: dt.datetime  # the newest snapshot that listed the offer: when its price was observed
    variant_ambiguous: bool = False
    date_is_estimate: bool = False
    date_note: str = ""
    placeholder: str = ""  # why the listed price is no price (kept out of typical and cheapest)
    # The number of the note under the table that explains an estimated date: a feed's note is
    # said once there, not on each of its offers.
    date_note_ref: int = 0


OFFERS_SHOWN = 60


def gpu_offers(*, gpu: Gpu, money: Money, limit: int | None = OFFERS_SHOWN) -> tuple[list[OfferLine], int]:
    """Current offers of a GPU, cheapest first (``limit`` of them) and how many there are."""
    qs = (
        Offer.objects.current()
        .filter(gpu=gpu)
        .select_related("provider")
        .order_by("current_price_per_gpu_hour_usd", "provider__name")
    )
    total = qs.count() if limit is not None else 0
    chosen = list(qs[:limit] if limit is not None else qs)
    dates = snapshot_dates(offers=chosen)
    lines = [
        OfferLine(
            provider=o.provider.name,
            provider_slug=o.provider.slug,
            instance_type=o.instance_type,
            region=o.region,
            gpu_count=o.gpu_count,
            vcpus_per_gpu=o.vcpus_per_gpu,
            ram_gib_per_gpu=o.ram_gib_per_gpu,
            price_per_gpu_hour=money(float(o.current_price_per_gpu_hour_usd))
            if o.current_price_per_gpu_hour_usd
            else None,
            is_spot=o.is_spot,
            last_seen=o.last_seen,
            variant_ambiguous=o.variant_ambiguous,
            date_is_estimate=dates.get((o.source, o.provider_id, o.last_seen), ("estimate", ""))[0] == "estimate",
            date_note=dates.get((o.source, o.provider_id, o.last_seen), ("", ""))[1],
            placeholder=o.placeholder,
        )
        for o in chosen
    ]
    refs = {note: n for n, note in enumerate(dict.fromkeys(line.date_note for line in lines if _footnoted(line)), 1)}
    lines = [replace(line, date_note_ref=refs[line.date_note]) if _footnoted(line) else line for line in lines]
    return lines, (total if limit is not None else len(lines))


def _footnoted(line: OfferLine) -> bool:
    return line.date_is_estimate and bool(line.date_note)


def offer_date_notes(lines: Sequence[OfferLine]) -> list[tuple[int, str]]:
    """The notes on estimated dates the offer lines refer to, numbered as the lines refer to them."""
    return sorted({(line.date_note_ref, line.date_note) for line in lines if line.date_note_ref})


ALL_ON_DEMAND = gettext_noop("all providers: cheapest on-demand")
ALL_SPOT = gettext_noop("all providers: cheapest spot")


PRICE_HISTORY_PROVIDER_SERIES = 6  # on-demand and spot each


@dataclass(frozen=True)
class PriceHistory:
    """Series name -> (day, lowest price per GPU-hour) steps, and how many providers' series were
    left out (their observations are in the API's ``prices/``)."""

    series: dict[str, list[tuple[dt.date, float]]]
    series_left_out: int = 0


def gpu_price_history(
    *, gpu: Gpu, money: Money, provider_series: int | None = PRICE_HISTORY_PROVIDER_SERIES
) -> PriceHistory:
    """Lowest price per GPU-hour per day, from the daily lows derived on write (``GpuPriceDay``):
    first the cheapest over all providers (on-demand, then spot), then one series per provider
    (spot marked): of each kind, on-demand and spot, the ``provider_series`` cheapest on their
    latest day (all with None). The overall lows count every provider; the cap keeps the chart
    readable and the rows read bounded by days x series shown, not by how many providers list the
    GPU (three queries: the overall lows grouped by day, each series' latest low, the kept series' days)."""
    days = GpuPriceDay.objects.filter(gpu=gpu).order_by()
    overall: dict[bool, list[tuple[dt.date, float]]] = {False: [], True: []}
    for row in days.values("day", "is_spot").annotate(low=Min("low_usd")).order_by("day"):
        overall[row["is_spot"]].append((row["day"], money(float(row["low"])) or 0.0))
    series: dict[str, list[tuple[dt.date, float]]] = {}
    for spot, label in ((False, _(ALL_ON_DEMAND)), (True, _(ALL_SPOT))):
        if overall[spot]:
            series[label] = overall[spot]

    newest = days.filter(provider=OuterRef("provider"), is_spot=OuterRef("is_spot")).order_by("-day")
    keys = list(  # one row per series: the aggregate groups the days by provider and kind
        days.values("provider", "is_spot", provider_name=F("provider__name"))
        .annotate(days=Count("day"))
        .annotate(latest=Subquery(newest.values("low_usd")[:1]))
        .order_by()
    )
    kept = keys
    if provider_series is not None:
        cheapest_first = sorted(keys, key=lambda k: (k["latest"], k["provider_name"].lower()))
        on_demand = [k for k in cheapest_first if not k["is_spot"]][:provider_series]
        kept = on_demand + [k for k in cheapest_first if k["is_spot"]][:provider_series]
    names = {
        (k["provider"], k["is_spot"]): k["provider_name"] + (" · " + _("spot") if k["is_spot"] else "") for k in kept
    }
    per_provider: dict[str, list[tuple[dt.date, float]]] = defaultdict(list)
    if names:
        chosen = Q()
        for provider_id, spot in names:
            chosen |= Q(provider_id=provider_id, is_spot=spot)
        for low in days.filter(chosen).values("provider", "is_spot", "day", "low_usd").order_by("day"):
            price = money(float(low["low_usd"])) or 0.0
            per_provider[names[low["provider"], low["is_spot"]]].append((low["day"], price))
    for name in sorted(per_provider, key=str.lower):
        series[name] = per_provider[name]
    return PriceHistory(series, len(keys) - len(kept))
