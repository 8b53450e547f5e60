"""Price benchmarks; prints its figures.

1. Imports every SkyPilot catalogue file (the bundled snapshot) into an empty database and
   prints files, rows, seconds and rows/s (target: all of them in < 10 s).
2. On PostgreSQL only: generates 1,000,000 price observations with COPY (N offers over G GPUs,
   Offer.current_* set from each offer's newest observation), then times "current cheapest
   price per GPU for every GPU" (the selector, target < 100 ms) and, for comparison, the same
   answer computed from the observations themselves.

Runs in a throwaway test database (created and destroyed here), never in your data:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuatlas_dev_prices .venv/bin/python perf/bench_prices.py
    .venv/bin/python perf/bench_prices.py --observations 200000   # smaller run
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402


def bench_skypilot_import(folder: Path) -> None:
    from catalog.matching import GpuMatcher
    from catalog.models import Gpu
    from catalog.services.catalog_import import catalog_import
    from catalog.services.prices import price_import_file
    from catalog.services.prices.currency import RateBook

    started = time.perf_counter()
    catalog_import()  # the real catalogue, so that the timed import does the GPU matching too
    print(
        f"catalogue loaded for matching: {Gpu.objects.count()} GPUs in {time.perf_counter() - started:.1f} s (not timed below)"
    )
    files = sorted(folder.rglob("vms.csv"))
    matcher, rates = GpuMatcher.load(), RateBook.load()
    started = time.perf_counter()
    rows = offers = observations = 0
    for path in files:
        summary = price_import_file(path=path, matcher=matcher, rates=rates)
        assert summary.ok, summary.error
        rows += summary.rows_read
        offers += summary.offers_created
        observations += summary.observations_added
    elapsed = time.perf_counter() - started
    from catalog.models import Offer

    matched = Offer.objects.filter(gpu__isnull=False).count()
    print(
        f"SkyPilot import: {len(files)} files, {rows} rows, {offers} offers ({matched} matched to a GPU), {observations} observations"
    )
    print(f"SkyPilot import: {elapsed:.2f} s total, {rows / elapsed:,.0f} rows/s (target: < 10 s)")
    started = time.perf_counter()
    for path in files:
        price_import_file(path=path, matcher=matcher, rates=rates)
    again = time.perf_counter() - started
    print(f"SkyPilot re-import of the same snapshot (nothing changes): {again:.2f} s, {rows / again:,.0f} rows/s")
    import datetime as dt

    later = dt.datetime.now(dt.UTC)
    started = time.perf_counter()
    for path in files:
        price_import_file(path=path, matcher=matcher, rates=rates, observed_at=later)
    newer = time.perf_counter() - started
    print(
        f"SkyPilot re-import as a newer snapshot (same prices, offers seen again): {newer:.2f} s, {rows / newer:,.0f} rows/s"
    )


def generate_observations(total: int, gpus: int, offers: int) -> None:
    """Bulk-load ``total`` observations over ``offers`` offers with COPY; set each offer's current price."""
    from catalog.models import ImportRun
    from tests.factories import GpuFactory, ProviderFactory

    gpu_ids = [GpuFactory(name=f"Bench GPU {i}").pk for i in range(gpus)]
    provider_ids = [ProviderFactory(slug=f"bench-{i}").pk for i in range(20)]
    run = ImportRun.objects.create(path="perf/bench_prices.py", format="bench", sha256="0" * 64)
    rng = random.Random(42)
    per_offer = total // offers
    offer_buffer = io.StringIO()
    for i in range(offers):
        spot = "t" if (i // gpus) % 4 == 0 else "f"
        available = "f" if (i // gpus) % 10 == 1 else "t"
        offer_buffer.write(
            f"{provider_ids[i % 20]}\tbench-{i}\tregion-{i % 7}\t\t{spot}\t{gpu_ids[i % gpus]}\tBench\t80\t{1 + i % 8}\t"
            f"16\t128\tt\t{available}\t2026-01-01 00:00:00+00\t2026-01-01 00:00:00+00\tbench\t{{}}\t\n"
        )
    columns = (
        "provider_id, instance_type, region, zone, is_spot, gpu_id, gpu_name_raw, gpu_memory_gib_raw, gpu_count, "
        "vcpus, ram_gib, price_separable, available, first_seen, last_seen, source, extra, current_currency"
    )
    started = time.perf_counter()
    with connection.cursor() as cursor:
        with cursor.copy(f"COPY catalog_offer ({columns}) FROM STDIN") as copy:
            copy.write(offer_buffer.getvalue())
        cursor.execute("SELECT id, gpu_count FROM catalog_offer WHERE source = 'bench' ORDER BY id")
        offer_rows = cursor.fetchall()
        with cursor.copy(
            "COPY catalog_priceobservation (offer_id, observed_at, price_per_hour, currency, price_per_gpu_hour, "
            "price_per_gpu_hour_usd, import_run_id) FROM STDIN"
        ) as copy:
            chunk = io.StringIO()
            # One observation every 40 minutes, like the tracker's snapshots.
            stamps = [_timestamp(*divmod(k * 40, 1440)) for k in range(per_offer)]
            for offer_id, gpu_count in offer_rows:
                base = rng.uniform(0.2, 6.0)
                for k in range(per_offer):
                    per_gpu = round(base * rng.uniform(0.8, 1.2), 6)
                    hour = round(per_gpu * gpu_count, 6)
                    chunk.write(f"{offer_id}\t{stamps[k]}\t{hour}\tUSD\t{per_gpu}\t{per_gpu}\t{run.pk}\n")
                if chunk.tell() > 8_000_000:
                    copy.write(chunk.getvalue())
                    chunk = io.StringIO()
            copy.write(chunk.getvalue())
        cursor.execute(
            """
            UPDATE catalog_offer o SET current_price_per_hour = n.price_per_hour, current_currency = n.currency,
                   current_price_per_gpu_hour_usd = n.price_per_gpu_hour_usd, current_observed_at = n.observed_at
            FROM (SELECT DISTINCT ON (offer_id) offer_id, price_per_hour, currency, price_per_gpu_hour_usd, observed_at
                  FROM catalog_priceobservation ORDER BY offer_id, observed_at DESC) n
            WHERE n.offer_id = o.id
            """
        )
        cursor.execute("ANALYZE catalog_offer")
        cursor.execute("ANALYZE catalog_priceobservation")
        cursor.execute("SELECT count(*) FROM catalog_priceobservation")
        count = cursor.fetchone()[0]
    print(
        f"generated {count:,} observations over {offers:,} offers and {gpus} GPUs in {time.perf_counter() - started:.1f} s (COPY)"
    )


def _timestamp(day: int, minute: int) -> str:
    import datetime as dt

    value = dt.datetime(2025, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=day, minutes=minute)
    return value.isoformat()


def timed(label: str, fn, repeat: int = 15) -> float:
    fn()  # warm the caches once
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    median = statistics.median(times)
    print(f"{label}: median {median:.1f} ms, best {min(times):.1f} ms over {repeat} runs")
    return median


def bench_cheapest(total: int) -> None:
    from catalog.selectors.prices import gpu_rent_prices

    generate_observations(total=total, gpus=200, offers=max(total // 50, 1))
    answer = gpu_rent_prices()
    print(f"typical price per GPU: {len(answer)} GPUs answered")
    median = timed("typical on-demand price per GPU, every GPU (gpu_rent_prices over Offer.current_*)", gpu_rent_prices)
    print(f"  target < 100 ms: {'met' if median < 100 else 'NOT met'}")
    timed("cheapest price per GPU, every GPU", lambda: gpu_rent_prices(rule="cheapest"))
    one = next(iter(answer))
    timed("typical price of one GPU (the GPU page)", lambda: gpu_rent_prices(gpu_ids=[one]))

    def from_history() -> list:
        with connection.cursor() as cursor:
            cursor.execute(
                """
                SELECT o.gpu_id, min(n.price_per_gpu_hour_usd)
                FROM (SELECT DISTINCT ON (offer_id) offer_id, price_per_gpu_hour_usd
                      FROM catalog_priceobservation ORDER BY offer_id, observed_at DESC) n
                JOIN catalog_offer o ON o.id = n.offer_id
                WHERE o.available AND o.price_separable AND NOT o.is_spot AND o.gpu_id IS NOT NULL
                GROUP BY o.gpu_id
                """
            )
            return cursor.fetchall()

    timed(
        "same answer computed from the 1M observations (no denormalised fields), for comparison", from_history, repeat=3
    )
    with connection.cursor() as cursor:
        sql, params = _selector_sql()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n    ".join(r[0] for r in cursor.fetchall())
    print(f"  plan of the selector query:\n    {plan}")


def _selector_sql():
    from django.db.models import Min

    from catalog.models import Offer

    queryset = (
        Offer.objects.current()
        .filter(is_spot=False)
        .order_by()
        .values("gpu_id")
        .annotate(c=Min("current_price_per_gpu_hour_usd"))
    )
    return queryset.query.sql_with_params()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--observations", type=int, default=1_000_000)
    parser.add_argument("--skypilot", type=Path, default=ROOT / "catalog/data/prices/skypilot-catalog")
    args = parser.parse_args()
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        print(f"database: {connection.vendor} ({connection.settings_dict['NAME']}), {os.cpu_count()} CPUs")
        bench_skypilot_import(args.skypilot)
        if connection.vendor == "postgresql":
            bench_cheapest(args.observations)
        else:
            print("cheapest-per-GPU over 1,000,000 observations: skipped (needs PostgreSQL: set DATABASE_URL)")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
