"""The performance harness's own tools: the load generator replays what it was given."""

from __future__ import annotations

import http.server
import threading

from perf.loadgen import post_request, requests_read, requests_write, run


class _Echo(http.server.BaseHTTPRequestHandler):
    seen: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 - the handler's protocol
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Echo.seen.append(body)
        status = 201 if self.headers["Authorization"] == "Token good" else 401
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_prepared_requests_round_trip_through_their_file(tmp_path):
    requests = [post_request(path="/api/v1/submissions/", body=b'{"n": %d}' % i, token="t") for i in range(3)]
    requests_write(tmp_path / "r.bin", requests)
    assert requests_read(tmp_path / "r.bin") == requests


def test_the_load_generator_sends_each_request_once_and_counts_statuses():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Echo.seen = []
    try:
        requests = [post_request(path="/x", body=b'{"i": %d}' % i, token="good" if i % 3 else "bad") for i in range(12)]
        report = run(port=server.server_address[1], requests=requests, concurrency=4, seconds=30)
    finally:
        server.shutdown()
    assert report["sent"] == 12 and report["ran_out"]
    assert report["statuses"] == {201: 8, 401: 4}
    assert sorted(_Echo.seen) == sorted(b'{"i": %d}' % i for i in range(12))
    assert len(report["latencies"]) == 12 and report["ended"] >= report["started"]


def test_the_ingest_benchmark_sends_runs_the_server_accepts(db):
    """perf/bench_ingest.py measures the accept path: its documents pass every intake rule."""
    import random

    from benchmarks_app.services.derive import submission_judge
    from benchmarks_app.services.snapshot import catalog_snapshot, catalog_snapshot_clear
    from perf.bench_ingest import make_document
    from tests.world import INGEST_WORLD, world_build

    world_build(rows=INGEST_WORLD)
    catalog_snapshot_clear()
    rng = random.Random(7)
    for _ in range(8):
        judged = submission_judge(document=make_document(rng, 17), snapshot=catalog_snapshot())
        assert (judged.invalid, judged.status) == ([], "accepted")
