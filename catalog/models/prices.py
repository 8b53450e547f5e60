"""Cloud providers, their offers and the append-only history of offer prices."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import models
from django.db.models import ExpressionWrapper, Q, Subquery, Value
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from catalog.models.gpus import Gpu


class Provider(models.Model):
    class Kind(models.TextChoices):
        CLOUD = "cloud", _("Cloud")
        MARKETPLACE = "marketplace", _("Marketplace")
        AGGREGATOR = "aggregator", _("Aggregator")

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CLOUD)
    url = models.URLField(blank=True)
    country = models.CharField(max_length=2, blank=True, help_text=_("ISO 3166 country code."))
    default_currency = models.CharField(max_length=3, default="USD")
    notes = models.TextField(blank=True)
    name_source = models.URLField(
        max_length=500,
        blank=True,
        help_text=_("Where the display name comes from (catalog/data/curated/providers.toml)."),
    )
    history = HistoricalRecords()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def price_data_newest_subquery() -> Subquery:
    """The newest snapshot time of any offer: "the newest price data in the database"."""
    return Subquery(Offer.objects.order_by("-last_seen").values("last_seen")[:1])


class OfferQuerySet(models.QuerySet["Offer"]):
    def listed(self) -> OfferQuerySet:
        """Offers in their feed's newest snapshot with a usable per-GPU price, however old."""
        return self.filter(available=True, price_separable=True, gpu__isnull=False).exclude(
            current_price_per_gpu_hour_usd__isnull=True
        )

    def current(self) -> OfferQuerySet:
        """Listed offers whose snapshot lies within PRICE_FRESHNESS_DAYS of the newest price data.

        One stale source (a feed that stopped, a bundled file years old) never sets a price
        beside fresh ones: the window is counted back from the newest snapshot in the
        database, in the same SQL statement.
        """
        window = dt.timedelta(days=settings.PRICE_FRESHNESS_DAYS)
        cutoff = ExpressionWrapper(price_data_newest_subquery() - Value(window), output_field=models.DateTimeField())
        return self.listed().filter(last_seen__gte=cutoff)

    def sku_level(self) -> OfferQuerySet:
        """Offers whose GPU variant is known (stated by the source or mapped by a curator)."""
        return self.filter(variant_ambiguous=False)

    def ambiguous(self) -> OfferQuerySet:
        """Offers whose source names a GPU family but not which of its variants: kept out of prices."""
        return self.filter(variant_ambiguous=True)

    def on_demand(self) -> OfferQuerySet:
        """Offers rented at a fixed price that the provider cannot take back (not spot)."""
        return self.filter(is_spot=False)

    def spot(self) -> OfferQuerySet:
        """Offers on spare capacity: cheaper, and the provider may stop the machine at any time."""
        return self.filter(is_spot=True)

    def unmatched(self) -> OfferQuerySet:
        """Offers whose GPU name no catalogue entry or alias matches yet: waiting for a curator."""
        return self.filter(gpu__isnull=True)

    def priced(self) -> OfferQuerySet:
        """Offers whose price is the provider's price for the machine, not a placeholder
        (``Offer.placeholder``): the only ones a typical or cheapest price is taken from."""
        return self.filter(placeholder="")

    def placeholders(self) -> OfferQuerySet:
        """Offers whose listed price stands for "no real price" (the reason in ``placeholder``)."""
        return self.exclude(placeholder="")


