"""Reads for the GPU page's additions to the specs: offers, price history, results, efficiency,
standings in the rankings, LLM measurements and multi-GPU figures.

Each function issues a fixed number of queries whatever the data size; tests pin the counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from django.utils.translation import gettext as _

from benchmarks_app.models import ResultAggregate
from benchmarks_app.workload_text import workload_display_name, workload_display_unit
from catalog.interconnect import pcie_peak_gbs
from catalog.models import Gpu
from catalog.money import Money, display_money
from catalog.selectors.prices import (
    ALL_ON_DEMAND,
    ALL_SPOT,
    GpuRentPrice,
    OfferLine,
    PriceGap,
    gpu_offers,
    gpu_price_gaps,
    gpu_price_history,
    gpu_rent_prices,
    offer_date_notes,
)
from dashboard.figures.gpus import ResultBox, price_history_figure, results_box_figure
from dashboard.figures.multi_gpu import allreduce_figure, scaling_figure
from dashboard.figures.serving import energy_marks_of, serving_curve_line, serving_curves_figure
from dashboard.multi_gpu_maths import workload_runs_on_a_host
from dashboard.ranking.maths import BASELINE_SLUG_DEFAULT, EfficiencyRow
from dashboard.ranking.use_cases import USE_CASES
from dashboard.selectors.ranking_rows import RankingRow
from dashboard.selectors.scaling import MultiGpuFigures, gpu_multi_gpu
from dashboard.selectors.standings import gpu_standings_graded
from llm.question import DEFAULT_TARGET_RATE, ServingQuestion
from llm.selectors.energy import gpu_energy_curves, power_curves_current
from llm.selectors.figures import DoesNotFitLine, LlmGpuLine, llm_gpu_measurements
from llm.selectors.serving_target import gpu_serving_choices
from llm.serving.shapes import MODEL_SHAPES, SIZE_CLASSES

# Workloads whose parameters choose the model run (MLPerf Inference, llama.cpp, Ollama, llm-decode).
# The serving question a GPU page's curves answer, for the reference model of each size class the
# GPU has measured points of: the rankings' default workload and target.
SERVING_QUESTION = ServingQuestion("llama-3.1-70b")
LLM_WORKLOAD = re.compile(r"^(mlperf-|llamacpp-|llm-eval-rate$|llm-decode$)")


@dataclass
class AggregateLine:
    label: str
    workload: str
    workload_slug: str
    comparison_key: str  # the API's results of this configuration, each with its source
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
class WorkloadSummary:
    """A workload on the GPU page: its most measured configuration, and how many it has (the
    GPU's results page lists them all)."""

    line: AggregateLine
    configurations: int


def workload_summaries(lines: list[AggregateLine]) -> list[WorkloadSummary]:
    """One row per workload, in the order of ``lines``: the configuration with the most results
    (the first of equals, so the smallest GPU count). The busiest GPU has hundreds of
    configurations; all of them on its page made it 300 KB."""
    best: dict[str, AggregateLine] = {}
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.workload_slug] = counts.get(line.workload_slug, 0) + 1
        if line.workload_slug not in best or line.n > best[line.workload_slug].n:
            best[line.workload_slug] = line
    return [WorkloadSummary(line=line, configurations=counts[slug]) for slug, line in best.items()]


def gpu_results_lines(*, gpu: Gpu, baseline: str = BASELINE_SLUG_DEFAULT) -> tuple[list[AggregateLine], str]:
    """Every measured configuration of the GPU (the results page), and the baseline's name."""
    baseline_gpu = Gpu.objects.filter(slug=baseline).only("id", "name", "name_zh").first()
    results = _gpu_results(gpu=gpu, baseline_gpu=baseline_gpu)
    return results.lines, baseline_gpu.display_name if baseline_gpu else baseline


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
    offer_date_notes: list[tuple[int, str]]  # (number, note) of the estimated dates the offers refer to
    price_history_figure: dict[str, Any] | None
    price_history_left_out: int  # providers' series not drawn (the API's prices/ has their observations)
    aggregates: list[AggregateLine]  # every configuration; the page shows ``workloads``
    workloads: list[WorkloadSummary]
    box_figure: dict[str, Any] | None
    efficiency: list[EfficiencyRow]
    standings: list[UseCaseStanding]
    baseline_name: str
    warnings: list[str] = field(default_factory=list)
    llm_measurements: list[LlmGpuLine] = field(default_factory=list)
    llm_does_not_fit: list[DoesNotFitLine] = field(default_factory=list)
    serving_figure: dict[str, Any] | None = None  # its serving curves per model (measured + model)
    multi_gpu: MultiGpuFigures = field(default_factory=MultiGpuFigures)
    scaling_figure: dict[str, Any] | None = None
    allreduce_figure: dict[str, Any] | None = None
    rent_price: GpuRentPrice | None = None  # the typical price, with every provider it is taken from
    price_gap: PriceGap | None = None  # without one: why


def _aggregate_label(aggregate: ResultAggregate) -> str:
    """The workload's display name and the run parameters of its comparison label (batch sizes,
    matrix sizes), without the slug, version, precision and GPU count the table shows apart."""
    name = workload_display_name(slug=aggregate.workload.slug, version=aggregate.workload.version)
    parts = aggregate.comparison_label.split(" · ")
    return f"{name} · {parts[3]}" if len(parts) > 3 else name


