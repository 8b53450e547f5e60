"""Reads over cloud prices: the one price read of the product, offers of a GPU, history, freshness.

``gpu_rent_prices`` is what every surface that shows "the price of a GPU" reads (rankings,
tiers, compare, GPU page, fit calculator, API, CSV): the figure by the chosen rule, its spread
and its provenance (provider, observation date, age, how the date is known).

The "now" selectors read the denormalised ``Offer.current_*`` fields through
``Offer.objects.current()``, which matches the partial index ``offer_gpu_spot_price``
(gpu, is_spot, current_price_per_gpu_hour_usd WHERE available AND price_separable): one
indexed query, however long the observation history grows. Only the history selector reads
``PriceObservation``.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pandas as pd
from django.conf import settings
from django.db import connection
from django.db.models import Aggregate, Count, DecimalField, Max, Min, Q, QuerySet
from django.utils import timezone

from catalog.models import Gpu, ImportRun, Offer, PriceObservation, PriceSnapshot, Provider
from catalog.services.prices.currency import USD, NoExchangeRate, RateBook
from gpuatlas.data_version import data_versioned

SUPPORTED_DISPLAY_CURRENCIES = ("USD", "CNY")
# typical: the median of each provider's cheapest current on-demand offer (the higher middle
# value for an even count); cheapest: the cheapest current on-demand offer; spot: the cheapest
# current spot offer. "median" is the former name of "typical", still accepted.
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
    age_days: float
    date_basis: str  # PriceSnapshot.DateBasis: source | published | fetched | estimate
    date_is_estimate: bool
    date_note: str
    source: str  # the feed (file) the offer comes from


@dataclass(frozen=True)
class GpuRentPrice:
    """One GPU's rental price by a rule, USD per GPU-hour, with its spread and provenance."""

    gpu_id: int
    rule: str
    price_usd: Decimal
    minimum_usd: Decimal  # cheapest provider (over the offers the rule reads: on-demand or spot)
    typical_usd: Decimal  # median of the providers' cheapest offers (higher middle value)
    maximum_usd: Decimal  # the most expensive provider's cheapest offer
    providers: int
    offers: int
    provenance: PriceProvenance


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
) -> dict[int, GpuRentPrice]:
    """{gpu_id: GpuRentPrice} from current, SKU-level offers (three queries whatever the data).

    Current: in its provider's newest snapshot of its feed, that snapshot within
    PRICE_FRESHNESS_DAYS of the newest price data (``Offer.objects.current()``). SKU-level: the
    offer's form factor is stated by its source or mapped by a curator (ambiguous ones are
    left out). ``rule`` is one of PRICE_RULES ("median" reads as "typical"); ``provider`` is a
    provider slug, ``region`` a substring of the offer's region.
    """
    rule = "typical" if rule == "median" else rule
    if rule not in PRICE_RULES:
        raise ValueError(f"unknown price rule {rule!r}; expected one of {', '.join(PRICE_RULES)}")
    offers = Offer.objects.current().sku_level().filter(is_spot=rule == "spot")
    if gpu_ids is not None:
        offers = offers.filter(gpu_id__in=list(gpu_ids))
    if provider:
        offers = offers.filter(provider__slug=provider)
    if region:
        offers = offers.filter(region__icontains=region)
    columns = [
        "id", "gpu_id", "provider_id", "provider__name", "provider__slug", "instance_type", "region",
        "gpu_count", "is_spot", "source", "last_seen", "current_price_per_gpu_hour_usd",
    ]  # fmt: skip
    frame = pd.DataFrame.from_records(list(offers.order_by().values_list(*columns)), columns=columns)
    if frame.empty:
        return {}
    snapshots = {
        (feed, provider_id, at): (basis, note)
        for feed, provider_id, at, basis, note in PriceSnapshot.objects.filter(
            observed_at__gte=frame["last_seen"].min()
        ).values_list("feed", "provider_id", "observed_at", "date_basis", "date_note")
    }
    now = now or timezone.now()
    # Each provider's cheapest offer of each GPU (ties: the most recently seen, then the offer id).
    frame = frame.sort_values(
        ["gpu_id", "provider_id", "current_price_per_gpu_hour_usd", "last_seen", "id"],
        ascending=[True, True, True, False, True],
    )
    offer_counts = frame.groupby("gpu_id")["id"].count()
    cheapest = frame.drop_duplicates(["gpu_id", "provider_id"]).sort_values(
        ["gpu_id", "current_price_per_gpu_hour_usd", "provider__slug"]
    )
    result: dict[int, GpuRentPrice] = {}
    for gpu_id, group in cheapest.groupby("gpu_id", sort=False):
        prices = list(group["current_price_per_gpu_hour_usd"])
        typical_index = len(prices) // 2  # statistics.median_high: a price some provider charges
        chosen = group.iloc[0] if rule in ("cheapest", "spot") else group.iloc[typical_index]
        seen = pd.Timestamp(chosen["last_seen"]).to_pydatetime()
        provider_id = int(chosen["provider_id"])
        basis, note = snapshots.get((chosen["source"], provider_id, seen), (PriceSnapshot.DateBasis.ESTIMATE, ""))
        provenance = PriceProvenance(
            offer_id=int(chosen["id"]),
            provider=chosen["provider__name"],
            provider_slug=chosen["provider__slug"],
            instance_type=chosen["instance_type"],
            region=chosen["region"],
            gpu_count=float(chosen["gpu_count"]),
            is_spot=bool(chosen["is_spot"]),
            observed_at=seen,
            age_days=round((now - seen).total_seconds() / 86400, 1),
            date_basis=basis,
            date_is_estimate=basis == PriceSnapshot.DateBasis.ESTIMATE,
            date_note=note,
            source=chosen["source"],
        )
        result[int(gpu_id)] = GpuRentPrice(
            gpu_id=int(gpu_id),
            rule=rule,
            price_usd=chosen["current_price_per_gpu_hour_usd"],
            minimum_usd=prices[0],
            typical_usd=prices[typical_index],
            maximum_usd=prices[-1],
            providers=len(prices),
            offers=int(offer_counts[gpu_id]),
            provenance=provenance,
        )
    return result


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
    def cache_key(self) -> str:
        return f"live:{self.live}:{self.as_of}"


