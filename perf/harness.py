"""The performance harness behind ``perf/run``: the site's performance targets on PostgreSQL and Redis.

    perf/run [--quick] [--runs N] [--requests N] [--backlog N] [--web-workers N] [--skip-ingest] [--skip-prices] [--skip-pages]

It reads (and, for the ingest and price-import figures, writes to) the database of
PERF_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gpuatlas_perf), filled by
``python -m perf.fixture``; Redis database 12 (PERF_REDIS_URL) is flushed and used as cache
and broker. Gunicorn (1 sync worker, DEBUG=0, SECURE_SSL_REDIRECT=0, ALLOWED_HOSTS=127.0.0.1)
and one Celery worker (prefork, concurrency 1) are started on loopback and stopped at the end.
The worker starts only after a backlog of ``--backlog`` submissions is stored (its drain rate is
the worker's own rate); it then stays up for the concurrent POST load.

Each figure is printed as one line: ``name  min  median  max  unit  (target)``; min/median/max
are over ``--runs`` repetitions. Latency ratios divide by /api/v1/ping/ measured in the same
run, round-robin with the other endpoints, so that load from other processes on the machine
hits all of them alike. perf/README.md explains every figure.
"""

from __future__ import annotations

import argparse
import contextlib
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/gpuatlas_perf"
DEFAULT_REDIS = "redis://127.0.0.1:6379/12"
PING = "/api/v1/ping/"
# The fit calculator's preset and the serving plan's model in the page list (fitcalc/data/presets.json).
FIT_PRESET = "llama-3-8b"
FIT_SERVING_MODEL = "llama-3.1-70b"
TERMINAL = ("accepted", "flagged", "rejected", "on_hold")
LOG_DIR = Path(os.environ.get("PERF_LOG_DIR", "/tmp"))
LOG_DIR.mkdir(parents=True, exist_ok=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs and requests (about 1 minute)")
    parser.add_argument("--runs", type=int, help="repetitions of each measurement (default 5, quick 3)")
    parser.add_argument("--requests", type=int, help="requests per endpoint per run (default 60, quick 20)")
    parser.add_argument("--ingest-seconds", type=float, help="how long the POST load lasts (default 20, quick 8)")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads posting submissions")
    parser.add_argument(
        "--ingest-runs", type=int, help="repetitions of the POST load and its ingest (default 3, quick 1)"
    )
    parser.add_argument(
        "--backlog", type=int, help="submissions stored before the Celery worker starts (default 3000, quick 1000)"
    )
    parser.add_argument("--web-workers", type=int, default=1, help="gunicorn sync workers (the POST side)")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-prices", action="store_true")
    parser.add_argument("--skip-pages", action="store_true", help="no query counts or page latencies")
    parser.add_argument(
        "--read-during-ingest",
        action="store_true",
        help="also GET / every 0.2 s during the POST load (its cold renders then share the CPU with the ingest)",
    )
    args = parser.parse_args()
    args.runs = args.runs or (3 if args.quick else 5)
    args.requests = args.requests or (20 if args.quick else 60)
    args.ingest_seconds = args.ingest_seconds or (8.0 if args.quick else 20.0)
    args.backlog = args.backlog if args.backlog is not None else (1000 if args.quick else 3000)
    args.ingest_runs = args.ingest_runs or (1 if args.quick else 3)
    if args.runs < 1 or args.requests < 5 or args.ingest_runs < 1:
        parser.error("--runs and --ingest-runs must be at least 1, --requests at least 5")
    return args


def environment(database_url: str, redis_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "CACHE_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "gpuatlas.settings",
        "DEBUG": "0",
        "SECRET_KEY": "perf-only-" + uuid.uuid4().hex * 2,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        "THROTTLE_ANON": "100000000/min",
        "THROTTLE_USER": "100000000/min",
        "THROTTLE_SUBMISSIONS": "100000000/min",
        "THROTTLE_PAGE_RENDER": "100000000/min",
        # Served with DEBUG=0, so from collected, hashed files: the harness collects its own.
        "STATIC_ROOT": str(LOG_DIR / "perf_static"),
    }


# ---------------------------------------------------------------------------- output


def line(name: str, values: list[float], unit: str, target: str = "", digits: int = 1) -> None:
    low, mid, high = min(values), statistics.median(values), max(values)
    text = f"{name:44s} min {low:9.{digits}f}  median {mid:9.{digits}f}  max {high:9.{digits}f}  {unit}"
    if target:
        text += f"   ({target})"
    print(text, flush=True)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


# ---------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def high_water_mb(pid: int) -> float:
    """VmHWM (peak resident set) of a process, in MB."""
    for text in Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith("VmHWM:"):
            return int(text.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time so far of these processes (those still alive), in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def processes_named(name: str) -> list[int]:
    """Pids whose command name is ``name`` (the PostgreSQL backends, redis-server)."""
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            if comm.read_text().strip() == name:
                found.append(int(comm.parent.name))
    return found


def wait_for_http(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status, _body = http_get(port, PING)
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"gunicorn did not answer on port {port} within {timeout:.0f} s (see {LOG_DIR}/perf_gunicorn.log)")


def http_get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers={"Accept-Language": "en"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


# ---------------------------------------------------------------------------- figures


def row_counts() -> dict[str, int]:
    from benchmarks_app.models import BenchmarkResult, ResultAggregate
    from catalog.models import Gpu, Offer, PriceObservation

    return {
        "GPUs": Gpu.objects.count(),
        "offers": Offer.objects.count(),
        "current offers": Offer.objects.current().count(),
        "price observations": PriceObservation.objects.count(),
        "benchmark results": BenchmarkResult.objects.count(),
        "result aggregates": ResultAggregate.objects.count(),
    }


def busiest_gpu_slug() -> str:
    """The GPU with the most results: the heaviest GPU page."""
    from django.db.models import Sum

    from benchmarks_app.models import ResultAggregate

    row = ResultAggregate.objects.values("gpu__slug").annotate(total=Sum("n")).order_by("-total").first() or {
        "gpu__slug": "a100-sxm4-80-gb"
    }
    return row["gpu__slug"]


def page_urls(slug: str) -> list[str]:
    """Every page and API read users open, the heaviest variant of each: the rankings (the
    default and the LLM serving one), the tier list, the busiest GPU's page, a comparison with
    it, the fit calculator for a preset and for an imported Hugging Face model (when one is
    imported), the catalogue (every GPU, sorted), the providers, the architectures, how the LLM
    figures are made, the fit's two APIs, and the API lists."""
    from fitcalc.models import HfModel

    others = [s for s in ("a100-sxm4-80-gb", "geforce-rtx-4090", "h100-sxm5-80-gb") if s != slug][:2]
    urls = [
        "/",
        "/?use_case=llm-serving",
        "/tiers/",
        f"/gpus/{slug}/",
        f"/compare/?gpus={','.join([slug, *others])}",
        f"/fit/?model={FIT_PRESET}",
    ]
    hf_id = HfModel.objects.order_by("repo_id").values_list("repo_id", flat=True).first()
    if hf_id:
        urls.append(f"/fit/?hf_model={hf_id}")
    else:
        print("  note: no imported Hugging Face model here: /fit/ for one is not measured")
    return [
        *urls,
        "/gpus/?scope=all&sort=-bf16",
        "/providers/",
        "/architectures/",
        "/llm-model/",
        f"/api/v1/fit/?model={FIT_PRESET}",
        f"/api/v1/fit/serving/?model={FIT_SERVING_MODEL}",
        "/api/v1/rankings/",
        "/api/v1/gpus/",
        "/api/v1/offers/",
    ]


def query_counts(urls: list[str]) -> None:
    """SQL queries per request, in-process: with an empty cache, with a warm one, and after a
    data-version bump (what every import or ingest batch does: the pages are recomputed, while
    what is cached per GPU, such as distinct-submitter counts, stays). "after a bump" is what
    the recomputation costs a reader who comes before the warm-up task."""
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from gpuatlas.data_version import data_version_bump

    client = Client(HTTP_ACCEPT_LANGUAGE="en", HTTP_HOST="127.0.0.1")
    print("\nSQL queries per request (in-process, django.test.utils.CaptureQueriesContext):")
    for url in urls:
        cache.clear()
        counts, times = [], []
        for attempt in range(3):
            if attempt == 2:
                data_version_bump()  # outside a transaction: at once
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                response = client.get(url)
                times.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}: {response.content[:300]!r}")
            counts.append(len(queries))
        print(
            f"  {url:24s} cold {counts[0]:3d} queries ({times[0]:6.0f} ms)   warm {counts[1]:3d} "
            f"({times[1]:5.1f} ms)   after a bump {counts[2]:3d} ({times[2]:6.0f} ms)",
            flush=True,
        )


def latencies(port: int, urls: list[str], runs: int, requests: int, *, web_workers: int) -> None:
    """p50/p95 per endpoint over HTTP, round-robin with ping, and the ratios to ping."""
    for url in [PING, *urls]:  # warm every path (and the worker's caches) once
        for _ in range(3):
            status, body = http_get(port, url)
            if status != 200:
                raise SystemExit(f"{url} answered {status}: {body[:300]!r}")
    figures: dict[str, dict[str, list[float]]] = {
        url: {"p50": [], "p95": [], "r50": [], "r95": []} for url in [PING, *urls]
    }
    for _run in range(runs):
        timings: dict[str, list[float]] = {url: [] for url in [PING, *urls]}
        for _ in range(requests):
            for url in [PING, *urls]:
                started = time.perf_counter()
                status, _body = http_get(port, url)
                timings[url].append((time.perf_counter() - started) * 1000)
                if status != 200:
                    raise SystemExit(f"{url} answered {status}")
        ping50, ping95 = percentile(timings[PING], 0.5), percentile(timings[PING], 0.95)
        for url, values in timings.items():
            p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
            figures[url]["p50"].append(p50)
            figures[url]["p95"].append(p95)
            figures[url]["r50"].append(p50 / ping50)
            figures[url]["r95"].append(p95 / ping95)
    print(
        f"\nHTTP latency, gunicorn ({web_workers} sync worker(s)), one client on loopback: "
        f"{runs} runs x {requests} requests per endpoint, round-robin"
    )
    for url in [PING, *urls]:
        f = figures[url]
        line(f"p50 {url}", f["p50"], "ms")
        p95_ok = statistics.median(f["p95"]) < 150
        line(f"p95 {url}", f["p95"], "ms", "target < 150 ms: " + verdict(p95_ok))
        if url != PING:
            line(f"p50 {url} / ping", f["r50"], "x", digits=2)
            ok = statistics.median(f["r95"]) <= 3
            line(f"p95 {url} / ping", f["r95"], "x", "target <= 3x: " + verdict(ok), digits=2)


def timed_calls(fn: Callable[[], object], runs: int, repeat: int = 10) -> list[float]:
    fn()
    medians = []
    for _ in range(runs):
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            fn()
            times.append((time.perf_counter() - started) * 1000)
        medians.append(statistics.median(times))
    return medians


def prices(runs: int) -> None:
    """Price import rate over the bundled SkyPilot snapshot, and the price read every ranking makes."""
    import datetime as dt

    from catalog.matching import GpuMatcher
    from catalog.selectors.prices import gpu_rent_prices
    from catalog.services.prices import price_import_file
    from catalog.services.prices.currency import RateBook

    files = sorted((ROOT / "catalog/data/prices/skypilot-catalog").rglob("vms.csv"))
    rates_per_run = []
    rows = 0
    for run in range(runs):
        matcher, rates = GpuMatcher.load(), RateBook.load()
        later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=run)  # a newer snapshot: new observations
        started = time.perf_counter()
        rows = 0
        for path in files:
            summary = price_import_file(path=path, matcher=matcher, rates=rates, observed_at=later)
            if not summary.ok:
                raise SystemExit(f"price import of {path} failed: {summary.error}")
            rows += summary.rows_read
        rates_per_run.append(rows / (time.perf_counter() - started))
    print(
        f"\nPrices: SkyPilot snapshot, {len(files)} files, {rows:,} rows, imported as a newer snapshot into the scale data"
    )
    line("price import rate", rates_per_run, "rows/s", digits=0)
    answer = gpu_rent_prices()
    line(
        f"gpu_rent_prices(), every GPU's typical price ({len(answer)} GPUs)",
        timed_calls(gpu_rent_prices, runs),
        "ms",
        "target < 100 ms: " + verdict(statistics.median(timed_calls(gpu_rent_prices, 1)) < 100),
        digits=2,
    )


class SubmissionDocuments:
    """Full client runs (perf.bench_ingest's generator) made plausible against the scale data.

    The fixture's medians are synthetic, so a document as generated would be flagged as an
    outlier and skip the accepted path (results into aggregates). Each result is rescaled to
    the current median of its (GPU, comparison key) when there is one. FP8 results of GPUs
    without FP8 (A100) are dropped, as the real client would not produce them, and so are
    memory-bandwidth results whose synthetic median lies above the GPU's physical bandwidth.
    """

    def __init__(self) -> None:
        from benchmarks_app.models import ResultAggregate
        from catalog.matching import GpuMatcher
        from catalog.models import Gpu
        from perf.bench_ingest import GPUS

        matcher = GpuMatcher.load()
        self.gpu_ids = {name: matcher.match(name=name, memory_gib=mib / 1024).gpu_id for name, mib, *_ in GPUS}
        self.bandwidths = dict(
            Gpu.objects.filter(pk__in=self.gpu_ids.values()).values_list("pk", "memory_bandwidth_gbs")
        )
        self.medians = {
            (gpu_id, key): median
            for gpu_id, key, median in ResultAggregate.objects.filter(gpu_id__in=self.gpu_ids.values()).values_list(
                "gpu_id", "comparison_key", "median"
            )
        }
        self.lock = threading.Lock()

    def make(self, rng: random.Random) -> dict:
        from benchmarks_app.services.comparison_keys import comparison_key_for
        from perf.bench_ingest import make_document

        with self.lock:
            document = make_document(rng, 17)
        name = document["environment"]["gpu"]["name_nvidia_smi"]
        gpu_id = self.gpu_ids.get(name)
        kept = []
        for result in document["results"]:
            if "A100" in name and result["precision"] == "fp8":
                continue
            key = comparison_key_for(
                workload_slug=result["workload"],
                version=result["workload_version"],
                precision=result["precision"],
                params=result["params"],
                gpu_count=result["gpu_count"],
            ).key
            target = self.medians.get((gpu_id, key))
            bandwidth = self.bandwidths.get(gpu_id)
            if target and result["workload"].startswith("membw") and bandwidth and target > float(bandwidth):
                # The fixture's synthetic median is above the GPU's physical bandwidth: a value
                # there is rejected as impossible, a real one would be an outlier. Left out.
                continue
            if target:
                # Around the median, not on it: identical values would pile up at the median and
                # make every outlier check take the rare zero-MAD path.
                factor = target * rng.gauss(1.0, 0.01) / result["median"]
                result["repetitions"] = [v * factor for v in result["repetitions"]]
                for field in ("median", "min", "max"):
                    result[field] *= factor
            kept.append(result)
        document["results"] = kept
        return document


def submitter_keys(count: int = 20) -> list[str]:
    from django.contrib.auth import get_user_model

    from accounts.services import api_token_create

    user_model = get_user_model()
    keys = []
    for index in range(count):
        user, _created = user_model.objects.get_or_create(username=f"perf-submitter-{index}")
        keys.append(api_token_create(user=user, name=f"perf-{uuid.uuid4().hex[:8]}")[1])
    return keys


def backlog_store(count: int) -> tuple[list[int], float]:
    """Store ``count`` submissions through the intake service (in-process) while no worker runs.

    Their tasks wait in the broker; ``backlog_drain`` then times the worker alone, which the
    POST load cannot show when the web side is the slower one. Returns their ids and the
    seconds the intake took.
    """
    from django.contrib.auth import get_user_model

    from benchmarks_app.services.intake import submission_intake

    users = [get_user_model().objects.get_or_create(username=f"perf-submitter-{i}")[0] for i in range(20)]
    rng = random.Random(uuid.uuid4().int)
    documents = SubmissionDocuments()
    ids = []
    started = time.perf_counter()
    for index in range(count):
        body = json.dumps(documents.make(rng)).encode()
        ids.append(submission_intake(body=body, submitter=users[index % len(users)]).submission.pk)
    return ids, time.perf_counter() - started


def backlog_drain(ids: list[int], intake_seconds: float) -> None:
    """Wait for the verdicts of the backlog; the rate is verdicts / (last verdict - first verdict)."""
    from django.db.models import Count, Max, Min

    from benchmarks_app.models import RawSubmission

    count = len(ids)
    mine = RawSubmission.objects.filter(id__in=ids)
    deadline = time.monotonic() + max(180.0, count / 5)
    while mine.filter(status__in=TERMINAL).count() < count and time.monotonic() < deadline:
        time.sleep(0.25)
    window = mine.aggregate(first=Min("processed_at"), last=Max("processed_at"))
    done = mine.filter(status__in=TERMINAL).count()
    by_status = dict(mine.values_list("status").annotate(n=Count("id")))
    print(
        f"\nIngest backlog: {count} submissions stored through the intake service in {intake_seconds:.1f} s "
        f"(in-process, no worker running), then one Celery worker started; verdicts {by_status}"
    )
    if done and window["last"] and window["first"]:
        span = max((window["last"] - window["first"]).total_seconds(), 1e-3)
        line(
            "ingest drain rate (1 Celery worker, backlog)",
            [done / span],
            "submissions/s",
            "target >= 100: " + verdict(done / span >= 100),
            digits=0,
        )
    if done < count:
        print(f"  warning: {count - done} backlog submissions had no verdict before the deadline")


def ingest(port: int, args: argparse.Namespace, *, web_pid: int, worker_pid: int, imports_pid: int) -> None:
    """The POST load and its ingest, ``--ingest-runs`` times; one line per figure over the runs."""
    runs = [
        ingest_run(port, args, web_pid=web_pid, worker_pid=worker_pid, imports_pid=imports_pid)
        for _ in range(args.ingest_runs)
    ]
    print(f"\nIngest, {len(runs)} run(s) with the same server and worker:")
    for run in runs:
        print("  " + run["summary"])
        for note in run["notes"]:
            print("    " + note)

    def each(name: str) -> list[float]:
        return [run[name] for run in runs if name in run]

    line("submission POST rate under load", each("post rate"), "requests/s", digits=0)
    line("submission POST p50 under load", each("post p50"), "ms")
    line("submission POST p95 under load", each("post p95"), "ms")
    if each("read p50"):
        line("p50 / during the load", each("read p50"), "ms")
        line("p95 / during the load", each("read p95"), "ms")
        line("slowest / during the load", each("read max"), "ms")
    if each("end to end"):
        line("ingest rate (1 Celery worker)", each("ingest rate"), "submissions/s", digits=0)
        end_to_end = each("end to end")
        line(
            "end to end (first POST to last verdict)",
            end_to_end,
            "submissions/s",
            "target >= 100 (median): " + verdict(statistics.median(end_to_end) >= 100),
            digits=0,
        )
    with_cpu = [run["cpu"] for run in runs if "cpu" in run]
    if with_cpu:
        print("CPU per submission, from the first POST to the last verdict (/proc/<pid>/stat):")
        for name in with_cpu[0]:
            line(f"  {name}", [cpu[name] for cpu in with_cpu], "ms", digits=2)
        totals = [sum(cpu.values()) for cpu in with_cpu]
        line("  total", totals, "ms", digits=2)
        cores = os.cpu_count() or 1
        line(f"  so {cores} cores allow at most", [cores * 1000 / total for total in totals], "submissions/s", digits=0)


def ingest_run(
    port: int, args: argparse.Namespace, *, web_pid: int, worker_pid: int, imports_pid: int
) -> dict[str, Any]:
    """Concurrent POSTs for a bounded time against gunicorn, from a second process; one Celery worker ingests them.

    The bodies are built before the clock starts and replayed by ``perf.loadgen`` in its own
    process, so that generating documents does not take CPU from the server being measured.
    """
    from django.db import connection
    from django.db.models import Count, Max, Min

    from benchmarks_app.models import BenchmarkResult, RawSubmission
    from perf.loadgen import post_request, requests_write

    keys = submitter_keys()
    rng = random.Random(uuid.uuid4().int)
    documents = SubmissionDocuments()
    count = int(min(args.ingest_seconds * 400, 12_000))
    requests = [
        post_request(
            path="/api/v1/submissions/", body=json.dumps(documents.make(rng)).encode(), token=keys[i % len(keys)]
        )
        for i in range(count)
    ]
    requests_file = LOG_DIR / "perf_ingest_requests.bin"
    requests_write(requests_file, requests)
    before = RawSubmission.objects.count()
    first_id = (RawSubmission.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1
    connection.close()

    # CPU time by process, from the first POST to the last verdict: where the 2 cores went.
    # PostgreSQL starts a backend per connection, so its processes are listed again at the end.
    def cpu_by_group() -> dict[str, dict[int, float]]:
        groups = {
            "gunicorn workers": children(web_pid),
            "celery worker (main)": [worker_pid],
            "celery worker (pool)": children(worker_pid),
            "celery imports worker (page warm-ups)": [imports_pid, *children(imports_pid)],
            "postgresql": processes_named("postgres"),
            "redis": processes_named("redis-server"),
        }
        return {name: {pid: cpu_seconds([pid]) for pid in pids} for name, pids in groups.items()}

    cpu_before = cpu_by_group()
    # A reader of the rankings page while submissions stream in: each verdict batch changes
    # the data behind it, so this shows what a visitor sees during an ingest burst.
    reading = threading.Event()
    read_ms: list[float] = []

    def reader() -> None:
        while not reading.is_set():
            started = time.perf_counter()
            with contextlib.suppress(OSError):
                http_get(port, "/")
                read_ms.append((time.perf_counter() - started) * 1000)
            reading.wait(0.2)

    reader_thread = threading.Thread(target=reader, daemon=True)
    if args.read_during_ingest:
        reader_thread.start()
    generator = subprocess.run(
        [sys.executable, "-m", "perf.loadgen", "--port", str(port), "--requests", str(requests_file),
         "--concurrency", str(args.concurrency), "--seconds", str(args.ingest_seconds)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    reading.set()
    if args.read_during_ingest:
        reader_thread.join()
    report = json.loads(generator.stdout)
    statuses = {int(k): v for k, v in report["statuses"].items()}
    created = statuses.get(201, 0)
    mine = RawSubmission.objects.filter(id__gte=first_id)
    deadline = time.monotonic() + max(120.0, args.ingest_seconds * 6)
    while mine.filter(status__in=TERMINAL).count() < created and time.monotonic() < deadline:
        time.sleep(0.25)
    cpu_used = {
        name: sum(seconds - cpu_before[name].get(pid, 0.0) for pid, seconds in pids.items())
        for name, pids in cpu_by_group().items()
    }
    cpu_used["load generator"] = report["cpu_seconds"]
    window = mine.aggregate(first=Min("processed_at"), last=Max("processed_at"))
    done = mine.filter(status__in=TERMINAL).count()
    by_status = dict(mine.values_list("status").annotate(n=Count("id")))
    # Exactly once: every 201 has a verdict, and each accepted or flagged submission has its
    # results written once (as many rows as its payload has results).
    written = dict(
        BenchmarkResult.objects.filter(submission_id__gte=first_id)
        .order_by()
        .values_list("submission_id")
        .annotate(n=Count("id"))
    )
    expected = {
        pk: len(json.loads(payload)["results"])
        for pk, payload in mine.filter(status__in=("accepted", "flagged")).values_list("pk", "payload")
    }
    duplicated = sum(1 for pk, n in written.items() if n > expected.get(pk, 0))
    lost = created - done + sum(1 for pk, n in expected.items() if written.get(pk, 0) < n)
    ms = [v * 1000 for v in report["latencies"]]
    post_seconds = report["ended"] - report["started"]
    figures: dict[str, Any] = {
        "summary": (
            f"{len(ms)} POST /api/v1/submissions/ (17 results each) from {args.concurrency} connections of "
            f"perf.loadgen (a second process) in {post_seconds:.1f} s, statuses {dict(sorted(statuses.items()))}; "
            f"verdicts {by_status}; {RawSubmission.objects.count() - before} stored; "
            f"lost {lost}, duplicated {duplicated}"
        ),
        "notes": [],
        "post rate": len(ms) / post_seconds,
        "post p50": percentile(ms, 0.5),
        "post p95": percentile(ms, 0.95),
    }
    if report["ran_out"]:
        figures["notes"].append(
            f"note: the load generator used all {count} prepared submissions before its time was up"
        )
    if read_ms:
        figures["notes"].append(f"{len(read_ms)} GETs of / during the load")
        figures["read p50"] = percentile(read_ms, 0.5)
        figures["read p95"] = percentile(read_ms, 0.95)
        figures["read max"] = max(read_ms)
    if done and window["last"] and window["first"]:
        span = max((window["last"] - window["first"]).total_seconds(), 1e-3)
        figures["ingest rate"] = done / span
        figures["end to end"] = done / (window["last"].timestamp() - report["started"])
    if done:
        figures["cpu"] = {name: seconds / done * 1000 for name, seconds in cpu_used.items()}
    if done < created:
        figures["notes"].append(f"warning: {created - done} submissions had no verdict before the deadline")
    return figures


def main() -> None:
    args = parse_args()
    database_url = os.environ.get("PERF_DATABASE_URL", DEFAULT_DATABASE)
    redis_url = os.environ.get("PERF_REDIS_URL", DEFAULT_REDIS)
    env = environment(database_url, redis_url)
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import logging

    import redis
    from django.db import connection

    logging.disable(logging.INFO)
    if connection.vendor != "postgresql":
        raise SystemExit("perf/run needs PostgreSQL: set PERF_DATABASE_URL")
    redis.Redis.from_url(redis_url).flushdb()
    counts = row_counts()
    print(
        f"database {connection.settings_dict['NAME']} (PostgreSQL), cache and broker {redis_url}, {os.cpu_count()} CPUs"
    )
    print("  " + ", ".join(f"{name} {count:,}" for name, count in counts.items()))
    if counts["benchmark results"] < 1000:
        print("  warning: little data; run `python -m perf.fixture ...` first (perf/README.md)")
    slug = busiest_gpu_slug()
    urls = page_urls(slug)
    # Before any page is rendered, in-process too: with DEBUG=0 a page names its static files
    # by their hashed names, read from the collected manifest.
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    if not args.skip_pages:
        query_counts(urls)
    connection.close()

    port = free_port()
    web = start(
        [sys.executable, "-m", "gunicorn", "gpuatlas.wsgi:application", "-w", str(args.web_workers),
         "-b", f"127.0.0.1:{port}", "--timeout", "120", "--backlog", "2048"],
        env, LOG_DIR / "perf_gunicorn.log",
    )  # fmt: skip

    # As deployed (deploy/stack.sh): one worker for the ingest queue, one for imports and the
    # page warm-ups, which then take their share of the same cores.
    def worker_command(queue: str) -> list[str]:
        return [
            sys.executable, "-m", "celery", "-A", "gpuatlas", "worker", "-Q", queue, "-n", f"{queue}@perf",
            "-P", "prefork", "-c", "1", "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--loglevel", "WARNING",
        ]  # fmt: skip

    backlog = 0 if args.skip_ingest else args.backlog
    imports_worker = start(worker_command("imports"), env, LOG_DIR / "perf_celery_imports.log")
    worker = None if backlog else start(worker_command("ingest"), env, LOG_DIR / "perf_celery.log")
    try:
        wait_for_http(port)
        if not args.skip_pages:
            latencies(port, urls, args.runs, args.requests, web_workers=args.web_workers)
        if not args.skip_prices:
            prices(max(1, min(args.runs, 3)))
        if backlog:
            ids, intake_seconds = backlog_store(backlog)
            worker = start(worker_command("ingest"), env, LOG_DIR / "perf_celery.log")
            backlog_drain(ids, intake_seconds)
        if not args.skip_ingest:
            assert worker is not None  # started above, before or after the backlog
            ingest(port, args, web_pid=web.pid, worker_pid=worker.pid, imports_pid=imports_worker.pid)
        print("\nPeak memory (VmHWM, /proc/<pid>/status)")
        web_workers = children(web.pid)
        for pid in web_workers:
            line(
                "gunicorn web worker peak RSS",
                [high_water_mb(pid)],
                "MB",
                "target < 300 MB: " + verdict(high_water_mb(pid) < 300),
            )
        if worker is not None:
            for pid in children(worker.pid):
                line("celery worker (pool process) peak RSS", [high_water_mb(pid)], "MB")
            line("celery worker (main process) peak RSS", [high_water_mb(worker.pid)], "MB")
    finally:
        stop(web)
        if worker is not None:
            stop(worker)
        stop(imports_worker)
        connection.close()


if __name__ == "__main__":
    main()