def gpu_efficiency(*, gpu: Gpu, aggregates: list[ResultAggregate]) -> list[EfficiencyRow]:
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
            rows.append(EfficiencyRow(a.precision.upper(), a.median, peak, a.workload.unit, "compute", label))
        elif "gb/s" in unit and a.workload.slug.startswith("pcie"):
            rows.append(
                EfficiencyRow("—", a.median, pcie_peak_gbs(gpu.bus_interface), a.workload.unit, "host link", label)
            )
        elif "gb/s" in unit:
            rows.append(EfficiencyRow("—", a.median, gpu.memory_bandwidth_gbs, a.workload.unit, "memory", label))
    order = {"compute": 0, "memory": 1, "host link": 2}
    return sorted(rows, key=lambda r: order[r.kind])


@dataclass
class GpuResults:
    own: list[ResultAggregate]  # the GPU's aggregates, with their workloads
    lines: list[AggregateLine]
    boxes: list[ResultBox]  # relative to the baseline, at the smallest GPU count measured
    box_gpu_count: int


def _gpu_results(*, gpu: Gpu, baseline_gpu: Gpu | None) -> GpuResults:
    """The GPU's results table and box plot, each result relative to the baseline's in the same
    comparison group (None where the baseline has none)."""
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
                workload_slug=a.workload.slug,
                comparison_key=a.comparison_key,
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
                ResultBox(
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

    return GpuResults(own=own, lines=aggregates, boxes=boxes, box_gpu_count=box_gpu_count)


def gpu_page_compute(*, gpu: Gpu, currency: str = "USD", baseline: str = BASELINE_SLUG_DEFAULT) -> GpuPageData:
    """Everything the GPU page adds to the specs: offers, price history, results, tiers."""
    money = display_money(currency=currency)
    warnings = []
    if money.missing:
        warnings.append(
            _("No %(currency)s exchange rate is recorded, so prices are shown in USD.") % {"currency": currency}
        )
    offers, offers_total = gpu_offers(gpu=gpu, money=money)
    history = gpu_price_history(gpu=gpu, money=money)
    rent_price = gpu_rent_prices(gpu_ids=[gpu.id], with_providers=True).get(gpu.id)
    price_gap = None if rent_price else gpu_price_gaps(gpu_ids=[gpu.id]).get(gpu.id)

    baseline_gpu = Gpu.objects.filter(slug=baseline).only("id", "name", "name_zh").first()
    results = _gpu_results(gpu=gpu, baseline_gpu=baseline_gpu)
    own = results.own
    efficiency = gpu_efficiency(gpu=gpu, aggregates=own)

    by_use_case = gpu_standings_graded(gpu=gpu, currency=currency, baseline=baseline)
    standings = [
        UseCaseStanding(slug, str(uc.label), by_use_case[slug].rows.get(gpu.id), uc.memory_floor_gib)
        for slug, uc in USE_CASES.items()
    ]

    baseline_name = baseline_gpu.display_name if baseline_gpu else baseline
    llm_lines, llm_oom = llm_gpu_measurements(gpu=gpu)
    serving_row = next((s.row for s in standings if s.use_case == "llm-serving" and s.row is not None), None)
    serving_price = serving_row.price.amount if serving_row is not None else None
    serving_choices = gpu_serving_choices(gpu=gpu, question=SERVING_QUESTION)
    power_curves = power_curves_current() if serving_choices else {}
    energy_curves = gpu_energy_curves(gpu=gpu) if serving_choices else []
    serving_lines = [
        replace(line, energy_marks=energy_marks_of(energy_curves, size=size, ranked=line.measured))
        for size, choice in serving_choices.items()
        if (
            line := serving_curve_line(
                choice=choice,
                key=size,
                name=MODEL_SHAPES[SIZE_CLASSES[size].reference].name,
                price=serving_price,
                power_curves=power_curves,
            )
        )  # fmt: skip
    ]
    multi_gpu = (
        gpu_multi_gpu(gpu_id=gpu.id)
        if any(workload_runs_on_a_host(a.workload.submission_rules) for a in own)
        else MultiGpuFigures()
    )
    return GpuPageData(
        money=money,
        rent_price=rent_price,
        price_gap=price_gap,
        offers=offers,
        offers_total=offers_total,
        offer_date_notes=offer_date_notes(offers),
        price_history_figure=price_history_figure(
            history.series, currency=money.currency, shown=[_(ALL_ON_DEMAND), _(ALL_SPOT)]
        )
        if history.series
        else None,
        price_history_left_out=history.series_left_out,
        aggregates=results.lines,
        workloads=workload_summaries(results.lines),
        box_figure=results_box_figure(results.boxes, relative_to=baseline_name, gpu_count=results.box_gpu_count)
        if results.boxes
        else None,
        efficiency=efficiency,
        standings=standings,
        baseline_name=baseline_name,
        warnings=warnings,
        llm_measurements=llm_lines,
        llm_does_not_fit=llm_oom,
        serving_figure=serving_curves_figure(
            serving_lines,
            currency=money.currency,
            target=DEFAULT_TARGET_RATE,
            title=_("Output tokens/s per GPU against tokens/s per user on %(gpu)s · %(workload)s")
            % {"gpu": gpu.display_name, "workload": SERVING_QUESTION.workload_text()},
        )
        if serving_lines
        else None,
        multi_gpu=multi_gpu,
        scaling_figure=scaling_figure(multi_gpu.training) if multi_gpu.measured_on_several else None,
        allreduce_figure=allreduce_figure(multi_gpu.allreduce) if multi_gpu.allreduce else None,
    )
