"""Reads for the comparison of two to four GPUs. Its prices come from the shared rent price
selector (``gpu_rent_prices``); its performance from the rankings' rows of these GPUs
(dashboard/selectors/standings.py: stored on write, when current); its multi-GPU figures from the
GPU pages' reads (dashboard/selectors/scaling.py)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

from catalog.models import Gpu, TensorPeak
from catalog.money import Money, display_money
from catalog.selectors.prices import PriceProvenance, gpu_rent_prices
from catalog.value import per_price
from dashboard.multi_gpu_maths import AllreduceLine, MeasuredScaling
from dashboard.selectors.ranking_rows import RankingRow
from dashboard.selectors.scaling import MultiGpuFigures, multi_gpu_by_gpu
from dashboard.selectors.standings import gpus_standings
from gpuatlas.data_version import data_versioned

COMPARE_PRECISIONS = ("tf32", "fp16", "bf16", "fp8", "int8", "fp4")


@dataclass
class CompareCell:
    """One GPU in one use case: its ranking row and its figure relative to the first GPU's."""

    row: RankingRow | None
    relative: float | None  # the GPU's ranking figure divided by the first GPU's
    relative_basis: str  # "measured" when both figures are measured, else "estimated"
    per_price: float | None  # relative performance per currency unit of the typical GPU-hour price


@dataclass
class CompareColumn:
    gpu: Gpu
    peaks: dict[str, float | None]  # precision -> dense TFLOPS; None: not supported; absent: unknown
    peak_sources: dict[str, tuple[str, dt.date]]
    # Current on-demand rent per GPU-hour in the page currency, as the rankings read it: the
    # typical price (median of the providers' cheapest offers) and the cheapest offer, each with
    # the offer it is (provider, observation date, age).
    typical_price: float | None
    typical_origin: PriceProvenance | None
    cheapest_price: float | None
    cheapest_origin: PriceProvenance | None
    price_providers: int
    cells: dict[str, CompareCell] = field(default_factory=dict)
    # Measured on hosts of several of these GPUs: data-parallel scaling by GPU count, and the all-reduce
    # bus bandwidth at the largest message measured for each GPU count and interconnect.
    scaling: list[MeasuredScaling] = field(default_factory=list)
    allreduce: list[AllreduceLine] = field(default_factory=list)


def largest_messages(figures: MultiGpuFigures) -> list[AllreduceLine]:
    """The all-reduce line of the largest message per (version, GPU count, interconnect): the link's
    bandwidth once latency no longer counts."""
    best: dict[tuple[str, int, str], AllreduceLine] = {}
    for line in figures.allreduce:
        key = (line.version, line.gpu_count, line.interconnect)
        if key not in best or line.bytes > best[key].bytes:
            best[key] = line
    return list(best.values())


@dataclass
class Comparison:
    columns: list[CompareColumn]
    money: Money
    baseline_name: str


# Keyed by the GPUs asked for (2 to 4 of them, any order a link gives) and the currency.
@data_versioned("compare_compute", key=lambda gpus, currency="USD": ([g.id for g in gpus], currency), bounded=True)
def compare_compute(*, gpus: list[Gpu], currency: str = "USD") -> Comparison:
    """Two to four GPUs side by side. Performance comes from the rankings (one definition of the
    figure and of n): each GPU's ranking figure divided by the first GPU's; the LLM use cases
    keep their tokens/s and cost per million tokens at the use case's default model size."""
    money = display_money(currency=currency)
    ids = [g.id for g in gpus]
    typical = gpu_rent_prices(gpu_ids=ids, rule="typical")
    cheapest = gpu_rent_prices(gpu_ids=ids, rule="cheapest")
    peaks: dict[int, dict[str, float | None]] = defaultdict(dict)
    sources: dict[int, dict[str, tuple[str, dt.date]]] = defaultdict(dict)
    for peak in TensorPeak.objects.filter(gpu_id__in=ids):
        peaks[peak.gpu_id][peak.precision] = peak.dense_tflops if peak.supported else None
        sources[peak.gpu_id][peak.precision] = (peak.source, peak.as_of)
    columns = [
        CompareColumn(
            gpu=g,
            peaks=peaks[g.id],
            peak_sources=sources[g.id],
            typical_price=money(float(typical[g.id].price_usd)) if g.id in typical else None,
            typical_origin=typical[g.id].provenance if g.id in typical else None,
            cheapest_price=money(float(cheapest[g.id].price_usd)) if g.id in cheapest else None,
            cheapest_origin=cheapest[g.id].provenance if g.id in cheapest else None,
            price_providers=typical[g.id].providers if g.id in typical else 0,
        )
        for g in gpus
    ]
    multi_gpu = multi_gpu_by_gpu(gpu_ids=ids)
    for column in columns:
        figures = multi_gpu.get(column.gpu.id, MultiGpuFigures())
        column.scaling = list(figures.by_count.values())
        column.allreduce = largest_messages(figures)
    baseline_name = ""
    for use_case, standings in gpus_standings(gpus=gpus, currency=currency).items():
        baseline_name = standings.baseline_name or baseline_name
        first = standings.rows.get(gpus[0].id)
        for column in columns:
            row = standings.rows.get(column.gpu.id)
            relative = row.perf / first.perf if row and first and row.perf and first.perf else None
            if row and first and row.llm_precision != first.llm_precision:
                # Serving figures at different weight formats answer different workloads: no ratio.
                relative = None
            measured = row is not None and first is not None and row.perf_basis == first.perf_basis == "measured"
            column.cells[use_case] = CompareCell(
                row=row,
                relative=relative,
                relative_basis="measured" if measured else "estimated",
                per_price=per_price(relative, column.typical_price),
            )
    return Comparison(columns=columns, money=money, baseline_name=baseline_name)
