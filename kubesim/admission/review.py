"""AdmissionReview v1 requests and responses, and the errors the apiserver makes of them (pure)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from kubesim.admission.matching import Attributes
from kubesim.errors import ApiError

DEFAULT_USER = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class WebhookCallError(Exception):
    """The webhook could not be called or answered nonsense; failurePolicy decides what follows."""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    patch: list[dict[str, Any]] | None = None
    status: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def review_request(
    request: Attributes, kind: tuple[str, str, str], uid: str, *, dry_run: bool, user_info: dict[str, Any]
) -> dict[str, Any]:
    """The AdmissionReview the apiserver POSTs to a webhook; `kind` is (group, version, kind) of the object
    shown, which differs from the resource's for a subresource with a kind of its own (a Scale)."""
    group, version, kind_name = kind
    group_version_kind = {"group": group, "version": version, "kind": kind_name}
    group_version_resource = {
        "group": request.group,
        "version": request.version,
        "resource": request.resource,
    }
    body: dict[str, Any] = {
        "uid": uid,
        "kind": group_version_kind,
        "resource": group_version_resource,
        "requestKind": group_version_kind,
        "requestResource": group_version_resource,
        "name": request.name,
        "operation": request.operation,
        "userInfo": user_info,
        "object": request.object,
        "oldObject": request.old_object,
        "dryRun": dry_run,
        "options": {"kind": _OPTIONS_KIND.get(request.operation, ""), "apiVersion": "meta.k8s.io/v1"},
    }
    if request.subresource:
        body["subResource"] = body["requestSubResource"] = request.subresource
    if request.namespaced:
        body["namespace"] = request.namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def read_verdict(payload: Any, uid: str) -> Verdict:
    """Check a webhook's AdmissionReview response (raises WebhookCallError on anything malformed)."""
    if not isinstance(payload, dict) or payload.get("kind") != "AdmissionReview":
        raise WebhookCallError("expected webhook response of kind AdmissionReview")
    if payload.get("apiVersion") != "admission.k8s.io/v1":
        raise WebhookCallError(
            f"expected response apiVersion admission.k8s.io/v1, got {payload.get('apiVersion')}"
        )
    response = payload.get("response")
    if not isinstance(response, dict):
        raise WebhookCallError("webhook response was absent")
    if response.get("uid") != uid:
        raise WebhookCallError(f"expected response.uid={uid!r}, got {response.get('uid')!r}")
    allowed = response.get("allowed")
    if not isinstance(allowed, bool):
        raise WebhookCallError("webhook response.allowed must be a boolean")
    patch = None
    if response.get("patch") is not None:
        if response.get("patchType") != "JSONPatch":
            raise WebhookCallError(f'expected patchType "JSONPatch", got {response.get("patchType")!r}')
        try:
            patch = json.loads(base64.b64decode(response["patch"]))
        except (ValueError, TypeError) as error:
            raise WebhookCallError(f"webhook response.patch is not base64 JSON: {error}") from None
        if not isinstance(patch, list):
            raise WebhookCallError("webhook response.patch must be a JSON Patch (a list of operations)")
    raw_status = response.get("status")
    status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    warnings = tuple(str(w) for w in response.get("warnings") or [])
    return Verdict(allowed, patch, status, warnings)


def denial(webhook_name: str, status: dict[str, Any]) -> ApiError:
    """The error a denial becomes, as the apiserver's ToStatusErr builds it (code >= 400, default 400)."""
    denied_by = f'admission webhook "{webhook_name}" denied the request'
    raw_code = status.get("code")
    code = raw_code if isinstance(raw_code, int) else 0
    reason = str(status.get("reason") or "")
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif reason:
        message = f"{denied_by}: {reason}"
    else:
        message = f"{denied_by} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return ApiError(code if code >= 400 else 400, reason, message, details)


def call_failure(webhook_name: str, detail: str) -> ApiError:
    """The 500 a failing call becomes under failurePolicy Fail; `detail` says what went wrong."""
    return ApiError(
        500, "InternalError", f'Internal error occurred: failed calling webhook "{webhook_name}": {detail}'
    )
