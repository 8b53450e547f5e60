"""Price watches: what an account watches, each time its figure crossed the threshold, and the
alerts sent for it.

A watch follows one figure: the cheapest current offer of a GPU (``Kind.PRICE``), or a ranking
row's cost per million tokens or performance per price (``Kind.RANKING``, for one GPU or the
best of any GPU). It is evaluated when the data behind that figure changes
(watches/services/evaluation.py) and stores the last figure and whether it was past the threshold:
a crossing is recorded when the figure goes past the threshold from the other side, so that each
crossing alerts once.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from catalog.models import Gpu, Offer, Provider


class WatchKind(models.TextChoices):
    PRICE = "price", _("GPU price")
    RANKING = "ranking", _("Ranking figure")


class WatchMetric(models.TextChoices):
    PRICE_PER_GPU_HOUR = "price_per_gpu_hour", _("price per GPU-hour")
    COST_PER_MILLION_TOKENS = "cost_per_million_tokens", _("cost per million tokens")
    PERF_PER_DOLLAR = "perf_per_dollar", _("performance per price")


# A price or a cost alerts when it falls to the threshold; performance per price when it rises to it.
HIGHER_IS_BETTER = frozenset({WatchMetric.PERF_PER_DOLLAR})


class WatchQuerySet(models.QuerySet["Watch"]):
    def of_user(self, user: object) -> WatchQuerySet:
        """The watches ``user`` owns: the only ones a user ever sees or deletes."""
        return self.filter(user=user)

    def price_of_gpus(self, gpu_ids: list[int]) -> WatchQuerySet:
        """Price watches whose figure a change to the offers of ``gpu_ids`` can move."""
        return self.filter(kind=WatchKind.PRICE, gpu_id__in=gpu_ids)

    def ranking_priced_by_gpus(self, gpu_ids: list[int]) -> WatchQuerySet:
        """Ranking watches a change to the rental prices of ``gpu_ids`` can move: those on one of
        these GPUs and those on any GPU (the best row may now be another)."""
        return self.filter(kind=WatchKind.RANKING).filter(Q(gpu_id__in=gpu_ids) | Q(gpu__isnull=True))

    def ranking_of_use_cases(self, use_cases: list[str]) -> WatchQuerySet:
        """Ranking watches on a question of one of ``use_cases``."""
        return self.filter(kind=WatchKind.RANKING, use_case__in=use_cases)


class Watch(models.Model):
    """One figure an account follows, its threshold, where its alerts go and its last state."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="watches")
    kind = models.CharField(max_length=16, choices=WatchKind.choices)
    metric = models.CharField(max_length=32, choices=WatchMetric.choices)
    gpu = models.ForeignKey(
        Gpu, on_delete=models.CASCADE, null=True, blank=True, related_name="watches", help_text=_("None: any GPU.")
    )
    # Price watches: which offers count.
    gpu_count = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text=_("Machines with this many GPUs only; none: any machine.")
    )
    spot = models.BooleanField(default=False)
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    region = models.CharField(max_length=64, blank=True, help_text=_("A part of the offer's region name."))
    # Ranking watches: the question, as the ranking's normalised query parameters.
    query = models.JSONField(default=dict, blank=True)
    use_case = models.CharField(max_length=32, blank=True, db_index=True)
    threshold = models.DecimalField(max_digits=14, decimal_places=6)
    currency = models.CharField(max_length=3, default="USD")
    # Where alerts go besides the feed.
    email = models.EmailField(blank=True)
    webhook_url = models.URLField(max_length=500, blank=True)
    webhook_secret = models.CharField(max_length=64, blank=True)
    webhook_failures = models.PositiveIntegerField(default=0, help_text=_("Failed deliveries in a row."))
    webhook_disabled_at = models.DateTimeField(null=True, blank=True)
    feed_token = models.CharField(max_length=43, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The last evaluation.
    met = models.BooleanField(default=False, help_text=_("The last figure was at or past the threshold."))
    last_value = models.FloatField(null=True, blank=True)
    value_since = models.DateTimeField(null=True, blank=True, help_text=_("When the last figure was first read."))
    last_crossed_at = models.DateTimeField(null=True, blank=True)

    objects = WatchQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["kind", "gpu"], name="watch_kind_gpu")]
        constraints = [
            models.CheckConstraint(condition=Q(threshold__gt=0), name="watch_threshold_positive"),
            models.CheckConstraint(
                condition=Q(kind=WatchKind.RANKING) | Q(gpu__isnull=False), name="watch_price_has_gpu"
            ),
        ]

    def __str__(self) -> str:
        return f"watch {self.pk} of {self.user_id}: {self.metric} {self.threshold} {self.currency}"

    @property
    def higher_is_better(self) -> bool:
        return self.metric in HIGHER_IS_BETTER

    @property
    def webhook_active(self) -> bool:
        return bool(self.webhook_url) and self.webhook_disabled_at is None


class Crossing(models.Model):
    """A watch's figure went past its threshold: the figure, and the offer or ranking row that did it."""

    watch = models.ForeignKey(Watch, on_delete=models.CASCADE, related_name="crossings")
    occurred_at = models.DateTimeField()
    value = models.FloatField()
    threshold = models.DecimalField(max_digits=14, decimal_places=6)
    currency = models.CharField(max_length=3)
    gpu = models.ForeignKey(Gpu, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    offer = models.ForeignKey(Offer, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    cause = models.JSONField(default=dict, help_text=_("The offer or the ranking row, as it was."))

    class Meta:
        ordering = ["-occurred_at", "-id"]
        indexes = [models.Index(fields=["watch", "-occurred_at"], name="crossing_watch_newest")]

    def __str__(self) -> str:
        return f"crossing {self.pk} of watch {self.watch_id}: {self.value}"


class Delivery(models.Model):
    """One alert of a crossing on one channel, and how sending it went (the delivery log)."""

    class Channel(models.TextChoices):
        EMAIL = "email", _("email")
        WEBHOOK = "webhook", _("webhook")

    class Status(models.TextChoices):
        PENDING = "pending", _("pending")
        RETRYING = "retrying", _("retrying")
        SENT = "sent", _("sent")
        FAILED = "failed", _("failed")

    crossing = models.ForeignKey(Crossing, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # The webhook body, signed and sent as is on every attempt.
    body = models.TextField(blank=True)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    attempted_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["crossing", "channel"], name="delivery_one_per_channel")]

    def __str__(self) -> str:
        return f"{self.channel} of crossing {self.crossing_id}: {self.status}"
