"""Submission intake and ingest under load, end to end, on PostgreSQL and Redis; prints its figures.

What it does (everything on loopback, in a throwaway database it creates and drops):

1. creates the database ``gpuatlas_perf_bench_ingest`` (name configurable, must contain "perf"),
   migrates it and loads a small world: the client's workloads, four GPUs with aliases and
   peaks (test fixtures), and submitters with API tokens;
2. starts gunicorn (``--web-workers`` sync workers) and ONE Celery worker
   (``celery -A gpuatlas worker -Q ingest -P prefork -c 1``) on a Redis database it flushes;
3. posts ``--submissions`` (10,000) realistic submissions (17 results each, like a full
   ``gpuatlas-bench run``) from ``--concurrency`` client threads, timing every POST;
4. waits until every submission has its verdict and prints: POST rate and latency
   percentiles (p95 is the figure to watch), the worker's ingest rate, the end-to-end rate
   (first POST to last verdict; target >= 100 submissions/s) and checks that nothing was
   lost or duplicated.

Run:  .venv/bin/python -m perf.bench_ingest            (about 2-4 minutes)
      .venv/bin/python -m perf.bench_ingest --submissions 2000 --results 4
Env:  BENCH_INGEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gpuatlas_perf_bench_ingest)
      BENCH_INGEST_BROKER_URL   (default redis://127.0.0.1:6379/13 -- this Redis database is flushed)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/gpuatlas_perf_bench_ingest"
DEFAULT_BROKER = "redis://127.0.0.1:6379/13"
TERMINAL = ("accepted", "flagged", "rejected", "on_hold")

# GPUs of INGEST_WORLD in tests/world.py: reported name, memory MiB, bf16 peak, fp32 peak, bandwidth.
GPUS = [
    ("NVIDIA H100 80GB HBM3", 81559, 1000.0, 60.0, 3000.0),
    ("NVIDIA H100 NVL", 95830, 1000.0, 60.0, 3900.0),
    ("NVIDIA A100-SXM4-80GB", 81920, 312.0, 19.5, 2039.0),
    ("NVIDIA A100-SXM4-40GB", 40960, 312.0, 19.5, 1555.0),
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--results", type=int, default=17, help="results per submission (max 17, a full client run)")
    parser.add_argument("--concurrency", type=int, default=16, help="client threads posting at once")
    parser.add_argument("--web-workers", type=int, default=3, help="gunicorn sync workers")
    parser.add_argument("--submitters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=100, help="submissions posted and ingested before timing")
    parser.add_argument("--port", type=int, default=0, help="gunicorn port (default: a free one)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for the last verdict")
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if "perf" not in name:
        raise SystemExit(f"refusing to drop and recreate {name!r}: the benchmark database name must contain 'perf'")
    maintenance = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(maintenance, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def flush_broker(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def _result(rng: random.Random, workload: str, precision: str, unit: str, median: float, params: dict) -> dict:
    median *= rng.gauss(1.0, 0.02)
    spread = 0.015
    values = [median * (1 - spread / 2 + spread * rng.random()) for _ in range(10)]
    middle = statistics.median(values)
    return {
        "workload": workload,
        "workload_version": "1.0",
        "precision": precision,
        "gpu_count": 1,
        "params": params,
        "unit": unit,
        "higher_is_better": True,
        "mode": "burst",
        "repetitions": values,
        "median": middle,
        "min": min(values),
        "max": max(values),
        "spread_pct": (max(values) - min(values)) / middle * 100,
        "stats": {"window_start": 0, "window_size": 10, "converged": True, "target_spread_pct": 3.0},
        "timing": {"method": "cuda_events", "warmup_iterations": 5, "inner_iterations": 10, "seconds_total": 2.0},
        "correctness": {"method": "256x256 slice vs float64", "rel_error": 0.002, "tolerance": 0.02, "passed": True},
    }


def make_document(rng: random.Random, results_per_submission: int) -> dict:
    name, mib, bf16, fp32, bandwidth = rng.choice(GPUS)
    results = []
    # The params the client sends (gpuatlas_bench/workloads.json): the server refuses any others.
    for precision, fraction_of_bf16 in (("fp32", None), ("tf32", 0.35), ("fp16", 0.7), ("bf16", 0.7), ("fp8", 1.3)):
        fp8 = {"fast_accum": True, "format": "e4m3"} if precision == "fp8" else {}
        for size, shape in (("fixed", {"m": 8192, "n": 8192, "k": 8192}), ("preferred", {})):
            median = fp32 * 0.85 if fraction_of_bf16 is None else bf16 * fraction_of_bf16
            results.append(
                _result(
                    rng,
                    "matmul",
                    precision,
                    "TFLOPS",
                    median * (1.03 if size == "preferred" else 1),
                    {"size": size, **shape, **fp8},
                )
            )
    stress = {"m": 8192, "n": 8192, "k": 8192, "matmuls_per_repetition": 100}
    buffers = {"buffer_bytes": 4294967296, "dtype": "float32"}
    pcie = {"bytes": 1073741824, "pinned": True}
    block = {"batch": 8, "seq_len": 2048, "d_model": 2048, "n_heads": 16, "d_ff": 8192}
    results.append(_result(rng, "matmul-stress", "fp32", "TFLOPS", fp32 * 0.8, stress))
    results.append(_result(rng, "membw-copy", "fp32", "GB/s", bandwidth * 0.9, buffers))
    results.append(_result(rng, "membw-triad", "fp32", "GB/s", bandwidth * 0.88, buffers))
    results.append(_result(rng, "pcie-h2d", "fp32", "GB/s", 25.0, pcie))
    results.append(_result(rng, "pcie-d2h", "fp32", "GB/s", 26.0, pcie))
    results.append(_result(rng, "transformer-train", "bf16", "tokens/s", bf16 * 60, block))
    results.append(_result(rng, "transformer-infer", "bf16", "tokens/s", bf16 * 180, block))
    from tests.factories import submission_document

    return submission_document(
        results=results[:results_per_submission],
        name_smi=name,
        name_torch=name,
        memory_total_mib=mib,
        run_uuid=str(uuid.uuid4()),
    )


def seed(submitters: int) -> list[str]:
    from django.contrib.auth import get_user_model

    from accounts.services import api_token_create
    from tests.world import INGEST_WORLD, world_build

    world_build(rows=INGEST_WORLD)
    keys = []
    for index in range(submitters):
        user = get_user_model().objects.create(username=f"bench-{index}")
        keys.append(api_token_create(user=user, name="bench")[1])
    return keys


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def wait_for_http(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status < 500:
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"gunicorn did not answer on port {port} within {timeout:.0f} s")


class Poster:
    """Posts bodies, recording each request's latency and status; one connection per request (sync gunicorn)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self._lock = threading.Lock()

    def post(self, item: tuple[bytes, str]) -> None:
        payload, key = item
        started = time.perf_counter()
        status = -1
        for _attempt in range(3):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                conn.request(
                    "POST",
                    "/api/v1/submissions/",
                    body=payload,
                    headers={"Content-Type": "application/json", "Authorization": f"Token {key}"},
                )
                response = conn.getresponse()
                response.read()
                status = response.status
                conn.close()
                break
            except OSError:
                time.sleep(0.05)
        elapsed = time.perf_counter() - started
        with self._lock:
            self.latencies.append(elapsed)
            self.statuses[status] = self.statuses.get(status, 0) + 1


