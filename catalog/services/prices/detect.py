"""Which price format a file is, from its name and first line (never from its location)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from catalog.services.prices.curated_csv import FORMAT as CURATED
from catalog.services.prices.curated_csv import looks_like_curated
from catalog.services.prices.fsdl import FORMAT as FSDL
from catalog.services.prices.fsdl import looks_like_fsdl
from catalog.services.prices.skypilot import FORMAT as SKYPILOT
from catalog.services.prices.skypilot import looks_like_skypilot
from catalog.services.prices.tugot17 import FORMAT as TUGOT17
from catalog.services.prices.tugot17 import looks_like_tugot17

SKYPILOT_ACCELERATORS = "skypilot-accelerators"
EXCHANGE_RATES = "exchange-rates"
PRICE_FORMATS = (SKYPILOT, FSDL, TUGOT17, CURATED)
ALL_FORMATS = (*PRICE_FORMATS, SKYPILOT_ACCELERATORS, EXCHANGE_RATES)
EXCHANGE_RATE_HEADER = ["currency", "date", "usd_per_unit", "source"]


def format_detect(*, path: Path, text: str | None = None) -> str | None:
    """The format name of ``path`` (one of ALL_FORMATS), or None when it is none of ours."""
    if text is None:
        with path.open(encoding="utf-8-sig", errors="replace") as handle:
            first_line = handle.readline()
    else:
        first_line = text.split("\n", 1)[0]
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return TUGOT17 if looks_like_tugot17(first_line) else None
    if suffix != ".csv":
        return None
    header = [c.strip() for c in next(csv.reader(io.StringIO(first_line)), [])]
    if header == ["AcceleratorName", "Clouds"]:
        return SKYPILOT_ACCELERATORS
    if header == EXCHANGE_RATE_HEADER:
        return EXCHANGE_RATES
    if looks_like_skypilot(header):
        return SKYPILOT
    if looks_like_fsdl(header):
        return FSDL
    if looks_like_curated(header):
        return CURATED
    return None
