"""API latency: p50/p95 of rankings/, gpus/ and offers/, each as a ratio to /api/v1/ping/.

Every request goes through Django's full WSGI handler and middleware in this process
(django.test.Client: no sockets, so the figures are the application's own time). The endpoints
are requested round-robin so that drift (GC, caches, CPU frequency) hits all of them alike; the
ratio to ping/, the smallest DRF endpoint with the same authentication, throttles and renderer,
is what is compared across machines (target: at most 3x).

It reads whatever is in the database DATABASE_URL points at and prints the row counts first;
nothing is written except the throttle counters in the cache (rates are raised for the run).

    DATABASE_URL=postgres://... .venv/bin/python perf/bench_api.py
    .venv/bin/python perf/bench_api.py --requests 300 --runs 5
    .venv/bin/python perf/bench_api.py --renderers   # also compare orjson with DRF's JSONRenderer
    .venv/bin/python perf/bench_api.py --no-cache            # every response computed, none cached
    .venv/bin/python perf/bench_api.py --endpoints "/api/v1/fit/?model=llama-3-8b"   # other URLs
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test import Client, override_settings  # noqa: E402

from gpuatlas.data_version import data_version_cache_seconds  # noqa: E402

ENDPOINTS = ("/api/v1/rankings/", "/api/v1/gpus/", "/api/v1/offers/")
REFERENCE = "/api/v1/ping/"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def row_counts() -> dict[str, int]:
    from benchmarks_app.models import BenchmarkResult, ResultAggregate
    from catalog.models import Gpu, Offer, PriceObservation

    return {
        "GPUs": Gpu.objects.count(),
        "curated GPUs": Gpu.objects.curated().count(),
        "offers": Offer.objects.count(),
        "current offers": Offer.objects.current().count(),
        "price observations": PriceObservation.objects.count(),
        "benchmark results": BenchmarkResult.objects.count(),
        "result aggregates": ResultAggregate.objects.count(),
    }


def one_run(client: Client, urls: list[str], requests: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {url: [] for url in urls}
    gc.collect()
    for _ in range(requests):
        for url in urls:
            started = time.perf_counter()
            response = client.get(url)
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}: {response.content[:300]!r}")
            timings[url].append(elapsed)
    return timings


def summary(label: str, values: list[float]) -> str:
    return f"{label}: min {min(values):.2f}  median {statistics.median(values):.2f}  max {max(values):.2f}"


def bench(
    requests: int, runs: int, warmup: int, endpoints: tuple[str, ...] = ENDPOINTS
) -> dict[str, dict[str, list[float]]]:
    """Per endpoint: p50/p95 ratios to ping and absolute milliseconds, one value per run."""
    client = Client()
    urls = [REFERENCE, *endpoints]
    sizes = {url: len(client.get(url).content) for url in urls}
    one_run(client, urls, warmup)
    figures: dict[str, dict[str, list[float]]] = {
        url: {"p50": [], "p95": [], "p50_ms": [], "p95_ms": []} for url in urls
    }
    for _ in range(runs):
        timings = one_run(client, urls, requests)
        ping50, ping95 = percentile(timings[REFERENCE], 0.5), percentile(timings[REFERENCE], 0.95)
        for url in urls:
            p50, p95 = percentile(timings[url], 0.5), percentile(timings[url], 0.95)
            figures[url]["p50"].append(p50 / ping50)
            figures[url]["p95"].append(p95 / ping95)
            figures[url]["p50_ms"].append(p50 * 1000)
            figures[url]["p95_ms"].append(p95 * 1000)
    for url in urls:
        print(f"\n{url}  ({sizes[url]:,} bytes)")
        print("  " + summary("p50 ms ", figures[url]["p50_ms"]))
        print("  " + summary("p95 ms ", figures[url]["p95_ms"]))
        if url != REFERENCE:
            print("  " + summary("p50 / ping", figures[url]["p50"]))
            print("  " + summary("p95 / ping", figures[url]["p95"]))
    return figures


def compare_renderers(requests: int, runs: int, warmup: int) -> None:
    """orjson against DRF's JSONRenderer: end to end, the two alternating request by request so
    that load drift hits both alike, and the render call alone on each endpoint's response."""
    from rest_framework.renderers import JSONRenderer

    from api.renderers import OrjsonRenderer
    from api.views.base import ApiMixin

    client = Client()
    renderers = {"orjson": [OrjsonRenderer], "drf": [JSONRenderer]}
    urls = [REFERENCE, *ENDPOINTS]
    p50s: dict[tuple[str, str], list[float]] = {(url, name): [] for url in urls for name in renderers}
    try:
        for run in range(runs):
            timings: dict[tuple[str, str], list[float]] = {key: [] for key in p50s}
            for index in range(warmup + requests):
                # Flip the order every iteration: the first of a pair follows another URL's request.
                order = list(renderers.items()) if index % 2 else list(reversed(renderers.items()))
                for url in urls:
                    for name, classes in order:
                        ApiMixin.renderer_classes = classes
                        started = time.perf_counter()
                        response = client.get(url)
                        elapsed = time.perf_counter() - started
                        assert response.status_code == 200, (url, response.status_code)
                        if index >= warmup or run:
                            timings[(url, name)].append(elapsed)
            for key, values in timings.items():
                p50s[key].append(percentile(values, 0.5) * 1000)
    finally:
        ApiMixin.renderer_classes = [OrjsonRenderer]

    print("\n=== renderer, end to end (alternating): p50 ms, median of runs [min-max] ===")
    for url in urls:
        fast, slow = p50s[(url, "orjson")], p50s[(url, "drf")]
        saved = (statistics.median(slow) - statistics.median(fast)) / statistics.median(slow)
        print(
            f"  {url:22s} orjson {statistics.median(fast):6.2f} [{min(fast):.2f}-{max(fast):.2f}]"
            f"   DRF {statistics.median(slow):6.2f} [{min(slow):.2f}-{max(slow):.2f}]   {saved:+.0%} time"
        )

    print("\n=== renderer alone: render(data) of each endpoint's response, microseconds (best of 5 x 50) ===")
    for url in urls:
        data = client.get(url).json()
        body = len(client.get(url).content)
        costs = {}
        for name, classes in renderers.items():
            renderer = classes[0]()
            best = min(
                timeit_seconds(lambda renderer=renderer, data=data: renderer.render(data, "application/json", {}), 50)
                for _ in range(5)
            )
            costs[name] = best * 1e6
        print(
            f"  {url:22s} {body:>8,} bytes   orjson {costs['orjson']:8.1f} us   DRF {costs['drf']:8.1f} us"
            f"   ({costs['drf'] / costs['orjson']:.1f}x)"
        )


