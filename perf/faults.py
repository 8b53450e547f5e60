"""Faults and abuse against the real stack: gunicorn, Celery workers and beat, PostgreSQL, and two
private redis-servers (broker and cache) that this script starts, stops and freezes.

    python -m perf.faults [--only broker,flood,throttle,freeze,kill]

Each scenario prints one line of figures:

- broker: submissions POSTed over 60 s while the broker's Redis is stopped for 30 s (10 s in);
  whether both workers are alive afterwards (they run without a supervisor, as by hand or under a
  plain systemd unit), the answers, and how many stored submissions never reached a final state
  (lost) once the sweeper has had its turn.
- flood: 1,000 distinct page and API URLs (noise parameters, user prices, memory floors, page
  sizes), the cache's keys and memory before and after.
- throttle: 1,200 anonymous requests to /api/v1/ping/ sent at once from 100 threads against the
  600-per-minute limit: how many passed.
- freeze: both Redis instances frozen (SIGSTOP) for 20 s while pages and submissions are
  requested: p95 latency and counts of each, and how many stored submissions were lost.
- kill: the ingest worker SIGKILLed mid-batch under the default sweep settings: seconds until
  every submission of the batch is final.

Environment: FAULTS_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gpuatlas_w38_perf, a
database filled by perf.fixture as perf/README.md says; submissions are added to it),
FAULTS_LOG_DIR (/tmp/faults). The Redis instances listen on --broker-port and --cache-port
(6391, 6392) and are removed at the end; the machine's shared Redis is never touched. The sweep
periods are the branch's defaults, except that the broker and freeze scenarios run beat with a
sweep every 10 s and grace periods of 30 s, so that both branches are compared on loss, not on
their sweep periods (the kill scenario measures those).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from perf.harness import ROOT, SubmissionDocuments, percentile, submitter_keys

LOG_DIR = Path(os.environ.get("FAULTS_LOG_DIR", "/tmp/faults"))
DATABASE = os.environ.get("FAULTS_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpuatlas_w38_perf")
FINAL = ("accepted", "flagged", "rejected", "on_hold")
FAST_SWEEP = {"INGEST_CLAIM_GRACE_S": "30", "INGEST_RECEIVED_GRACE_S": "30", "SUBMISSION_SWEEP_EVERY_S": "10"}


class Redis:
    """A private redis-server on ``port`` (never the shared one on 6379)."""

    def __init__(self, port: int, name: str, *extra: str) -> None:
        self.port, self.name, self.extra = port, name, extra
        self.dir = LOG_DIR / f"redis-{name}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir), *self.extra]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while self.command("PING") != "PONG":
            if time.monotonic() > deadline:
                raise SystemExit(f"redis-server {self.name} did not start on {self.port}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.terminate()
            self.process.wait(timeout=20)
        self.process = None

    def signal(self, number: int) -> None:
        assert self.process is not None
        os.kill(self.process.pid, number)

    def command(self, *words: str) -> str:
        result = subprocess.run(["redis-cli", "-p", str(self.port), *words], capture_output=True, text=True, timeout=10)
        return result.stdout.strip()


def app_env(broker: Redis, cache: Redis, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "gpuatlas.settings",
        "DATABASE_URL": DATABASE,
        "CELERY_BROKER_URL": broker.url,
        "CACHE_URL": cache.url,
        "DEBUG": "0",
        "SECRET_KEY": "faults-only-" + uuid.uuid4().hex * 2,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        "STATIC_ROOT": str(LOG_DIR / "static"),
        # Only the anonymous API limit is the one under test; the load is authenticated or pages.
        "THROTTLE_USER": "100000000/min",
        "THROTTLE_SUBMISSIONS": "100000000/min",
        "THROTTLE_PAGE_RENDER": "100000000/min",
        **extra,
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


class Stack:
    """gunicorn (4 processes x 4 threads), an ingest and an imports worker, beat."""

    def __init__(self, broker: Redis, cache: Redis, port: int, **extra: str) -> None:
        self.env = app_env(broker, cache, **extra)
        self.port = port
        self.processes: dict[str, subprocess.Popen] = {}

    def launch(self, name: str, args: list[str]) -> None:
        log = (LOG_DIR / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            args, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def start(self) -> None:
        with socket.socket() as probe:  # never send this load to someone else's server
            try:
                probe.bind(("127.0.0.1", self.port))
            except OSError:
                raise SystemExit(f"port {self.port} is taken: give --web-port a free one") from None
        python = sys.executable
        self.launch("web", [python, "-m", "gunicorn", "gpuatlas.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
                            "--workers", "4", "--threads", "4", "--timeout", "60"])  # fmt: skip
        for queue, concurrency in (("ingest", "2"), ("imports", "1")):
            self.launch(f"worker-{queue}", [python, "-m", "celery", "-A", "gpuatlas", "worker", "-Q", queue,
                                            "-c", concurrency, "-n", f"{queue}-{uuid.uuid4().hex[:6]}@%h",
                                            "--without-gossip", "--without-mingle", "--loglevel", "WARNING"])  # fmt: skip
        self.launch("beat", [python, "-m", "celery", "-A", "gpuatlas", "beat", "--schedule",
                             str(LOG_DIR / f"beat-{uuid.uuid4().hex[:6]}"), "--loglevel", "WARNING"])  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if request("GET", self.port, "/api/v1/ping/")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise SystemExit(f"gunicorn did not answer (log: {LOG_DIR}/web.log)")

    def alive(self, name: str) -> bool:
        return self.processes[name].poll() is None

    def kill(self, name: str) -> None:
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait(timeout=20)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def request(method: str, port: int, path: str, body: bytes | None = None, token: str = "") -> tuple[int, float]:
    headers = {"Accept-Language": "en"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Token {token}"
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status, time.monotonic() - started
    except OSError:
        return -1, time.monotonic() - started
    finally:
        conn.close()


class Submitter:
    """Threads POSTing full client runs until ``stop`` is set; what each got."""

    def __init__(self, port: int, documents: SubmissionDocuments, keys: list[str], threads: int = 4) -> None:
        self.port, self.documents, self.keys = port, documents, keys
        self.results: list[tuple[str, int, float]] = []  # run uuid, status, seconds
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(threads)]

    def run(self, index: int) -> None:
        rng = random.Random(index * 7919 + int(time.time()))
        while not self.stopped.is_set():
            document = self.documents.make(rng)
            status, seconds = request("POST", self.port, "/api/v1/submissions/", json.dumps(document).encode(),
                                      token=self.keys[index % len(self.keys)])  # fmt: skip
            self.results.append((document["run_uuid"], status, seconds))

    def __enter__(self) -> Submitter:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        for thread in self.threads:
            thread.join(timeout=90)


def outcome(run_uuids: list[str], *, wait_s: float) -> tuple[int, int, float]:
    """(stored, final) of these runs, waiting up to ``wait_s`` for every stored one to be final;
    and the seconds waited."""
    from benchmarks_app.models import RawSubmission

    started = time.monotonic()
    while True:
        rows = RawSubmission.objects.filter(run_uuid__in=run_uuids)
        stored, final = rows.count(), rows.filter(status__in=FINAL).count()
        if final == stored or time.monotonic() - started > wait_s:
            return stored, final, time.monotonic() - started
        time.sleep(2)


def scenario_broker(broker: Redis, cache: Redis, port: int, documents: SubmissionDocuments, keys: list[str]) -> None:
    stack = Stack(broker, cache, port, **FAST_SWEEP)
    stack.start()
    try:
        with Submitter(port, documents, keys) as load:
            time.sleep(10)
            broker.stop()
            time.sleep(30)
            broker.start()
            time.sleep(15)
        alive = {name: stack.alive(name) for name in ("worker-ingest", "worker-imports")}
        statuses = Counter(status for _run, status, _s in load.results)
        answered = [run for run, status, _s in load.results if status in (200, 201, 503)]
        stored, final, waited = outcome(answered, wait_s=240)
        accepted = sum(1 for _run, status, _s in load.results if status in (200, 201))
        print(
            f"broker stopped 30 s under load: workers alive after {alive}; answers {dict(statuses)}; "
            f"stored {stored} (201/200: {accepted}); final {final} after {waited:.0f} s more; "
            f"lost {stored - final + (accepted - min(accepted, stored))}",
            flush=True,
        )
    finally:
        stack.stop()


def flood_urls(slug: str) -> list[str]:
    urls = [f"/?utm_source=x{i}" for i in range(250)]
    urls += [f"/?gpu_price[{slug}]={0.5 + i / 100:.2f}" for i in range(200)]
    urls += [f"/tiers/?min_vram={i}&zz={i}" for i in range(100)]
    urls += [f"/api/v1/rankings/?gpu_price[{slug}]={1 + i / 100:.2f}" for i in range(200)]
    urls += [f"/api/v1/gpus/?limit={1 + i}" for i in range(150)]
    urls += [f"/api/v1/gpus/?ordering=name&offset={i}" for i in range(100)]
    assert len(set(urls)) == 1000
    return urls


def scenario_flood(broker: Redis, cache: Redis, port: int, slug: str, token: str) -> None:
    stack = Stack(broker, cache, port)
    stack.start()
    try:
        request("GET", port, "/")
        keys_before, memory_before = int(cache.command("DBSIZE")), int(cache.command("MEMORY", "USAGE", "x") or 0)
        used_before = _used_memory(cache)
        statuses: Counter[int] = Counter()
        urls = flood_urls(slug)
        lock = threading.Lock()

        def worker(part: list[str]) -> None:
            for url in part:
                status, _s = request("GET", port, url, token=token if url.startswith("/api/") else "")
                with lock:
                    statuses[status] += 1

        threads = [threading.Thread(target=worker, args=(urls[i::8],)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        del memory_before
        keys_after, used_after = int(cache.command("DBSIZE")), _used_memory(cache)
        print(
            f"1,000-URL flood: cache keys {keys_before} -> {keys_after} (+{keys_after - keys_before}), "
            f"memory +{(used_after - used_before) / 1e6:.1f} MB; answers {dict(statuses)}",
            flush=True,
        )
    finally:
        stack.stop()


def _used_memory(cache: Redis) -> int:
    for line in cache.command("INFO", "memory").splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":")[1])
    return 0


def scenario_throttle(broker: Redis, cache: Redis, port: int) -> None:
    stack = Stack(broker, cache, port, THROTTLE_ANON="600/min")
    stack.start()
    try:
        cache.command("FLUSHDB")
        barrier = threading.Barrier(100)
        statuses: Counter[int] = Counter()
        lock = threading.Lock()

        def client() -> None:
            barrier.wait()
            for _attempt in range(12):
                status, _s = request("GET", port, "/api/v1/ping/")
                with lock:
                    statuses[status] += 1

        threads = [threading.Thread(target=client) for _ in range(100)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(
            f"1,200 concurrent anonymous requests in {time.monotonic() - started:.1f} s: {statuses[200]} passed "
            f"the limit of 600/min ({dict(statuses)})",
            flush=True,
        )
    finally:
        stack.stop()


def scenario_freeze(broker: Redis, cache: Redis, port: int, documents: SubmissionDocuments, keys: list[str]) -> None:
    stack = Stack(broker, cache, port, **FAST_SWEEP)
    stack.start()
    try:
        for path in ("/", "/tiers/", "/api/v1/gpus/"):
            request("GET", port, path)
        pages: list[tuple[int, float]] = []
        frozen = threading.Event()
        done = threading.Event()

        def reader(path: str) -> None:
            while not done.is_set():
                result = request("GET", port, path)
                if frozen.is_set():
                    pages.append(result)

        readers = [threading.Thread(target=reader, args=(p,), daemon=True) for p in ("/", "/tiers/", "/api/v1/gpus/")]
        for thread in readers:
            thread.start()
        with Submitter(port, documents, keys, threads=3) as load:
            time.sleep(3)
            posted_before = len(load.results)
            broker.signal(signal.SIGSTOP)
            cache.signal(signal.SIGSTOP)
            frozen.set()
            time.sleep(20)
            frozen.clear()
            broker.signal(signal.SIGCONT)
            cache.signal(signal.SIGCONT)
            posts = load.results[posted_before:]
            time.sleep(5)
        done.set()
        during = [(status, seconds) for _run, status, seconds in posts]
        answered = [run for run, status, _s in load.results if status in (200, 201, 503)]
        stored, final, waited = outcome(answered, wait_s=240)
        page_statuses = Counter(status for status, _s in pages)
        post_statuses = Counter(status for status, _s in during)
        print(
            f"frozen Redis 20 s: pages p95 {percentile([s for _st, s in pages], 0.95):.2f} s over {len(pages)} "
            f"{dict(page_statuses)}; POST p95 {percentile([s for _st, s in during], 0.95) if during else float('nan'):.2f} s "
            f"over {len(during)} {dict(post_statuses)}; stored {stored}, final {final} after {waited:.0f} s, "
            f"lost {stored - final}",
            flush=True,
        )
    finally:
        stack.stop()


def scenario_kill(broker: Redis, cache: Redis, port: int, documents: SubmissionDocuments, keys: list[str]) -> None:
    from benchmarks_app.models import RawSubmission

    stack = Stack(broker, cache, port)
    stack.start()
    try:
        with Submitter(port, documents, keys, threads=4) as load:
            time.sleep(15)
        runs = [run for run, status, _s in load.results if status in (200, 201)]
        deadline = time.monotonic() + 60
        while RawSubmission.objects.filter(run_uuid__in=runs, status="processing").count() == 0:
            if (
                time.monotonic() > deadline
                or RawSubmission.objects.filter(run_uuid__in=runs).exclude(status__in=FINAL).count() == 0
            ):
                break
            time.sleep(0.01)
        in_flight = RawSubmission.objects.filter(run_uuid__in=runs).exclude(status__in=FINAL).count()
        stack.kill("worker-ingest")
        killed = time.monotonic()
        stack.launch("worker-ingest", [sys.executable, "-m", "celery", "-A", "gpuatlas", "worker", "-Q", "ingest",
                                       "-c", "2", "-n", f"ingest-{uuid.uuid4().hex[:6]}@%h", "--without-gossip",
                                       "--without-mingle", "--loglevel", "WARNING"])  # fmt: skip
        stored, final, _waited = outcome(runs, wait_s=240)
        took = time.monotonic() - killed
        print(
            f"ingest worker SIGKILLed with {in_flight} of {len(runs)} submissions not final: "
            + (
                f"all final {took:.0f} s after the kill"
                if final == stored
                else f"{stored - final} not final after {took:.0f} s"
            )
            + f" ({final}/{stored}; answers {dict(Counter(status for _run, status, _s in load.results))})",
            flush=True,
        )
    finally:
        stack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="broker,flood,throttle,freeze,kill")
    parser.add_argument("--broker-port", type=int, default=6391)
    parser.add_argument("--cache-port", type=int, default=6392)
    parser.add_argument("--web-port", type=int, default=8204)
    args = parser.parse_args()
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    os.environ.update({"DJANGO_SETTINGS_MODULE": "gpuatlas.settings", "DATABASE_URL": DATABASE, "DEBUG": "1"})
    os.environ.pop("CACHE_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    from catalog.models import Gpu

    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, check=True,
                   env={**os.environ, "STATIC_ROOT": str(LOG_DIR / "static")})  # fmt: skip
    documents = SubmissionDocuments()
    keys = submitter_keys(8)
    slug = Gpu.objects.curated().filter(slug__startswith="h100").values_list("slug", flat=True).first() or "h100"
    broker = Redis(args.broker_port, "broker", "--appendonly", "yes", "--maxmemory-policy", "noeviction")
    cache = Redis(args.cache_port, "cache", "--save", "", "--appendonly", "no")
    broker.start()
    cache.start()
    print(
        f"faults on {ROOT} ({subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True, text=True).stdout.strip()})",
        flush=True,
    )
    try:
        for name in args.only.split(","):
            for redis_server in (broker, cache):
                redis_server.command("FLUSHALL")
            if name == "broker":
                scenario_broker(broker, cache, args.web_port, documents, keys)
            elif name == "flood":
                scenario_flood(broker, cache, args.web_port, slug, keys[0])
            elif name == "throttle":
                scenario_throttle(broker, cache, args.web_port)
            elif name == "freeze":
                scenario_freeze(broker, cache, args.web_port, documents, keys)
            elif name == "kill":
                scenario_kill(broker, cache, args.web_port, documents, keys)
    finally:
        broker.stop()
        cache.stop()


if __name__ == "__main__":
    main()
