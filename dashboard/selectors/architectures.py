"""Reads for the architecture page and its timeline."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch
from django.utils.translation import gettext as _

from catalog.models import Architecture, Gpu
from dashboard.figures.architectures import TimelineItem, architecture_timeline_figure


@dataclass
class ArchitectureCard:
    architecture: Architecture
    gpus: list[Gpu]
    features: list[str]


def architecture_features(arch: Architecture) -> list[str]:
    features = []
    if arch.tensor_core_generation:
        features.append(_("Tensor Cores gen %(n)s") % {"n": arch.tensor_core_generation})
    else:
        features.append(_("no Tensor Cores"))
    for flag, label in (
        (arch.supports_tf32, "TF32"),
        (arch.supports_bf16, "BF16"),
        (arch.supports_fp8, "FP8"),
        (arch.supports_fp4, "FP4"),
        (arch.supports_sparsity, _("2:4 sparsity")),
    ):
        if flag:
            features.append(label)
    if arch.min_cuda_version:
        features.append(_("CUDA %(version)s+") % {"version": arch.min_cuda_version})
    return features


def architectures_compute() -> list[ArchitectureCard]:
    """Every architecture in release order with its features and curated GPUs (two queries)."""
    archs = Architecture.objects.select_related("vendor").prefetch_related(
        Prefetch(
            "gpus",
            queryset=Gpu.objects.curated().order_by("release_date", "name"),
            to_attr="curated_gpus",
        )
    )
    cards = [ArchitectureCard(a, list(a.curated_gpus), architecture_features(a)) for a in archs]  # type: ignore[attr-defined]
    return sorted(cards, key=lambda c: (c.architecture.release_month or dt.date.max, c.architecture.name))


def architecture_timeline(cards: list[ArchitectureCard]) -> dict[str, Any] | None:
    items = [
        TimelineItem(
            slug=c.architecture.slug,
            name=c.architecture.name,
            vendor=c.architecture.vendor.name,
            release=c.architecture.release_month,
            features=", ".join(c.features),
            gpus=len(c.gpus),
        )
        for c in cards
        if c.architecture.release_month
    ]
    return architecture_timeline_figure(items) if items else None
