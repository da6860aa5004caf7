"""Where the cluster is: a kubeconfig file, the pod's service account, or nothing configured."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from kubernetes import client, config

from kube.errors import ClusterNotConfigured

#: Connections kept open to the API server per process. The client's default (5 per CPU) is fewer than a
#: controller worker uses at once — a watch per informer plus each reconcile thread's parallel calls — and
#: every connection past it is closed after one request and opened again for the next.
CONNECTION_POOL_SIZE = 64


def cluster_configured() -> bool:
    return bool(settings.KUBE_IN_CLUSTER or settings.KUBECONFIG)


def service_account_dir() -> Path:
    """Where the kubelet mounted the pod's ServiceAccount: `token`, `ca.crt` and `namespace`."""
    return Path(settings.KUBE_SERVICEACCOUNT_DIR)


def new_api_client() -> client.ApiClient:
    """A fresh ApiClient for the configured cluster; ClusterNotConfigured when none is.

    In a cluster the address comes from KUBERNETES_SERVICE_HOST/PORT and the credentials from the mounted
    ServiceAccount; the client re-reads the token file every minute, as the kubelet rotates it.
    """
    configuration = client.Configuration()
    if settings.KUBE_IN_CLUSTER:
        directory = service_account_dir()
        config.incluster_config.InClusterConfigLoader(
            token_filename=str(directory / "token"), cert_filename=str(directory / "ca.crt")
        ).load_and_set(client_configuration=configuration)
    elif settings.KUBECONFIG:
        config.load_kube_config(config_file=settings.KUBECONFIG, client_configuration=configuration)
    else:
        raise ClusterNotConfigured("No cluster is configured: set KUBECONFIG or KUBE_IN_CLUSTER=true.")
    configuration.connection_pool_maxsize = max(CONNECTION_POOL_SIZE, configuration.connection_pool_maxsize)
    return client.ApiClient(configuration)
