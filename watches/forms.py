"""The watch form of the page (types only: watches/validation.py checks meaning for page and API)."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.http import QueryDict
from django.utils.translation import gettext_lazy as _

from catalog.money import CURRENCIES
from watches.models import WatchKind, WatchMetric
from watches.validation import RANKING_METRICS, THRESHOLD_MAX, WatchSpec

SPOT_CHOICES = (("", _("on-demand")), ("1", _("spot")))


class WatchForm(forms.Form):
    kind = forms.ChoiceField(choices=WatchKind.choices, widget=forms.HiddenInput)
    gpu = forms.CharField(max_length=120, required=False, widget=forms.HiddenInput)
    query = forms.CharField(max_length=2000, required=False, widget=forms.HiddenInput)
    any_gpu = forms.BooleanField(required=False, label=_("Any GPU: alert on the best row of the ranking"))
    metric = forms.ChoiceField(
        choices=[(m.value, m.label) for m in WatchMetric if m in RANKING_METRICS], required=False, label=_("Figure")
    )
    threshold = forms.DecimalField(
        min_value=Decimal("0.000001"), max_value=THRESHOLD_MAX, max_digits=14, decimal_places=6, label=_("Threshold")
    )
    currency = forms.ChoiceField(choices=[(c, c) for c in CURRENCIES], required=False, label=_("Currency"))
    spot = forms.ChoiceField(choices=SPOT_CHOICES, required=False, label=_("Offers"))
    gpu_count = forms.IntegerField(
        min_value=1, max_value=64, required=False, label=_("GPUs per machine"), help_text=_("Empty: any machine.")
    )
    provider = forms.CharField(max_length=64, required=False, label=_("Provider (identifier)"))
    region = forms.CharField(max_length=64, required=False, label=_("Region contains"))
    email = forms.EmailField(required=False, label=_("Email me at"), help_text=_("Empty: no email."))
    webhook_url = forms.CharField(
        max_length=500,
        required=False,
        label=_("Webhook URL"),
        help_text=_("Optional. We POST each alert as JSON, signed with a secret shown once."),
    )

    def spec(self) -> WatchSpec:
        data = self.cleaned_data
        ranking = data["kind"] == WatchKind.RANKING
        return WatchSpec(
            kind=data["kind"],
            threshold=data["threshold"],
            metric=data["metric"] if ranking else WatchMetric.PRICE_PER_GPU_HOUR,
            gpu="" if ranking and data["any_gpu"] else data["gpu"],
            gpu_count=data["gpu_count"],
            spot=data["spot"] == "1",
            provider=data["provider"],
            region=data["region"],
            query=QueryDict(data["query"]).dict() if ranking else {},
            currency=data["currency"] or "USD",
            email=data["email"],
            webhook_url=data["webhook_url"],
        )
