"""Our hand-curated price CSV (docs/prices-csv-format.md), for providers without a machine feed.

Made for platforms such as the CNY-priced rental markets (AutoDL and its peers): prices may be in any
ISO currency and may be listed per GPU, and vCPUs and RAM may be given per GPU (they scale
with the number of GPUs rented). Every row names its source and the date it was read.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from catalog.services.prices.common import (
    PRICE_QUANTUM,
    OfferRow,
    ParsedFile,
    PriceFileError,
    RowError,
    RowRejection,
    parse_decimal_price,
    parse_float,
)
from catalog.services.prices.providers import provider_slug

FORMAT = "curated-csv"
REQUIRED = ("provider", "instance_type", "gpu_name", "gpu_count", "price_per_hour", "currency", "observed_at", "source")
OPTIONAL = (
    "provider_name",
    "region",
    "zone",
    "gpu_memory_gib",
    "spot_price_per_hour",
    "price_unit",
    "vcpus",
    "ram_gib",
    "vcpus_per_gpu",
    "ram_gib_per_gpu",
    "note",
)
_CURRENCY = re.compile(r"^[A-Z]{3}$")


def looks_like_curated(header: list[str]) -> bool:
    return {"provider", "gpu_name", "currency", "price_per_hour"} <= set(header)


def _observed_at(text: str) -> dt.datetime:
    text = text.strip()
    try:
        if len(text) == 10:
            return dt.datetime.combine(dt.date.fromisoformat(text), dt.time(), tzinfo=dt.UTC)
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise RowError(f"observed_at {text!r} is not an ISO date (YYYY-MM-DD) or date-time") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def parse_curated_csv(*, path: Path, text: str | None = None) -> ParsedFile:
    """Parse a curated price file; each row is one offer, observed at its own ``observed_at``."""
    parsed = ParsedFile(format=FORMAT, feed=f"curated/{path.name}", complete_snapshots=False)
    if text is None:
        text = path.read_text(encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise PriceFileError(f"{path.name}: curated price CSV header lacks {', '.join(missing)}")
    unknown = [c for c in header if c not in REQUIRED and c not in OPTIONAL]
    if unknown:
        raise PriceFileError(f"{path.name}: unknown column(s) {', '.join(unknown)} (see docs/prices-csv-format.md)")
    previous_end = 1
    for record in reader:
        line = previous_end + 1
        previous_end = reader.line_num
        parsed.rows_read += 1
        try:
            parsed.rows.extend(_rows_for(record, line))
        except RowError as exc:
            parsed.rejected.append(RowRejection(line, str(exc)))
    return parsed


def _rows_for(record: dict[Any, Any], line: int) -> list[OfferRow]:
    if None in record and any((v or "").strip() for v in record[None]):
        raise RowError(f"{len(record[None])} field(s) more than the header has")
    absent = [k for k, v in record.items() if k is not None and v is None]
    if absent:
        raise RowError(f"missing column(s): {', '.join(absent)}")
    for column in ("provider", "instance_type", "gpu_name", "source"):
        if not record[column].strip():
            raise RowError(f"{column} is empty")
    currency = record["currency"].strip().upper()
    if not _CURRENCY.match(currency):
        raise RowError(f"currency {record['currency']!r} is not a 3-letter ISO code")
    count = parse_float(record["gpu_count"], "gpu_count", required=True, positive=True) or 0.0
    unit = (record.get("price_unit") or "instance").strip().lower()
    if unit not in ("instance", "gpu"):
        raise RowError(f"price_unit {unit!r} must be 'instance' or 'gpu'")
    factor = count if unit == "gpu" else 1.0
    price = parse_decimal_price(record["price_per_hour"], "price_per_hour")
    spot = parse_decimal_price(record.get("spot_price_per_hour"), "spot_price_per_hour")
    if price is None and spot is None:
        raise RowError("no price: price_per_hour and spot_price_per_hour are both empty or zero")
    vcpus = parse_float(record.get("vcpus"), "vcpus")
    ram = parse_float(record.get("ram_gib"), "ram_gib")
    vcpus_per_gpu = parse_float(record.get("vcpus_per_gpu"), "vcpus_per_gpu")
    ram_per_gpu = parse_float(record.get("ram_gib_per_gpu"), "ram_gib_per_gpu")
    if vcpus is None and vcpus_per_gpu is not None:
        vcpus = vcpus_per_gpu * count
    if ram is None and ram_per_gpu is not None:
        ram = ram_per_gpu * count
    memory = parse_float(record.get("gpu_memory_gib"), "gpu_memory_gib", positive=True)
    provider_name = record["provider"].strip()
    extra: dict[str, Any] = {
        "provider_name": (record.get("provider_name") or provider_name).strip(),
        "source_url": record["source"].strip(),
    }
    if (record.get("note") or "").strip():
        extra["note"] = record["note"].strip()
    if unit == "gpu":
        extra["listed_per_gpu"] = True
    base: dict[str, Any] = {
        "line": line,
        "provider": provider_slug(provider_name),
        "instance_type": record["instance_type"].strip()[:200],
        "gpu_name_raw": record["gpu_name"].strip(),
        "gpu_count": count,
        "currency": currency,
        "region": (record.get("region") or "").strip()[:200],
        "zone": (record.get("zone") or "").strip()[:200],
        "hints": record["instance_type"],
        "memory_candidates": (memory,) if memory else (),
        "vcpus": vcpus,
        "ram_gib": ram,
        "observed_at": _observed_at(record["observed_at"]),
        "extra": extra,
    }
    rows = []
    for value, is_spot in ((price, False), (spot, True)):
        if value is not None:
            total = (value * Decimal(str(factor))).quantize(PRICE_QUANTUM, rounding=ROUND_HALF_UP)
            rows.append(OfferRow(**base, price_per_hour=total, is_spot=is_spot))
    return rows
