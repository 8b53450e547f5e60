"""The rental price read every ranking, tier list, GPU page, compare and fit answer makes, timed on
the scale fixture (perf/README.md), and what deriving the stored prices costs an import.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuatlas_perf \\
        .venv/bin/python -m perf.bench_rent_prices [--runs 10]

It only reads (and, where the code has ``gpu_prices_derive``, derives again in a transaction it
rolls back), so the same database serves a before/after comparison: it measures the code of the
directory it is run from, so run it from the root of a checkout of the code before
(``cd <that checkout> && python <this file>``) and of the code after. Prints min / median / max
milliseconds over ``--runs`` calls of each read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.getcwd())  # the code measured is the checkout this runs from
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402


def timed(call: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return times


def line(label: str, times: list[float]) -> None:
    print(f"{label:62} {min(times):9.1f} / {statistics.median(times):9.1f} / {max(times):9.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    from catalog.models import Offer
    from catalog.selectors import prices

    gpu_rent_prices = prices.gpu_rent_prices
    busiest = (
        Offer.objects.current().values("gpu_id").order_by().annotate(n=django.db.models.Count("id")).order_by("-n")
    )
    one = busiest.first()["gpu_id"]  # type: ignore[index]
    print(
        f"database {connection.settings_dict['NAME']} ({connection.vendor}): {Offer.objects.count():,} offers, "
        f"{Offer.objects.current().count():,} current; code {prices.__file__}"
    )
    print(f"{'read':62} {'min':>9} / {'median':>9} / {'max':>9}")
    line(
        f"gpu_rent_prices(), every GPU's typical price ({len(gpu_rent_prices())} GPUs)",
        timed(gpu_rent_prices, args.runs),
    )
    line("gpu_rent_prices(rule='cheapest'), every GPU", timed(lambda: gpu_rent_prices(rule="cheapest"), args.runs))
    line("gpu_rent_prices(rule='spot'), every GPU", timed(lambda: gpu_rent_prices(rule="spot"), args.runs))
    line("gpu_rent_prices(gpu_ids=[busiest GPU])", timed(lambda: gpu_rent_prices(gpu_ids=[one]), args.runs))
    line(
        "the busiest GPU page's six reads (one per use case, every GPU)",
        timed(lambda: [gpu_rent_prices() for _ in range(6)], max(1, args.runs // 2)),
    )
    provider = Offer.objects.current().values_list("provider__slug", flat=True).first()
    line(
        f"gpu_rent_prices(provider={provider!r}), every GPU",
        timed(lambda: gpu_rent_prices(provider=provider or ""), args.runs),
    )
    line("gpu_rent_prices(region='us-east'), every GPU", timed(lambda: gpu_rent_prices(region="us-east"), args.runs))
    try:
        from catalog.services.prices.derive import gpu_prices_derive
    except ImportError:
        return
    times = []
    for _ in range(max(1, args.runs // 5)):
        started = time.perf_counter()
        with transaction.atomic():
            gpu_prices_derive()
            times.append((time.perf_counter() - started) * 1000)
            transaction.set_rollback(True)
    line("gpu_prices_derive(): what each import adds (rolled back)", times)


if __name__ == "__main__":
    main()
