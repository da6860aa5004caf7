"""The simulator as the cluster (frozen clock), real Redis for the lock, short client retries."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

import kube.client
from garbage import lock as gc_lock
from kubesim.simulator import Simulator

from .factories import START


@pytest.fixture
def cluster(kubesim_factory, settings) -> Iterator[Simulator]:
    """A simulator whose clock stands still at START; kube's client points at it."""
    simulator = kubesim_factory(frozen_clock=True, start_time=START)
    settings.KUBECONFIG = str(simulator.kubeconfig_path)
    settings.KUBE_IN_CLUSTER = False
    settings.KUBE_WRITE_QPS = 10_000.0
    settings.KUBE_WRITE_BURST = 10_000
    kube.client.reset_client()
    yield simulator
    kube.client.reset_client()


@pytest.fixture(autouse=True)
def lock_key(monkeypatch) -> Iterator[str]:
    """A lock key of this test's own, so concurrent test runs on the same Redis never see each other."""
    key = f"argoml:gc:test-lock:{uuid.uuid4().hex}"
    monkeypatch.setattr(gc_lock, "LOCK_KEY", key)
    yield key
    gc_lock.redis_client().delete(key)


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch) -> None:
    """The client retries transient errors with backoff; keep the test's waits short."""
    monkeypatch.setattr(kube.client, "RETRY_BASE_SECONDS", 0.01)


@pytest.fixture
def gc_settings(settings):
    """Global retentions of 1 hour (succeeded) and 1 day (failed), every namespace allowed."""
    settings.GC_SUCCEEDED_RETENTION_SECONDS = 3600
    settings.GC_FAILED_RETENTION_SECONDS = 24 * 3600
    settings.GC_NAMESPACES_ALLOW = []
    settings.GC_NAMESPACES_DENY = []
    settings.GC_PAGE_SIZE = 500
    return settings