class Offer(models.Model):
    """One rentable configuration: a provider's instance type in a region, on-demand or spot.

    ``current_*`` fields mirror the newest PriceObservation so that "cheapest price now" is
    one indexed scan instead of a search through the whole history.
    """

    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="offers")
    instance_type = models.CharField(max_length=200)
    region = models.CharField(max_length=200, blank=True)
    zone = models.CharField(max_length=200, blank=True)
    is_spot = models.BooleanField(default=False)
    gpu = models.ForeignKey(Gpu, on_delete=models.PROTECT, null=True, blank=True, related_name="offers")
    gpu_name_raw = models.CharField(max_length=200, help_text=_("The GPU name as the provider wrote it."))
    gpu_memory_gib_raw = models.FloatField(null=True, blank=True)
    gpu_count = models.FloatField(help_text=_("GPUs in the instance (fractional for shared GPUs)."))
    vcpus = models.FloatField(null=True, blank=True)
    ram_gib = models.FloatField(null=True, blank=True)
    price_separable = models.BooleanField(
        default=True,
        help_text=_("False where the listed price excludes the GPU (GCP host VMs): no per-GPU price."),
    )
    available = models.BooleanField(default=True)
    unavailable_since = models.DateTimeField(null=True, blank=True)
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()
    source = models.CharField(max_length=500, help_text=_("File or URL the offer was imported from."))
    extra = models.JSONField(default=dict, blank=True)
    current_price_per_hour = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    current_currency = models.CharField(max_length=3, blank=True)
    current_price_per_gpu_hour_usd = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True, db_index=True
    )
    current_observed_at = models.DateTimeField(
        null=True, blank=True, help_text=_("Since when the current price has been listed (its history row).")
    )
    variant_ambiguous = models.BooleanField(
        default=False,
        help_text=_(
            "The source does not say which form factor (SXM, PCIe, NVL...) the GPU is and a sibling of "
            "another form factor fits its memory: kept out of per-GPU rankings until a curator maps it."
        ),
    )

    placeholder = models.CharField(
        max_length=300,
        blank=True,
        help_text=_(
            "Why the listed price is a placeholder rather than a price (derived after every import, "
            "catalog.services.prices.derive): kept out of typical and cheapest prices, listed for curators."
        ),
    )

    objects = OfferQuerySet.as_manager()

    class Meta:
        ordering = ["provider", "instance_type", "region"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "instance_type", "region", "zone", "is_spot"], name="offer_identity"
            ),
            models.CheckConstraint(condition=Q(gpu_count__gt=0), name="offer_gpu_count_positive"),
            models.CheckConstraint(condition=Q(vcpus__isnull=True) | Q(vcpus__gte=0), name="offer_vcpus_nonneg"),
            models.CheckConstraint(condition=Q(ram_gib__isnull=True) | Q(ram_gib__gte=0), name="offer_ram_nonneg"),
            models.CheckConstraint(
                condition=Q(current_price_per_hour__isnull=True) | Q(current_price_per_hour__gt=0),
                name="offer_price_positive",
            ),
        ]
        indexes = [
            models.Index(
                fields=["gpu", "is_spot", "current_price_per_gpu_hour_usd"],
                name="offer_gpu_spot_price",
                condition=Q(available=True, price_separable=True),
            ),
            # The GPU page's offers, cheapest first whether spot or not: the first few read in order.
            models.Index(
                fields=["gpu", "current_price_per_gpu_hour_usd"],
                name="offer_gpu_price",
                condition=Q(available=True, price_separable=True),
            ),
            models.Index(fields=["provider", "available"]),
            models.Index(fields=["last_seen"], name="offer_last_seen"),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.instance_type} {self.region}{' spot' if self.is_spot else ''}"

    @property
    def vcpus_per_gpu(self) -> float | None:
        return self.vcpus / self.gpu_count if self.vcpus is not None else None

    @property
    def ram_gib_per_gpu(self) -> float | None:
        return self.ram_gib / self.gpu_count if self.ram_gib is not None else None


class OfferGpuMapping(models.Model):
    """A curator's answer for offers whose source leaves the GPU variant open.

    Keyed by what the source writes (provider, instance type, GPU name), so that every region
    of the listing and every later snapshot of it takes the same GPU.
    """

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="gpu_mappings")
    instance_type = models.CharField(max_length=200)
    gpu_name_raw = models.CharField(max_length=200)
    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="offer_mappings")
    note = models.TextField(blank=True, help_text=_("Why: the provider's page or message that says the variant."))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["provider", "instance_type"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "instance_type", "gpu_name_raw"], name="offergpumapping_unique")
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.instance_type} -> {self.gpu}"


class PriceSnapshot(models.Model):
    """One provider's listing in one feed at one observation time, and how that time is known."""

    class DateBasis(models.TextChoices):
        SOURCE = "source", _("timestamp in the source")
        PUBLISHED = "published", _("commit or publication date")
        FETCHED = "fetched", _("time we fetched it")
        ESTIMATE = "estimate", _("estimate")

    feed = models.CharField(max_length=200)
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="snapshots")
    observed_at = models.DateTimeField()
    date_basis = models.CharField(max_length=16, choices=DateBasis.choices)
    date_note = models.CharField(max_length=500, blank=True)
    offers = models.PositiveIntegerField(default=0)
    import_run = models.ForeignKey("ImportRun", on_delete=models.SET_NULL, null=True, blank=True)

    class Meta:
        ordering = ["feed", "provider", "-observed_at"]
        constraints = [models.UniqueConstraint(fields=["feed", "provider", "observed_at"], name="pricesnapshot_unique")]
        indexes = [models.Index(fields=["provider", "-observed_at"], name="pricesnapshot_provider_newest")]

    def __str__(self) -> str:
        return f"{self.feed} {self.provider_id} @ {self.observed_at:%Y-%m-%d %H:%M}"

    @property
    def date_is_estimate(self) -> bool:
        return self.date_basis == self.DateBasis.ESTIMATE


