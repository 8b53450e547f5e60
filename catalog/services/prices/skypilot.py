"""SkyPilot catalogue files (``catalogs/v5|v6|v8/<cloud>/vms.csv``).

Columns are read by name because their order and set differ per cloud (jarvislabs ends in
``SpotPrice,Price``; hyperbolic adds ``StorageGiB``; primeintellect and verda add
``UpstreamCloudId``; aws adds ``Arch``). Traps handled here, as documented in
shared/data/SOURCES.md:

* ``GpuInfo`` is a Python-literal dict, real JSON, a dict with ``null``, or a plain GPU name;
* ``SizeInMiB`` is sometimes in GB (shadeform, runpod: 48, 80) and sometimes the total over
  all GPUs (vast, primeintellect); both readings are offered to the matcher, which keeps the
  one that fits the catalogue GPU within 7%;
* ``700.0`` is a placeholder meaning "unavailable" (GCP TPU rows): the offer is recorded as
  unavailable, never priced at $700;
* GCP host-VM rows (``a2-highgpu-1g``) are priced without their GPU: the offer is kept with
  ``price_separable=False`` and no per-GPU price;
* rows with only a ``SpotPrice`` give a spot offer only; a row with both gives two offers;
* float noise (``5.8854999999999995``) is rounded to the stored 6 decimal places.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from catalog.services.prices.common import (
    OfferRow,
    ParsedFile,
    PriceFileError,
    RowError,
    RowRejection,
    parse_decimal_price,
    parse_float,
    provider_slug,
)

FORMAT = "skypilot"
UNAVAILABLE_PLACEHOLDER = Decimal("700")
REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Region")
# GCP machine families whose price is the host VM only; the GPU is billed as a separate row.
# The GPU model and count follow from the machine type name (GCP's documented families).
GCP_HOST_FAMILIES = {
    "a2-highgpu": ("A100", 40.0),
    "a2-megagpu": ("A100", 40.0),
    "a2-ultragpu": ("A100-80GB", 80.0),
    "a3-highgpu": ("H100", 80.0),
    "a3-megagpu": ("H100-MEGA", 80.0),
}
_GCP_HOST = re.compile(r"^(?P<family>[a-z]\d-[a-z]+)-(?P<count>\d+)g$")
# vast folds GPU names into AcceleratorName (RTX_4060_Ti -> RTX4060, RTX_4070S_Ti -> RTX4070);
# its instance type keeps the real one: "1x-RTX_4060_Ti-32-65536".
_VAST_MODEL = re.compile(r"^\d+x-(?P<model>.+)-\d+-\d+$")
_VERSIONED_PATH = re.compile(r"(?:^|/)(v\d+)/([^/]+)/[^/]+\.csv$")


def skypilot_feed(path: Path) -> tuple[str, str]:
    """(feed key, cloud) for a catalogue path: ``skypilot-catalog/v8/lambda/vms.csv``, ``lambda``."""
    posix = path.as_posix()
    found = _VERSIONED_PATH.search(posix)
    if found:
        version, cloud = found.groups()
        return f"skypilot-catalog/{version}/{cloud}/{path.name}", cloud
    cloud = path.parent.name or path.stem
    return f"skypilot-catalog/{cloud}/{path.name}", cloud


def looks_like_skypilot(header: list[str]) -> bool:
    return {"InstanceType", "AcceleratorName", "AcceleratorCount"} <= set(header) and (
        "Price" in header or "SpotPrice" in header
    )


def parse_gpu_info(text: str) -> dict[str, Any] | str | None:
    """GpuInfo as a dict (JSON, Python literal, or with ``null``), a bare name, or None."""
    text = (text or "").strip()
    if not text:
        return None
    if not text.startswith("{"):
        return text
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(re.sub(r"\bnull\b", "None", text))
        except (ValueError, SyntaxError):
            raise RowError("GpuInfo is neither JSON nor a Python dict") from None
    if not isinstance(value, dict):
        raise RowError("GpuInfo is not a dict")
    return value


def _gpu_facts(info: dict[str, Any] | str | None, gpu_count: float) -> tuple[str, tuple[float, ...]]:
    """(GPU name from GpuInfo, per-GPU memory candidates in GiB)."""
    if info is None:
        return "", ()
    if isinstance(info, str):
        return info, ()
    gpus = info.get("Gpus") or []
    first = gpus[0] if gpus and isinstance(gpus[0], dict) else {}
    name = str(first.get("Name") or "")
    size = (first.get("MemoryInfo") or {}).get("SizeInMiB")
    try:
        size_value = float(size) if size is not None else 0.0
    except (TypeError, ValueError):
        size_value = 0.0
    if size_value <= 0:
        return name, ()
    # Below 1024 the figure cannot be MiB of a GPU: it is GB (the shadeform/runpod unit bug).
    gib = size_value if size_value < 1024 else size_value / 1024
    candidates = [round(gib, 2)]
    if gpu_count > 1:
        candidates.append(round(gib / gpu_count, 2))
    return name, tuple(candidates)


def parse_skypilot(*, path: Path, text: str | None = None) -> ParsedFile:
    """Parse one SkyPilot ``vms.csv`` into offer rows and rejected lines."""
    feed, cloud = skypilot_feed(path)
    provider = provider_slug(cloud)
    parsed = ParsedFile(format=FORMAT, feed=feed)
    if text is None:
        text = path.read_text(encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing or not ("Price" in header or "SpotPrice" in header):
        missing += [] if ("Price" in header or "SpotPrice" in header) else ["Price or SpotPrice"]
        raise PriceFileError(f"{path.name}: not a SkyPilot catalogue, header lacks {', '.join(missing)}")
    previous_end = 1
    for record in reader:
        line = previous_end + 1
        previous_end = reader.line_num
        parsed.rows_read += 1
        try:
            rows = _rows_for(record, line=line, provider=provider, cloud=cloud)
        except RowError as exc:
            parsed.rejected.append(RowRejection(line, str(exc)))
            continue
        if isinstance(rows, str):
            parsed.skip(rows)
            continue
        parsed.rows.extend(rows)
    return parsed


def _rows_for(record: dict[Any, Any], *, line: int, provider: str, cloud: str) -> list[OfferRow] | str:
    if None in record and any((v or "").strip() for v in record[None]):
        raise RowError(f"{len(record[None])} field(s) more than the header has")
    absent = [k for k, v in record.items() if k is not None and v is None]
    if absent:
        raise RowError(f"missing column(s): {', '.join(absent)}")
    instance = record["InstanceType"].strip()
    accelerator = record["AcceleratorName"].strip()
    price = _price(record, "Price")
    spot = _price(record, "SpotPrice")
    separable = True
    if not accelerator:
        host = _GCP_HOST.match(instance) if cloud == "gcp" else None
        if host is None or host.group("family") not in GCP_HOST_FAMILIES:
            return "no accelerator (CPU-only instance)"
        accelerator, memory = GCP_HOST_FAMILIES[host.group("family")]
        gpu_count = float(host.group("count"))
        gpu_info_name, memories = "", (memory,)  # type: tuple[str, tuple[float, ...]]
        separable = False
    else:
        gpu_count = parse_float(record["AcceleratorCount"], "AcceleratorCount", required=True, positive=True) or 0.0
        info = parse_gpu_info(record.get("GpuInfo") or "")
        gpu_info_name, memories = _gpu_facts(info, gpu_count)
    if not instance:
        instance = accelerator  # GCP accelerator rows have no instance type of their own
    if price is None and spot is None:
        raise RowError("no price: Price and SpotPrice are both empty or zero")
    vcpus = parse_float(record.get("vCPUs"), "vCPUs")
    ram = parse_float(record.get("MemoryGiB"), "MemoryGiB")
    extra: dict[str, Any] = {}
    if record.get("UpstreamCloudId"):
        extra["upstream_id"] = record["UpstreamCloudId"].strip()
    if record.get("Arch"):
        extra["arch"] = record["Arch"].strip()
    if cloud in ("shadeform", "primeintellect") and "_" in instance:
        extra["upstream_provider"] = instance.split("_", 1)[0]
    others = tuple(n for n in (gpu_info_name,) if n and n != accelerator)
    if cloud == "vast" and (model := _VAST_MODEL.match(instance)):
        # The folded AcceleratorName would name another GPU: never fall back to it.
        extra["accelerator_name"] = accelerator
        accelerator, others = model.group("model").replace("_", " "), ()
    base: dict[str, Any] = {
        "line": line,
        "provider": provider,
        "instance_type": instance[:200],
        "gpu_name_raw": accelerator,
        "gpu_count": gpu_count,
        "region": (record.get("Region") or "").strip()[:200],
        "zone": (record.get("AvailabilityZone") or "").strip()[:200],
        "other_gpu_names": others,
        "hints": f"{instance} {gpu_info_name}",
        "memory_candidates": memories,
        "vcpus": vcpus,
        "ram_gib": ram,
        "price_separable": separable,
        "extra": extra,
    }
    rows = []
    for value, is_spot in ((price, False), (spot, True)):
        if value is None:
            continue
        if value == UNAVAILABLE_PLACEHOLDER:
            rows.append(OfferRow(**base, is_spot=is_spot, price_per_hour=None, unavailable=True))
        else:
            rows.append(OfferRow(**base, is_spot=is_spot, price_per_hour=value))
    return rows


def _price(record: dict[Any, Any], column: str) -> Decimal | None:
    return parse_decimal_price(record.get(column), column) if column in record else None
