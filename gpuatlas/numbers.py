"""Numbers as a reader sees them, one format on every page and in both languages.

Grouped by thousands in the active language's format (Django's localisation: "8,406" in English
and in Chinese, see gpuatlas/formats), with the significant figures set by the unit:

* measured and derived figures (tokens/s, ratios, figures per price, per kW): three significant
  figures, and never fewer than the whole number ("8,406", "1,719", "42.5", "0.0123", "1.50");
* money ("money", or a currency code): whole units from 1,000 ("33,600"), cents from 1 ("2.49"),
  three significant figures below 1 ("0.0345": the cost of a million tokens);
* "%": whole percent from 10, one decimal below;
* "int": whole numbers (counts, GiB).

Templates use the ``num`` filter (catalog/templatetags/numbers.py); Python that writes text uses
``number_text``.
"""

from __future__ import annotations

import math
from decimal import Decimal

from django.utils import formats

SIGNIFICANT_FIGURES = 3
MONEY_UNITS = frozenset({"money", "USD", "CNY", "EUR"})
MISSING = "—"


def _decimals(value: float, unit: str) -> int:
    magnitude = abs(value)
    if unit == "int" or magnitude == 0:
        return 0
    if unit in MONEY_UNITS:
        if magnitude >= 1000:
            return 0
        if magnitude >= 1:
            return 2
    elif unit == "%":
        return 0 if magnitude >= 10 else 1
    return max(0, SIGNIFICANT_FIGURES - 1 - math.floor(math.log10(magnitude)))


def number_text(value: float | int | Decimal | str | None, unit: str = "") -> str:
    """``value`` in the page's format for its ``unit`` (module doc); an em dash for no value."""
    if value is None or value == "":
        return MISSING
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return MISSING
    decimals = _decimals(number, unit)
    rounded = round(number, decimals)
    if rounded == 0:
        rounded = 0.0  # never "-0"
    return formats.number_format(rounded, decimal_pos=decimals, use_l10n=True, force_grouping=True)
