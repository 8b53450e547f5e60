"""A small HTTP load generator, run as its own process (the issue's "from a second process").

It replays prepared HTTP/1.1 requests (head and body, one per record of a file written by
``requests_write``) against 127.0.0.1 from ``--concurrency`` threads for at most
``--seconds``, one connection per request (gunicorn's sync workers close after each), and
prints one JSON object: the statuses, each request's latency in seconds, and when the first
and the last request started and ended (``time.time()``), and its own CPU time.

Preparing the requests beforehand keeps the generator's own CPU out of the figures: on a
2-core machine a client that builds documents as it posts takes CPU from the server.

    python -m perf.loadgen --port 8000 --requests /tmp/requests.bin --concurrency 8 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import threading
import time
from pathlib import Path

_LENGTH = struct.Struct("!I")


def post_request(*, path: str, body: bytes, token: str) -> bytes:
    """One POST as raw bytes, with the headers our API needs."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Token {token}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def requests_write(path: Path, requests: list[bytes]) -> None:
    with path.open("wb") as out:
        for request in requests:
            out.write(_LENGTH.pack(len(request)))
            out.write(request)


def requests_read(path: Path) -> list[bytes]:
    data = path.read_bytes()
    requests, offset = [], 0
    while offset < len(data):
        (size,) = _LENGTH.unpack_from(data, offset)
        offset += _LENGTH.size
        requests.append(data[offset : offset + size])
        offset += size
    return requests


def exchange(port: int, request: bytes, timeout: float = 60.0) -> int:
    """Send one request and read the whole response; returns the status (-1: no answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    response = b"".join(chunks)
    return int(response[9:12]) if response.startswith(b"HTTP/1.") and len(response) >= 12 else -1


def run(*, port: int, requests: list[bytes], concurrency: int, seconds: float) -> dict:
    stop_at = time.monotonic() + seconds
    lock = threading.Lock()
    cursor = {"next": 0}
    latencies: list[float] = []
    statuses: dict[int, int] = {}

    def client() -> None:
        while time.monotonic() < stop_at:
            with lock:
                index = cursor["next"]
                cursor["next"] += 1
            if index >= len(requests):
                return
            started = time.perf_counter()
            try:
                status = exchange(port, requests[index])
            except OSError:
                status = -1
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                statuses[status] = statuses.get(status, 0) + 1

    first = time.time()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "started": first,
        "ended": time.time(),
        "sent": len(latencies),
        "statuses": statuses,
        "latencies": latencies,
        "ran_out": cursor["next"] >= len(requests),
        "cpu_seconds": time.process_time(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--requests", type=Path, required=True, help="file written by requests_write")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    report = run(
        port=args.port, requests=requests_read(args.requests), concurrency=args.concurrency, seconds=args.seconds
    )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
