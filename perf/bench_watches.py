"""Price watches at scale: the evaluation that follows a price import, with 1,000 to 30,000 watches
on the scale fixture (perf/README.md, step 1); prints its figures.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuatlas_perf .venv/bin/python -m perf.bench_watches \\
        --watches 1000 10000 30000 [--changed-gpus 5 50]

Refuses a database whose name lacks "perf". Each run deletes the benchmark's own watches (user
``perf-watches``), creates N watches over the fixture's GPUs (Zipf-like, as the offers are: most
watch the busy GPUs), 90 % price watches (on-demand or spot, some with a GPU count, a provider or a
region) and 10 % ranking watches (six questions: LLM serving and chat at two model sizes, training,
16-bit inference; half on one GPU, half on any GPU). Then, per size and per number of GPUs whose
offers change, it writes a newer price for one offer of each of those GPUs in an ``ImportRun`` (as
the price writer does: one observation per changed offer, ``Offer.current_*`` moved) and times the
follow-up task body, ``watches_evaluate_after_price_import``: finding the changed GPUs, finding
their watches, and the whole evaluation (figures read, compared, recorded), with the price
watches' figures apart (the rest is the rankings: one per distinct question). Nothing is delivered
(the watches have no email and no webhook): delivery is a task per alert, outside this figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from catalog.models import ImportRun, Offer, PriceObservation, Provider  # noqa: E402
from watches.models import Watch  # noqa: E402
from watches.selectors import changes, readings  # noqa: E402
from watches.services import evaluation  # noqa: E402

USER = "perf-watches"
QUESTIONS = [
    {"use_case": "llm-serving", "model_size": "70b"},
    {"use_case": "llm-serving", "model_size": "8b"},
    {"use_case": "llm-chat", "model_size": "8b"},
    {"use_case": "llm-chat", "model_size": "70b"},
    {"use_case": "training"},
    {"use_case": "inference-16bit"},
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watches", type=int, nargs="+", default=[1000, 10000, 30000])
    parser.add_argument("--changed-gpus", type=int, nargs="+", default=[5, 50])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args()


def watches_make(count: int, rng: np.random.Generator) -> None:
    Watch.objects.filter(user__username=USER).delete()
    user, _ = get_user_model().objects.get_or_create(username=USER)
    gpus = list(
        Offer.objects.current()
        .sku_level()
        .values("gpu_id")
        .annotate(n=django.db.models.Count("id"))
        .order_by("-n")
        .values_list("gpu_id", flat=True)
    )
    providers = list(Provider.objects.values_list("id", flat=True))
    weights = 1.0 / np.arange(1, len(gpus) + 1) ** 1.1
    weights /= weights.sum()
    rows = []
    for i in range(count):
        gpu = int(gpus[rng.choice(len(gpus), p=weights)])
        token = f"perf-{count}-{i}"
        if i % 10 == 9:
            question = QUESTIONS[i // 10 % len(QUESTIONS)]
            llm = question["use_case"].startswith("llm-")
            rows.append(
                Watch(
                    user=user,
                    kind="ranking",
                    metric="cost_per_million_tokens" if llm else "perf_per_dollar",
                    gpu_id=gpu if i % 20 == 9 else None,
                    query=question,
                    use_case=question["use_case"],
                    threshold=Decimal("0.5") if llm else Decimal("5"),
                    feed_token=token,
                )  # fmt: skip
            )
            continue
        rows.append(
            Watch(
                user=user,
                kind="price",
                metric="price_per_gpu_hour",
                gpu_id=gpu,
                spot=i % 4 == 0,
                gpu_count=8 if i % 7 == 0 else None,
                provider_id=providers[i % len(providers)] if i % 5 == 0 else None,
                region="us" if i % 6 == 0 else "",
                threshold=Decimal(str(round(float(rng.uniform(0.5, 4)), 2))),
                feed_token=token,
            )  # fmt: skip
        )
    Watch.objects.bulk_create(rows, batch_size=2000)


def price_change(changed_gpus: int, rng: np.random.Generator) -> int:
    """A newer, lower price for one current offer of each of the ``changed_gpus`` most watched GPUs."""
    watched = list(
        Watch.objects.filter(user__username=USER, kind="price")
        .values("gpu_id")
        .annotate(n=django.db.models.Count("id"))
        .order_by("-n")
        .values_list("gpu_id", flat=True)[:changed_gpus]
    )
    run = ImportRun.objects.create(path="perf/bench_watches.py", format="bench", sha256="0" * 64)
    now = timezone.now()
    with transaction.atomic():
        for gpu_id in watched:
            offer = Offer.objects.current().sku_level().filter(gpu_id=gpu_id).order_by("?").first()
            price = (offer.current_price_per_gpu_hour_usd * Decimal(str(rng.uniform(0.6, 0.95)))).quantize(
                Decimal("0.000001")
            )
            PriceObservation.objects.create(
                offer=offer, observed_at=now, price_per_hour=price * Decimal(str(offer.gpu_count)), currency="USD",
                price_per_gpu_hour=price, price_per_gpu_hour_usd=price, import_run=run,
            )  # fmt: skip
            Offer.objects.filter(pk=offer.pk).update(current_price_per_gpu_hour_usd=price, current_observed_at=now)
    return run.pk


def timed_evaluation(import_run_id: int) -> dict[str, float]:
    """The follow-up task's body, step by step (seconds)."""
    spent: dict[str, float] = {}
    started = time.perf_counter()
    gpu_ids = changes.gpus_with_changed_offers(import_run_id=import_run_id)
    spent["changed GPUs"] = time.perf_counter() - started
    started = time.perf_counter()
    ids = changes.watch_ids_after_price_change(gpu_ids=gpu_ids)
    spent["their watches"] = time.perf_counter() - started
    watches = list(Watch.objects.filter(pk__in=ids).select_related("gpu", "provider"))
    started = time.perf_counter()
    readings.price_readings(watches=[w for w in watches if w.kind == "price"])
    spent["price figures"] = time.perf_counter() - started
    started = time.perf_counter()
    result = evaluation.watches_evaluate(watch_ids=ids)
    spent["whole evaluation"] = time.perf_counter() - started
    spent["watches evaluated"] = len(ids)
    spent["crossings"] = len(result.crossings)
    return spent


