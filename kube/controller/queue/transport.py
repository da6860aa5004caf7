"""Kombu's Redis transport, reusing one redis-py client per channel for its own commands.

Kombu's Redis channel builds a new `redis.Redis` for every delivery, ack and restore (`conn_or_acquire`),
about 90 µs each: some 13 % of a reconcile's worker CPU. The client is a thin, thread-safe front for
the channel's connection pool, so one per pool does the same work. The asynchronous client (the one
the event loop polls with BRPOP) is left as kombu makes it. Selected by `CELERY_BROKER_TRANSPORT` in
settings for `redis://` brokers.
"""

from __future__ import annotations

from typing import Any

import kombu.transport.redis as kombu_redis


class Channel(kombu_redis.Channel):
    _shared_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:
            return super()._create_client(asynchronous=True)
        client = self._shared_client
        # A pool replaced (after a fork, or a reconnect) gets a client of its own.
        if client is None or client.connection_pool is not self.pool:
            client = self._shared_client = super()._create_client()
        return client


class Transport(kombu_redis.Transport):
    Channel = Channel
