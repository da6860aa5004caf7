"""Typed errors for API responses, so callers say `except NotFound` instead of comparing status codes."""

from __future__ import annotations

import json
from typing import Any


class ClusterNotConfigured(RuntimeError):
    """No cluster is configured (neither KUBECONFIG nor KUBE_IN_CLUSTER): a missing dependency, which the API
    answers as an unreachable cluster (503 with this message), never a traceback. A RuntimeError, as it was
    before it had a type of its own."""


class ApiError(Exception):
    """An error Status from the API server (or the connection to it)."""

    status: int = 0

    def __init__(self, message: str, *, status: int | None = None, reason: str = "", body: Any = None):
        super().__init__(message)
        if status is not None:
            self.status = status
        self.reason = reason
        self.body = body
        self.retry_after: float | None = None

    @property
    def transient(self) -> bool:
        """Worth retrying the same request later."""
        return False


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    """409: a stale resourceVersion on update, or a name already taken (see AlreadyExists)."""

    status = 409


class AlreadyExists(Conflict):
    pass


class Gone(ApiError):
    """410: the resourceVersion or continue token is too old; relist."""

    status = 410


class Invalid(ApiError):
    """422: the object failed validation; `causes` name the fields."""

    status = 422

    @property
    def causes(self) -> list[dict[str, Any]]:
        details = (self.body or {}).get("details") if isinstance(self.body, dict) else None
        return list((details or {}).get("causes") or [])


class InvalidName(Invalid):
    """A namespace, name or subresource that is not a valid Kubernetes name, refused before any request is
    sent (so ``../other-namespace/...`` can never change which object a path addresses).

    It is an `Invalid` whose one cause names the field, as the apiserver's own 422 would, so every caller
    that turns a 422 into "this field is wrong" handles it already; `field` and `value` say which.
    """

    def __init__(self, field: str, value: str, problems: list[str]):
        message = f"{field}: Invalid value: {value!r}: {'; '.join(problems)}"
        body = {"reason": "Invalid", "details": {"causes": [{"field": field, "message": message}]}}
        super().__init__(message, reason="Invalid", body=body)
        self.field = field
        self.value = value
        self.problems = problems


class Forbidden(ApiError):
    status = 403


class TooManyRequests(ApiError):
    status = 429

    @property
    def transient(self) -> bool:
        return True


class ServerError(ApiError):
    """5xx from the server, or no answer at all (status 0)."""

    status = 500

    @property
    def transient(self) -> bool:
        return True


_BY_STATUS: dict[int, type[ApiError]] = {
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_from_response(status: int, data: bytes, headers: Any = None) -> ApiError:
    """Build the typed error for an HTTP error response, keeping the server's Status message."""
    try:
        body = json.loads(data) if data else None
    except ValueError:
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    reason = body.get("reason", "") if isinstance(body, dict) else ""
    text = message or (data[:500].decode("utf-8", "replace") if data else f"HTTP {status}")
    cls: type[ApiError]
    if status == 409 and reason == "AlreadyExists":
        cls = AlreadyExists
    elif status >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(status, ApiError)
    error = cls(text, status=status, reason=reason, body=body)
    retry_after = headers.get("Retry-After") if headers is not None else None
    if retry_after:
        try:
            error.retry_after = float(retry_after)
        except ValueError:
            error.retry_after = None
    return error
