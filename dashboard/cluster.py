"""The dashboard's door to the cluster: kube's client, with "no cluster configured" reported like any other
unreachable cluster (a kube ApiError) so pages show a message instead of failing."""

from __future__ import annotations

from kube.client import KubeClient, get_client
from kube.errors import ServerError


def cluster_client() -> KubeClient:
    """The process's client; call it before an app action too, so a missing configuration reads as an
    ApiError the page can explain (the actions call get_client() themselves)."""
    try:
        return get_client()
    except RuntimeError as error:
        raise ServerError(f"the dashboard cannot reach a cluster: {error}", status=0) from error
