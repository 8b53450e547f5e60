"""The first request to every page after a data change, on the data you point it at; prints figures.

A data change (an import, an accepted submission) bumps the data version, which makes every
cached page and computation stale. This times, for each page, one request right after a bump
(cold: what the first visitor waits for), then one more (warm), with Django's test client in
this process (no network, no server start-up), in English. Run it on the demo data that
`make run` loads, read only apart from the cache:

    DATABASE_URL=sqlite:///$PWD/db.sqlite3 .venv/bin/python perf/bench_first_request.py
    .venv/bin/python perf/bench_first_request.py --runs 5 --target-ms 1000
    .venv/bin/python perf/bench_first_request.py --empty-cache --pages home "gpu " compare fit

``--empty-cache`` empties the cache before each cold request too (as perf/run's "cold" does):
what the first visitor waits for after a cache flush, or in a worker whose local cache is empty,
when nothing computed before the data change can be reused. ``--pages`` keeps the pages whose
name contains one of the words given.

Versioned caching is on here (DATA_VERSION_CACHE_SECONDS, in this process's memory), as in
production; without it every request is a cold one. The warm pass is checked to be warm: the
data version must be the one the cold pass left, and no cached read may be computed again (a
cache that dropped the version or the page's entries would make "warm" figures cold ones); the
run fails, naming the pages, if either happens.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")
os.environ.setdefault("DATA_VERSION_CACHE_SECONDS", "86400")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.core.cache import cache  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import Sum  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

import gpuatlas.data_version as versions  # noqa: E402
from benchmarks_app.models import ResultAggregate  # noqa: E402
from catalog.models import Gpu  # noqa: E402
from dashboard.ranking.use_cases import USE_CASES  # noqa: E402
from fitcalc.models import HfModel  # noqa: E402
from gpuatlas.data_version import data_version, data_version_bump  # noqa: E402


def pages() -> dict[str, str]:
    h100 = Gpu.objects.filter(slug__startswith="h100-sxm5-80").values_list("slug", flat=True).first() or "h100"
    busiest = (
        ResultAggregate.objects.values("gpu__slug").annotate(results=Sum("n")).order_by("-results", "gpu__slug").first()
    )
    out = {"home": "/"}
    out |= {f"rankings {slug}": f"/?use_case={slug}" for slug in USE_CASES}
    out |= {
        "tiers": "/tiers/",
        "tiers llm-serving": "/tiers/?use_case=llm-serving",
        "catalogue": "/gpus/?scope=all&sort=-bf16",
        f"gpu {h100}": f"/gpus/{h100}/",
        "gpu geforce-rtx-4090": "/gpus/geforce-rtx-4090/",
        **({f"gpu {busiest['gpu__slug']} (busiest)": f"/gpus/{busiest['gpu__slug']}/"} if busiest else {}),
        "compare": f"/compare/?gpus={h100},a100-sxm4-80-gb,geforce-rtx-4090",
        "fit": "/fit/",
        "fit llama-3-8b": "/fit/?model=llama-3-8b",
        "providers": "/providers/",
        "submit": "/submit/",
        "open data": "/open-data/",
        "architectures": "/architectures/",
        "llm model": "/llm-model/",
        "api rankings": "/api/v1/rankings/?use_case=llm-serving",
        "api fit": "/api/v1/fit/?model=llama-3-8b",
        "api fit serving": "/api/v1/fit/serving/?model=llama-3.1-70b",
    }
    hf_id = HfModel.objects.order_by("repo_id").values_list("repo_id", flat=True).first()
    if hf_id:
        out["fit hf model"] = f"/fit/?hf_model={hf_id}"
    return out


class CachedComputes:
    """Counts the cached reads computed (misses of ``data_version_cached``) while it is installed."""

    def __init__(self) -> None:
        self.count = 0
        self._spend = versions.compute_spend

    def __enter__(self) -> CachedComputes:
        def counted() -> None:
            self.count += 1
            self._spend()

        versions.compute_spend = counted
        return self

    def __exit__(self, *exc: object) -> None:
        versions.compute_spend = self._spend


def bump_without_warm_up() -> None:
    """A data-version bump with its follow-ups run here (submitter counts, stored standings) but not
    the warm-up: that renders the busiest pages before the timed request, which would then time a
    warm page, not what a visitor waits for when they come before the warm-up is done."""
    warm_up = versions._pages_warm_request
    versions._pages_warm_request = lambda: None
    try:
        data_version_bump()
    finally:
        versions._pages_warm_request = warm_up


def timed(client: Client, url: str) -> tuple[float, int, int]:
    connection.queries_log.clear()  # CaptureQueriesContext counts nothing once the log is full
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = client.get(url)
        elapsed = time.perf_counter() - started
    return elapsed * 1000, len(queries), response.status_code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="bump-then-request rounds per page (median shown)")
    parser.add_argument("--target-ms", type=float, default=1000.0)
    parser.add_argument("--empty-cache", action="store_true", help="empty the cache before each cold request")
    parser.add_argument("--pages", nargs="*", default=[], help="only the pages whose name contains one of these")
    args = parser.parse_args()
    client = Client()
    client.get("/healthz")  # imports and URL resolving, once, outside the figures
    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}; GPUs: {Gpu.objects.count()}")
    print(f"{'page':28} {'cold ms':>9} {'max':>7} {'warm ms':>8} {'queries':>8} {'warm q':>7}  status")
    over, not_warm = [], []
    for name, url in pages().items():
        if args.pages and not any(word in name for word in args.pages):
            continue
        cold, queries, status = [], 0, 0
        for _run in range(args.runs):
            if args.empty_cache:
                cache.clear()
            bump_without_warm_up()
            ms, queries, status = timed(client, url)
            cold.append(ms)
        version = data_version()
        with CachedComputes() as computes:
            warm, warm_queries, _status = timed(client, url)
        median = statistics.median(cold)
        flag = "" if median < args.target_ms else f"  over {args.target_ms:.0f} ms"
        if flag:
            over.append(name)
        if computes.count or data_version() != version:
            flag += (
                f"  NOT WARM: {computes.count} cached reads computed again, version kept: {data_version() == version}"
            )
            not_warm.append(name)
        print(f"{name:28} {median:9.0f} {max(cold):7.0f} {warm:8.0f} {queries:8d} {warm_queries:7d}  {status}{flag}")
    print(f"pages over {args.target_ms:.0f} ms cold: {', '.join(over) if over else 'none'}")
    if not_warm:
        raise SystemExit(f"the warm pass was not warm for: {', '.join(not_warm)} (its figures are cold ones)")


if __name__ == "__main__":
    main()
