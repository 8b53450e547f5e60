"""Which measured GPUs have a current rental price, from whom and how recent, and why not where
not: what ``manage.py price_coverage`` prints. A GPU is measured when it has a trusted training
or inference result (an aggregate) or an LLM serving point."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from benchmarks_app.models import ResultAggregate, Workload
from catalog.models import Gpu
from catalog.selectors.prices import GpuRentPrice, PriceGap, gpu_price_gaps, gpu_rent_prices
from llm.models import ServingPoint


@dataclass(frozen=True)
class MeasuredGpuPrice:
    gpu: Gpu
    measured: tuple[str, ...]  # "training", "inference", "serving"
    price: GpuRentPrice | None
    gap: PriceGap | None

    @property
    def providers(self) -> tuple[str, ...]:
        return tuple(c.provider for c in self.price.contributors) if self.price else ()

    @property
    def newest(self) -> dt.datetime | None:
        """The newest observation among the offers the price is taken from."""
        return max((c.observed_at for c in self.price.contributors), default=None) if self.price else None

    @property
    def newest_is_estimate(self) -> bool:
        """Whether every offer's date is an estimate (a file without a stated date)."""
        return bool(self.price) and all(c.date_is_estimate for c in self.price.contributors)  # type: ignore[union-attr]


def measured_gpu_prices() -> list[MeasuredGpuPrice]:
    """Every measured GPU with its typical price and providers, or the reason it has none (four queries)."""
    kinds: dict[int, set[str]] = {}
    categories = (Workload.Category.TRAINING, Workload.Category.INFERENCE)
    for gpu_id, category in (
        ResultAggregate.objects.filter(workload__category__in=categories)
        .values_list("gpu_id", "workload__category")
        .distinct()
    ):
        kinds.setdefault(gpu_id, set()).add(category)
    for gpu_id in ServingPoint.objects.trusted().values_list("gpu_id", flat=True).distinct():
        kinds.setdefault(gpu_id, set()).add("serving")
    prices = gpu_rent_prices(gpu_ids=kinds, with_providers=True)
    gaps = gpu_price_gaps(gpu_ids=kinds)
    return [
        MeasuredGpuPrice(gpu, tuple(sorted(kinds[gpu.pk])), prices.get(gpu.pk), gaps.get(gpu.pk))
        for gpu in Gpu.objects.filter(pk__in=kinds).order_by("name")
    ]
