"""What the OpenAPI schema documents: the REST API under /api/, not the admission webhooks (the API server
calls those with AdmissionReview bodies Kubernetes documents; they are not for users)."""

from __future__ import annotations

from typing import Any


def api_endpoints_only(endpoints: list[tuple[str, Any, Any, Any]], **kwargs: Any) -> list[Any]:
    """drf-spectacular's preprocessing hook: keep the endpoints whose path starts with /api/."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith("/api/")]
