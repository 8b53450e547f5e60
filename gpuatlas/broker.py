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
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection is closed: reconnecting")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


#: The value of CELERY_BROKER_TRANSPORT for a Redis broker.
TRANSPORT = "gpuatlas.broker:Transport"
