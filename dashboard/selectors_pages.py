"""Reads for the GPU page additions, the comparison and the architecture timeline.

Each function issues a fixed number of queries whatever the data size; tests pin the counts.
The comparison's prices come from the shared rent price selector (``gpu_rent_prices``); the GPU
page lists the offers themselves and their history.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Min, Prefetch
from django.db.models.functions import TruncDate
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from benchmarks_app.models import ResultAggregate
from benchmarks_app.workload_text import workload_display_name, workload_display_unit
from catalog.models import Architecture, Gpu, Offer, PriceObservation, TensorPeak
from catalog.selectors_prices import PriceProvenance, display_rate, gpu_rent_prices, snapshot_dates
from dashboard import figures, metrics
from dashboard.metrics import USE_CASES
from dashboard.scaling import workload_runs_on_a_host
from dashboard.selectors import RankingParams, RankingRow, rankings_compute
from dashboard.selectors_llm import DoesNotFitLine, LlmGpuLine, llm_gpu_measurements
from dashboard.selectors_scaling import MultiGpuFigures, gpu_multi_gpu
from gpuatlas.data_version import data_versioned

OFFERS_SHOWN = 60
# Workloads whose parameters choose the model run (MLPerf Inference, llama.cpp, Ollama, llm-decode).
LLM_WORKLOAD = re.compile(r"^(mlperf-|llamacpp-|llm-eval-rate$|llm-decode$)")


@dataclass
class Money:
    """Converts USD amounts to the page currency, or says why it cannot."""

    do_not_call_in_templates = True  # templates read .currency; calling needs an amount

    currency: str
    usd_per_unit: float | None
    rate_date: dt.date | None = None
    rate_source: str = ""
    missing: bool = False

    def __call__(self, usd: float | None) -> float | None:
        if usd is None:
            return None
        return usd / self.usd_per_unit if self.usd_per_unit else usd


def money_for(currency: str) -> Money:
    """USD, or CNY at the newest ECB rate (its date kept); falls back to USD (missing=True) without one."""
    if currency == "USD":
        return Money("USD", None)
    rate = display_rate(currency=currency)
    if rate["missing"]:
        return Money("USD", None, missing=True)
    return Money(currency, float(1 / rate["units_per_usd"]), rate["rate_date"], rate["source"])


@dataclass
class OfferLine:
    provider: str
    provider_slug: str
    instance_type: str
    region: str
    gpu_count: float
    vcpus_per_gpu: float | None
    ram_gib_per_gpu: float | None
    price_per_gpu_hour: float | None
    is_spot: bool
    last_seen: dt.datetime  # the newest snapshot that listed the offer: when its price was observed
    variant_ambiguous: bool = False
    date_is_estimate: bool = False
    date_note: str = ""


@dataclass
class AggregateLine:
    label: str
    workload: str
    category: str
    precision: str
    gpu_count: int
    unit: str
    median: float
    q1: float
    q3: float
    n: int
    distinct_submitters: int
    has_lab: bool
    relative: float | None  # median relative to the baseline's in the same group


@dataclass
class UseCaseStanding:
    use_case: str
    label: str
    row: RankingRow | None
    memory_floor_gib: float


@dataclass
class GpuPageData:
    money: Money
    offers: list[OfferLine]
    offers_total: int
    price_history_figure: dict[str, Any] | None
    aggregates: list[AggregateLine]
    box_figure: dict[str, Any] | None
    efficiency: list[metrics.EfficiencyRow]
    standings: list[UseCaseStanding]
    baseline_name: str
    warnings: list[str] = field(default_factory=list)
    llm_measurements: list[LlmGpuLine] = field(default_factory=list)
    llm_does_not_fit: list[DoesNotFitLine] = field(default_factory=list)
    multi_gpu: MultiGpuFigures = field(default_factory=MultiGpuFigures)
    scaling_figure: dict[str, Any] | None = None
    allreduce_figure: dict[str, Any] | None = None


def gpu_offers(*, gpu: Gpu, money: Money, limit: int | None = OFFERS_SHOWN) -> tuple[list[OfferLine], int]:
    """Current offers of a GPU, cheapest first (``limit`` of them) and how many there are."""
    qs = (
        Offer.objects.current()
        .filter(gpu=gpu)
        .select_related("provider")
        .order_by("current_price_per_gpu_hour_usd", "provider__name")
    )
    total = qs.count() if limit is not None else 0
    chosen = list(qs[:limit] if limit is not None else qs)
    dates = snapshot_dates(offers=chosen)
    lines = [
        OfferLine(
            provider=o.provider.name,
            provider_slug=o.provider.slug,
            instance_type=o.instance_type,
            region=o.region,
            gpu_count=o.gpu_count,
            vcpus_per_gpu=o.vcpus_per_gpu,
            ram_gib_per_gpu=o.ram_gib_per_gpu,
            price_per_gpu_hour=money(float(o.current_price_per_gpu_hour_usd))
            if o.current_price_per_gpu_hour_usd
            else None,
            is_spot=o.is_spot,
            last_seen=o.last_seen,
            variant_ambiguous=o.variant_ambiguous,
            date_is_estimate=dates.get((o.source, o.provider_id, o.last_seen), ("estimate", ""))[0] == "estimate",
            date_note=dates.get((o.source, o.provider_id, o.last_seen), ("", ""))[1],
        )
        for o in chosen
    ]
    return lines, (total if limit is not None else len(lines))


ALL_ON_DEMAND = gettext_noop("all providers: cheapest on-demand")
ALL_SPOT = gettext_noop("all providers: cheapest spot")


@data_versioned("gpu_price_history", key=lambda gpu, money: (gpu.pk, money.currency, money.usd_per_unit))  # perf
def gpu_price_history(*, gpu: Gpu, money: Money) -> dict[str, list[tuple[dt.date, float]]]:
    """Series name -> lowest price per GPU-hour per day, in one query: first the cheapest over
    all providers (on-demand, then spot), then one series per provider (spot marked)."""
    rows = (
        PriceObservation.objects.filter(offer__gpu=gpu)
        .annotate(day=TruncDate("observed_at"))
        .order_by()
        .values("day", "offer__provider__name", "offer__is_spot")
        .annotate(low=Min("price_per_gpu_hour_usd"))
    )
    per_provider: dict[str, dict[dt.date, float]] = defaultdict(dict)
    overall: dict[bool, dict[dt.date, float]] = {False: {}, True: {}}
    for row in rows:
        spot = row["offer__is_spot"]
        price = money(float(row["low"])) or 0.0
        name = row["offer__provider__name"] + (" · " + _("spot") if spot else "")
        per_provider[name][row["day"]] = price
        day_low = overall[spot]
        day_low[row["day"]] = min(price, day_low.get(row["day"], price))
    series: dict[str, list[tuple[dt.date, float]]] = {}
    for spot, label in ((False, _(ALL_ON_DEMAND)), (True, _(ALL_SPOT))):
        if overall[spot]:
            series[label] = sorted(overall[spot].items())
    for name in sorted(per_provider, key=str.lower):
        series[name] = sorted(per_provider[name].items())
    return series


def _aggregate_label(aggregate: ResultAggregate) -> str:
    """The workload's display name and the run parameters of its comparison label (batch sizes,
    matrix sizes), without the slug, version, precision and GPU count the table shows apart."""
    name = workload_display_name(slug=aggregate.workload.slug, version=aggregate.workload.version)
    parts = aggregate.comparison_label.split(" · ")
    return f"{name} · {parts[3]}" if len(parts) > 3 else name


def gpu_efficiency(*, gpu: Gpu, aggregates: list[ResultAggregate]) -> list[metrics.EfficiencyRow]:
    """Micro-benchmarks against the datasheet figure each can be compared with: matmuls against
    the dense tensor peak, in-memory copies against the memory bandwidth, PCIe transfers against
    the host link (a PCIe result over HBM bandwidth would read as a 2 % "efficiency")."""
    peaks = {p.precision: p.dense_tflops for p in gpu.tensor_peaks.all() if p.supported}
    rows = []
    for a in aggregates:
        # All-reduce bus bandwidth is a property of the host's links: the multi-GPU section shows it.
        if a.workload.category != "micro" or workload_runs_on_a_host(a.workload.submission_rules):
            continue
        unit = a.workload.unit.lower()
        label = _aggregate_label(a)
        if "flop" in unit or "tops" in unit:
            peak = peaks.get(a.precision) or (gpu.fp32_tflops if a.precision == "fp32" else None)
            rows.append(metrics.EfficiencyRow(a.precision.upper(), a.median, peak, a.workload.unit, "compute", label))
        elif "gb/s" in unit and a.workload.slug.startswith("pcie"):
            rows.append(
                metrics.EfficiencyRow(
                    "—", a.median, metrics.pcie_peak_gbs(gpu.bus_interface), a.workload.unit, "host link", label
                )
            )
        elif "gb/s" in unit:
            rows.append(
                metrics.EfficiencyRow("—", a.median, gpu.memory_bandwidth_gbs, a.workload.unit, "memory", label)
            )
    order = {"compute": 0, "memory": 1, "host link": 2}
    return sorted(rows, key=lambda r: order[r.kind])


def gpu_page_compute(*, gpu: Gpu, currency: str = "USD", baseline: str = metrics.BASELINE_SLUG_DEFAULT) -> GpuPageData:
    """Everything the GPU page adds to the specs: offers, price history, results, tiers."""
    money = money_for(currency)
    warnings = []
    if money.missing:
        warnings.append(
            _("No %(currency)s exchange rate is recorded, so prices are shown in USD.") % {"currency": currency}
        )
    offers, offers_total = gpu_offers(gpu=gpu, money=money)
    history = gpu_price_history(gpu=gpu, money=money)

    baseline_gpu = Gpu.objects.filter(slug=baseline).only("id", "name").first()
    own = list(
        ResultAggregate.objects.filter(gpu=gpu)
        .select_related("workload")
        .order_by("workload__category", "gpu_count", "workload__slug", "precision")
    )
    reference: dict[tuple[int, str, int], float] = {}
    reference_by_key: dict[str, float] = {}
    if baseline_gpu is not None:
        groups = {(a.workload_id, a.precision, a.gpu_count) for a in own}
        for ref in ResultAggregate.objects.filter(gpu=baseline_gpu, workload_id__in={g[0] for g in groups}).order_by(
            "-n"
        ):
            reference.setdefault((ref.workload_id, ref.precision, ref.gpu_count), ref.median)
            reference_by_key.setdefault(ref.comparison_key, ref.median)
    aggregates, boxes = [], []
    box_gpu_count = min((a.gpu_count for a in own if a.workload.category != "micro"), default=1)
    for a in own:
        # A host run (message size, interconnect) and an LLM workload (whose params name the model
        # measured) are compared only with the baseline's run of the same configuration, never
        # with whichever of its configurations has the most results (an 8B figure against a 70B one).
        if workload_runs_on_a_host(a.workload.submission_rules) or LLM_WORKLOAD.match(a.workload.slug):
            ref_median = reference_by_key.get(a.comparison_key)
        else:
            ref_median = reference.get((a.workload_id, a.precision, a.gpu_count))
        relative = None
        if ref_median:
            relative = a.median / ref_median if a.workload.higher_is_better else ref_median / a.median
        aggregates.append(
            AggregateLine(
                label=_aggregate_label(a),
                workload=a.workload.name,
                category=str(a.workload.get_category_display()),
                precision=a.precision,
                gpu_count=a.gpu_count,
                unit=workload_display_unit(a.workload.unit),
                median=a.median,
                q1=a.q1,
                q3=a.q3,
                n=a.n,
                distinct_submitters=a.distinct_submitters,
                has_lab=a.has_lab,
                relative=relative,
            )
        )
        if ref_median and a.workload.higher_is_better and a.gpu_count == box_gpu_count:
            boxes.append(
                figures.ResultBox(
                    label=workload_display_name(slug=a.workload.slug, version=a.workload.version),
                    precision=a.precision,
                    median=a.median / ref_median,
                    q1=a.q1 / ref_median,
                    q3=a.q3 / ref_median,
                    minimum=a.minimum / ref_median,
                    maximum=a.maximum / ref_median,
                    n=a.n,
                    distinct_submitters=a.distinct_submitters,
                )
            )

    efficiency = gpu_efficiency(gpu=gpu, aggregates=own)

    standings = []
    for slug, uc in USE_CASES.items():
        try:
            ranking = rankings_compute(
                params=RankingParams(use_case=slug, currency=currency, baseline=baseline, show="all")
            )
        except ValueError:
            ranking = None
        row = next((r for r in ranking.rows if r.gpu_id == gpu.id), None) if ranking else None
        standings.append(UseCaseStanding(slug, str(uc.label), row, uc.memory_floor_gib))

    baseline_name = baseline_gpu.name if baseline_gpu else baseline
    llm_lines, llm_oom = llm_gpu_measurements(gpu=gpu)
    multi_gpu = (
        gpu_multi_gpu(gpu_id=gpu.id)
        if any(workload_runs_on_a_host(a.workload.submission_rules) for a in own)
        else MultiGpuFigures()
    )
    return GpuPageData(
        money=money,
        offers=offers,
        offers_total=offers_total,
        price_history_figure=figures.price_history_figure(
            history, currency=money.currency, shown=[_(ALL_ON_DEMAND), _(ALL_SPOT)]
        )
        if history
        else None,
        aggregates=aggregates,
        box_figure=figures.results_box_figure(boxes, relative_to=baseline_name, gpu_count=box_gpu_count)
        if boxes
        else None,
        efficiency=efficiency,
        standings=standings,
        baseline_name=baseline_name,
        warnings=warnings,
        llm_measurements=llm_lines,
        llm_does_not_fit=llm_oom,
        multi_gpu=multi_gpu,
        scaling_figure=figures.scaling_figure(multi_gpu.training) if multi_gpu.measured_on_several else None,
        allreduce_figure=figures.allreduce_figure(multi_gpu.allreduce) if multi_gpu.allreduce else None,
    )


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


@dataclass
class Comparison:
    columns: list[CompareColumn]
    money: Money
    baseline_name: str


def compare_compute(*, gpus: list[Gpu], currency: str = "USD") -> Comparison:
    """Two to four GPUs side by side. Performance comes from the rankings (one definition of the
    figure and of n): each GPU's ranking figure divided by the first GPU's; the LLM use cases
    keep their tokens/s and cost per million tokens at the use case's default model size."""
    money = money_for(currency)
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
    baseline_name = ""
    for use_case in USE_CASES:
        ranking = rankings_compute(params=RankingParams(use_case=use_case, currency=currency, show="all"))
        baseline_name = ranking.baseline_name
        by_id = {r.gpu_id: r for r in ranking.rows}
        first = by_id.get(gpus[0].id)
        for column in columns:
            row = by_id.get(column.gpu.id)
            relative = row.perf / first.perf if row and first and row.perf and first.perf else None
            measured = row is not None and first is not None and row.perf_basis == first.perf_basis == "measured"
            column.cells[use_case] = CompareCell(
                row=row,
                relative=relative,
                relative_basis="measured" if measured else "estimated",
                per_price=metrics.per_price(relative, column.typical_price),
            )
    return Comparison(columns=columns, money=money, baseline_name=baseline_name)


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
            queryset=Gpu.objects.filter(is_curated=True).order_by("release_date", "name"),
            to_attr="curated_gpus",
        )
    )
    cards = [ArchitectureCard(a, list(a.curated_gpus), architecture_features(a)) for a in archs]  # type: ignore[attr-defined]
    return sorted(cards, key=lambda c: (c.architecture.release_month or dt.date.max, c.architecture.name))


def architecture_timeline(cards: list[ArchitectureCard]) -> dict[str, Any] | None:
    items = [
        figures.TimelineItem(
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
    return figures.architecture_timeline_figure(items) if items else None
