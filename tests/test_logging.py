"""Structured JSON logs with request ids, and Celery task events carrying the submission id."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest
from prometheus_client import REGISTRY

from gpuatlas import celery_signals
from gpuatlas.celery import app as celery_app
from gpuatlas.db_router import primary_is_pinned
from gpuatlas.logging import JsonFormatter, RequestContextFilter, log_context


class JsonCapture(logging.Handler):
    """The production pipeline (context filter + JSON formatter), writing to a list."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.addFilter(RequestContextFilter())
        self.setFormatter(JsonFormatter())
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.fixture
def json_logs():
    handler = JsonCapture()
    loggers = [logging.getLogger(name) for name in ("gpuatlas.request", "gpuatlas.tasks", "test.probe")]
    saved = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield handler.lines
    for lg, level in saved:
        lg.removeHandler(handler)
        lg.setLevel(level)


def test_json_formatter_emits_one_object_with_extras_and_exception():
    formatter = JsonFormatter()
    try:
        raise ValueError("bad <gpu> name\nsecond line")
    except ValueError:
        record = logging.getLogger("test.probe").makeRecord(
            "test.probe",
            logging.ERROR,
            __file__,
            1,
            "import failed for %s",
            ("RTX 4090",),
            sys.exc_info(),
            extra={"submission_id": 7, "rows": 3},
        )
    line = formatter.format(record)
    assert "\n" not in line, "a log entry must be one line"
    entry = json.loads(line)
    assert entry["level"] == "ERROR"
    assert entry["logger"] == "test.probe"
    assert entry["message"] == "import failed for RTX 4090"
    assert entry["submission_id"] == 7 and entry["rows"] == 3
    assert "ValueError: bad <gpu> name" in entry["exc_info"]
    assert entry["time"].endswith("+00:00")


@pytest.mark.django_db
def test_request_id_is_generated_echoed_and_logged(client, json_logs):
    response = client.get("/healthz")
    request_id = response["X-Request-ID"]
    assert len(request_id) == 32 and int(request_id, 16) >= 0
    line = next(entry for entry in json_logs if entry["logger"] == "gpuatlas.request")
    assert line["request_id"] == request_id
    assert (line["method"], line["path"], line["status"]) == ("GET", "/healthz", 200)
    assert line["level"] == "DEBUG", "probes are logged below INFO so they do not drown real traffic"
    assert line["duration_ms"] >= 0


@pytest.mark.django_db
def test_a_valid_incoming_request_id_is_kept(client, json_logs):
    response = client.get("/no-such-page/", HTTP_X_REQUEST_ID="lb-7f3a.2")
    assert response.status_code == 404
    assert response["X-Request-ID"] == "lb-7f3a.2"
    line = next(entry for entry in json_logs if entry["logger"] == "gpuatlas.request")
    assert (line["request_id"], line["status"], line["level"]) == ("lb-7f3a.2", 404, "INFO")


@pytest.mark.parametrize("forged", ["abc def", "x" * 129, "id\r\nSet-Cookie: a=b", "<script>"])
@pytest.mark.django_db
def test_a_malformed_incoming_request_id_is_replaced(client, forged):
    response = client.get("/healthz", HTTP_X_REQUEST_ID=forged)
    assert response["X-Request-ID"] != forged
    assert len(response["X-Request-ID"]) == 32


def test_log_context_tags_every_logger_and_is_undone():
    handler = JsonCapture()
    probe = logging.getLogger("test.probe")
    probe.addHandler(handler)
    probe.setLevel(logging.INFO)
    try:
        with log_context(request_id="req-1", submission_id=12):
            probe.info("inside")
        probe.info("outside")
    finally:
        probe.removeHandler(handler)
    inside, outside = handler.lines
    assert (inside["request_id"], inside["submission_id"]) == ("req-1", 12)
    assert "request_id" not in outside and "submission_id" not in outside


