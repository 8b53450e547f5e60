"""The production topology end to end: `deploy/stack.sh` (what `make stack` runs) on this machine.

gunicorn with 2 web processes, a Celery worker per queue and beat, with production settings,
against a fresh PostgreSQL database and a private redis-server (so stopping "the broker" never
touches the machine's main Redis). One benchmark run goes in over HTTP with an API token, the
ingest worker accepts it, and it comes back out of /api/v1/rankings/. Along the way: the request
id follows the submission into the worker's JSON log lines, /metrics counts it, and /readyz
turns 503 while Redis is down and 200 once it is back (then a second submission is accepted,
so the workers reconnected too).

Bounded: every wait has a deadline, and the stack, database and Redis are removed whatever happens.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from benchmarks_app.comparison_rules import MIN_COMMUNITY_N
from tests.redis_server import REDIS_SERVER, PrivateRedis, free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.celery_worker,
    pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed"),
]

ROOT = Path(__file__).resolve().parent.parent
PY = ROOT / ".venv" / "bin" / "python"
STACK = ROOT / "deploy" / "stack.sh"
FIXTURES = ROOT / "tests" / "fixtures" / "bench"
METRICS_TOKEN = "smoke-metrics-token-" + uuid.uuid4().hex
GPU_NAME = "GPU Atlas Smoke Test GPU"
GPU_SLUG = "gpu-atlas-smoke-test-gpu"

# Runs in the stack's environment: a GPU the payload's names match, the client's workloads, a
# user and an API token. The catalogue figures come from the shared factories (test data, not
# published); the GPU names and memory are those of the payload.
SEED = """
import json
from django.contrib.auth import get_user_model
from accounts.services import api_token_create
from benchmarks_app.services.workloads import workload_seed
from tests.factories import GpuAliasFactory, GpuFactory, TensorPeakFactory

workload_seed()
gpu = GpuFactory(name=%(name)r, slug=%(slug)r, memory_gib=%(memory_gib)r)
for precision in ("bf16", "fp16"):
    TensorPeakFactory(gpu=gpu, precision=precision)
for alias in %(aliases)r:
    GpuAliasFactory(gpu=gpu, alias=alias)
