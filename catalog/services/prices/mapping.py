"""Curators' answers: GPU names that no alias matched, and offers whose GPU variant the source leaves open."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from catalog.models import GpuAlias, Offer, OfferGpuMapping, UnmatchedGpuName
from catalog.models.gpus import Gpu, alias_normalise
from catalog.services.catalog_import import gpu_alias_upsert
from catalog.services.prices.derive import gpu_prices_derive
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
    for provider_id, instance_type, name in keys:
        relinked += Offer.objects.filter(
            provider_id=provider_id, instance_type=instance_type, gpu_name_raw=name
        ).update(gpu=gpu, variant_ambiguous=False)
    gpu_prices_derive()
    data_version_bump()
    return relinked