def price_status(*, now: dt.datetime | None = None) -> PriceStatus:
    """Live while price data with a known date lies within PRICE_FRESHNESS_DAYS of today.

    A bundled snapshot dated by an estimate (the day its files were copied) is never "live":
    pages say "prices as of" its date.
    """
    newest, dated = price_snapshot_newest()
    window = settings.PRICE_FRESHNESS_DAYS
    live = dated is not None and dated >= (now or timezone.now()) - dt.timedelta(days=window)
    return PriceStatus(newest=newest, newest_dated=dated, window_days=window, live=live)


class Median(Aggregate):
    """PostgreSQL's ordered-set median; other databases fall back to Python (see below)."""

    function = "percentile_cont"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = DecimalField(max_digits=14, decimal_places=6)


def _current_offers(*, spot: bool, provider: str | None = None, region: str | None = None) -> QuerySet[Offer]:
    offers = Offer.objects.current().sku_level().filter(is_spot=spot)
    if provider:
        offers = offers.filter(provider__slug=provider)
    if region:
        offers = offers.filter(region=region)
    return offers


def cheapest_price_per_gpu(
    *, spot: bool = False, provider: str | None = None, region: str | None = None
) -> dict[int, Decimal]:
    """{gpu_id: lowest current USD price per GPU-hour} over available, separable offers."""
    rows = (
        _current_offers(spot=spot, provider=provider, region=region)
        .order_by()
        .values("gpu_id")
        .annotate(cheapest=Min("current_price_per_gpu_hour_usd"))
        .values_list("gpu_id", "cheapest")
    )
    return dict(rows)


def price_summary_per_gpu(
    *, spot: bool = False, provider: str | None = None, region: str | None = None, gpu_ids: list[int] | None = None
) -> dict[int, dict[str, Any]]:
    """{gpu_id: {cheapest, median, offers, providers}} in USD per GPU-hour, current offers only."""
    offers = _current_offers(spot=spot, provider=provider, region=region)
    if gpu_ids is not None:
        offers = offers.filter(gpu_id__in=gpu_ids)
    grouped = offers.order_by().values("gpu_id")
    if connection.vendor == "postgresql":
        rows = grouped.annotate(
            cheapest=Min("current_price_per_gpu_hour_usd"),
            median=Median("current_price_per_gpu_hour_usd"),
            offers=Count("id"),
            providers=Count("provider_id", distinct=True),
        )
        return {
            r["gpu_id"]: {
                "cheapest": r["cheapest"],
                "median": Decimal(str(r["median"])).quantize(Decimal("0.000001")) if r["median"] is not None else None,
                "offers": r["offers"],
                "providers": r["providers"],
            }
            for r in rows
        }
    prices: dict[int, list[Decimal]] = {}
    providers: dict[int, set[int]] = {}
    for gpu_id, price, provider_id in offers.values_list("gpu_id", "current_price_per_gpu_hour_usd", "provider_id"):
        if price is None:  # excluded by current(); keeps the type checker honest
            continue
        prices.setdefault(gpu_id, []).append(price)
        providers.setdefault(gpu_id, set()).add(provider_id)
    return {
        gpu_id: {
            "cheapest": min(values),
            "median": Decimal(str(statistics.median(values))).quantize(Decimal("0.000001")),
            "offers": len(values),
            "providers": len(providers[gpu_id]),
        }
        for gpu_id, values in prices.items()
    }


def display_rate(*, currency: str, rates: RateBook | None = None) -> dict[str, Any]:
    """How USD prices are shown in ``currency``: {currency, rate_date, units_per_usd, source, missing}."""
    currency = currency.upper()
    if currency == USD:
        return {"currency": USD, "rate_date": None, "units_per_usd": Decimal(1), "source": "", "missing": False}
    rates = rates or RateBook.load()
    try:
        rate = rates.rate(currency)
    except NoExchangeRate:
        return {"currency": currency, "rate_date": None, "units_per_usd": None, "source": "", "missing": True}
    return {
        "currency": currency,
        "rate_date": rate.date,
        "units_per_usd": (Decimal(1) / rate.usd_per_unit).quantize(Decimal("0.0001")),
        "source": rate.source,
        "missing": False,
    }


