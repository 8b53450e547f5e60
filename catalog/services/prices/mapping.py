"""Curators' answers: GPU names that no alias matched, and offers whose GPU variant the source leaves open."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from catalog.models import GpuAlias, Offer, OfferGpuMapping, UnmatchedGpuName
from catalog.models.gpus import Gpu, alias_normalise
from catalog.services.catalog_import import gpu_alias_upsert
from catalog.services.prices.derive import gpu_price_days_derive, gpu_prices_derive
from gpuatlas.data_version import data_version_bump


@transaction.atomic
def unmatched_gpu_name_resolve(*, unmatched: UnmatchedGpuName, gpu: Gpu) -> int:
    """Map ``unmatched`` to ``gpu``: create the alias and link every waiting offer; returns offers relinked.

    Only offers without a GPU are relinked: an offer already matched (by another alias or a
    curator) keeps its GPU. Later imports match the name through the new alias.
    """
    gpu_alias_upsert(gpu=gpu, alias=unmatched.name, origin=GpuAlias.Origin.CURATOR)
    waiting = [
        pk
        for pk, raw in Offer.objects.unmatched().values_list("pk", "gpu_name_raw")
        if alias_normalise(raw) == unmatched.normalised
    ]
    relinked = Offer.objects.filter(pk__in=waiting).update(gpu=gpu)
    gpu_price_days_derive(gpu_ids=[gpu.pk])  # their price history is now the GPU's
    unmatched.resolved_to = gpu
    unmatched.occurrences = max(unmatched.occurrences, 1)
    unmatched.save(update_fields=["resolved_to", "occurrences", "last_seen"])
    gpu_prices_derive()
    data_version_bump()
    return relinked


@transaction.atomic
def offer_gpu_map(*, offers: Iterable[Offer], gpu: Gpu, user: Any = None, note: str = "") -> int:
    """Map offers to ``gpu`` (a curator's answer for an unstated form factor); returns offers relinked.

    One ``OfferGpuMapping`` per (provider, instance type, GPU name) of the chosen offers, so every
    region of those listings and every later snapshot take the same GPU; the offers are no
    longer ambiguous and count in per-GPU rankings.
    """
    keys = {(o.provider_id, o.instance_type, o.gpu_name_raw) for o in offers}
    for provider_id, instance_type, name in keys:
        OfferGpuMapping.objects.update_or_create(
            provider_id=provider_id,
            instance_type=instance_type,
            gpu_name_raw=name,
            defaults={"gpu": gpu, "note": note, "created_by": user if getattr(user, "pk", None) else None},
        )
    relinked = 0
    history_gpus = {gpu.pk}  # the offers' history moves from the GPUs they had to this one
    for provider_id, instance_type, name in keys:
        listings = Offer.objects.filter(provider_id=provider_id, instance_type=instance_type, gpu_name_raw=name)
        history_gpus.update(g for g in listings.values_list("gpu_id", flat=True).distinct() if g is not None)
        relinked += listings.update(gpu=gpu, variant_ambiguous=False)
    gpu_price_days_derive(gpu_ids=history_gpus)
    gpu_prices_derive()
    data_version_bump()
    return relinked
