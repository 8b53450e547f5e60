"""A small test world for the dashboard: four GPUs, offers, aggregates and one hostile name.

The figures are test fixtures, chosen for easy arithmetic; they are not catalogue data.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.utils import timezone

from catalog.models import Gpu, Provider
from tests.factories import (
    ArchitectureFactory,
    GpuFactory,
    OfferFactory,
    PriceObservationFactory,
    ProviderFactory,
    TensorPeakFactory,
    VendorFactory,
)
from tests.factories_dashboard import BenchmarkResultFactory, ResultAggregateFactory, WorkloadFactory

CURATED_CSV_HEADER = (
    "provider,provider_name,instance_type,region,gpu_name,gpu_memory_gib,gpu_count,vcpus_per_gpu,ram_gib_per_gpu,"
    "price_per_hour,price_unit,spot_price_per_hour,currency,observed_at,source\n"
)

HOSTILE_GPU = "<script>window.__pwned=1</script> Card"
HOSTILE_PROVIDER = "<img src=x onerror=window.__pwned=2> Cloud"


@dataclass
class World:
    baseline: Gpu
    h100: Gpu
    rtx4090: Gpu
    small: Gpu
    hostile: Gpu
    provider: Provider
    hostile_provider: Provider


def _gpu(
    name,
    slug,
    *,
    segment="datacenter",
    memory=80.0,
    bandwidth=2000.0,
    tdp=400,
    bf16=300.0,
    int8=None,
    arch=None,
    launch=None,
):
    gpu = GpuFactory(
        name=name,
        slug=slug,
        segment=segment,
        memory_gib=memory,
        memory_bandwidth_gbs=bandwidth,
        tdp_w=tdp,
        architecture=arch,
        launch_price_usd=launch,
    )
    TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=bf16)
    TensorPeakFactory(gpu=gpu, precision="fp16", dense_tflops=bf16)
    if int8:
        TensorPeakFactory(gpu=gpu, precision="int8", dense_tflops=int8)
    return gpu


def build_world(*, with_history: bool = True) -> World:
    nvidia = VendorFactory(name="NVIDIA", slug="nvidia")
    ampere = ArchitectureFactory(
        slug="ampere",
        name="Ampere",
        vendor=nvidia,
        release_month=dt.date(2020, 5, 1),
        supports_fp8=False,
        tensor_core_generation=3,
    )
    hopper = ArchitectureFactory(slug="hopper", name="Hopper", vendor=nvidia)
    ada = ArchitectureFactory(slug="ada", name="Ada Lovelace", vendor=nvidia, release_month=dt.date(2022, 9, 1))
    baseline = _gpu(
        "A100 SXM4 80 GB", "a100-sxm4-80-gb", bandwidth=2000.0, tdp=400, bf16=300.0, int8=600.0, arch=ampere
    )
    h100 = _gpu("H100 SXM5 80 GB", "h100-sxm5-80-gb", bandwidth=3000.0, tdp=700, bf16=1000.0, int8=2000.0, arch=hopper)
    rtx4090 = _gpu(
        "RTX 4090",
        "rtx-4090",
        segment="consumer",
        memory=24.0,
        bandwidth=1000.0,
        tdp=450,
        bf16=150.0,
        arch=ada,
        launch=Decimal("1599"),
    )
    small = _gpu(
        "RTX 3060",
        "rtx-3060",
        segment="consumer",
        memory=12.0,
        bandwidth=360.0,
        tdp=170,
        bf16=50.0,
        arch=ampere,
        launch=Decimal("329"),
    )
    hostile = _gpu(
        HOSTILE_GPU, "hostile-card", segment="consumer", memory=16.0, bandwidth=500.0, tdp=200, bf16=80.0, arch=ada
    )

    resnet = WorkloadFactory(slug="resnet50", category="training")
    bert = WorkloadFactory(slug="bert_large_squad", category="training", unit="sequences/s")
    for gpu, (r, b) in {baseline: (100.0, 50.0), h100: (250.0, 150.0), rtx4090: (120.0, 40.0)}.items():
        ResultAggregateFactory(gpu=gpu, workload=resnet, median=r, n=2, distinct_submitters=1)
        ResultAggregateFactory(gpu=gpu, workload=bert, median=b, n=1)
        for value in (r * 0.97, r, r * 1.02):
            BenchmarkResultFactory(gpu=gpu, workload=resnet, value=value, submitter_key="lambda")
    BenchmarkResultFactory(gpu=rtx4090, workload=resnet, value=121.0, submitter_key="user-7")

    provider = ProviderFactory(slug="lambda", name="Lambda")
    other = ProviderFactory(slug="other-cloud", name="Other Cloud")
    hostile_provider = ProviderFactory(slug="hostile-cloud", name=HOSTILE_PROVIDER)
    now = timezone.now()
    offers = [
        OfferFactory(
            provider=provider,
            gpu=baseline,
            instance_type="gpu_8x_a100",
            gpu_count=8,
            vcpus=240,
            ram_gib=1800,
            current_price_per_hour=Decimal("16.00"),
            region="us-east-1",
        ),
        OfferFactory(
            provider=other,
            gpu=baseline,
            instance_type="a100.1x",
            current_price_per_hour=Decimal("3.00"),
            region="eu-west-1",
        ),
        OfferFactory(
            provider=other,
            gpu=baseline,
            instance_type="a100.1x",
            is_spot=True,
            current_price_per_hour=Decimal("1.00"),
            region="eu-west-1",
        ),
        OfferFactory(provider=provider, gpu=h100, instance_type="gpu_1x_h100", current_price_per_hour=Decimal("5.00")),
        OfferFactory(provider=other, gpu=rtx4090, instance_type="4090.1x", current_price_per_hour=Decimal("0.50")),
        OfferFactory(
            provider=hostile_provider, gpu=hostile, instance_type="<i>x</i>", current_price_per_hour=Decimal("0.40")
        ),
        OfferFactory(provider=other, gpu=small, instance_type="3060.1x", current_price_per_hour=Decimal("0.10")),
    ]
    if with_history:
        for offer in offers:
            per_gpu = offer.current_price_per_gpu_hour_usd
            for days in (20, 10, 0):
                PriceObservationFactory(
                    offer=offer,
                    observed_at=now - dt.timedelta(days=days),
                    price_per_hour=offer.current_price_per_hour,
                    price_per_gpu_hour=per_gpu,
                    price_per_gpu_hour_usd=per_gpu * (Decimal("1.1") if days else 1),
                )
    return World(baseline, h100, rtx4090, small, hostile, provider, hostile_provider)


def cheap_offer_import(directory: Path) -> None:
    """Import, through the price service, a curated file with one RTX 4090 offer at 0.07 USD/h
    (instance cheap.1x): a write that bumps the data version. Needs the alias "RTX4090"."""
    from catalog.services.prices import price_import_file

    path = directory / "curated" / "cheapcloud.csv"
    path.parent.mkdir(parents=True)
    path.write_text(
        CURATED_CSV_HEADER
        + "cheapcloud,Cheap Cloud,cheap.1x,Region A,RTX4090,24,1,8,32,0.07,gpu,,USD,"
        + timezone.now().date().isoformat()
        + ","
        "https://example.org/prices\n",
        encoding="utf-8",
    )
    assert price_import_file(path=path).ok
