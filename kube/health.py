"""Is the cluster reachable? Used by /readyz."""

from __future__ import annotations

import urllib3

from .config import cluster_configured, new_api_client

__all__ = ["cluster_configured", "cluster_reachable"]


def cluster_reachable(timeout: float) -> None:
    """Raise unless the API server answers GET /version with 200 within `timeout` seconds."""
    api_client = new_api_client()
    try:
        headers: dict[str, str] = {"Accept": "application/json"}
        api_client.update_params_for_auth(headers, [], ["BearerToken"], "/version", "GET", None)
        response = api_client.rest_client.pool_manager.request(
            "GET",
            api_client.configuration.host.rstrip("/") + "/version",
            headers=headers,
            timeout=urllib3.Timeout(total=timeout),
            retries=False,
        )
        if response.status != 200:
            raise RuntimeError(f"GET /version answered {response.status}")
    finally:
        api_client.close()
