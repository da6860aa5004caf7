"""Is the cluster reachable? Used by /readyz."""

from __future__ import annotations

from .config import cluster_configured, new_api_client

__all__ = ["cluster_configured", "cluster_reachable"]


def cluster_reachable(timeout: float) -> None:
    """Raise unless the API server answers GET /version within `timeout` seconds."""
    with new_api_client() as api_client:
        api_client.call_api(
            "/version", "GET", auth_settings=["BearerToken"], _preload_content=False, _request_timeout=timeout
        )