def offers_for_gpu(
    *, gpu: Gpu | int, spot: bool | None = None, currency: str = USD, include_unpriced: bool = False
) -> list[dict[str, Any]]:
    """Current offers of one GPU, cheapest first, as plain dicts for the GPU page's table.

    Keys: provider, provider_slug, provider_kind, instance_type, region, zone, is_spot,
    gpu_count, vcpus, ram_gib, vcpus_per_gpu, ram_gib_per_gpu, price_per_gpu_hour (in
    ``currency``, None when no rate or not separable), price_per_gpu_hour_usd, currency,
    original_price_per_hour, original_currency, price_separable, observed_at, last_seen,
    age_hours, source, exchange_rate_date, no_exchange_rate.
    ``include_unpriced`` adds offers whose listed price excludes the GPU (GCP host VMs).
    """
    gpu_id = gpu if isinstance(gpu, int) else gpu.pk
    rate = display_rate(currency=currency)
    offers = Offer.objects.filter(gpu_id=gpu_id, available=True).select_related("provider")
    if include_unpriced:
        offers = offers.filter(Q(price_separable=False) | Q(current_price_per_gpu_hour_usd__isnull=False))
    else:
        offers = offers.filter(price_separable=True, current_price_per_gpu_hour_usd__isnull=False)
    if spot is not None:
        offers = offers.filter(is_spot=spot)
    now = timezone.now()
    result = []
    for offer in offers.order_by("current_price_per_gpu_hour_usd", "provider__name", "instance_type"):
        usd = offer.current_price_per_gpu_hour_usd if offer.price_separable else None
        shown = None
        if usd is not None and not rate["missing"]:
            shown = (usd * rate["units_per_usd"]).quantize(Decimal("0.0001")) if rate["currency"] != USD else usd
        result.append(
            {
                "offer_id": offer.pk,
                "provider": offer.provider.name,
                "provider_slug": offer.provider.slug,
                "provider_kind": offer.provider.kind,
                "instance_type": offer.instance_type,
                "region": offer.region,
                "zone": offer.zone,
                "is_spot": offer.is_spot,
                "gpu_count": offer.gpu_count,
                "vcpus": offer.vcpus,
                "ram_gib": offer.ram_gib,
                "vcpus_per_gpu": offer.vcpus_per_gpu,
                "ram_gib_per_gpu": offer.ram_gib_per_gpu,
                "price_per_gpu_hour": shown,
                "price_per_gpu_hour_usd": usd,
                "currency": rate["currency"],
                "original_price_per_hour": offer.current_price_per_hour,
                "original_currency": offer.current_currency,
                "price_separable": offer.price_separable,
                "observed_at": offer.current_observed_at,
                "last_seen": offer.last_seen,
                "age_hours": round((now - offer.last_seen).total_seconds() / 3600, 1),
                "source": offer.source,
                "exchange_rate_date": rate["rate_date"],
                "no_exchange_rate": rate["missing"],
            }
        )
    return result


def price_history_for_gpu(*, gpu: Gpu | int, days: int | None = None, spot: bool | None = None) -> list[dict[str, Any]]:
    """Every observation of the GPU's offers, oldest first: the series behind the price chart.

    Keys: observed_at, price_per_gpu_hour_usd, price_per_gpu_hour, currency, provider,
    provider_slug, instance_type, region, is_spot, offer_id. Group by provider (or offer) to
    draw one line each; prices are step functions (valid until the next observation).
    """
    gpu_id = gpu if isinstance(gpu, int) else gpu.pk
    observations = PriceObservation.objects.filter(offer__gpu_id=gpu_id, offer__price_separable=True)
    if days is not None:
        observations = observations.filter(observed_at__gte=timezone.now() - dt.timedelta(days=days))
    if spot is not None:
        observations = observations.filter(offer__is_spot=spot)
    rows = observations.order_by("observed_at", "offer_id").values(
        "observed_at",
        "price_per_gpu_hour_usd",
        "price_per_gpu_hour",
        "currency",
        "offer_id",
        "offer__provider__name",
        "offer__provider__slug",
        "offer__instance_type",
        "offer__region",
        "offer__is_spot",
    )
    return [
        {
            "observed_at": r["observed_at"],
            "price_per_gpu_hour_usd": r["price_per_gpu_hour_usd"],
            "price_per_gpu_hour": r["price_per_gpu_hour"],
            "currency": r["currency"],
            "offer_id": r["offer_id"],
            "provider": r["offer__provider__name"],
            "provider_slug": r["offer__provider__slug"],
            "instance_type": r["offer__instance_type"],
            "region": r["offer__region"],
            "is_spot": r["offer__is_spot"],
        }
        for r in rows
    ]


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
