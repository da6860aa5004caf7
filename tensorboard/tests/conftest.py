"""Fixtures of the spawner's tests: a simulator with our CRDs and Argo's as the configured cluster."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.test import override_settings

from kube.client import reset_client
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

from .cluster import install_crds
from .workflows import NAMESPACE

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A simulator on a frozen clock at T0, with the kubelet (Deployments get ready pods) and our CRDs,
    configured as the cluster of get_client()."""
    with running_simulator(frozen_clock=True, start_time=T0, kubelet=True) as simulator:
        install_crds(simulator)
        simulator.store.ensure_namespace(NAMESPACE)
        with override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            try:
                yield simulator
            finally:
                reset_client()
