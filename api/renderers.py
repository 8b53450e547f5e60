"""JSON rendering with orjson: same output shape as DRF's JSONRenderer, several times faster.

perf/bench_api.py measures both (``--renderer drf`` vs the default) and prints the figures.
Decimals become JSON numbers, as DRF's encoder does; datetimes are RFC 3339.
"""

from __future__ import annotations

import decimal
import uuid
from typing import Any

import orjson
from django.utils.functional import Promise
from rest_framework.renderers import JSONRenderer

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_UTC_Z


def _default(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, Promise):  # lazy translations in error messages
        return str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if hasattr(value, "tolist"):  # numpy scalars/arrays from the ranking computations
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class OrjsonRenderer(JSONRenderer):
    """``application/json`` via orjson; falls back to DRF's renderer for indented output."""

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if data is None:
            return b""
        renderer_context = renderer_context or {}
        if self.get_indent(accepted_media_type or "", renderer_context):
            return super().render(data, accepted_media_type, renderer_context)
        return orjson.dumps(data, default=_default, option=_OPTIONS)
