"""CSV downloads of page tables: streamed, and safe to open in a spreadsheet."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from typing import Any

from django.http import StreamingHttpResponse

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> Any:
    """Prefix text a spreadsheet would run as a formula (CSV injection); numbers pass unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return "" if value is None else value


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_rows(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterable[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(header)
    for row in rows:
        yield writer.writerow([csv_safe(v) for v in row])


def csv_response(*, filename: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(csv_rows(header, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
