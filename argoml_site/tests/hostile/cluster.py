"""The cluster of the hostile-input suite: kubesim in a process of its own, so that what the suite measures
(`hostile.measure`) is the work of our code alone. An in-process simulator would add its own handling of a
50,000-label object (schema walks a real API server does in Go, in milliseconds) to our heap and our
clock."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.test.utils import override_settings

from argoml_site.crds import CUSTOM_RESOURCES, KUBEFLOW_RESOURCES, TRAINER_RESOURCES
from kube.client import get_client, reset_client
from kube.errors import Conflict
from kube.resources import CRD, NAMESPACE, ResourceType
from kubesim.argo.crd import argo_crds
from trainer.resources import CLUSTER_TRAINING_RUNTIME
from trainer.runtimes import catalog

REPO = Path(__file__).resolve().parents[3]


@contextmanager
def separate_simulator(*namespaces: str) -> Iterator[None]:
    """`python -m kubesim` (no kubelet, no Argo: nothing runs, the objects are what matters) with every CRD
    of ours, Kubeflow's and Argo's, the shipped ClusterTrainingRuntimes and `namespaces`; the settings point
    the client at it for the duration."""
    with tempfile.TemporaryDirectory(prefix="kubesim-hostile-") as scratch:
        kubeconfig = Path(scratch) / "kubeconfig"
        command = [sys.executable, "-m", "kubesim", "--port", "0", "--kubeconfig", str(kubeconfig)]
        command += ["--insecure", "--no-kubelet", "--no-argo"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO)
        try:
            assert process.stdout is not None
            process.stdout.readline()  # its address, once it serves
            with override_settings(
                KUBECONFIG=str(kubeconfig),
                KUBE_IN_CLUSTER=False,
                KUBE_WRITE_QPS=10_000.0,
                KUBE_WRITE_BURST=10_000,
                JOBS_KUBEFLOW_V1=True,
                TRAINER_ENABLED=True,
            ):
                reset_client()
                _install(namespaces)
                yield
            reset_client()
        finally:
            process.terminate()
            process.wait(timeout=30)


def _install(namespaces: tuple[str, ...]) -> None:
    crds = [resource.manifest() for resource in (*CUSTOM_RESOURCES, *KUBEFLOW_RESOURCES, *TRAINER_RESOURCES)]
    for crd in [*crds, *argo_crds()]:
        _create(CRD, crd)
    for runtime in catalog.ready_made_runtimes():
        _create(CLUSTER_TRAINING_RUNTIME, runtime)
    for namespace in namespaces:
        ensure_namespace(namespace)


def ensure_namespace(name: str) -> None:
    _create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def _create(resource: ResourceType, manifest: dict[str, Any]) -> None:
    with contextlib.suppress(Conflict):  # already there
        get_client().create(resource, manifest, None)
