"""Celery workers outlive a broker (Redis) outage by themselves.

Kombu 5.7.0 (celery 5.7.0) killed a busy worker when Redis went away: ``Unrecoverable error:
AttributeError("'NoneType' object has no attribute 'hostname'")`` while handing back its
unacknowledged messages, after its connection was collected (gpuatlas/broker.py says how).
``test_a_channel_closed_after_its_connection_was_collected_raises_a_connection_error`` drives
kombu through that exact sequence on a private redis-server, with kombu's own transport (the
AttributeError) and with ours (a connection error, which kombu swallows as it closes).
``test_a_busy_worker_survives_redis_stopped_and_restarted_again_and_again`` stops and restarts a
real Redis under a real worker (the project's Celery settings and transport, a slow task of its
own: tests/outage_worker.py) holding reserved, unacknowledged messages, several times; the worker
must be alive at the end and run a task queued afterwards.

The broker is always a redis-server started here on a free port (tests/redis_server.py), never
the machine's shared Redis.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest
from kombu import Connection, Consumer, Exchange, Producer, Queue
from kombu.transport.redis import Transport as KombuRedisTransport

from gpuatlas.broker import Transport
from tests.outage_worker import QUEUE, outage_sleep
from tests.outage_worker import app as outage_app
from tests.redis_server import PrivateRedis, needs_redis_server, private_redis  # noqa: F401
from tests.reliability_support import ROOT, celery_worker

pytestmark = needs_redis_server


def _collected_after_a_lost_brpop(url: str, redis_server: PrivateRedis, transport: type) -> Connection:
    """A connection whose consumer holds an unacknowledged message and waits on a BRPOP when
    Redis stops, beside a channel consuming an auto-deleted broadcast queue (the worker's remote
    control), then collected as celery's consumer does on a lost connection."""
    connection = Connection(url, transport=transport)
    channel = connection.default_channel
    queue = Queue(f"outage-{uuid.uuid4().hex[:8]}", Exchange("outage"), routing_key="outage")
    producer = Producer(channel, exchange=queue.exchange, routing_key="outage", serializer="json")
    producer.publish({"index": 0}, declare=[queue])  # one: the BRPOP below waits, as on an idle queue
    received = []
    consumer = Consumer(channel, [queue], accept=["json"], callbacks=[lambda body, message: received.append(body)])
    consumer.consume()
    connection.drain_events(timeout=5)
    assert received and channel.qos._delivered, "nothing was delivered unacknowledged"
    control = Queue(f"control-{uuid.uuid4().hex[:8]}", Exchange("broadcast", type="fanout"), auto_delete=True)
    Consumer(connection.channel(), [control], accept=["json"], callbacks=[lambda body, message: None]).consume()
    channel._brpop_start()  # the worker's event loop keeps one BRPOP outstanding
    redis_server.stop()
    connection.collect()
    return connection


def test_a_channel_closed_after_its_connection_was_collected_raises_a_connection_error(private_redis) -> None:  # noqa: F811
    broken = _collected_after_a_lost_brpop(private_redis.url, private_redis, KombuRedisTransport)
    with pytest.raises(AttributeError, match="hostname"):
        broken.close()  # kombu's own transport: what made the worker exit

    private_redis.start()
    fixed = _collected_after_a_lost_brpop(private_redis.url, private_redis, Transport)
    fixed.close()  # the channel raises a connection error, which the close swallows


def test_a_redis_broker_is_reached_through_the_fixed_transport() -> None:
    script = (
        "import django; django.setup(); from gpuatlas.celery import app; "
        "print(type(app.connection_for_write().transport).__module__)"
    )
    env = {**os.environ, "DEBUG": "1", "CELERY_BROKER_URL": "redis://127.0.0.1:1/0"}
    env.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip().splitlines()[-1] == "gpuatlas.broker", result.stderr[-2000:]


def _queue_sleeps(url: str, count: int, seconds: float) -> list[str]:
    """``count`` tasks of the outage app that each hold their message ``seconds``; their markers."""
    markers = [uuid.uuid4().hex for _index in range(count)]
    with outage_app.connection_for_write(url) as connection:
        for marker in markers:
            outage_sleep.apply_async(args=[seconds, marker], connection=connection, queue=QUEUE)
    return markers


def _wait_for(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


OUTAGES = 4


@pytest.mark.slow
@pytest.mark.celery_worker
def test_a_busy_worker_survives_redis_stopped_and_restarted_again_and_again(private_redis, tmp_path) -> None:  # noqa: F811
    """Each round, Redis stops while the worker runs two tasks, holds more reserved (all
    unacknowledged) and waits on a BRPOP for the next: the state that killed it."""
    log = tmp_path / "worker.log"
    worker = celery_worker(
        private_redis.url, log, queue=QUEUE, concurrency=2, heartbeat=True, app="tests.outage_worker"
    )

    def text() -> str:
        return log.read_text(errors="replace") if log.exists() else ""

    try:
        first = _queue_sleeps(private_redis.url, 1, 0.0)
        assert _wait_for(lambda: first[0] in text(), 60), "the worker never ran a task:\n" + text()[-3000:]
        for outage in range(OUTAGES):
            _queue_sleeps(private_redis.url, 6, 0.5)  # fewer than the prefetch: a BRPOP stays outstanding
            time.sleep(0.3)
            private_redis.stop()
            time.sleep(1.0)
            assert worker.alive(), f"the worker exited in outage {outage + 1}:\n{text()[-4000:]}"
            private_redis.start()  # empty: what the worker held is gone with it, as in a restart without persistence
        last = _queue_sleeps(private_redis.url, 1, 0.0)
        assert _wait_for(lambda: last[0] in text(), 60), "no task ran after the outages:\n" + text()[-3000:]
        assert worker.alive() and "Unrecoverable error" not in text(), text()[-4000:]
    finally:
        worker.stop()
