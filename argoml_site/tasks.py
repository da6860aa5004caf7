"""Tasks of the project itself."""

from __future__ import annotations

import socket

from celery import shared_task


@shared_task(name="argoml_site.ping")
def ping() -> dict[str, str]:
    """Round trip through the broker: proves a worker is consuming and can answer."""
    return {"pong": socket.gethostname()}
