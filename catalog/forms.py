from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog.matching.rules import name_rule_problems
from catalog.models import GpuNameRule, Segment
from catalog.selectors.gpus import CATALOGUE_SORTS


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


class GpuNameRuleForm(forms.ModelForm):
    """The admin form of a name rule: refuses a rule the matcher could not apply."""

    class Meta:
        model = GpuNameRule
        fields = (
            "position",
            "kind",
            "pattern",
            "value",
            "phrase",
            "memory_gib",
            "gpus",
            "reason",
            "example",
            "source",
            "origin",
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        gpus = data.get("gpus")
        problems = name_rule_problems(
            kind=data.get("kind") or "",
            pattern=data.get("pattern") or "",
            value=data.get("value") or "",
            memory_gib=data.get("memory_gib"),
            gpu_count=len(gpus) if gpus is not None else 0,
            source=data.get("source") or "",
        )
        for field_name, problem in problems:
            self.add_error(field_name if field_name in self.fields else None, problem)
        return data
