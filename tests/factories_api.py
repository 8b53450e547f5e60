"""A small test world for the API tests: two vendors, GPUs with peaks, offers, prices, results.

The figures are test fixtures chosen for easy arithmetic; they are not catalogue data.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from decimal import Decimal

from django.utils import timezone

from benchmarks_app.models import RawSubmission, SubmissionStatus, TrustLabel
from catalog.models import Gpu, Offer, Provider
from catalog.models.gpus import GpuAlias
from tests.factories import (
    ArchitectureFactory,
    GpuFactory,
    OfferFactory,
    PriceObservationFactory,
    ProviderFactory,
    TensorPeakFactory,
    UserFactory,
    VendorFactory,
)
from tests.factories_dashboard import (
    BenchmarkResultFactory,
    PurchasePriceFactory,
    ResultAggregateFactory,
    WorkloadFactory,
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class ApiWorld:
    h100: Gpu
    a100: Gpu
    v100: Gpu
    mi300: Gpu
    lambda_: Provider
    runpod: Provider
    offers: list[Offer] = field(default_factory=list)
    resnet_key: str = ""
    held: list[RawSubmission] = field(default_factory=list)


def build_api_world(*, observations_per_offer: int = 3) -> ApiWorld:
    nvidia = VendorFactory(name="NVIDIA", slug="nvidia")
    amd = VendorFactory(name="AMD", slug="amd")
    volta = ArchitectureFactory(
        slug="volta",
        name="Volta",
        vendor=nvidia,
        release_month=dt.date(2017, 5, 1),
        supports_bf16=False,
        supports_fp8=False,
        supports_tf32=False,
        tensor_core_generation=1,
    )
    ampere = ArchitectureFactory(
        slug="ampere", name="Ampere", vendor=nvidia, release_month=dt.date(2020, 5, 1), supports_fp8=False
    )
    hopper = ArchitectureFactory(slug="hopper", name="Hopper", vendor=nvidia, release_month=dt.date(2022, 3, 1))
    cdna3 = ArchitectureFactory(slug="cdna3", name="CDNA 3", vendor=amd, release_month=dt.date(2023, 12, 1))

    h100 = GpuFactory(
        name="H100 SXM5 80 GB",
        slug="h100-sxm5-80gb",
        vendor=nvidia,
        architecture=hopper,
        memory_gib=80.0,
        release_date=dt.date(2022, 3, 22),
        family="H100",
        variant="SXM",
    )
    a100 = GpuFactory(
        name="A100 SXM4 80 GB",
        slug="a100-sxm4-80-gb",
        vendor=nvidia,
        architecture=ampere,
        memory_gib=80.0,
        release_date=dt.date(2020, 5, 14),
    )
    v100 = GpuFactory(
        name="V100 SXM2 16 GB",
        slug="v100-sxm2-16gb",
        vendor=nvidia,
        architecture=volta,
        memory_gib=16.0,
        release_date=dt.date(2017, 6, 21),
    )
    mi300 = GpuFactory(
        name="Instinct MI300X",
        slug="mi300x",
        vendor=amd,
        architecture=cdna3,
        memory_gib=192.0,
        release_date=dt.date(2023, 12, 6),
    )
    GpuFactory(
        name="Old Consumer Card",
        slug="old-card",
        vendor=nvidia,
        architecture=None,
        segment="consumer",
        memory_gib=None,
        is_curated=False,
    )

    for gpu, bf16 in ((h100, 989.4), (a100, 312.0), (mi300, 1307.4)):
        TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=bf16)
    TensorPeakFactory(gpu=h100, precision="fp8", dense_tflops=1978.9)
    TensorPeakFactory(gpu=v100, precision="bf16", supported=False, dense_tflops=None)
    TensorPeakFactory(gpu=v100, precision="fp16", dense_tflops=125.0)
    GpuAlias.objects.create(gpu=h100, alias="NVIDIA H100 80GB HBM3", normalised="nvidiah10080gbhbm3")
    PurchasePriceFactory(gpu=h100, price=Decimal("30000"), source="tests")

    lambda_ = ProviderFactory(slug="lambda", name="Lambda")
    runpod = ProviderFactory(slug="runpod", name="RunPod", kind="marketplace")
    now = timezone.now()
    offers = [
        OfferFactory(
            provider=lambda_,
            gpu=h100,
            instance_type="gpu_8x_h100",
            gpu_count=8,
            vcpus=208,
            ram_gib=1800,
            current_price_per_hour=Decimal("23.92"),
            region="us-east-1",
        ),
        OfferFactory(
            provider=lambda_,
            gpu=a100,
            instance_type="gpu_1x_a100",
            gpu_count=1,
            vcpus=30,
            ram_gib=200,
            current_price_per_hour=Decimal("1.29"),
            region="us-west-1",
        ),
        OfferFactory(
            provider=runpod,
            gpu=h100,
            instance_type="h100-spot",
            is_spot=True,
            vcpus=16,
            current_price_per_hour=Decimal("1.99"),
            region="eu-ro-1",
        ),
        OfferFactory(
            provider=runpod,
            gpu=v100,
            instance_type="v100",
            vcpus=4,
            current_price_per_hour=Decimal("0.19"),
            region="eu-ro-1",
            available=False,
        ),
        OfferFactory(
            provider=runpod,
            gpu=None,
            gpu_name_raw="Mystery GPU",
            instance_type="mystery",
            current_price_per_hour=Decimal("0.50"),
            region="eu-ro-1",
        ),
        # A host-only VM: no per-GPU price, never listed.
        OfferFactory(
            provider=lambda_,
            gpu=a100,
            instance_type="host-only",
            price_separable=False,
            current_price_per_hour=None,
            current_price_per_gpu_hour_usd=None,
            region="us-east-1",
        ),
    ]
    for offer in offers[:5]:
        per_gpu = offer.current_price_per_gpu_hour_usd
        for index in range(observations_per_offer):
            PriceObservationFactory(
                offer=offer,
                observed_at=now - dt.timedelta(days=10 * (observations_per_offer - 1 - index)),
                price_per_hour=offer.current_price_per_hour,
                price_per_gpu_hour=per_gpu,
                price_per_gpu_hour_usd=per_gpu,
            )

    resnet = WorkloadFactory(slug="resnet50", version="1.0", category="training")
    llama = WorkloadFactory(slug="llama-inference", version="1.0", category="inference", unit="tokens/s")
    resnet_key = sha("resnet50 bf16 1")
    for gpu, value in ((h100, 3000.0), (a100, 1400.0), (mi300, 2500.0)):
        for factor, trust in ((0.98, TrustLabel.LAB), (1.0, TrustLabel.COMMUNITY), (5.0, TrustLabel.FLAGGED)):
            BenchmarkResultFactory(
                gpu=gpu,
                workload=resnet,
                precision="bf16",
                value=value * factor,
                trust=trust,
                comparison_key=resnet_key,
                comparison_label="resnet50 bf16 1x",
            )
        ResultAggregateFactory(
            gpu=gpu,
            workload=resnet,
            precision="bf16",
            comparison_key=resnet_key,
            comparison_label="resnet50 bf16 1x",
            median=value,
            n=2,
            distinct_submitters=2,
        )
    BenchmarkResultFactory(
        gpu=h100,
        workload=llama,
        precision="fp8",
        value=5000.0,
        comparison_key=sha("llama fp8"),
        comparison_label="llama fp8 1x",
    )

    submitter = UserFactory(username="submitter")
    held = [
        RawSubmission.objects.create(
            payload="{}",
            sha256=sha("flagged"),
            submitter=submitter,
            status=SubmissionStatus.FLAGGED,
            gpu=h100,
            gpu_name_reported="NVIDIA H100 80GB HBM3",
            reasons=[{"field": "$.results[0].median", "reason": "above the GPU's peak", "verdict": "flagged"}],
        ),
        RawSubmission.objects.create(
            payload="{}",
            sha256=sha("held"),
            submitter=submitter,
            status=SubmissionStatus.ON_HOLD,
            gpu_name_reported="Mystery GPU",
        ),
        RawSubmission.objects.create(
            payload="{}",
            sha256=sha("accepted"),
            submitter=submitter,
            status=SubmissionStatus.ACCEPTED,
            gpu=a100,
            gpu_name_reported="A100",
        ),
    ]
    BenchmarkResultFactory(
        submission=held[0],
        gpu=h100,
        workload=resnet,
        precision="bf16",
        value=9000.0,
        trust=TrustLabel.FLAGGED,
        comparison_key=resnet_key,
        comparison_label="resnet50 bf16 1x",
        submitter=submitter,
        submitter_key=str(submitter.pk),
    )
    return ApiWorld(
        h100=h100,
        a100=a100,
        v100=v100,
        mi300=mi300,
        lambda_=lambda_,
        runpod=runpod,
        offers=offers,
        resnet_key=resnet_key,
        held=held,
    )