def timeit_seconds(call, number: int) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - started) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200, help="requests per endpoint per run (default 200)")
    parser.add_argument("--runs", type=int, default=5, help="repeated runs (default 5)")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up requests per endpoint (default 20)")
    parser.add_argument("--renderers", action="store_true", help="also run with DRF's JSONRenderer and compare")
    parser.add_argument(
        "--endpoints",
        nargs="+",
        default=list(ENDPOINTS),
        help="the URLs to time beside ping (default: %(default)s), e.g. /api/v1/fit/?model=llama-3-8b",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="compute every response (DATA_VERSION_CACHE_SECONDS=0) instead of the cached default",
    )
    args = parser.parse_args()
    if args.requests < 20 or args.runs < 1:
        parser.error("--requests must be at least 20 and --runs at least 1")

    # Production-like: no per-query logging (DEBUG), no per-request log lines.
    settings.DEBUG = False
    logging.disable(logging.INFO)
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(f"database: {engine} {settings.DATABASES['default']['NAME']}")
    counts = row_counts()
    for name, count in counts.items():
        print(f"  {name:20s} {count:>10,}")
    if not counts["current offers"] or not counts["curated GPUs"]:
        print("warning: no curated GPUs or no current offers; the figures say little about real use")
    print(f"\n{args.runs} runs x {args.requests} requests per endpoint, round-robin, after {args.warmup} warm-up")

    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = dict.fromkeys(("anon", "user", "submissions"), "100000000/min")
    cache_seconds = 0 if args.no_cache else data_version_cache_seconds()
    print(f"response cache: {cache_seconds} s" + (" (computed on every request)" if not cache_seconds else ""))
    with override_settings(REST_FRAMEWORK=rest, DATA_VERSION_CACHE_SECONDS=cache_seconds):
        bench(args.requests, args.runs, args.warmup, tuple(args.endpoints))
        if args.renderers:
            compare_renderers(args.requests, args.runs, args.warmup)


if __name__ == "__main__":
    main()
