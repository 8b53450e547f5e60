"""Curators' resolution of GPU names that no alias matched."""

from __future__ import annotations

from django.db import transaction

from catalog.models import GpuAlias, Offer, UnmatchedGpuName
from catalog.models.gpus import Gpu, alias_normalise
from catalog.services.catalog_import import gpu_alias_upsert


@transaction.atomic
def unmatched_gpu_name_resolve(*, unmatched: UnmatchedGpuName, gpu: Gpu) -> int:
    """Map ``unmatched`` to ``gpu``: create the alias and link every waiting offer; returns offers relinked.

    Only offers without a GPU are relinked: an offer already matched (by another alias or a
    curator) keeps its GPU. Later imports match the name through the new alias.
    """
    gpu_alias_upsert(gpu=gpu, alias=unmatched.name, origin=GpuAlias.Origin.CURATOR)
    waiting = [
        pk
        for pk, raw in Offer.objects.filter(gpu__isnull=True).values_list("pk", "gpu_name_raw")
        if alias_normalise(raw) == unmatched.normalised
    ]
    relinked = Offer.objects.filter(pk__in=waiting).update(gpu=gpu)
    unmatched.resolved_to = gpu
    unmatched.occurrences = max(unmatched.occurrences, 1)
    unmatched.save(update_fields=["resolved_to", "occurrences", "last_seen"])
    return relinked
