"""Which watches a write can have moved: the ones whose inputs it changed, never every watch.

* A price import: the GPUs whose offers it changed (a new price, a new offer with a price, an
  offer withdrawn from its feed's newest snapshot), read from what the import recorded: the price
  observations and snapshots of its ``ImportRun``. Their price watches, and the ranking watches
  in rent mode that a GPU's rental price can move (that GPU's, and "any GPU").
* Benchmark results written, changed or removed (ingest, lab imports, moderation, a rebuild): the
  use cases of their workloads.
* A new LLM serving model (points or fit): the LLM use cases.
"""

from __future__ import annotations

from django.db.models import Q

from benchmarks_app.models import Workload
from catalog.models import Offer, PriceObservation, PriceSnapshot
from dashboard.ranking.use_cases import USE_CASES
from watches.models import Watch


def gpus_with_changed_offers(*, import_run_id: int) -> set[int]:
    """GPUs of the offers an import gave a price (new or changed) or withdrew."""
    priced = PriceObservation.objects.filter(import_run_id=import_run_id, offer__gpu__isnull=False).values_list(
        "offer__gpu_id", flat=True
    )
    changed = set(priced)
    snapshots = list(
        PriceSnapshot.objects.filter(import_run_id=import_run_id).values_list("provider_id", "observed_at")
    )
    if snapshots:
        # An offer the import withdrew is marked unavailable at the time of the snapshot that left it out.
        withdrawn = Q()
        for provider_id, observed_at in snapshots:
            withdrawn |= Q(provider_id=provider_id, unavailable_since=observed_at)
        changed |= set(
            Offer.objects.filter(withdrawn, available=False, gpu__isnull=False).values_list("gpu_id", flat=True)
        )
    return changed


def watch_ids_after_price_change(*, gpu_ids: set[int]) -> list[int]:
    """Watches a change to the offers of ``gpu_ids`` can move."""
    if not gpu_ids:
        return []
    ids = sorted(gpu_ids)
    price = Watch.objects.price_of_gpus(ids).order_by().values_list("id", flat=True)
    ranking = Watch.objects.ranking_priced_by_gpus(ids).order_by().values_list("id", "query")
    # The rankings' buy mode reads purchase prices: a rental price cannot move it.
    rented = [pk for pk, query in ranking if query.get("mode") != "buy"]
    return sorted({*price, *rented})


def use_cases_of_workloads(*, workload_ids: list[int]) -> set[str]:
    """The use cases that rank results of these workloads."""
    workloads = set(Workload.objects.filter(id__in=workload_ids).values_list("slug", "category"))
    return {
        slug
        for slug, use_case in USE_CASES.items()
        if any(use_case.includes_workload(slug=workload, category=category) for workload, category in workloads)
    }


def llm_use_cases() -> set[str]:
    """The use cases ranked by the LLM serving figures."""
    return {slug for slug, use_case in USE_CASES.items() if use_case.is_llm}


def watch_ids_of_use_cases(*, use_cases: set[str]) -> list[int]:
    if not use_cases:
        return []
    return list(Watch.objects.ranking_of_use_cases(sorted(use_cases)).values_list("id", flat=True))
