"""Invalid parameters answer 400 naming the parameter; list endpoints issue a bounded number of queries."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.world import API_WORLD, world_build

pytestmark = pytest.mark.django_db
WORLD = API_WORLD


BAD = [
    # unknown filter values
    ("/api/v1/gpus/?vendor=intel", "vendor"),
    ("/api/v1/gpus/?vendor=NVIDIA", "vendor"),
    ("/api/v1/gpus/?vendor=%25s%25d", "vendor"),  # "%s%d": the value must never become a format string
    ("/api/v1/offers/?gpu=%25(x)s", "gpu"),
    # NUL bytes: PostgreSQL refuses them in any comparison, so they must never reach a query
    ("/api/v1/offers/?region=eu%00", "region"),
    ("/api/v1/results/?workload=a%00b", "workload"),
    ("/api/v1/tiers/?provider=%00", "provider"),
    ("/api/v1/rankings/?region=eu%00", "region"),
    ("/api/v1/gpus/?architecture=blackwell", "architecture"),
    ("/api/v1/gpus/?segment=gaming", "segment"),
    ("/api/v1/gpus/?supports_precision=fp64", "supports_precision"),
    ("/api/v1/offers/?gpu=rtx-9090", "gpu"),
    ("/api/v1/offers/?provider=aws", "provider"),
    ("/api/v1/offers/?region=mars-1", "region"),
    ("/api/v1/results/?trust=gold", "trust"),
    ("/api/v1/results/?workload=doom", "workload"),
    ("/api/v1/aggregates/?precision=fp128", "precision"),
    ("/api/v1/workloads/?category=gaming", "category"),
    ("/api/v1/rankings/?use_case=mining", "use_case"),
    ("/api/v1/rankings/?vendor=intel", "vendor"),
    ("/api/v1/rankings/?baseline=rtx-9090", "baseline"),
    ("/api/v1/tiers/?currency=EUR", "currency"),
    ("/api/v1/tiers/?currency=usd", "currency"),
    # cross-parameter: inference-8bit only allows 8bit
    ("/api/v1/rankings/?use_case=inference-8bit&precision=16bit", "precision"),
    # numbers: negative, out of range, not a number, not finite
    ("/api/v1/offers/?max_price_per_gpu_hour=-1", "max_price_per_gpu_hour"),
    ("/api/v1/offers/?max_price_per_gpu_hour=abc", "max_price_per_gpu_hour"),
    ("/api/v1/offers/?max_price_per_gpu_hour=1e999", "max_price_per_gpu_hour"),
    ("/api/v1/offers/?max_price_per_gpu_hour=NaN", "max_price_per_gpu_hour"),
    ("/api/v1/offers/?min_vcpus_per_gpu=-4", "min_vcpus_per_gpu"),
    ("/api/v1/gpus/?min_memory_gib=-1", "min_memory_gib"),
    ("/api/v1/rankings/?min_vram=-8", "min_vram"),
    ("/api/v1/prices/?offer=0", "offer"),
    ("/api/v1/prices/?offer=1.5", "offer"),
    # dates
    ("/api/v1/gpus/?released_after=2020-13-01", "released_after"),
    ("/api/v1/gpus/?released_before=10/25/2020", "released_before"),
    ("/api/v1/prices/?since=yesterday", "since"),
    # booleans
    ("/api/v1/offers/?spot=yes", "spot"),
    ("/api/v1/offers/?available=1", "available"),
    # opaque keys, text
    ("/api/v1/results/?comparison_key=xyz", "comparison_key"),
    ("/api/v1/rankings/?region=" + "x" * 65, "region"),
    ("/api/v1/offers/?search=a%00b", "search"),
    # ordering, pagination
    ("/api/v1/gpus/?ordering=price", "ordering"),
    ("/api/v1/gpus/?ordering=name,-memory_gib", "ordering"),
    ("/api/v1/offers/?page_size=501", "page_size"),
    ("/api/v1/offers/?page_size=0", "page_size"),
    ("/api/v1/prices/?page_size=ten", "page_size"),
    ("/api/v1/gpus/?limit=1001", "limit"),
    ("/api/v1/gpus/?offset=-1", "offset"),
    # a filter the endpoint does not have: refused, not silently ignored (it answered the
    # unfiltered list, or an empty one)
    ("/api/v1/offers/?max_price=-1", "max_price"),
    ("/api/v1/offers/?max_price=nan", "max_price"),
    ("/api/v1/offers/?max_price=inf", "max_price"),
    ("/api/v1/offers/?limit=nan", "limit"),  # offers page by cursor
    ("/api/v1/gpus/?min_memory=-1", "min_memory"),
    ("/api/v1/results/?min_value=-1", "min_value"),
    ("/api/v1/rankings/?min_vram_gib=inf", "min_vram_gib"),
    ("/api/v1/tiers/?max_price=-1", "max_price"),
    ("/api/v1/fit/?model=llama-3-8b&gpus=-1", "gpus"),
    ("/api/v1/workloads/?format=json", "format"),
    ("/api/v1/gpus/h100-sxm5-80gb/?currency=EUR", "currency"),
    ("/api/v1/ping/?x=1", "x"),
]


@pytest.mark.parametrize(("url", "parameter"), BAD)
def test_invalid_parameter_is_400_naming_it(client, world, url, parameter):  # type: ignore[no-untyped-def]
    response = client.get(url)
    assert response.status_code == 400, (url, response.content[:300])
    body = response.json()
    assert list(body["errors"]) == [parameter]
    assert parameter in body["detail"]
    assert all(isinstance(message, str) and message for message in body["errors"][parameter])


def test_several_invalid_parameters_are_all_named(client, world):  # type: ignore[no-untyped-def]
    body = client.get("/api/v1/offers/?spot=maybe&provider=aws&max_price_per_gpu_hour=-2").json()
    assert set(body["errors"]) == {"spot", "provider", "max_price_per_gpu_hour"}


def _numeric_filters() -> list[tuple[str, str]]:
    """(endpoint, parameter) for every number filter of every API endpoint with a filterset."""
    from django.urls import URLPattern

    from api import urls as api_urls
    from api.filters.base import FloatFilter, IntFilter

    found = []
    for pattern in api_urls.urlpatterns:
        view = getattr(getattr(pattern, "callback", None), "view_class", None)
        filterset = getattr(view, "filterset_class", None)
        if not isinstance(pattern, URLPattern) or filterset is None or "<" in str(pattern.pattern):
            continue
        for name, item in filterset.base_filters.items():
            if isinstance(item, FloatFilter | IntFilter):
                found.append((f"/api/v1/{pattern.pattern}", name))
    return found


NUMERIC_FILTERS = _numeric_filters()


def test_the_numeric_filters_are_found():
    assert ("/api/v1/offers/", "max_price_per_gpu_hour") in NUMERIC_FILTERS
    assert ("/api/v1/rankings/", "min_vram") in NUMERIC_FILTERS and ("/api/v1/prices/", "offer") in NUMERIC_FILTERS


@pytest.mark.parametrize(("endpoint", "parameter"), NUMERIC_FILTERS)
@pytest.mark.parametrize("value", ["-1", "nan", "NaN", "inf", "-inf", "1e999", "-0.5"])
def test_every_numeric_filter_refuses_negative_and_non_finite_values(client, world, endpoint, parameter, value):  # type: ignore[no-untyped-def]
    response = client.get(f"{endpoint}?{parameter}={value}")
    assert response.status_code == 400, (endpoint, parameter, value)
    assert list(response.json()["errors"]) == [parameter]


def test_the_parameters_an_endpoint_takes_are_the_ones_its_schema_documents(rf):  # type: ignore[no-untyped-def]
    """What the server accepts (api.views.base.query_parameters_known) and what /api/v1/schema/
    lists are the same names, for every GET operation."""
    import re
    import uuid

    from django.urls import resolve
    from drf_spectacular.generators import SchemaGenerator

    from api.views.base import query_parameters_known

    schema = SchemaGenerator().get_schema(request=None, public=True)
    checked = 0
    for path, operations in schema["paths"].items():
        if "get" not in operations:
            continue
        documented = {p["name"] for p in operations["get"].get("parameters", []) if p["in"] == "query"}
        concrete = re.sub(r"\{run_uuid\}", str(uuid.uuid4()), path)
        concrete = re.sub(r"\{[a-z_]+\}", "x", concrete)
        view_class = getattr(resolve(concrete).func, "view_class", None)
        if view_class is None or getattr(view_class, "query_parameters", None) is None:
            continue  # not an API v1 view of ours (submissions have no query parameters)
        assert query_parameters_known(view_class()) == documented, path
        checked += 1
    assert checked >= 14


def test_page_size_at_the_maximum_is_accepted(client, world):  # type: ignore[no-untyped-def]
    offers = client.get("/api/v1/offers/?page_size=500")
    assert offers.status_code == 200
    # Every listed offer on the one page: the host-only VM has no per-GPU price and is never listed.
    page = offers.json()
    assert page["next"] is None and len(page["results"]) == 5
    assert {row["instance_type"] for row in page["results"]} == {
        "gpu_8x_h100",
        "gpu_1x_a100",
        "h100-spot",
        "v100",
        "mystery",
    }
    gpus = client.get("/api/v1/gpus/?limit=1000")
    assert gpus.status_code == 200
    page = gpus.json()
    assert page["count"] == len(page["results"]) == 5 and page["next"] is None


def test_empty_value_means_no_filter(client, world):  # type: ignore[no-untyped-def]
    everything = client.get("/api/v1/gpus/").json()["count"]
    assert client.get("/api/v1/gpus/?vendor=&segment=&min_memory_gib=&curated=").json()["count"] == everything


def test_unknown_opaque_ids_just_filter(client, world):  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/results/?comparison_key=" + "0" * 64).json()["results"] == []


def _queries(client, url: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, (url, response.content[:300])
    return len(captured)


LISTS = [
    "/api/v1/gpus/",
    "/api/v1/gpus/?vendor=nvidia&supports_precision=bf16",
    "/api/v1/gpus/h100-sxm5-80gb/",
    "/api/v1/architectures/",
    "/api/v1/providers/",
    "/api/v1/offers/",
    "/api/v1/offers/?gpu=h100-sxm5-80gb&provider=runpod&region=eu-ro-1",
    "/api/v1/prices/",
    "/api/v1/workloads/",
    "/api/v1/results/",
    "/api/v1/aggregates/",
    "/api/v1/rankings/",
    "/api/v1/tiers/",
]


@pytest.mark.parametrize("url", LISTS)
def test_query_count_does_not_grow_with_rows(client, url):  # type: ignore[no-untyped-def]
    cache.clear()
    world_build(rows=API_WORLD, price_days=(10, 0))
    small = _queries(client, url)
    # A second world's worth of rows (other slugs) must not add queries.
    from tests.factories import (
        BenchmarkResultFactory,
        GpuFactory,
        OfferFactory,
        PriceObservationFactory,
        ResultAggregateFactory,
        TensorPeakFactory,
    )

    for index in range(20):
        gpu = GpuFactory(name=f"Extra GPU {index}", slug=f"extra-{index}", memory_gib=24.0 + index)
        TensorPeakFactory(gpu=gpu, precision="bf16", dense_tflops=100.0 + index)
        offer = OfferFactory(gpu=gpu)
        PriceObservationFactory(offer=offer)
        BenchmarkResultFactory(gpu=gpu)
        ResultAggregateFactory(gpu=gpu)
    cache.clear()  # rankings/tiers responses are cached for a minute
    large = _queries(client, url)
    assert large == small, (url, small, large)
    assert large <= 12, (url, large)
