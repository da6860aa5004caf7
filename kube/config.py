"""Where the cluster is: a kubeconfig file, the pod's service account, or nothing configured."""

from __future__ import annotations

from django.conf import settings
from kubernetes import client, config

#: Connections kept open to the API server per process. The client's default (5 per CPU) is fewer than a
#: controller worker uses at once — a watch per informer plus each reconcile thread's parallel calls — and
#: every connection past it is closed after one request and opened again for the next.
CONNECTION_POOL_SIZE = 64


def cluster_configured() -> bool:
    return bool(settings.KUBE_IN_CLUSTER or settings.KUBECONFIG)


def new_api_client() -> client.ApiClient:
    """A fresh ApiClient for the configured cluster; raises when none is configured."""
    configuration = client.Configuration()
    if settings.KUBE_IN_CLUSTER:
        config.load_incluster_config(client_configuration=configuration)
    elif settings.KUBECONFIG:
        config.load_kube_config(config_file=settings.KUBECONFIG, client_configuration=configuration)
    else:
        raise RuntimeError("No cluster is configured: set KUBECONFIG or KUBE_IN_CLUSTER=true.")
    configuration.connection_pool_maxsize = max(CONNECTION_POOL_SIZE, configuration.connection_pool_maxsize)
    return client.ApiClient(configuration)