def main() -> None:
    args = parse_args()
    name = connection.settings_dict["NAME"]
    if "perf" not in str(name):
        sys.exit(f"refusing database {name!r}: its name lacks 'perf' (this benchmark writes watches and prices)")
    rng = np.random.default_rng(args.seed)
    print(f"database {name}: {Offer.objects.current().count():,} current offers, "
          f"{PriceObservation.objects.count():,} observations")  # fmt: skip
    for count in args.watches:
        watches_make(count, rng)
        kinds = dict(
            Watch.objects.filter(user__username=USER).values_list("kind").annotate(n=django.db.models.Count("id"))
        )
        print(f"\n{count:,} watches ({kinds.get('price', 0):,} price, {kinds.get('ranking', 0):,} ranking)")
        for changed in args.changed_gpus:
            runs = [timed_evaluation(price_change(changed, rng)) for _ in range(args.runs)]
            for key in runs[0]:
                values = [run[key] for run in runs]
                if key in ("watches evaluated", "crossings"):
                    print(f"  {changed:>3} GPUs changed  {key:<18} {statistics.median(values):>10,.0f}")
                else:
                    print(f"  {changed:>3} GPUs changed  {key:<18} {statistics.median(values) * 1000:>10,.1f} ms "
                          f"(min {min(values) * 1000:,.1f}, max {max(values) * 1000:,.1f})")  # fmt: skip
    Watch.objects.filter(user__username=USER).delete()
    print(f"\n(done at {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)")


if __name__ == "__main__":
    main()
