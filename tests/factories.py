"""factory_boy factories shared by the test suite."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from catalog.models import Architecture, Gpu, GpuAlias, Offer, PriceObservation, Provider, TensorPeak, Vendor
from catalog.models.gpus import alias_normalise


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda o: f"{o.username}@example.org")
    password = factory.django.Password("correct horse battery staple")


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


class PriceObservationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PriceObservation

    offer = factory.SubFactory(OfferFactory)
    observed_at = factory.LazyFunction(timezone.now)
    price_per_hour = Decimal("2.00")
    currency = "USD"
    price_per_gpu_hour = Decimal("2.00")
    price_per_gpu_hour_usd = Decimal("2.00")
