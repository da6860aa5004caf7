"""The broker transport: kombu's Redis transport with one redis-py client per channel pool, against a
real Redis server; the settings select it for redis:// brokers."""

from __future__ import annotations

import sys
import uuid

import pytest
from kombu import Connection

from argoml_site.tests.test_settings import start_django
from kube.controller.queue import transport
from kube.tests.queue_harness import redis_url


def connection() -> Connection:
    return Connection(redis_url(), transport=transport.Transport)


def test_a_channel_builds_one_client_for_its_commands_and_a_new_one_for_a_new_pool():
    with connection() as conn:
        channel = conn.default_channel
        first = channel._create_client()
        assert channel._create_client() is first
        assert channel._create_client(asynchronous=True) is not first  # the event loop's own client
        channel._disconnect_pools()  # what a fork or a reconnect does
        assert channel._create_client() is not first
        assert channel._create_client().connection_pool is channel.pool


def test_messages_go_through_it_and_are_acked_once():
    with connection() as conn:
        queue = conn.SimpleQueue(f"kube-transport-test-{uuid.uuid4().hex}")
        for number in range(3):
            queue.put({"n": number})
        received = []
        for _ in range(3):
            message = queue.get(timeout=10)
            received.append(message.payload["n"])
            message.ack()
        assert received == [0, 1, 2]
        with pytest.raises(queue.Empty):
            queue.get(block=False)  # acked: none comes back
        queue.close()


@pytest.mark.parametrize(
    ("redis_url_setting", "transport_setting"),
    [
        ("redis://127.0.0.1:6379/0", "kube.controller.queue.transport:Transport"),
        ("unix:///run/redis.sock?db=2", None),  # redis+socket://: kombu's own transport for sockets
    ],
)
def test_the_settings_select_it_for_redis_urls(redis_url_setting, transport_setting):
    show = "import django; django.setup(); from django.conf import settings; "
    show += "print(getattr(settings, 'CELERY_BROKER_TRANSPORT', None))"
    started = start_django(sys.executable, "-c", show, SECRET_KEY="k", REDIS_URL=redis_url_setting)
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == str(transport_setting)
