"""Kombu's Redis transport, with the one fix a worker needs to outlive a broker outage.

With Redis gone, a busy worker (late acks, messages reserved ahead) died with ``Unrecoverable
error: AttributeError("'NoneType' object has no attribute 'hostname'")`` (kombu 5.7.0, celery
5.7.0, the newest releases; tests/test_broker_outage.py reproduces it). The sequence, in kombu:

1. The worker notices the lost connection and ``collect()``s it, which closes its channels.
   The consuming channel's ``close`` first reads the reply of its outstanding BRPOP (kombu PR
   #1733, so that a message popped at that moment is not lost); with Redis gone the read raises
   a connection error, which ``Connection.maybe_close_channel`` swallows: the channel stays open.
2. The transport then closes every channel. The remote-control channel deletes its
   auto-deleted broadcast queue in Redis, which raises too; the loop stops there, and whether the
   consuming channel was closed before it depends on the order of the channel list.
3. ``collect()`` drops the transport's link to the connection (``transport.client = None``).
4. Celery closes the connection. If the consuming channel is still open, it hands its
   unacknowledged messages back to Redis, which needs a new connection pool, whose parameters
   are read from ``transport.client``, now None: an AttributeError, which no error handler
   expects, and the worker exits.

Here a channel whose transport has lost its connection raises a connection error instead, which
kombu and celery already handle: the close ends, the worker reconnects with its usual back-off.
The unacknowledged messages stay in Redis's unacked set and come back after the visibility
timeout; the ingest does not wait for them, the sweeper queues stored submissions again
(benchmarks_app.tasks.sweep_stuck_submissions).

Used for ``redis://`` and ``rediss://`` brokers (settings.CELERY_BROKER_TRANSPORT). Remove it once
a kombu release closes a channel whose BRPOP failed before dropping the transport's client.

``publish_guarded``: what a web process or a worker sends the broker. A publish to a frozen
broker fails only after its timeouts (three waits of BROKER_TIMEOUT_S, 6 s, for the first of a
process), so after one failed, the process does not ask the broker again for
``PUBLISH_RETRY_AFTER_S``: the submissions and follow-ups meanwhile are "not queued" at once
instead of each waiting, and a sweep re-queueing many stored submissions does not wait once per
submission. Nothing is lost by it: a submission is stored before it is queued and the sweeper
queues it again; a follow-up is asked again by the next write.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from celery import current_app
from kombu.exceptions import OperationalError
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

T = TypeVar("T")

# How long a process leaves the broker alone after a publish failed on its connection.
PUBLISH_RETRY_AFTER_S = 5.0
# When this process may ask the broker again (time.monotonic()); shared by its threads.
_publish_down_until = [0.0]


class BrokerSkipped(OperationalError):
    """A publish not attempted: the broker failed less than PUBLISH_RETRY_AFTER_S ago."""


def publish_guarded(send: Callable[[], T]) -> T:
    """``send()`` (a task's ``delay`` or ``apply_async``), unless a publish of this process failed
    within PUBLISH_RETRY_AFTER_S: then BrokerSkipped at once (module docstring). Eager tasks (no
    broker) are always sent."""
    if current_app.conf.task_always_eager:
        return send()
    if time.monotonic() < _publish_down_until[0]:
        raise BrokerSkipped(f"the broker failed less than {PUBLISH_RETRY_AFTER_S:g} s ago: not asked again yet")
    try:
        return send()
    except OperationalError:  # kombu's wrapper of the connection's errors and timeouts
        _publish_down_until[0] = time.monotonic() + PUBLISH_RETRY_AFTER_S
        raise


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection is closed: reconnecting")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


#: The value of CELERY_BROKER_TRANSPORT for a Redis broker.
TRANSPORT = "gpuatlas.broker:Transport"
