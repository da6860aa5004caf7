"""A controller worker's client keeps one connection per concurrent call open, instead of closing the extra
ones after a single request (the official client's default pool is only 5 per CPU)."""

from __future__ import annotations

import logging
import threading

from django.test.utils import override_settings

from kube.client import get_client, reset_client
from kube.resources import CONFIGMAP
from kubesim.testing import running_simulator

CONCURRENT_CALLS = 24  # 8 reconcile threads' worth of parallel calls, plus a few watches


def test_many_calls_at_once_reuse_their_connections(caplog):
    with (
        running_simulator() as sim,
        override_settings(KUBECONFIG=str(sim.kubeconfig_path), KUBE_IN_CLUSTER=False),
    ):
        reset_client()
        client = get_client()
        barrier = threading.Barrier(CONCURRENT_CALLS)

        def call() -> None:
            barrier.wait()
            client.list(CONFIGMAP, "default")

        with caplog.at_level(logging.WARNING, logger="urllib3.connectionpool"):
            threads = [threading.Thread(target=call) for _ in range(CONCURRENT_CALLS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
        reset_client()

    assert not [record for record in caplog.records if "Connection pool is full" in record.getMessage()]