# Tasks registered for these tests only; names under benchmarks_app. are routed like ingest tasks.
@celery_app.task(name="benchmarks_app.tests_logging_probe")
def probe_task(submission_id: int, fail: bool = False) -> bool:
    logging.getLogger("test.probe").info("working on it")
    if fail:
        raise RuntimeError("payload rejected by probe")
    return primary_is_pinned()


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_task_events_carry_submission_and_request_ids(json_logs):
    before = _sample("gpuatlas_celery_tasks_total", task=probe_task.name, state="SUCCESS")
    before_count = _sample("gpuatlas_celery_task_duration_seconds_count", task=probe_task.name)
    with log_context(request_id="req-42"):
        # apply(): run here, as a worker would, whatever the broker setting (signals fire the same).
        result = probe_task.apply(kwargs={"submission_id": 42})
    assert result.get() is True, "reads during a task go to the primary (replica lag)"
    assert primary_is_pinned() is False, "the pin ends with the task"

    task_lines = [e for e in json_logs if e["logger"] in ("gpuatlas.tasks", "test.probe")]
    assert [e.get("event") for e in task_lines] == ["task_started", None, "task_finished"]
    for entry in task_lines:
        assert entry["submission_id"] == 42
        assert entry["request_id"] == "req-42"
        assert entry["task"] == probe_task.name
    assert task_lines[-1]["state"] == "SUCCESS"
    assert task_lines[-1]["duration_ms"] >= 0
    assert _sample("gpuatlas_celery_tasks_total", task=probe_task.name, state="SUCCESS") == before + 1
    assert _sample("gpuatlas_celery_task_duration_seconds_count", task=probe_task.name) == before_count + 1


def test_failed_task_is_logged_with_its_submission_id_and_counted(json_logs):
    before = _sample("gpuatlas_celery_tasks_total", task=probe_task.name, state="FAILURE")
    probe_task.apply(args=[9], kwargs={"fail": True})
    failed = next(e for e in json_logs if e.get("event") == "task_failed")
    assert failed["level"] == "ERROR"
    assert failed["submission_id"] == 9, "a positional id of an ingest task is recognised"
    assert "RuntimeError: payload rejected by probe" in failed["exc_info"]
    finished = next(e for e in json_logs if e.get("event") == "task_finished")
    assert finished["state"] == "FAILURE"
    assert _sample("gpuatlas_celery_tasks_total", task=probe_task.name, state="FAILURE") == before + 1


def test_publishing_a_task_carries_the_request_id_in_its_headers():
    headers: dict = {}
    with log_context(request_id="req-pub"):
        celery_signals._on_publish(sender="benchmarks_app.tasks.submission_process", headers=headers)
    assert headers == {celery_signals.REQUEST_ID_HEADER: "req-pub"}
    outside: dict = {}
    celery_signals._on_publish(sender="benchmarks_app.tasks.submission_process", headers=outside)
    assert outside == {}


@pytest.mark.parametrize(
    "name, args, kwargs, expected",
    [
        ("benchmarks_app.tasks.x", (5,), {}, {"submission_id": 5}),
        ("benchmarks_app.tasks.x", (), {"submission_id": 6}, {"submission_id": 6}),
        ("catalog.tasks.prices_import", (5,), {"import_run_id": 3}, {"import_run_id": 3}),
        ("benchmarks_app.tasks.x", (True,), {}, {}),
        ("benchmarks_app.tasks.x", ("path",), {"note": "x"}, {}),
    ],
)
def test_task_ids_found_for_log_lines(name, args, kwargs, expected):
    assert celery_signals.task_ids(task_name=name, args=args, kwargs=kwargs) == expected


def _settings_in_subprocess(env: dict[str, str], expr: str) -> subprocess.CompletedProcess:
    code = f"import django, os; os.environ['DJANGO_SETTINGS_MODULE']='gpuatlas.settings'; django.setup(); from django.conf import settings; print({expr})"
    base = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    return subprocess.run([sys.executable, "-c", code], env=base | env, capture_output=True, text=True, timeout=60)


def test_production_logs_are_json_by_default_and_development_text():
    prod = _settings_in_subprocess(
        {"DEBUG": "0", "SECRET_KEY": "s" * 60, "ALLOWED_HOSTS": "example.org"},
        "settings.LOGGING['handlers']['console']['formatter']",
    )
    assert prod.returncode == 0, prod.stderr
    assert prod.stdout.strip() == "json"
    dev = _settings_in_subprocess({"DEBUG": "1"}, "settings.LOGGING['handlers']['console']['formatter']")
    assert dev.stdout.strip() == "text"


def test_unknown_log_format_is_refused_with_the_variable_named():
    result = _settings_in_subprocess({"LOG_FORMAT": "xml", "DEBUG": "1"}, "1")
    assert result.returncode != 0
    assert "LOG_FORMAT='xml' is not a log format" in result.stderr
