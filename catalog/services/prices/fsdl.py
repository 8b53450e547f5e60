"""Full Stack Deep Learning ``cloud-gpus.csv`` (github.com/the-full-stack/website, MIT).

Columns ``Cloud,GPU Type,GPU Arch,GPUs,GPU RAM,vCPUs,RAM,On-demand,Per-GPU,Spot,Name``.
``On-demand`` and ``Spot`` are whole-instance USD/hour (AWS p3.8xlarge: 4 GPUs, 12.24 and
3.67); our per-GPU price is ``On-demand / GPUs`` like every other format, and the file's own
``Per-GPU`` column is kept in ``extra`` for comparison (it disagrees with the division in a
few Cudo rows). ``GPU RAM`` is the total over all GPUs.

Identity: many rows have no ``Name`` (Cudo) and GCP reuses one host name with several GPUs
(n1-highmem-8 + V100/P100/K80/T4), so the instance label is built from the name, the GPU count
and type; distinct listings that still collide get a ``listing N`` suffix, exact duplicates
are reported as duplicates.
"""

from __future__ import annotations

import csv
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

FORMAT = "fsdl"
HEADER = ("Cloud", "GPU Type", "GPUs", "On-demand")
SERVERLESS_HEADER = ("Vendor", "GPU Type", "GPUs", "Per-Hour")
_RANGE = re.compile(r"^\s*\d+(\.\d+)?\s*-\s*\d+(\.\d+)?\s*$")
_MEMORY_IN_TYPE = re.compile(r"\(\s*(\d+(?:\.\d+)?)\s*GB\s*\)", re.IGNORECASE)


def looks_like_fsdl(header: list[str]) -> bool:
    return set(HEADER) <= set(header) or set(SERVERLESS_HEADER) <= set(header)


def _tidy(record: dict[Any, Any]) -> dict[str, Any]:
    """Cells as typed by hand in a USD table: ``$0.4`` and ``16GB`` (Mystic AI rows) are plain numbers."""
    tidy = dict(record)
    for column in ("On-demand", "Per-GPU", "Spot"):
        if isinstance(tidy.get(column), str):
            tidy[column] = tidy[column].strip().removeprefix("$")
    if isinstance(tidy.get("GPU RAM"), str):
        tidy["GPU RAM"] = re.sub(r"(?i)\s*gb$", "", tidy["GPU RAM"].strip())
    return tidy


def _size(record: dict[Any, Any], column: str, extra: dict[str, Any]) -> float | None:
    """vCPUs/RAM; a range such as ``4-6`` (Dataoorts) is kept as listed, not guessed."""
    cell = record.get(column) or ""
    if _RANGE.match(cell):
        extra[f"{column.lower()}_listed"] = cell.strip()
        return None
    value = parse_float(cell, column)
    # 0 vCPUs / 0 GB RAM stands for "not stated" in these hand-typed rows.
    return value or None


def parse_fsdl(*, path: Path, text: str | None = None) -> ParsedFile:
    """Parse the FSDL cloud GPU table into offer rows (on-demand and spot)."""
    parsed = ParsedFile(format=FORMAT, feed=f"fsdl-cloud-gpus/{path.name}")
    if text is None:
        text = path.read_text(encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    serverless = "Vendor" in header and "Cloud" not in header
    expected = SERVERLESS_HEADER if serverless else HEADER
    missing = [c for c in expected if c not in header]
    if missing:
        raise PriceFileError(f"{path.name}: not an FSDL GPU price table, header lacks {', '.join(missing)}")
    listings: dict[tuple[str, str], list[tuple[Decimal | None, Decimal | None]]] = {}
    previous_end = 1
    for record in reader:
        line = previous_end + 1
        previous_end = reader.line_num
        parsed.rows_read += 1
        try:
            if serverless:
                record = {
                    **record,
                    "Cloud": record.get("Vendor"),
                    "On-demand": record.get("Per-Hour"),
                    "Name": "serverless",
                }
            record = _tidy(record)
            rows = _rows_for(record, line=line, listings=listings)
        except RowError as exc:
            parsed.rejected.append(RowRejection(line, str(exc)))
            continue
        parsed.rows.extend(rows)
    return parsed


def _rows_for(
    record: dict[Any, Any], *, line: int, listings: dict[tuple[str, str], list[tuple[Decimal | None, Decimal | None]]]
) -> list[OfferRow]:
    if None in record and any((v or "").strip() for v in record[None]):
        raise RowError(f"{len(record[None])} field(s) more than the header has")
    absent = [k for k, v in record.items() if k is not None and v is None]
    if absent:
        raise RowError(f"missing column(s): {', '.join(absent)}")
    cloud = record["Cloud"].strip()
    gpu_type = record["GPU Type"].strip()
    if not cloud or not gpu_type:
        raise RowError("Cloud and GPU Type are required")
    count = parse_float(record["GPUs"], "GPUs", required=True, positive=True) or 0.0
    extra: dict[str, Any] = {"provider_name": cloud}
    price = parse_decimal_price(record["On-demand"], "On-demand")
    spot = parse_decimal_price(record.get("Spot"), "Spot")
    listed_per_gpu = parse_decimal_price(record.get("Per-GPU"), "Per-GPU")
    if price is None and listed_per_gpu is not None:
        # Exoscale rows give only the per-GPU price; the instance price is that times the GPUs.
        price = (listed_per_gpu * Decimal(str(count))).quantize(PRICE_QUANTUM, rounding=ROUND_HALF_UP)
        extra["price_from_per_gpu_column"] = True
    if price is None and spot is None:
        raise RowError("no price: On-demand, Per-GPU and Spot are all empty or zero")
    total_memory = parse_float(record.get("GPU RAM"), "GPU RAM")
    in_type = _MEMORY_IN_TYPE.search(gpu_type)
    memories: tuple[float, ...] = ()
    if in_type:
        memories = (float(in_type.group(1)),)
    elif total_memory:
        memories = (round(total_memory / count, 2),)
    vcpus = _size(record, "vCPUs", extra)
    ram = _size(record, "RAM", extra)
    name = (record.get("Name") or "").strip()
    count_label = f"{count:g}x {gpu_type}"
    label = f"{name} · {count_label}" if name else f"{count_label} · {vcpus or 0:g} vCPU · {ram or 0:g} GB"
    slug = provider_slug(cloud)
    seen = listings.setdefault((slug, label), [])
    if (price, spot) not in seen:
        seen.append((price, spot))
    position = seen.index((price, spot))
    if position:
        label = f"{label} · listing {position + 1}"
    if (record.get("Per-GPU") or "").strip():
        extra["source_per_gpu"] = record["Per-GPU"].strip()
    if (record.get("GPU Arch") or "").strip():
        extra["architecture"] = record["GPU Arch"].strip()
    bare = _MEMORY_IN_TYPE.sub("", gpu_type).strip()
    base: dict[str, Any] = {
        "line": line,
        "provider": slug,
        "instance_type": label[:200],
        "gpu_name_raw": gpu_type,
        "gpu_count": count,
        "other_gpu_names": (bare,) if bare != gpu_type else (),
        "hints": f"{gpu_type} {name}",
        "memory_candidates": memories,
        "vcpus": vcpus,
        "ram_gib": ram,
        "extra": extra,
    }
    rows = []
    if price is not None:
        rows.append(OfferRow(**base, price_per_hour=price, is_spot=False))
    if spot is not None:
        rows.append(OfferRow(**base, price_per_hour=spot, is_spot=True))
    return rows
