"""``{{ workload|workload_name }}``, ``|workload_description`` and ``|workload_unit`` in the page's language."""

from __future__ import annotations

from django import template

from benchmarks_app.models import Workload
from benchmarks_app.workload_text import workload_display_description, workload_display_name, workload_display_unit

register = template.Library()


@register.filter
def workload_name(workload: Workload) -> str:
    return workload_display_name(slug=workload.slug, version=workload.version, fallback=workload.name)


@register.filter
def workload_description(workload: Workload) -> str:
    return workload_display_description(slug=workload.slug, version=workload.version, fallback=workload.description)


@register.filter
def workload_unit(workload: Workload) -> str:
    return workload_display_unit(workload.unit)
