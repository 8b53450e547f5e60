"""/metrics: guarded from the public; request, task, queue and submission metrics."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from benchmarks_app.models import RawSubmission, SubmissionStatus
from tests.redis_server import needs_redis_server, private_redis  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

TOKEN = "t0ken-for-tests-0123456789"


def samples(body: bytes) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


@pytest.fixture
def metrics_settings(settings):
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_NETWORKS = []
    settings.METRICS_DB_CACHE_SECONDS = 0
    settings.CELERY_BROKER_URL = ""
    return settings


def test_metrics_do_not_exist_until_configured(client, settings):
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_NETWORKS = []
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer anything"}):
        response = client.get("/metrics", **headers)
        assert response.status_code == 404
        assert response.content == b"Not found.\n"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"HTTP_AUTHORIZATION": "Bearer wrong-token-0123456789"},
        {"HTTP_AUTHORIZATION": f"Token {TOKEN}"},
        {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}x"},
        {"HTTP_X_FORWARDED_FOR": "127.0.0.1"},
    ],
)
def test_metrics_refused_without_the_token(client, metrics_settings, headers):
    response = client.get("/metrics", REMOTE_ADDR="203.0.113.9", **headers)
    assert response.status_code == 403
    assert b"gpuatlas" not in response.content


def test_metrics_served_with_the_bearer_token(client, metrics_settings):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert b"django_http_requests_latency_seconds_by_view_method" in response.content


def test_metrics_served_to_allowed_networks_only_by_peer_address(client, metrics_settings):
    import ipaddress

    metrics_settings.METRICS_TOKEN = ""
    metrics_settings.METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("::1/128")]
    for peer in ("10.1.2.3", "::1"):
        served = client.get("/metrics", REMOTE_ADDR=peer)
        assert served.status_code == 200, peer
        assert b"django_http_requests_latency_seconds_by_view_method" in served.content, peer
    # A forwarded header is the client's word, not the peer's address.
    for headers in ({}, {"HTTP_X_FORWARDED_FOR": "10.0.0.1"}):
        refused = client.get("/metrics", REMOTE_ADDR="192.0.2.1", **headers)
        assert refused.status_code == 403
        assert refused.content == b"Forbidden: metrics are for the monitoring system only.\n"


def test_metrics_endpoint_refuses_writes(client, metrics_settings):
    response = client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert b"gpuatlas" not in response.content


def test_request_latency_is_recorded_per_view(client, metrics_settings):
    def ping_count() -> float:
        body = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content
        key = ("django_http_requests_latency_seconds_by_view_method_count", (("method", "GET"), ("view", "api:ping")))
        return samples(body).get(key, 0.0)

    before = ping_count()
    assert client.get("/api/v1/ping/").status_code == 200
    client.get("/api/v1/ping/")
    assert ping_count() == before + 2


def _submission(status: str, n: int) -> RawSubmission:
    payload = f'{{"n": {n}}}'
    return RawSubmission.objects.create(
        payload=payload, sha256=hashlib.sha256(payload.encode()).hexdigest(), status=status
    )


def test_submissions_by_status_are_counted_at_scrape_time(client, metrics_settings):
    for n in range(3):
        _submission(SubmissionStatus.ACCEPTED, n)
    _submission(SubmissionStatus.REJECTED, 10)
    found = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content)
    by_status = {
        dict(labels)["status"]: value for (name, labels), value in found.items() if name == "gpuatlas_submissions"
    }
    assert by_status == dict.fromkeys(SubmissionStatus.values, 0.0) | {"accepted": 3.0, "rejected": 1.0}


def test_submission_counts_are_cached_between_scrapes(client, metrics_settings):
    metrics_settings.METRICS_DB_CACHE_SECONDS = 3600
    first = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content)
    _submission(SubmissionStatus.FLAGGED, 1)
    second = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content)
    key = ("gpuatlas_submissions", (("status", "flagged"),))
    assert second[key] == first[key], "within the cache window the database is not queried again"
    metrics_settings.METRICS_DB_CACHE_SECONDS = 0
    third = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content)
    assert third[key] == first[key] + 1


@needs_redis_server
def test_queue_depth_read_from_the_broker_and_broker_down_reported(client, metrics_settings, private_redis):  # noqa: F811
    metrics_settings.CELERY_BROKER_URL = private_redis.url
    broker = redis.Redis.from_url(private_redis.url)
    broker.rpush("ingest", "m1", "m2", "m3")
    broker.rpush("ingest\x06\x163", "prioritised")
    broker.rpush("imports", "m")
    found = samples(client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content)
    assert found[("gpuatlas_celery_queue_length", (("queue", "ingest"),))] == 4
    assert found[("gpuatlas_celery_queue_length", (("queue", "imports"),))] == 1
    assert found[("gpuatlas_broker_up", ())] == 1

    private_redis.stop()
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, "a broker outage must not break the scrape"
    found = samples(response.content)
    assert found[("gpuatlas_broker_up", ())] == 0
    assert not any(name == "gpuatlas_celery_queue_length" for name, _ in found)
    assert ("gpuatlas_submissions", (("status", "accepted"),)) in found


def _settings_error(env: dict[str, str]) -> str:
    code = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='gpuatlas.settings'; django.setup()"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": "/usr/bin:/bin", "DEBUG": "1"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    return result.stderr


def test_short_metrics_token_is_refused():
    assert "METRICS_TOKEN is too short" in _settings_error({"METRICS_TOKEN": "abc"})


def test_malformed_allowed_network_is_refused():
    assert "METRICS_ALLOWED_IPS has a malformed address or network" in _settings_error(
        {"METRICS_ALLOWED_IPS": "10.0.0.0/8,not-an-ip"}
    )


def test_worker_exporter_serves_task_samples_behind_the_same_guard(metrics_settings):
    import urllib.error
    import urllib.request

    from gpuatlas.prometheus import celery_tasks_finished, worker_metrics_serve

    celery_tasks_finished.labels(task="benchmarks_app.tests_exporter", state="SUCCESS").inc()
    server = worker_metrics_serve(addr="127.0.0.1", port=0)
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=5)
        assert refused.value.code == 403
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            found = samples(response.read())
        key = ("gpuatlas_celery_tasks_total", (("state", "SUCCESS"), ("task", "benchmarks_app.tests_exporter")))
        assert found[key] >= 1
    finally:
        server.shutdown()
        server.server_close()
