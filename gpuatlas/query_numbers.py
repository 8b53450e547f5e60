"""Numbers from query strings, checked against a sane range before any arithmetic sees them.

A query string is written by anyone: ``1e-300`` is a positive price whose reciprocal overflows,
``5e-324`` underflows to zero in a logarithm, ``nan`` passes every comparison it is put through,
``1_000`` and ``0x10`` are numbers to Python but not to a person. Each figure a page or the API
reads from its query is therefore parsed here, in plain decimal notation only, and refused unless
it lies within the range stated once below for what it measures. The refusal names the
parameter and the reason (``QueryNumberError``): the API answers 400 with them, a page shows
them beside its form.

The ranges are wider than anything real and narrow enough that no arithmetic on them leaves the
finite floats: a GPU-hour above any rental on record and above a tenth of a cent; tokens per
second per user from a tenth (a slow reader) to ten thousand; sequence lengths up to a million
tokens (the longest context windows published).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

# Plain decimal or scientific notation: no underscores, hex, "inf" or "nan".
_DECIMAL = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$", re.ASCII)
# Longer than any sane number: refused before float() parses a megabyte of digits.
MAX_NUMBER_CHARS = 40


class QueryNumberError(ValueError):
    """A query parameter that is not a number within its range; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class NumberRange:
    """What a parameter measures and the values it may take: ``low`` < x (or <= with
    ``low_inclusive``) and x <= ``high``, in ``unit``; ``integer`` refuses fractions."""

    low: float
    high: float
    unit: Promise | str
    low_inclusive: bool = True
    integer: bool = False

    def holds(self, value: float) -> bool:
        above = value >= self.low if self.low_inclusive else value > self.low
        return math.isfinite(value) and above and value <= self.high and (not self.integer or float(value).is_integer())

    def describe(self) -> str:
        values = {"low": f"{self.low:g}", "high": f"{self.high:g}", "unit": self.unit}
        if self.integer:
            return _("a whole number from %(low)s to %(high)s %(unit)s") % values
        if self.low_inclusive:
            return _("a number from %(low)s to %(high)s %(unit)s") % values
        return _("a number above %(low)s and at most %(high)s %(unit)s") % values


#: A price per GPU-hour in the page currency (USD or CNY), the ``gpu_price[<gpu slug>]`` parameters.
GPU_PRICE_PER_HOUR = NumberRange(low=0.001, high=1000.0, unit=gettext_lazy("per GPU-hour"))
#: An electricity price per kWh in the page currency (the rankings' ``kwh_price``, buy mode).
ELECTRICITY_PER_KWH = NumberRange(low=0.0, high=100.0, unit=gettext_lazy("per kWh"))
#: A memory size in GiB (the rankings' ``min_vram``).
MEMORY_GIB = NumberRange(low=0.0, high=100_000.0, unit=gettext_lazy("GiB"))
#: An LLM serving target: output tokens per second for each user (interactivity).
TOKENS_PER_S_PER_USER = NumberRange(low=0.1, high=10_000.0, unit=gettext_lazy("tokens/s per user"))
#: An LLM request's input (prompt) or output length.
SEQUENCE_TOKENS = NumberRange(low=1, high=1_048_576, unit=gettext_lazy("tokens"), integer=True)


def number_parse(raw: str, *, field: str, bounds: NumberRange) -> float:
    """``raw`` as a number within ``bounds``; QueryNumberError naming ``field`` otherwise."""
    text = raw.strip()
    if len(text) > MAX_NUMBER_CHARS or not _DECIMAL.match(text):
        raise QueryNumberError(field, _("not a number (write it like 2.5 or 1e3)"))
    value = float(text)
    if not bounds.holds(value):
        raise QueryNumberError(field, _("out of range: give %(range)s") % {"range": bounds.describe()})
    return value


def query_number(query: Mapping[str, str], name: str, *, bounds: NumberRange) -> float | None:
    """The parameter ``name`` of ``query`` checked by ``number_parse``; None when absent or empty."""
    raw = query.get(name)
    if raw is None or not raw.strip():
        return None
    return number_parse(raw, field=name[:140], bounds=bounds)
