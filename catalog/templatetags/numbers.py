"""``{{ value|num }}``, ``{{ value|num:"money" }}``: every figure on a page in one format (gpuatlas/numbers.py)."""

from __future__ import annotations

from decimal import Decimal

from django import template

from gpuatlas.numbers import number_text

register = template.Library()


@register.filter
def num(value: float | int | Decimal | str | None, unit: str = "") -> str:
    return number_text(value, unit)
