from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog.models import Segment
from catalog.selectors import CATALOGUE_SORTS


class GpuFilterForm(forms.Form):
    query = forms.CharField(required=False, max_length=100, label=_("Search"))
    vendor = forms.SlugField(required=False, max_length=64, label=_("Vendor"))
    architecture = forms.SlugField(required=False, max_length=64, label=_("Architecture"))
    segment = forms.ChoiceField(required=False, choices=[("", _("Any"))] + list(Segment.choices), label=_("Segment"))
    min_memory = forms.FloatField(required=False, min_value=0, max_value=10_000, label=_("Min memory (GiB)"))
    max_memory = forms.FloatField(required=False, min_value=0, max_value=10_000, label=_("Max memory (GiB)"))
    scope = forms.ChoiceField(
        required=False,
        choices=[("dl", _("Deep-learning GPUs")), ("all", _("All GPUs"))],
        label=_("Show"),
    )
    sort = forms.ChoiceField(required=False, choices=[(k, k) for k in CATALOGUE_SORTS], label=_("Sort by"))
