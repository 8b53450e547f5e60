"""SkyPilot catalogue files (``catalogs/v5|v6|v8/<cloud>/vms.csv``).

Columns are read by name because their order and set differ per cloud (jarvislabs ends in
``SpotPrice,Price``; hyperbolic adds ``StorageGiB``; primeintellect and verda add
``UpstreamCloudId``; aws adds ``Arch``). Traps handled here, as documented in
shared/data/SOURCES.md:

* ``GpuInfo`` is a Python-literal dict, real JSON, a dict with ``null``, or a plain GPU name;
* ``SizeInMiB`` is sometimes in GB (shadeform, runpod: 48, 80), sometimes the total over all
  GPUs (vast, primeintellect: a 2x V100 16 GB lists 32768), sometimes the host RAM per GPU
  (Nebius v7: an H100 lists 204800 = its 200 GiB of RAM, ignored); a memory size written in
  the instance type or GPU name (``datacrunch__2xV100_16GB``) is trusted first;
* ``700.0`` is a placeholder meaning "unavailable" (GCP TPU rows): the offer is recorded as
  unavailable, never priced at $700;
* GCP prices a GPU machine as two rows: the host VM (``a3-highgpu-8g``, priced without its
  GPUs) and the GPUs (empty ``InstanceType``, ``H100``, count 8). Where the machine family
  fixes the host for a GPU model and count (A100 -> a2-highgpu, A100-80GB -> a2-ultragpu,
  H100 -> a3-highgpu, H100-MEGA -> a3-megagpu, H200 -> a3-ultragpu, B200 -> a4-highgpu), the
  offer is the host with its GPUs at the sum of both prices in the same zone; GPU rows whose
  host is not fixed (N1 and G2 machines take several shapes) or not listed are left out with
  the reason; host rows without their GPU row are kept without a per-GPU price;
* rows with only a ``SpotPrice`` give a spot offer only; a row with both gives two offers;
* float noise (``5.8854999999999995``) is rounded to the stored 6 decimal places;
* GpuInfo keys are read whatever their case (DigitalOcean writes ``gpus``, ``memoryinfo``,
  ``sizeinmib``);
* a memory size in an instance type may be the whole instance's (DigitalOcean's
  ``gpu-h100x8-640gb`` is 8 x 80 GB): the size divided by the GPU count is offered as a reading
  too, and the linker takes the first reading a catalogue GPU of the model fits;
* marketplace listings (vast, SimplePod: kind "marketplace" in catalog/data/curated/providers.toml)
  are separate machines: two listings of one instance type in one region at different prices are
  two offers (`` · listing N``, numbered by price), not a conflict;
* prices are USD except where a cloud's catalogue is documented to bill in another currency
  (``CLOUD_CURRENCIES``).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from dataclasses import dataclass
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
)
from catalog.services.prices.providers import provider_is_marketplace, provider_slug

FORMAT = "skypilot"
UNAVAILABLE_PLACEHOLDER = Decimal("700")
REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Region")
CPU_ONLY = "no accelerator (CPU-only instance)"
HOST_WITH_GPU = "GCP host VM priced together with its GPU row"
GCP_HOST_MISSING = (
    "GCP GPU-only price left out: the host VM of its machine type is not listed for the same zone in this "
    "import (SkyPilot prices the GPUs and the host VM as separate rows; an offer is both); import the file "
    "with the host-VM rows in the same run"
)
# GCP machine families whose price is the host VM only; the GPU is billed as a separate row.
# The GPU model and count follow from the machine type name (GCP's documented families).
GCP_HOST_FAMILIES = {
    "a2-highgpu": ("A100", 40.0),
    "a2-megagpu": ("A100", 40.0),
    "a2-ultragpu": ("A100-80GB", 80.0),
    "a3-highgpu": ("H100", 80.0),
    "a3-megagpu": ("H100-MEGA", 80.0),
    "a3-ultragpu": ("H200", 141.0),
    "a4-highgpu": ("B200", 180.0),
}
# The host of a GPU-only row, by SkyPilot accelerator name and count (inverse of the above).
GCP_GPU_HOSTS = {
    (gpu, count): f"{family}-{count}g"
    for family, (gpu, _memory) in GCP_HOST_FAMILIES.items()
    for count in ((16,) if family == "a2-megagpu" else (1, 2, 4, 8))
    if not (family in ("a3-megagpu", "a3-ultragpu", "a4-highgpu") and count != 8)
}
# Clouds whose catalogue prices are not USD. SkyPilot's Scaleway fetcher copies the
# ``hourly_price`` of Scaleway's Instance API (sky/catalog/data_fetchers/fetch_scaleway.py), which
# Scaleway documents in euros (https://www.scaleway.com/en/developers/api/instances/, "hourly_price:
# estimated hourly price, in EUR"; https://www.scaleway.com/en/pricing/gpu/ lists the same figures in €).
CLOUD_CURRENCIES = {"scaleway": "EUR"}
# Clouds whose GpuInfo SizeInMiB is the total over the instance's GPUs (shared/data/SOURCES.md).
MEMORY_IS_TOTAL = {"vast", "primeintellect"}
# A memory size written right after a GPU model in a name: "V100_16GB", "A100-80GB", "H100 80G".
_MEMORY_IN_NAME = re.compile(r"[a-z]+\d+[a-z]*[\s_-]+(\d{1,3})\s*g(?:b|ib)?(?![a-z])", re.IGNORECASE)
_GCP_HOST = re.compile(r"^(?P<family>[a-z]\d-[a-z]+)-(?P<count>\d+)g$")
# vast folds GPU names into AcceleratorName (RTX_4060_Ti -> RTX4060, RTX_4070S_Ti -> RTX4070);
# its instance type keeps the real one: "1x-RTX_4060_Ti-32-65536".
_VAST_MODEL = re.compile(r"^\d+x-(?P<model>.+)-\d+-\d+$")
_GPU_INFO_KEYS = {
    k.lower(): k for k in ("Gpus", "Name", "Manufacturer", "Count", "MemoryInfo", "SizeInMiB", "TotalGpuMemoryInMiB")
}
_VERSIONED_PATH = re.compile(r"(?:^|/)(v\d+)/([^/]+)/[^/]+\.csv$")


def skypilot_feed(path: Path) -> tuple[str, str]:
    """(feed key, cloud) for a catalogue path: ``skypilot-catalog/lambda/vms.csv``, ``lambda``.

    The catalogue version (v5, v7, v8) is a schema, not another source: a v7 and a v8 file of
    one cloud are two snapshots of the same listing, ordered by their observation times.
    """
    posix = path.as_posix()
    found = _VERSIONED_PATH.search(posix)
    cloud = found.group(2) if found else (path.parent.name or path.stem)
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
    return _keys_folded(value)


def _keys_folded(value: Any) -> Any:
    """GpuInfo with its keys in one spelling: ``gpus`` -> ``Gpus``, ``sizeinmib`` -> ``SizeInMiB``."""
    if isinstance(value, dict):
        return {_GPU_INFO_KEYS.get(str(k).lower(), k): _keys_folded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys_folded(v) for v in value]
    return value


def _gpu_facts(
    info: dict[str, Any] | str | None, gpu_count: float, *, cloud: str, host_ram_gib: float | None
) -> tuple[str, tuple[float, ...], str]:
    """(GPU name from GpuInfo, per-GPU memory readings in GiB, why a reading was dropped)."""
    if info is None:
        return "", (), ""
    if isinstance(info, str):
        return info, (), ""
    gpus = info.get("Gpus") or []
    first = gpus[0] if gpus and isinstance(gpus[0], dict) else {}
    name = str(first.get("Name") or "")
    size = (first.get("MemoryInfo") or {}).get("SizeInMiB")
    try:
        size_value = float(size) if size is not None else 0.0
    except (TypeError, ValueError):
        size_value = 0.0
    if size_value <= 0:
        return name, (), ""
    # Below 1024 the figure cannot be MiB of a GPU: it is GB (the shadeform/runpod unit bug).
    gib = size_value if size_value < 1024 else size_value / 1024
    if host_ram_gib and gpu_count and abs(gib - host_ram_gib / gpu_count) < 0.5:
        return name, (), f"GpuInfo memory {gib:g} GiB is the host RAM per GPU: ignored"
    if cloud in MEMORY_IS_TOTAL:
        return name, (round(gib / gpu_count, 2),), ""
    candidates = [round(gib, 2)]
    if gpu_count > 1:
        candidates.append(round(gib / gpu_count, 2))
    return name, tuple(candidates), ""


def memory_in_names(*texts: str) -> tuple[float, ...]:
    """Memory sizes written after a GPU model in instance types and names, in order."""
    found: list[float] = []
    for text in texts:
        for match in _MEMORY_IN_NAME.finditer(text or ""):
            value = float(match.group(1))
            if value >= 4 and value not in found:
                found.append(value)
    return tuple(found)


@dataclass(frozen=True)
class GcpHostPool:
    """The GCP host-VM rows of every GCP file of one import, by (machine type, region, zone), and
    the hosts that a GPU-only row of one of those files is priced with."""

    records: dict[tuple[str, str, str], dict[Any, Any]]
    wanted: frozenset[tuple[str, str, str]]


def gcp_host_pool(*, texts: list[str]) -> GcpHostPool:
    """What the files of one import tell each other about GCP host VMs (whatever their order)."""
    records: dict[tuple[str, str, str], dict[Any, Any]] = {}
    wanted: set[tuple[str, str, str]] = set()
    for text in texts:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not {"InstanceType", "AcceleratorName", "Region"} <= set(reader.fieldnames or []):
            continue
        rows = [(0, r) for r in reader]
        for key, host in _gcp_hosts(rows).items():
            records.setdefault(key, host.record)
        wanted.update(_gcp_hosts_wanted(rows))
    return GcpHostPool(records, frozenset(wanted))


def parse_skypilot(*, path: Path, text: str | None = None, gcp_hosts: GcpHostPool | None = None) -> ParsedFile:
    """Parse one SkyPilot ``vms.csv`` into offer rows and rejected lines.

    ``gcp_hosts``: the host VMs of the GCP files of the same import (``gcp_host_pool``): GPU-only
    rows whose host is not in this file are priced with another file's (this file's come first),
    and a host row that another file's GPU rows are priced with is not an offer of its own.
    """
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
    records: list[tuple[int, dict[Any, Any]]] = []
    previous_end = 1
    for record in reader:
        records.append((previous_end + 1, record))
        previous_end = reader.line_num
    parsed.rows_read = len(records)
    hosts = _gcp_hosts(records) if cloud == "gcp" else {}
    if cloud == "gcp" and gcp_hosts is not None:
        for key, record in gcp_hosts.records.items():
            hosts.setdefault(key, _Host(0, record))
        for key in gcp_hosts.wanted & hosts.keys():
            hosts[key].used = True
    for line, record in records:
        try:
            rows = _rows_for(record, line=line, provider=provider, cloud=cloud, hosts=hosts)
        except RowError as exc:
            parsed.rejected.append(RowRejection(line, str(exc)))
            continue
        if isinstance(rows, str):
            parsed.skip(rows)
            continue
        parsed.rows.extend(rows)
    if provider_is_marketplace(provider):
        _number_listings(parsed.rows)
    return parsed


def _number_listings(rows: list[OfferRow]) -> None:
    """Listings of one instance type, region and zone at different prices are different machines.

    Numbered by price (the cheapest keeps the plain name, the next is `` · listing 2``), so that
    the numbering does not depend on the order of the rows.
    """
    prices: dict[tuple[str, str, str, str, bool], set[Decimal]] = {}
    for row in rows:
        if row.price_per_hour is not None:
            prices.setdefault(row.identity, set()).add(row.price_per_hour)
    for row in rows:
        distinct = sorted(prices.get(row.identity, ()))
        if len(distinct) > 1 and row.price_per_hour is not None:
            position = distinct.index(row.price_per_hour)
            if position:
                row.instance_type = f"{row.instance_type} · listing {position + 1}"[:200]


@dataclass
class _Host:
    line: int
    record: dict[Any, Any]
    used: bool = False


def _gcp_hosts(records: list[tuple[int, dict[Any, Any]]]) -> dict[tuple[str, str, str], _Host]:
    """GCP host-VM rows of the families that fix their GPUs, by (machine type, region, zone)."""
    hosts = {}
    for line, record in records:
        instance = (record.get("InstanceType") or "").strip()
        found = _GCP_HOST.match(instance)
        if found and found.group("family") in GCP_HOST_FAMILIES and not (record.get("AcceleratorName") or "").strip():
            key = (instance, (record.get("Region") or "").strip(), (record.get("AvailabilityZone") or "").strip())
            hosts[key] = _Host(line, record)
    # A host whose GPU row is present is priced with it (the GPU row's offer): mark it used.
    for key in _gcp_hosts_wanted(records) & hosts.keys():
        hosts[key].used = True
    return hosts


def _gcp_hosts_wanted(records: list[tuple[int, dict[Any, Any]]]) -> set[tuple[str, str, str]]:
    """The host VMs (machine type, region, zone) that the GPU-only rows are priced with."""
    wanted = set()
    for _line, record in records:
        if (record.get("InstanceType") or "").strip() or not (record.get("AcceleratorName") or "").strip():
            continue
        try:
            count = int(float(record.get("AcceleratorCount") or 0))
        except ValueError:
            continue
        host_type = GCP_GPU_HOSTS.get((record["AcceleratorName"].strip(), count))
        if host_type:
            wanted.add(
                (host_type, (record.get("Region") or "").strip(), (record.get("AvailabilityZone") or "").strip())
            )
    return wanted


def _rows_for(
    record: dict[Any, Any], *, line: int, provider: str, cloud: str, hosts: dict[tuple[str, str, str], _Host]
) -> list[OfferRow] | str:
    if None in record and any((v or "").strip() for v in record[None]):
        raise RowError(f"{len(record[None])} field(s) more than the header has")
    absent = [k for k, v in record.items() if k is not None and v is None]
    if absent:
        raise RowError(f"missing column(s): {', '.join(absent)}")
    instance = record["InstanceType"].strip()
    accelerator = record["AcceleratorName"].strip()
    region = (record.get("Region") or "").strip()
    zone = (record.get("AvailabilityZone") or "").strip()
    price = _price(record, "Price")
    spot = _price(record, "SpotPrice")
    separable = True
    extra: dict[str, Any] = {}
    vcpus = parse_float(record.get("vCPUs"), "vCPUs")
    ram = parse_float(record.get("MemoryGiB"), "MemoryGiB")
    if not accelerator:
        host = _GCP_HOST.match(instance) if cloud == "gcp" else None
        if host is None or host.group("family") not in GCP_HOST_FAMILIES:
            return CPU_ONLY
        if hosts.get((instance, region, zone), _Host(0, {})).used:
            return HOST_WITH_GPU
        accelerator, memory = GCP_HOST_FAMILIES[host.group("family")]
        gpu_count = float(host.group("count"))
        gpu_info_name, memories = "", (memory,)  # type: tuple[str, tuple[float, ...]]
        separable = False
    else:
        gpu_count = parse_float(record["AcceleratorCount"], "AcceleratorCount", required=True, positive=True) or 0.0
        info = parse_gpu_info(record.get("GpuInfo") or "")
        host_ram = ram if instance else None
        gpu_info_name, memories, dropped = _gpu_facts(info, gpu_count, cloud=cloud, host_ram_gib=host_ram)
        if dropped:
            extra["memory_note"] = dropped
        written = memory_in_names(instance, accelerator, gpu_info_name)
        if gpu_count > 1:  # "gpu-h100x8-640gb": the size may be the whole instance's
            written = tuple(m for size in written for m in (size, round(size / gpu_count, 2)))
        memories = tuple(dict.fromkeys((*written, *memories)))
    if not instance:
        # TPU rows price the whole slice ("tpu-v6e-8"): no host VM to add.
        if cloud == "gcp" and not accelerator.lower().startswith("tpu-"):
            combined = _gcp_with_host(accelerator, gpu_count, region, zone, price, spot, hosts)
            if isinstance(combined, str):
                return combined
            instance, price, spot, vcpus, ram, host_line = combined
            if host_line:
                extra["host_line"] = host_line
            else:
                extra["host_from"] = "another GCP file of the same import"
        elif cloud == "gcp":
            instance = accelerator
        else:
            instance = f"{accelerator} x{gpu_count:g}"  # the GPU count is part of the offer's identity
    if price is None and spot is None:
        raise RowError("no price: Price and SpotPrice are both empty or zero")
    if record.get("UpstreamCloudId"):
        extra["upstream_id"] = record["UpstreamCloudId"].strip()
    if record.get("Arch"):
        extra["arch"] = record["Arch"].strip()
    if cloud in ("shadeform", "primeintellect") and "_" in instance:
        extra["upstream_provider"] = instance.split("_", 1)[0]
    if record.get("Provider"):  # Spheron names the cloud it resells in a column of its own
        extra["upstream_provider"] = record["Provider"].strip()
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
        "region": region[:200],
        "zone": zone[:200],
        "other_gpu_names": others,
        "hints": f"{instance} {gpu_info_name}",
        "memory_candidates": memories,
        "vcpus": vcpus,
        "ram_gib": ram,
        "price_separable": separable,
        "extra": extra,
        "currency": CLOUD_CURRENCIES.get(cloud, "USD"),
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


def _gcp_with_host(
    accelerator: str,
    count: float,
    region: str,
    zone: str,
    price: Decimal | None,
    spot: Decimal | None,
    hosts: dict[tuple[str, str, str], _Host],
) -> tuple[str, Decimal | None, Decimal | None, float | None, float | None, int] | str:
    """A GCP GPU-only row with its host VM: (machine type, prices with the host, vCPUs, RAM, host line)."""
    host_type = GCP_GPU_HOSTS.get((accelerator, int(count)))
    if host_type is None:
        return "GCP GPU-only price left out: the host VM is not fixed by the GPU (N1/G2 machines), no full price"
    host = hosts.get((host_type, region, zone))
    if host is None:
        return GCP_HOST_MISSING
    host_price = _price(host.record, "Price")
    host_spot = _price(host.record, "SpotPrice")
    total = price + host_price if price is not None and host_price is not None else None
    total_spot = spot + host_spot if spot is not None and host_spot is not None else None
    if total is None and total_spot is None:
        return "GCP GPU-only price left out: the host VM has no price in the same zone"
    vcpus = parse_float(host.record.get("vCPUs"), "vCPUs")
    ram = parse_float(host.record.get("MemoryGiB"), "MemoryGiB")
    return host_type, total, total_spot, vcpus, ram, host.line


def _price(record: dict[Any, Any], column: str) -> Decimal | None:
    return parse_decimal_price(record.get(column), column) if column in record else None