class PriceFetch(models.Model):
    """One download of a published catalogue file (manage.py fetch_prices, the beat task)."""

    class Status(models.TextChoices):
        CHANGED = "changed", _("New content, imported")
        UNCHANGED = "unchanged", _("Not modified since the last fetch")
        FAILED = "failed", _("Failed")

    source = models.CharField(max_length=64, help_text=_("Which file: the cloud's name in the catalogue."))
    url = models.URLField(max_length=500)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    etag = models.CharField(max_length=200, blank=True)
    last_modified = models.CharField(max_length=64, blank=True)
    bytes = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    import_run = models.ForeignKey("ImportRun", on_delete=models.SET_NULL, null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["source", "-started_at"], name="pricefetch_source_newest")]

    def __str__(self) -> str:
        return f"{self.source} {self.status} @ {self.started_at:%Y-%m-%d %H:%M}"


class PriceObservation(models.Model):
    """A change point of an offer's price: the price and the first time it was seen after another.

    Never updated. A point that an older snapshot imported later makes redundant (the same price
    right before it) is removed, so that the history does not depend on the import order
    (catalog.services.prices.writer).
    """

    offer = models.ForeignKey(Offer, on_delete=models.CASCADE, related_name="observations")
    observed_at = models.DateTimeField()
    price_per_hour = models.DecimalField(max_digits=14, decimal_places=6, help_text=_("Whole instance."))
    currency = models.CharField(max_length=3)
    price_per_gpu_hour = models.DecimalField(max_digits=14, decimal_places=6)
    price_per_gpu_hour_usd = models.DecimalField(max_digits=14, decimal_places=6)
    import_run = models.ForeignKey("ImportRun", on_delete=models.SET_NULL, null=True, blank=True)

    class Meta:
        ordering = ["offer", "observed_at"]
        constraints = [
            models.UniqueConstraint(fields=["offer", "observed_at"], name="observation_unique_time"),
            models.CheckConstraint(condition=Q(price_per_hour__gt=0), name="observation_price_positive"),
            models.CheckConstraint(condition=Q(price_per_gpu_hour__gt=0), name="observation_gpu_price_positive"),
        ]
        indexes = [models.Index(fields=["observed_at"])]

    def __str__(self) -> str:
        return f"{self.offer_id} {self.price_per_hour} {self.currency} @ {self.observed_at:%Y-%m-%d %H:%M}"


class ImportRun(models.Model):
    """One run of a price importer over one file: its summary and rejected rows."""

    class Status(models.TextChoices):
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    provider = models.ForeignKey(Provider, on_delete=models.SET_NULL, null=True, blank=True)
    path = models.CharField(max_length=500)
    format = models.CharField(max_length=32)
    sha256 = models.CharField(max_length=64)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    summary = models.JSONField(default=dict, blank=True)
    rejected_rows = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.format} {self.path}"


class UnmatchedGpuName(models.Model):
    """A GPU name from an import or a submission that no alias matched, awaiting a curator."""

    name = models.CharField(max_length=200)
    normalised = models.CharField(max_length=200, unique=True)
    context = models.CharField(max_length=200, blank=True, help_text=_("Where it was seen."))
    memory_gib = models.FloatField(null=True, blank=True)
    occurrences = models.PositiveIntegerField(default=1)
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)
    resolved_to = models.ForeignKey(Gpu, on_delete=models.SET_NULL, null=True, blank=True)

    class Meta:
        ordering = ["-occurrences"]

    def __str__(self) -> str:
        return self.name


class ExchangeRate(models.Model):
    """Dated conversion rate to USD; the newest rate on or before a date applies."""

    currency = models.CharField(max_length=3)
    date = models.DateField()
    usd_per_unit = models.DecimalField(max_digits=18, decimal_places=8)
    source = models.CharField(max_length=500)
    history = HistoricalRecords()

    class Meta:
        ordering = ["currency", "-date"]
        constraints = [
            models.UniqueConstraint(fields=["currency", "date"], name="exchangerate_unique_day"),
            models.CheckConstraint(condition=Q(usd_per_unit__gt=0), name="exchangerate_positive"),
        ]

    def __str__(self) -> str:
        return f"1 {self.currency} = {self.usd_per_unit} USD ({self.date})"


