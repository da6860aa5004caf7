"""AdmissionReview `admission.k8s.io/v1`: the request the apiserver sends, and the response it expects.

Pure: `parse_review` turns a decoded body into an `AdmissionRequest` (or raises `MalformedReview` naming the
field), and `review_response` turns a `Verdict` into the body to send back. The apiserver reads the
response's `uid` to match it to its call, so it is always echoed; a JSON Patch travels base64-encoded.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from fields import FieldError

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
# What a denial carries as `status.reason`, by HTTP code (metav1.StatusReason values).
REASONS = {400: "BadRequest", 403: "Forbidden", 422: "Invalid", 500: "InternalError"}


class MalformedReview(ValueError):
    """The body is not an AdmissionReview v1 request; the message names the field that is wrong."""


@dataclass(frozen=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}/{self.version}" if self.group else f"{self.kind}/{self.version}"


@dataclass(frozen=True)
class AdmissionRequest:
    """What our webhooks read of `request`. `object` is None on DELETE, `old_object` on CREATE."""

    uid: str
    kind: GroupVersionKind
    operation: str
    namespace: str
    name: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool
    sub_resource: str = ""
    #: `request.resource`'s group and plural: what a subresource's object (a Scale) belongs to
    resource_group: str = ""
    resource: str = ""

    @property
    def changes_spec(self) -> bool:
        """Whether the request writes a spec worth checking: a CREATE, or an UPDATE that changes `spec`.

        Label, annotation, finalizer and status-only updates do not, and nothing done to an object being
        deleted does, so an object admitted before a rule existed can still be labelled, finalized and
        deleted.
        """
        if self.object is None:
            return False
        if self.operation != "UPDATE":
            return True
        metadata = self.object.get("metadata")
        if isinstance(metadata, dict) and metadata.get("deletionTimestamp"):
            return False
        return self.old_object is None or self.old_object.get("spec") != self.object.get("spec")

    @property
    def object_name(self) -> str:
        """The name, else the generateName the user wrote, else "" (a Pod of a Deployment, say)."""
        return self.name or _metadata_name(self.object) or _metadata_name(self.old_object)

    @property
    def display_name(self) -> str:
        """How a message names the object: `TFJob "mnist"`."""
        return f'{self.kind.kind} "{self.object_name}"' if self.object_name else self.kind.kind


@dataclass(frozen=True)
class Verdict:
    """A webhook's answer before encoding: allowed or denied (with an HTTP code and the fields at fault,
    sent as `metav1.StatusFieldError`s that kubectl and clients list), warnings, and a patch."""

    allowed: bool
    code: int = 200
    message: str = ""
    causes: tuple[FieldError, ...] = ()
    warnings: tuple[str, ...] = ()
    patch: tuple[dict[str, Any], ...] = ()

    @classmethod
    def allow(
        cls, warnings: tuple[str, ...] | list[str] = (), patch: list[dict[str, Any]] | None = None
    ) -> Verdict:
        return cls(True, warnings=tuple(warnings), patch=tuple(patch or ()))

    @classmethod
    def deny(
        cls,
        code: int,
        message: str,
        causes: tuple[FieldError, ...] | list[FieldError] = (),
        warnings: tuple[str, ...] | list[str] = (),
    ) -> Verdict:
        if code < 400:
            raise ValueError(f"a denial needs an error code (>= 400), not {code}")
        return cls(False, code=code, message=message, causes=tuple(causes), warnings=tuple(warnings))


def parse_review(body: object) -> AdmissionRequest:
    """The request inside an AdmissionReview v1 body, checked field by field."""
    if not isinstance(body, dict):
        raise MalformedReview("the body must be a JSON object (an AdmissionReview)")
    if body.get("apiVersion") != API_VERSION:
        raise MalformedReview(f"apiVersion must be {API_VERSION!r}, not {body.get('apiVersion')!r}")
    if body.get("kind") != KIND:
        raise MalformedReview(f"kind must be {KIND!r}, not {body.get('kind')!r}")
    request = body.get("request")
    if not isinstance(request, dict):
        raise MalformedReview("request is required and must be an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReview("request.uid is required and must be a non-empty string")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise MalformedReview(f"request.operation must be one of {', '.join(OPERATIONS)}, not {operation!r}")
    dry_run = request.get("dryRun", False)
    if not isinstance(dry_run, bool) and dry_run is not None:
        raise MalformedReview(f"request.dryRun must be true or false, not {dry_run!r}")
    return AdmissionRequest(
        uid=uid,
        kind=_parse_kind(request.get("kind")),
        operation=operation,
        namespace=_optional_string(request, "namespace"),
        name=_optional_string(request, "name"),
        object=_optional_object(request, "object"),
        old_object=_optional_object(request, "oldObject"),
        dry_run=bool(dry_run),
        sub_resource=_optional_string(request, "subResource"),
        resource_group=_resource_field(request, "group"),
        resource=_resource_field(request, "resource"),
    )


def review_response(request: AdmissionRequest, verdict: Verdict) -> dict[str, Any]:
    """The AdmissionReview the apiserver expects back for `request`.

    A denial with causes carries them as `status.details`, with the object's kind and name, as the
    apiserver's own validation errors do: kubectl then prints `The TFJob "x" is invalid: <field>: <problem>`.
    """
    response: dict[str, Any] = {"uid": request.uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        status: dict[str, Any] = {
            "status": "Failure",
            "code": verdict.code,
            "reason": REASONS.get(verdict.code, "BadRequest"),
            "message": verdict.message,
        }
        if verdict.causes:
            status["details"] = {
                "name": request.object_name,
                "group": request.kind.group,
                "kind": request.kind.kind,
                "causes": [
                    {"type": "FieldValueInvalid", "field": cause.path, "message": cause.message}
                    for cause in verdict.causes
                ],
            }
        response["status"] = status
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    if verdict.allowed and verdict.patch:
        encoded = json.dumps(list(verdict.patch), separators=(",", ":")).encode()
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(encoded).decode("ascii")
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def _parse_kind(kind: object) -> GroupVersionKind:
    if not isinstance(kind, dict):
        raise MalformedReview("request.kind is required: an object with group, version and kind")
    values = []
    for key in ("group", "version", "kind"):
        value = kind.get(key, "")
        if not isinstance(value, str):
            raise MalformedReview(f"request.kind.{key} must be a string, not {value!r}")
        values.append(value)
    if not values[1] or not values[2]:
        raise MalformedReview("request.kind.version and request.kind.kind are required")
    return GroupVersionKind(*values)


def _resource_field(request: dict[str, Any], key: str) -> str:
    resource = request.get("resource")
    if resource is None:
        return ""
    if not isinstance(resource, dict):
        raise MalformedReview(f"request.resource must be an object, not {type(resource).__name__}")
    value = resource.get(key) or ""
    if not isinstance(value, str):
        raise MalformedReview(f"request.resource.{key} must be a string, not {type(value).__name__}")
    return value


def _optional_string(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedReview(f"request.{key} must be a string, not {type(value).__name__}")
    return value


def _optional_object(request: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = request.get(key)
    if value is not None and not isinstance(value, dict):
        raise MalformedReview(f"request.{key} must be an object or null, not {type(value).__name__}")
    return value


def _metadata_name(obj: dict[str, Any] | None) -> str:
    """`metadata.name`, else `metadata.generateName` (what a user wrote to name it), else ""."""
    metadata = obj.get("metadata") if obj else None
    if not isinstance(metadata, dict):
        return ""
    name = metadata.get("name") or metadata.get("generateName")
    return name if isinstance(name, str) else ""
