"""Serializers of /api/v1/watches/: the body that creates a watch, and a watch as the API shows it."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from django.core.validators import RegexValidator
from django.urls import reverse
from rest_framework import serializers

from catalog.money import CURRENCIES
from watches.models import Delivery, Watch, WatchKind, WatchMetric
from watches.validation import GPU_COUNT_MAX, THRESHOLD_MAX, WatchSpec

# DRF refuses a NUL character in any text field (PostgreSQL cannot store one); the pattern puts that
# rule in the schema, so that a client reading it knows the value is refused.
NO_NUL = RegexValidator(r"^[^\x00]*$", message="Null characters are not allowed.")


class RoundedDecimalField(serializers.DecimalField):
    """A decimal rounded to its places rather than refused for having more: a JSON number such as
    0.000001 may arrive as 1.0000000000000002e-06. The value's bounds still apply."""

    def validate_precision(self, value: Decimal) -> Decimal:
        # The bounds are checked before rounding: quantizing a number far beyond max_digits (1e307)
        # raises InvalidOperation rather than a validation error.
        if self.max_value is not None and value > self.max_value:
            self.fail("max_value", max_value=self.max_value)
        if self.min_value is not None and value < self.min_value:
            self.fail("min_value", min_value=self.min_value)
        return value


class WatchCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=WatchKind.choices, help_text="`price`: a GPU's cheapest offer; `ranking`: a ranking row's figure."
    )
    threshold = RoundedDecimalField(
        max_digits=14,
        decimal_places=6,
        rounding=ROUND_HALF_EVEN,
        min_value=Decimal("0.000001"),
        max_value=THRESHOLD_MAX,
        # A number in the schema: as a string its pattern would admit "" (drf-spectacular).
        coerce_to_string=False,
        help_text="Alert when the figure reaches it: at or under it for a price or a cost, at or over it for performance per price.",
    )
    metric = serializers.ChoiceField(
        choices=WatchMetric.choices,
        required=False,
        help_text="`price`: price_per_gpu_hour (the default); `ranking`: cost_per_million_tokens (LLM use cases) or perf_per_dollar.",
    )
    gpu = serializers.CharField(
        max_length=120,
        required=False,
        allow_blank=True,
        help_text="GPU identifier (slug). Required for `price`; omitted for `ranking`: any GPU (the best row).",
    )
    gpu_count = serializers.IntegerField(
        min_value=1,
        max_value=GPU_COUNT_MAX,
        required=False,
        allow_null=True,
        help_text="`price`: machines with this many GPUs only.",
    )
    spot = serializers.BooleanField(
        required=False, default=False, help_text="`price`: spot offers instead of on-demand."
    )
    provider = serializers.CharField(
        max_length=64, required=False, allow_blank=True, help_text="`price`: provider identifier."
    )
    region = serializers.CharField(
        max_length=64,
        required=False,
        allow_blank=True,
        validators=[NO_NUL],
        help_text="`price`: part of the offer's region.",
    )
    currency = serializers.ChoiceField(
        choices=CURRENCIES,
        required=False,
        default="USD",
        help_text="`price`: the threshold's currency; `ranking`: set by `query.currency`.",
    )
    query = serializers.DictField(
        child=serializers.CharField(max_length=200),
        required=False,
        help_text="`ranking`: the ranking question as /api/v1/rankings/ query parameters (use_case, model_size, interactivity, ...).",
    )
    email = serializers.EmailField(required=False, allow_blank=True, help_text="Address the alerts are emailed to.")
    webhook_url = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        help_text="http(s) URL on a public address; each alert is POSTed as JSON with X-GPU-Atlas-Signature: sha256=<HMAC-SHA256 of the body>.",
    )

    def validate_query(self, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > 60:
            raise serializers.ValidationError("at most 60 parameters")
        return value

    def spec(self) -> WatchSpec:
        data = self.validated_data
        ranking = data["kind"] == WatchKind.RANKING
        return WatchSpec(
            kind=data["kind"],
            threshold=data["threshold"],
            metric=data.get("metric") or ("" if ranking else WatchMetric.PRICE_PER_GPU_HOUR),
            gpu=data.get("gpu") or "",
            gpu_count=data.get("gpu_count"),
            spot=data.get("spot", False),
            provider=data.get("provider") or "",
            region=data.get("region") or "",
            query=data.get("query") or {},
            currency=data.get("currency") or "USD",
            email=data.get("email") or "",
            webhook_url=data.get("webhook_url") or "",
        )


class WatchSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=WatchKind.choices)
    metric = serializers.ChoiceField(choices=WatchMetric.choices)
    gpu = serializers.CharField(source="gpu.slug", allow_null=True, default=None, help_text="None: any GPU.")
    gpu_count = serializers.IntegerField(allow_null=True)
    spot = serializers.BooleanField()
    provider = serializers.CharField(source="provider.slug", allow_null=True, default=None)
    region = serializers.CharField()
    query = serializers.DictField(child=serializers.CharField(), help_text="The normalised ranking question.")
    threshold = serializers.DecimalField(max_digits=14, decimal_places=6)
    currency = serializers.CharField()
    email = serializers.CharField()
    webhook_url = serializers.CharField()
    webhook_disabled_at = serializers.DateTimeField(allow_null=True, help_text="Set after repeated failed deliveries.")
    feed_url = serializers.SerializerMethodField(help_text="Atom feed of the alerts; needs no sign-in.")
    met = serializers.BooleanField(help_text="The last figure was at or past the threshold.")
    last_value = serializers.FloatField(allow_null=True)
    value_since = serializers.DateTimeField(allow_null=True)
    last_crossed_at = serializers.DateTimeField(allow_null=True)
    last_email_status = serializers.ChoiceField(choices=Delivery.Status.choices, allow_null=True, default=None)
    last_webhook_status = serializers.ChoiceField(choices=Delivery.Status.choices, allow_null=True, default=None)
    created_at = serializers.DateTimeField()

    def get_feed_url(self, watch: Watch) -> str:
        request = self.context["request"]
        return request.build_absolute_uri(reverse("watches:watch-feed", args=[watch.feed_token]))


class WatchCreatedSerializer(WatchSerializer):
    webhook_secret = serializers.CharField(
        help_text="The webhook's signing secret: in this response only, never again."
    )