class PurchasePrice(models.Model):
    class Condition(models.TextChoices):
        NEW = "new", _("New")
        USED = "used", _("Used")

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="purchase_prices")
    condition = models.CharField(max_length=8, choices=Condition.choices)
    price = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="USD")
    observed_on = models.DateField()
    source = models.CharField(max_length=500)
    note = models.TextField(blank=True)
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["gpu", "condition", "-observed_on"]
        constraints = [
            models.CheckConstraint(condition=Q(price__gt=0), name="purchaseprice_positive"),
            models.UniqueConstraint(fields=["gpu", "condition", "observed_on", "source"], name="purchaseprice_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu} {self.condition} {self.price} {self.currency}"


class GpuPrice(models.Model):
    """A GPU's rental price by one rule, derived from its current offers; never edited by hand.

    Written by ``catalog.services.prices.derive.gpu_prices_derive`` after every price import and
    every curator's offer mapping, read by ``catalog.selectors.prices.gpu_rent_prices`` with one
    indexed query. ``gpu_count`` 0 is the price over machines of any size; 1, 2, 4, 8... over
    machines of that many GPUs. ``contributors`` holds each provider's cheapest offer the figure
    is taken from (the GPU page credits them all).
    """

    class Rule(models.TextChoices):
        TYPICAL = "typical", _("typical on-demand price")
        CHEAPEST = "cheapest", _("cheapest on-demand offer")
        SPOT = "spot", _("cheapest spot offer")

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="rent_prices")
    gpu_count = models.PositiveSmallIntegerField(default=0, help_text=_("GPUs per machine; 0: machines of any size."))
    rule = models.CharField(max_length=16, choices=Rule.choices)
    price_usd = models.DecimalField(max_digits=14, decimal_places=6)
    minimum_usd = models.DecimalField(max_digits=14, decimal_places=6)
    typical_usd = models.DecimalField(max_digits=14, decimal_places=6)
    maximum_usd = models.DecimalField(max_digits=14, decimal_places=6)
    providers = models.PositiveIntegerField()
    offers = models.PositiveIntegerField()
    single_listing = models.BooleanField(
        default=False, help_text=_("The only offer is one marketplace listing: a price, not a typical one.")
    )
    offer = models.ForeignKey(Offer, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    provider_name = models.CharField(max_length=120)
    provider_slug = models.CharField(max_length=64)
    instance_type = models.CharField(max_length=200)
    region = models.CharField(max_length=200, blank=True)
    offer_gpu_count = models.FloatField()
    observed_at = models.DateTimeField(help_text=_("The newest snapshot that listed the credited offer."))
    date_basis = models.CharField(max_length=16, choices=PriceSnapshot.DateBasis.choices, blank=True)
    date_note = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=500, blank=True)
    typical_between = models.JSONField(default=list, blank=True)
    contributors = models.JSONField(default=list, blank=True)
    digest = models.CharField(
        max_length=64, default="", help_text=_("A hash of the figures and credits: an unchanged row is left as it is.")
    )
    derived_at = models.DateTimeField()

    class Meta:
        ordering = ["gpu", "rule", "gpu_count"]
        constraints = [
            models.UniqueConstraint(fields=["rule", "gpu_count", "gpu"], name="gpuprice_rule_count_gpu"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu_id} {self.rule} x{self.gpu_count}: {self.price_usd}"


class GpuPriceDay(models.Model):
    """A GPU's lowest price per GPU-hour seen on one day at one provider (on-demand or spot): the
    price history the GPU page draws, derived from ``PriceObservation`` so that the page reads
    providers x days rows, not every observation. Never edited by hand: written by
    ``catalog.services.prices.derive.gpu_price_days_derive`` for the GPUs a price import or an
    offer mapping touched, and for every GPU by ``rebuild_prices``.
    """

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="+")
    day = models.DateField(help_text=_("The UTC day of the observations."))
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="+")
    is_spot = models.BooleanField()
    low_usd = models.DecimalField(max_digits=14, decimal_places=6)

    class Meta:
        ordering = ["gpu", "day"]
        constraints = [
            models.UniqueConstraint(fields=["gpu", "provider", "is_spot", "day"], name="gpupriceday_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu_id} {self.day} {self.provider_id}{' spot' if self.is_spot else ''}: {self.low_usd}"


class GpuPriceGap(models.Model):
    """Why a GPU with offers has no typical price: derived with ``GpuPrice``, so that a page can
    say why in one query. A GPU without a row and without a price has no offer at all."""

    class Reason(models.TextChoices):
        PLACEHOLDER = "placeholder", _("only placeholder prices")
        SPOT_ONLY = "spot-only", _("only spot offers")
        AMBIGUOUS = "ambiguous", _("offers that do not state the form factor")
        STALE = "stale", _("offers older than the freshness window")
        WITHDRAWN = "withdrawn", _("offers no longer listed")
        UNPRICED = "unpriced", _("offers listed without a price per GPU")

    gpu = models.OneToOneField(Gpu, on_delete=models.CASCADE, related_name="price_gap")
    reason = models.CharField(max_length=16, choices=Reason.choices)
    offers = models.PositiveIntegerField(help_text=_("Offers of the GPU the reason is about."))
    newest = models.DateTimeField(null=True, blank=True, help_text=_("The newest sighting of those offers."))

    def __str__(self) -> str:
        return f"{self.gpu_id}: {self.reason}"
