"""Submitting: retries on 5xx and dropped connections, idempotent on run_uuid, no retry on 4xx."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from gpuatlas_bench.cli import main
from gpuatlas_bench.submit import SubmitError, submission_post, submissions_endpoint


class FakeAtlas:
    """A stand-in for POST /api/v1/submissions/ that answers from a script and stores by run_uuid."""

    def __init__(self, script: list[tuple[int, dict, bool]]) -> None:
        # Each step: (status, body, store_before_answering). Past the script: 201, stored.
        self.script = list(script)
        self.posts: list[dict] = []
        self.stored: dict[str, dict] = {}
        atlas = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                atlas.posts.append({"path": self.path, "headers": dict(self.headers), "body": body})
                payload = json.loads(body)
                status, answer, store = atlas.script.pop(0) if atlas.script else (201, {}, True)
                run_uuid = payload["run_uuid"]
                if run_uuid in atlas.stored:  # idempotent: the existing submission, not a new one
                    status, answer = 200, {"run_uuid": run_uuid, "status": "received"}
                elif store:
                    atlas.stored[run_uuid] = payload
                    answer = answer or {"run_uuid": run_uuid, "status": "received"}
                raw = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> FakeAtlas:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def submit(path, url, *extra):
    return main(["submit", str(path), "--url", url, "--backoff", "0.01", *extra])


@pytest.mark.parametrize(
    "first_answer",
    [
        pytest.param((503, {"detail": "busy"}, False), id="503-before-storing"),
        pytest.param((503, {"detail": "proxy timeout"}, True), id="503-after-storing"),
    ],
)
def test_503_then_success_stores_the_result_once(h100_run_path, monkeypatch, capsys, first_answer):
    monkeypatch.setenv("GPUATLAS_TOKEN", "secret-token")
    with FakeAtlas([first_answer]) as atlas:
        assert submit(h100_run_path, atlas.url) == 0
    assert len(atlas.posts) == 2
    assert len(atlas.stored) == 1
    sent = json.loads(atlas.posts[0]["body"])
    assert sent == json.loads(h100_run_path.read_text())
    assert atlas.posts[1]["body"] == atlas.posts[0]["body"]
    first = atlas.posts[0]
    assert first["path"] == "/api/v1/submissions/"
    assert first["headers"]["Authorization"] == "Token secret-token"
    assert first["headers"]["Idempotency-Key"] == sent["run_uuid"]
    captured = capsys.readouterr()
    assert "attempt 1/5 failed (HTTP 503" in captured.err
    assert f"submitted run {sent['run_uuid']}" in captured.out
    assert "2 attempts" in captured.out


def test_400_is_reported_with_the_field_and_not_retried(h100_run_path, capsys):
    refusal = {"results": [{"median": ["exceeds the dense BF16 peak of this GPU (989.4 TFLOPS)"]}]}
    with FakeAtlas([(400, refusal, False)]) as atlas:
        assert submit(h100_run_path, atlas.url, "--token", "t") == 4
    assert len(atlas.posts) == 1
    assert atlas.stored == {}
    err = capsys.readouterr().err
    assert "HTTP 400" in err
    assert "results[0].median: exceeds the dense BF16 peak" in err


def test_401_hints_at_the_token(h100_run_path, capsys):
    with FakeAtlas([(401, {"detail": "Invalid token."}, False)]) as atlas:
        assert submit(h100_run_path, atlas.url, "--token", "wrong") == 4
    assert len(atlas.posts) == 1
    assert "check the token" in capsys.readouterr().err


def test_unreachable_server_is_retried_then_reported(h100_run_path, capsys):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert submit(h100_run_path, f"http://127.0.0.1:{port}", "--token", "t", "--attempts", "3") == 5
    err = capsys.readouterr().err
    assert err.count("retrying in") == 2
    assert "gave up after 3 attempts" in err


CHECKED = {"dry_run": True, "verdict": "checked", "cpu_only": True, "gpu": None, "results": [{}],
           "reasons": [{"field": "$.cpu_only", "reason": "a CPU-only run", "verdict": "note"}]}  # fmt: skip


def test_cpu_only_results_go_to_the_dry_run_and_its_answer_is_printed(h100_run_path, tmp_path, capsys):
    payload = json.loads(h100_run_path.read_text())
    payload["cpu_only"] = True
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(payload))
    with FakeAtlas([(200, CHECKED, False)]) as atlas:
        assert submit(path, atlas.url, "--token", "t") == 0
    assert [post["path"] for post in atlas.posts] == ["/api/v1/submissions/dry-run/"]
    assert "Idempotency-Key" not in atlas.posts[0]["headers"] and atlas.stored == {}
    out = capsys.readouterr()
    assert "sent as a dry run" in out.err
    assert "verdict checked, 1 results checked; nothing was stored" in out.out
    assert "note: $.cpu_only: a CPU-only run" in out.out


def test_a_dry_run_that_would_be_rejected_exits_4(h100_run_path, capsys):
    rejected = {"verdict": "rejected", "gpu": {"slug": "h100-sxm5-80-gb", "name": "H100 SXM5 80 GB"}, "results": [],
                "reasons": [{"field": "$.results[0].median", "reason": "above the peak", "verdict": "rejected"}]}  # fmt: skip
    with FakeAtlas([(200, rejected, False)]) as atlas:
        assert submit(h100_run_path, atlas.url, "--token", "t", "--dry-run") == 4
    assert atlas.posts[0]["path"] == "/api/v1/submissions/dry-run/"
    assert "verdict rejected on H100 SXM5 80 GB" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"median": NaN}', "NaN is not allowed"),
        ('{"schema_version": 1}', "not a valid submission"),
    ],
)
def test_bad_files_are_refused_before_sending(tmp_path, capsys, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with FakeAtlas([]) as atlas:
        assert submit(path, atlas.url, "--token", "t") == 2
    assert atlas.posts == []
    assert message in capsys.readouterr().err


def test_token_never_goes_over_plain_http_to_another_host(h100_run_path, capsys):
    assert submit(h100_run_path, "http://gpuatlas.example", "--token", "t") == 2
    assert "refusing to send the API token over plain http" in capsys.readouterr().err


def test_endpoint_is_derived_from_the_site_address():
    assert submissions_endpoint("https://atlas.example") == "https://atlas.example/api/v1/submissions/"
    assert submissions_endpoint("https://atlas.example/sub/") == "https://atlas.example/sub/api/v1/submissions/"
    assert submissions_endpoint("https://a.example/api/v1/submissions") == "https://a.example/api/v1/submissions/"
    assert submissions_endpoint("http://[::1]:8000") == "http://[::1]:8000/api/v1/submissions/"
    with pytest.raises(SubmitError, match="http"):
        submissions_endpoint("ftp://atlas.example")


def test_retry_after_is_honoured():
    waits: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        count = 0

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            Handler.count += 1
            status = 429 if Handler.count == 1 else 201
            self.send_response(status)
            if status == 429:
                self.send_header("Retry-After", "7")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        response = submission_post(
            body=b"{}", url=f"http://127.0.0.1:{server.server_address[1]}", token="t", sleep=waits.append
        )
    finally:
        server.shutdown()
        server.server_close()
    assert response.status == 201 and response.attempts == 2
    assert waits == [7.0]
