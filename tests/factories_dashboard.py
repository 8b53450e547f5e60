"""Factories for the dashboard tests: workloads, aggregates, results, purchase prices, rates."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import factory
from django.utils import timezone

from benchmarks_app.models import BenchmarkResult, ResultAggregate, TrustLabel, Workload
from catalog.models import ExchangeRate, PurchasePrice
from tests.factories import GpuFactory


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