def terminal_count(run_uuids: list[str] | None = None) -> int:
    from benchmarks_app.models import RawSubmission

    return RawSubmission.objects.filter(status__in=TERMINAL).count()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    args = parse_args()
    database_url = os.environ.get("BENCH_INGEST_DATABASE_URL", DEFAULT_DATABASE)
    broker_url = os.environ.get("BENCH_INGEST_BROKER_URL", DEFAULT_BROKER)
    args.results = max(1, min(17, args.results))
    prepare_database(database_url)
    flush_broker(broker_url)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": broker_url,
        "DJANGO_SETTINGS_MODULE": "gpuatlas.settings",
        "DEBUG": "0",
        "SECRET_KEY": "perf-only-" + uuid.uuid4().hex * 2,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        "THROTTLE_ANON": "100000000/min",
        "THROTTLE_USER": "100000000/min",
        "THROTTLE_SUBMISSIONS": "100000000/min",
    }
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "LOG_LEVEL")})
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    processes: list[subprocess.Popen] = []
    try:
        started = time.perf_counter()
        call_command("migrate", verbosity=0)
        keys = seed(args.submitters)
        connection.close()
        print(
            f"database {urlsplit(database_url).path.lstrip('/')} migrated and seeded in {time.perf_counter() - started:.1f} s"
        )
        port = args.port or free_port()
        logs = Path(os.environ.get("PERF_LOG_DIR", "/tmp"))
        processes.append(
            start(
                [sys.executable, "-m", "gunicorn", "gpuatlas.wsgi:application", "-w", str(args.web_workers),
                 "-b", f"127.0.0.1:{port}", "--backlog", "2048", "--timeout", "120"],
                env, logs / "bench_ingest_gunicorn.log",
            )
        )  # fmt: skip
        processes.append(
            start(
                [sys.executable, "-m", "celery", "-A", "gpuatlas", "worker", "-Q", "ingest", "-P", "prefork", "-c", "1",
                 "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
                env, logs / "bench_ingest_worker.log",
            )
        )  # fmt: skip
        wait_for_http(port)
        rng = random.Random(20251122)
        bodies = [
            (json.dumps(make_document(rng, args.results)).encode(), keys[i % len(keys)])
            for i in range(args.warmup + args.submissions)
        ]
        size = statistics.mean(len(b) for b, _ in bodies)
        print(
            f"gunicorn: {args.web_workers} sync workers on 127.0.0.1:{port}; celery: 1 worker (prefork, concurrency 1); "
            f"{os.cpu_count()} CPUs"
        )
        print(f"bodies: {len(bodies)} generated, {args.results} results each, {size / 1024:.1f} KiB on average")

        warm = Poster(port)
        with ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(warm.post, bodies[: args.warmup]))
        deadline = time.monotonic() + 120
        while terminal_count() < args.warmup and time.monotonic() < deadline:
            time.sleep(0.2)
        print(f"warm-up: {args.warmup} posted and ingested ({warm.statuses})")

        poster = Poster(port)
        timed = bodies[args.warmup :]
        first_post = time.time()
        post_started = time.perf_counter()
        progress_at = time.monotonic()
        done_at_post_end = 0
        with ThreadPoolExecutor(args.concurrency) as pool:
            futures = [pool.submit(poster.post, item) for item in timed]
            for future in futures:
                future.result()
                if time.monotonic() - progress_at > 10:
                    progress_at = time.monotonic()
                    print(
                        f"  ... {len(poster.latencies)} posted, {terminal_count() - args.warmup} ingested", flush=True
                    )
        post_elapsed = time.perf_counter() - post_started
        done_at_post_end = terminal_count() - args.warmup
        total = args.warmup + args.submissions
        deadline = time.monotonic() + args.timeout
        while terminal_count() < total and time.monotonic() < deadline:
            time.sleep(0.25)

        from django.db.models import Count, Max, Min

        from benchmarks_app.models import BenchmarkResult, RawSubmission

        measured = RawSubmission.objects.order_by("received_at")[args.warmup :]
        ids = list(measured.values_list("pk", flat=True))
        window = RawSubmission.objects.filter(pk__in=ids).aggregate(
            first_received=Min("received_at"), first_done=Min("processed_at"), last_done=Max("processed_at")
        )
        by_status = dict(RawSubmission.objects.filter(pk__in=ids).values_list("status").annotate(n=Count("pk")))
        finished = sum(by_status.get(s, 0) for s in TERMINAL)
        results = BenchmarkResult.objects.filter(submission_id__in=ids).count()
        stored = RawSubmission.objects.count()
        created = poster.statuses.get(201, 0)

        print()
        print(f"POST /api/v1/submissions/: {len(poster.latencies)} requests from {args.concurrency} threads in {post_elapsed:.1f} s "
              f"= {len(poster.latencies) / post_elapsed:.0f} req/s; statuses {dict(sorted(poster.statuses.items()))}")  # fmt: skip
        ms = [v * 1000 for v in poster.latencies]
        print(f"  latency ms: p50 {percentile(ms, 50):.1f}  p95 {percentile(ms, 95):.1f}  p99 {percentile(ms, 99):.1f}  "
              f"max {max(ms):.1f}   (under load: the worker was ingesting at the same time)")  # fmt: skip
        print(f"  ingested while posting: {done_at_post_end}")
        if window["last_done"] is not None and finished:
            end_to_end = window["last_done"].timestamp() - first_post
            ingest_span = (window["last_done"] - window["first_done"]).total_seconds()
            print(f"ingest (1 worker): {finished} verdicts in {ingest_span:.1f} s = {finished / ingest_span:.0f} submissions/s "
                  f"({finished * args.results / ingest_span:,.0f} results/s)")  # fmt: skip
            print(f"end to end (first POST to last verdict): {end_to_end:.1f} s = {finished / end_to_end:.0f} submissions/s "
                  f"(target >= 100)")  # fmt: skip
        print(f"verdicts: {dict(sorted(by_status.items()))}")
        print(f"check: {created} created by POST, {stored - args.warmup} stored, {finished} with a verdict, "
              f"{results} results (expected {finished * args.results} for accepted/flagged)")  # fmt: skip
        lost = created - finished
        print(f"lost: {lost}; duplicated: {stored - args.warmup - created}")
    finally:
        for process in processes:
            stop(process)
        from django.db import connections

        connections.close_all()
        if not args.keep_db:
            drop_database(database_url)


if __name__ == "__main__":
    main()