user = get_user_model().objects.create_user(username="smoke", password=None)
_, key = api_token_create(user=user, name="stack smoke test")
print("SEED " + json.dumps({"token": key}))
"""

# The rankings use case each client workload counts towards (dashboard.ranking.use_cases.USE_CASES).
USE_CASE_BY_WORKLOAD = {"transformer-infer": "inference-16bit", "transformer-train": "training"}


def _seed_script(document: dict[str, Any]) -> str:
    gpu = document["environment"]["gpu"]
    aliases = sorted({name for name in (gpu["name_torch"], gpu.get("name_nvidia_smi")) if name} | {GPU_NAME})
    memory_gib = round(gpu["memory_total_mib"] / 1024, 1)
    return SEED % {"name": GPU_NAME, "slug": GPU_SLUG, "memory_gib": memory_gib, "aliases": aliases}


def _payload_fixture() -> dict[str, Any] | None:
    """A real run of the benchmark client, when one is committed under tests/fixtures/bench/.

    Used when it has a result the rankings count (transformer-infer or transformer-train).
    """
    for path in sorted(FIXTURES.glob("*.json")):
        document = json.loads(path.read_text())
        if not isinstance(document, dict) or document.get("schema_version") != 1 or document.get("cpu_only"):
            continue
        if any(r.get("workload") in USE_CASE_BY_WORKLOAD for r in document.get("results", [])):
            return document
    return None


def _payload_minimal() -> dict[str, Any]:
    """The smallest valid submission (submission-1.schema.json): one transformer-infer result."""
    repetitions = [41000.0 + 10.0 * (i % 5) for i in range(20)]
    window = sorted(repetitions)
    median = (window[9] + window[10]) / 2
    return {
        "schema_version": 1,
        "client": {"name": "gpuatlas-bench", "version": "0.1.0"},
        "run_uuid": str(uuid.uuid4()),
        "created_at": "2026-11-22T10:00:00Z",
        "duration_s": 120.0,
        "cpu_only": False,
        "run_mode": "standard",
        "environment": {
            "gpu": {
                "name_torch": GPU_NAME,
                "name_nvidia_smi": GPU_NAME,
                "count": 1,
                "index": 0,
                "memory_total_mib": 81559,
                "compute_capability": "9.0",
            },
            "driver_version": "550.54.15",
            "cuda_version": "12.4",
            "torch_version": "2.5.1",
            "cublas_version": None,
            "cudnn_version": None,
            "clocks_before": None,
            "clocks_after": None,
            "power_limit_w": None,
            "power_draw_before_w": None,
            "power_draw_after_w": None,
            "temperature_before_c": None,
            "temperature_after_c": None,
            "telemetry_source": "none",
            "cpu": {"model": "smoke test CPU", "cores": 16},
            "ram_gib": 128.0,
            "os": "Linux",
            "python_version": "3.11.2",
            "container_image": None,
        },
        "workload_code_sha256": "0" * 64,
        "results": [
            {
                "workload": "transformer-infer",
                "workload_version": "1.0",
                "precision": "bf16",
                "gpu_count": 1,
                "params": {"batch": 8, "seq_len": 2048, "d_model": 2048, "n_heads": 16, "d_ff": 8192},
                "unit": "tokens/s",
                "higher_is_better": True,
                "mode": "burst",
                "repetitions": repetitions,
                "median": median,
                "min": window[0],
                "max": window[-1],
                "spread_pct": 100 * (window[-1] - window[0]) / median,
                "stats": {"window_start": 0, "window_size": 20, "converged": True, "target_spread_pct": 2.0},
                "timing": {
                    "method": "cuda_events",
                    "warmup_iterations": 5,
                    "inner_iterations": 1,
                    "seconds_total": 8.0,
                },
            }
        ],
    }


def _fresh_run(document: dict[str, Any]) -> dict[str, Any]:
    copy = json.loads(json.dumps(document))
    copy["run_uuid"] = str(uuid.uuid4())
    return copy


class Stack:
    def __init__(self, *, base_url: str, env: dict[str, str], stack_dir: Path) -> None:
        self.base_url = base_url
        self.env = env
        self.stack_dir = stack_dir

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 15,
    ) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(self.base_url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def manage(self, *args: str, timeout: float = 120) -> str:
        result = subprocess.run(
            [str(PY), str(ROOT / "manage.py"), *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, f"manage.py {args[0]} failed:\n{result.stderr[-3000:]}"
        return result.stdout

    def tail(self, name: str, lines: int = 40) -> str:
        path = self.stack_dir / "logs" / f"{name}.log"
        text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else ["(no log)"]
        return f"--- {path} (last {lines} lines)\n" + "\n".join(text)

    def log_lines(self, name: str) -> list[dict[str, Any]]:
        lines = []
        for raw in (self.stack_dir / "logs" / f"{name}.log").read_text(errors="replace").splitlines():
            if raw.startswith("{"):
                try:
                    lines.append(json.loads(raw))
                except json.JSONDecodeError:
                    continue
        return lines


def _wait(what: str, predicate, *, timeout: float, interval: float = 0.5):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def _database_url(name: str) -> str:
    db = settings.DATABASES["default"]
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{name}"


def _drop_database(url: str) -> None:
    import dj_database_url
    import psycopg
    from psycopg import sql

    cfg = dj_database_url.parse(url)
    params = {
        k: v
        for k, v in {"host": cfg["HOST"], "port": cfg["PORT"], "user": cfg["USER"], "password": cfg["PASSWORD"]}.items()
        if v
    }
    with psycopg.connect(dbname="postgres", autocommit=True, connect_timeout=5, **params) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(cfg["NAME"])))


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[tuple[Stack, PrivateRedis]]:
    workdir = tmp_path_factory.mktemp("stack")
    redis_server = PrivateRedis(workdir)
    redis_server.start()
    database_url = _database_url(f"gpuatlas_stack_smoke_{uuid.uuid4().hex[:8]}")
    port = free_port()
    stack_dir = workdir / "run"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "STACK_DIR": str(stack_dir),
        "STACK_PORT": str(port),
        "STACK_START_TIMEOUT": "120",
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": redis_server.url,
        "CACHE_URL": redis_server.url.rsplit("/", 1)[0] + "/1",
        "METRICS_TOKEN": METRICS_TOKEN,
    }
    started = None
    try:
        started = subprocess.run(
            ["bash", str(STACK), "start"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
        )
        assert started.returncode == 0, f"stack did not start:\n{started.stderr[-4000:]}"
        # What the manage.py commands below need: the stack's settings, from the env file it wrote.
        for line in (stack_dir / "env").read_text().splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = subprocess.run(["bash", "-c", f"printf %s {value}"], capture_output=True, text=True).stdout
        yield Stack(base_url=f"http://127.0.0.1:{port}", env=env, stack_dir=stack_dir), redis_server
    finally:
        stopped = subprocess.run(
            ["bash", str(STACK), "stop"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        redis_server.stop()
        _drop_database(database_url)
        # The run directory (logs included) stays under pytest's temporary directory, which pytest
        # prunes itself; a failure's message below carries the log tails.
        assert stopped.returncode == 0, stopped.stderr
        for name in ("web", "worker-ingest", "worker-imports", "beat"):
            assert not (stack_dir / f"{name}.pid").exists(), f"{name} was not stopped"


def _submit(stack: Stack, token: str, document: dict[str, Any], request_id: str) -> dict[str, Any]:
    status, headers, body = stack.request(
        "POST",
        "/api/v1/submissions/",
        body=json.dumps(document).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json", "X-Request-ID": request_id},
    )
    assert status == 201, f"submission refused: {status} {body[:2000]!r}"
    assert headers.get("X-Request-ID") == request_id
    return json.loads(body)


def _wait_terminal(stack: Stack, token: str, status_url: str, *, timeout: float) -> dict[str, Any]:
    def poll() -> dict[str, Any] | None:
        status, _, body = stack.request("GET", status_url, headers={"Authorization": f"Token {token}"})
        assert status == 200, f"{status_url}: {status} {body[:500]!r}"
        document = json.loads(body)
        return document if document["status"] not in ("received", "processing") else None

    return _wait(f"{status_url} to leave received/processing", poll, timeout=timeout)


def _metric(text: str, name: str, **labels: str) -> float | None:
    from prometheus_client.parser import text_string_to_metric_families

    total = None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total = (total or 0.0) + sample.value
    return total


def test_submission_through_the_production_stack(stack):
    stack, redis_server = stack
    try:
        _scenario(stack, redis_server)
    except AssertionError as exc:
        tails = "\n".join(stack.tail(name) for name in ("web", "worker-ingest"))
        raise AssertionError(f"{exc}\n{tails}") from exc


def _scenario(stack: Stack, redis_server: PrivateRedis) -> None:
    # Production settings: no debug pages, metrics hidden from the public.
    status, _, body = stack.request("GET", "/no-such-page/")
    assert status == 404 and b"Traceback" not in body and b"DEBUG" not in body
    assert stack.request("GET", "/metrics")[0] == 403

    document = _payload_fixture() or _payload_minimal()
    use_case = next(
        USE_CASE_BY_WORKLOAD[r["workload"]] for r in document["results"] if r["workload"] in USE_CASE_BY_WORKLOAD
    )
    seed_out = stack.manage("shell", "-c", _seed_script(document))
    token = json.loads(seed_out.split("SEED ", 1)[1])["token"]

    # A GPU's community results count in the rankings from MIN_COMMUNITY_N results on: send that many runs.
    request_ids = ["smoke-" + uuid.uuid4().hex for _ in range(MIN_COMMUNITY_N)]
    submitted = []
    for request_id in request_ids:
        run = _fresh_run(document)
        created = _submit(stack, token, run, request_id)
        assert created["run_uuid"] == run["run_uuid"]
        submitted.append(created)
    request_id = request_ids[0]

    for created in submitted:
        final = _wait_terminal(stack, token, created["status_url"], timeout=90)
        assert final["status"] == "accepted", f"not accepted: {json.dumps(final, indent=1)[:3000]}"
        assert final["gpu"]["slug"] == GPU_SLUG
        assert final["results"], "an accepted run has derived results"

    # Back out through the rankings API: our GPU, measured, with this one submission behind it.
    status, _, body = stack.request("GET", f"/api/v1/rankings/?use_case={use_case}&baseline={GPU_SLUG}&basis=measured")
    assert status == 200, body[:2000]
    ranking = json.loads(body)
    rows = ranking.get("results", ranking.get("rows", []))
    row = next((r for r in rows if r["gpu"] == GPU_SLUG), None)
    assert row is not None, f"{GPU_SLUG} missing from the rankings: {json.dumps(ranking)[:2000]}"
    assert row["measured"] is True
    assert row["n"] >= MIN_COMMUNITY_N and row["distinct_submitters"] == 1

    # The worker's log lines for this task carry the submission id and the web request's id.
    def task_lines() -> list[dict[str, Any]]:
        return [e for e in stack.log_lines("worker-ingest") if e.get("request_id") == request_id and e.get("event")]

    lines = _wait(
        "the ingest task's log lines", lambda: [e for e in task_lines() if e["event"] == "task_finished"], timeout=10
    )
    finished = lines[0]
    assert finished["task"] == "benchmarks_app.tasks.ingest_submission"
    assert finished["state"] == "SUCCESS"
    assert isinstance(finished["submission_id"], int)
    assert any(e["event"] == "task_started" and e["submission_id"] == finished["submission_id"] for e in task_lines())
    web_lines = [e for e in stack.log_lines("web") if e.get("request_id") == request_id]
    assert any(e.get("path") == "/api/v1/submissions/" and e.get("status") == 201 for e in web_lines)

    # /metrics sums every process of the host: web workers and the Celery pool processes.
    status, _, body = stack.request("GET", "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert status == 200
    text = body.decode()
    assert _metric(text, "gpuatlas_submissions", status="accepted") == MIN_COMMUNITY_N
    assert (
        _metric(text, "gpuatlas_celery_tasks_total", task="benchmarks_app.tasks.ingest_submission", state="SUCCESS")
        >= 1
    )
    assert (
        _metric(text, "gpuatlas_celery_task_duration_seconds_count", task="benchmarks_app.tasks.ingest_submission") >= 1
    )
    assert _metric(text, "gpuatlas_celery_queue_length", queue="ingest") == 0
    assert _metric(text, "django_http_requests_latency_seconds_by_view_method_count", method="POST") >= 1

    # Redis down: not ready, quickly. Redis back: ready, and the workers take work again.
    redis_server.stop()
    started = time.monotonic()
    status, _, body = stack.request("GET", "/readyz")
    assert status == 503, body
    assert "broker" in json.loads(body)["problems"]
    assert time.monotonic() - started < 10
    redis_server.start()
    _wait("/readyz to return to 200", lambda: stack.request("GET", "/readyz")[0] == 200, timeout=30)

    second = _submit(stack, token, _fresh_run(document), "smoke-" + uuid.uuid4().hex)
    assert _wait_terminal(stack, token, second["status_url"], timeout=120)["status"] == "accepted"
