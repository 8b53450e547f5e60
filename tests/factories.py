"""The test suite's factories: factory_boy factories for the models, and submission documents
(valid against submission-1.schema.json) as gpuatlas-bench writes them.

Figures are test fixtures with easy arithmetic, not catalogue data.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import statistics
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from accounts.services import api_token_create
from benchmarks_app.models import BenchmarkResult, RawSubmission, ResultAggregate, TrustLabel, Workload
from benchmarks_app.services.ingest import submission_ingest
from benchmarks_app.services.intake import submission_intake
from catalog.models import (
    Architecture,
    ExchangeRate,
    Gpu,
    GpuAlias,
    Offer,
    PriceObservation,
    Provider,
    PurchasePrice,
    TensorPeak,
    Vendor,
)
from catalog.models.gpus import alias_normalise
from catalog.services.prices import price_import_file
from catalog.services.prices.derive import gpu_price_days_derive, gpu_prices_derive


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.org")
    password = factory.django.Password("correct horse battery staple")


def token_client(user: Any, **client_kwargs: Any) -> Client:
    """A test client that sends a new API token of ``user``."""
    _, key = api_token_create(user=user, name="tests")
    return Client(HTTP_AUTHORIZATION=f"Token {key}", **client_kwargs)


class VendorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Vendor
        django_get_or_create = ("slug",)

    name = "NVIDIA"
    slug = factory.LazyAttribute(lambda o: o.name.lower())


class ArchitectureFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Architecture
        django_get_or_create = ("slug",)

    slug = "hopper"
    name = "Hopper"
    vendor = factory.SubFactory(VendorFactory)
    release_month = dt.date(2022, 3, 1)
    tensor_core_generation = 4
    supports_tf32 = True
    supports_bf16 = True
    supports_fp8 = True
    supports_sparsity = True


class GpuFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Gpu
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Test GPU {n}")
    slug = factory.LazyAttribute(lambda o: o.name.lower().replace(" ", "-"))
    vendor = factory.SubFactory(VendorFactory)
    architecture = factory.SubFactory(ArchitectureFactory)
    segment = "datacenter"
    memory_gib = 80.0
    memory_bandwidth_gbs = 3350.0
    tdp_w = 700
    fp32_tflops = 66.9
    is_curated = True


class TensorPeakFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TensorPeak

    gpu = factory.SubFactory(GpuFactory)
    precision = "bf16"
    supported = True
    dense_tflops = 989.4
    source = "https://www.nvidia.com/en-us/data-center/h100/"
    as_of = dt.date(2023, 1, 1)


class GpuAliasFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GpuAlias

    gpu = factory.SubFactory(GpuFactory)
    alias = factory.Sequence(lambda n: f"alias {n}")
    normalised = factory.LazyAttribute(lambda o: alias_normalise(o.alias))
    origin = GpuAlias.Origin.CURATED


class ProviderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Provider
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"provider-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class OfferFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Offer

    provider = factory.SubFactory(ProviderFactory)
    instance_type = factory.Sequence(lambda n: f"gpu_1x_{n}")
    region = "us-east-1"
    gpu = factory.SubFactory(GpuFactory)
    gpu_name_raw = factory.LazyAttribute(lambda o: o.gpu.name if o.gpu else "unknown")
    gpu_count = 1
    vcpus = 8
    ram_gib = 64
    first_seen = factory.LazyFunction(timezone.now)
    last_seen = factory.LazyFunction(timezone.now)
    source = "tests"
    current_price_per_hour = Decimal("2.00")
    current_currency = "USD"
    current_price_per_gpu_hour_usd = factory.LazyAttribute(
        lambda o: Decimal(o.current_price_per_hour) / Decimal(o.gpu_count)
    )
    current_observed_at = factory.LazyFunction(timezone.now)

    @classmethod
    def _after_postgeneration(cls, instance, create, results=None):  # type: ignore[no-untyped-def]
        # Offers reach the prices as the importer's do: derived once written.
        super()._after_postgeneration(instance, create, results)
        if create:
            gpu_prices_derive()


class PriceObservationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PriceObservation

    offer = factory.SubFactory(OfferFactory)
    observed_at = factory.LazyFunction(timezone.now)
    price_per_hour = Decimal("2.00")
    currency = "USD"
    price_per_gpu_hour = Decimal("2.00")
    price_per_gpu_hour_usd = Decimal("2.00")

    @classmethod
    def _create(cls, model_class, *args, **kwargs):  # type: ignore[no-untyped-def]
        observation = super()._create(model_class, *args, **kwargs)
        # Observations reach the price history as the importer's do: derived once written.
        if observation.offer.gpu_id is not None:
            gpu_price_days_derive(gpu_ids=[observation.offer.gpu_id])
        return observation


class WorkloadFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workload
        django_get_or_create = ("slug", "version")

    slug = "resnet50"
    version = "1.0"
    name = factory.LazyAttribute(lambda o: o.slug)
    unit = "images/s"
    higher_is_better = True
    category = "training"


class ResultAggregateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ResultAggregate

    gpu = factory.SubFactory(GpuFactory)
    workload = factory.SubFactory(WorkloadFactory)
    precision = "fp16"
    gpu_count = 1
    comparison_key = factory.LazyFunction(lambda: uuid.uuid4().hex)
    comparison_label = factory.LazyAttribute(lambda o: f"{o.workload.slug} {o.precision} {o.gpu_count}x")
    n = 1
    distinct_submitters = 1
    median = 100.0
    q1 = factory.LazyAttribute(lambda o: o.median * 0.95)
    q3 = factory.LazyAttribute(lambda o: o.median * 1.05)
    minimum = factory.LazyAttribute(lambda o: o.median * 0.9)
    maximum = factory.LazyAttribute(lambda o: o.median * 1.1)
    has_lab = True


class BenchmarkResultFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = BenchmarkResult

    gpu = factory.SubFactory(GpuFactory)
    workload = factory.SubFactory(WorkloadFactory)
    precision = "fp16"
    comparison_key = "k"
    comparison_label = "resnet50 fp16"
    value = 100.0
    trust = TrustLabel.LAB
    submitter_key = "lambda"
    measured_at = factory.LazyFunction(timezone.now)


class PurchasePriceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PurchasePrice

    gpu = factory.SubFactory(GpuFactory)
    condition = "new"
    price = Decimal("1000")
    currency = "USD"
    observed_on = dt.date(2025, 1, 1)
    source = "tests"


class ExchangeRateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ExchangeRate

    currency = "CNY"
    date = dt.date(2025, 11, 1)
    usd_per_unit = Decimal("0.14")
    source = "tests"


def make_result(
    *,
    workload: str = "matmul",
    precision: str = "bf16",
    unit: str = "TFLOPS",
    median: float = 700.0,
    spread: float = 0.01,
    params: dict[str, Any] | None = None,
    gpu_count: int = 1,
    mode: str = "burst",
    repetitions: int = 10,
) -> dict[str, Any]:
    """One result whose statistics window is all repetitions, spread ``spread`` around ``median``."""
    values = [median * (1 - spread / 2 + spread * i / (repetitions - 1)) for i in range(repetitions)]
    middle = statistics.median(values)
    return {
        "workload": workload,
        "workload_version": "1.0",
        "precision": precision,
        "gpu_count": gpu_count,
        "params": params if params is not None else {"size": "fixed", "m": 8192, "n": 8192, "k": 8192},
        "unit": unit,
        "higher_is_better": True,
        "mode": mode,
        "repetitions": values,
        "median": middle,
        "min": min(values),
        "max": max(values),
        "spread_pct": (max(values) - min(values)) / middle * 100,
        "stats": {"window_start": 0, "window_size": repetitions, "converged": True, "target_spread_pct": 3.0},
        "timing": {"method": "cuda_events", "warmup_iterations": 5, "inner_iterations": 10, "seconds_total": 2.5},
        "correctness": {"method": "256x256 slice vs float64", "rel_error": 0.002, "tolerance": 0.02, "passed": True},
    }


def bandwidth_result(median: float = 2700.0, **kwargs: Any) -> dict[str, Any]:
    return make_result(
        workload="membw-copy",
        precision="fp32",
        unit="GB/s",
        median=median,
        params={"buffer_bytes": 4294967296, "dtype": "float32"},
        **kwargs,
    )


def submission_document(
    *,
    results: list[dict[str, Any]] | None = None,
    name_smi: str | None = "NVIDIA H100 80GB HBM3",
    name_torch: str = "NVIDIA H100 80GB HBM3",
    memory_total_mib: int = 81559,
    run_uuid: str | None = None,
    **top: Any,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema_version": 1,
        "client": {"name": "gpuatlas-bench", "version": "0.1.0"},
        "run_uuid": run_uuid or str(uuid.uuid4()),
        "created_at": "2026-11-22T10:00:00Z",
        "duration_s": 120.0,
        "cpu_only": False,
        "run_mode": "standard",
        "environment": {
            "gpu": {
                "name_torch": name_torch,
                "name_nvidia_smi": name_smi,
                "count": 1,
                "index": 0,
                "memory_total_mib": memory_total_mib,
                "uuid": "GPU-0a1b2c3d",
                "pci_bus_id": "00000000:18:00.0",
                "compute_capability": "9.0",
                "multiprocessor_count": 132,
                "l2_cache_bytes": 52428800,
            },
            "driver_version": "550.54.15",
            "cuda_version": "12.4",
            "cuda_driver_version": "12.4",
            "torch_version": "2.4.0+cu124",
            "cublas_version": "12.4.5",
            "cudnn_version": "90100",
            "clocks_before": {"sm_mhz": 1980, "mem_mhz": 2619, "max_sm_mhz": 1980},
            "clocks_after": {"sm_mhz": 1755, "mem_mhz": 2619, "max_sm_mhz": 1980},
            "power_limit_w": 700,
            "power_draw_before_w": 72.5,
            "power_draw_after_w": 650.1,
            "temperature_before_c": 31,
            "temperature_after_c": 64,
            "telemetry_source": "nvml",
            "cpu": {"model": "Intel(R) Xeon(R) Platinum 8480+", "cores": 224},
            "ram_gib": 2015.6,
            "os": "Linux-5.15.0-105-generic-x86_64-with-glibc2.35",
            "python_version": "3.11.9",
            "container_image": None,
        },
        "workload_code_sha256": "ab" * 32,
        "results": results if results is not None else [make_result(), bandwidth_result()],
        "skipped": [],
    }
    document.update(top)
    return document


def body(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()


def document_ingest(document: dict[str, Any], *, submitter: Any = None) -> RawSubmission:
    """Take ``document`` in from ``submitter`` (by default the user "submitter") and ingest it here,
    in-process: the submission as stored."""
    submitter = submitter or UserFactory(username="submitter")
    submission = submission_intake(body=body(document), submitter=submitter).submission
    submission_ingest(submission_id=submission.pk)
    submission.refresh_from_db()
    return submission


def with_change(document: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    """A copy of ``document`` with the value at ``path`` replaced."""
    changed = copy.deepcopy(document)
    node = changed
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return changed


def per_gpu_entries(median: float, count: int) -> list[dict[str, Any]]:
    """Each rank's own figure of a multi-GPU result: the group's median split evenly."""
    return [
        {"rank": rank, "device_index": rank, "median": median / count, "min": median / count, "max": median / count}
        for rank in range(count)
    ]


def host_block(count: int, interconnect: str = "nvlink", link: str = "NV18") -> dict[str, Any]:
    """The ``host`` of a host run on ``count`` GPUs, as gpuatlas-bench writes it."""
    return {
        "gpu_count": count,
        "devices": list(range(count)),
        "ranks": count,
        "gpus": [],
        "interconnect": interconnect,
        "topology_source": "nvidia-smi",
        "link_matrix": [["X" if a == b else link for b in range(count)] for a in range(count)],
        "peer_access": True,
        "backend": "nccl",
        "nccl_version": "2.28.9",
        "nccl_env": {"NCCL_NVLS_ENABLE": "0"},
    }


def ddp_result(median: float, count: int, interconnect: str = "nvlink") -> dict[str, Any]:
    """A transformer-train-ddp result on ``count`` GPUs (interconnect "none" at 1 GPU)."""
    params = {
        "batch": 8, "seq_len": 2048, "d_model": 2048, "n_heads": 16, "d_ff": 8192,
        "interconnect": "none" if count == 1 else interconnect,
    }  # fmt: skip
    result = make_result(
        workload="transformer-train-ddp", unit="tokens/s", median=median, params=params, gpu_count=count
    )
    del result["correctness"]
    result["per_gpu"] = per_gpu_entries(result["median"], count)
    return result


def allreduce_result(busbw: float, count: int, size: int, interconnect: str = "nvlink") -> dict[str, Any]:
    """An allreduce-busbw result (GB/s of bus bandwidth) on ``count`` GPUs with its extra figures."""
    params = {"bytes": size, "dtype": "float32", "op": "avg", "interconnect": interconnect}
    result = make_result(
        workload="allreduce-busbw", precision="fp32", unit="GB/s", median=busbw, params=params, gpu_count=count
    )
    factor = 2 * (count - 1) / count
    result["extra"] = {
        "op_timed": "avg",
        "busbw_factor": factor,
        "algbw_gbs": result["median"] / factor,
        "time_us": size * factor / 1e9 / result["median"] * 1e6,
    }
    result["per_gpu"] = per_gpu_entries(result["median"] * count, count)
    return result


# Price files

CURATED_CSV_HEADER = (
    "provider,provider_name,instance_type,region,gpu_name,gpu_memory_gib,gpu_count,vcpus_per_gpu,ram_gib_per_gpu,"
    "price_per_hour,price_unit,spot_price_per_hour,currency,observed_at,source\n"
)


def write_catalogue_file(root: Path, cloud: str, text: str, *, version: str = "v8") -> Path:
    """Write ``text`` as ``<root>/<version>/<cloud>/vms.csv`` (the feed key comes from that path)."""
    path = root / version / cloud / "vms.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def cheap_offer_import(directory: Path) -> None:
    """Import, through the price service, a curated file with one RTX 4090 offer at 0.07 USD/h
    (instance cheap.1x): a write that bumps the data version. Needs the alias "RTX4090"."""
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
