"""Object metadata rules: name validation, generateName, generation bumps. Pure functions."""

from __future__ import annotations

import random
import re
from typing import Any

from kubesim.errors import Cause

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

#: Kinds whose names must be DNS labels (no dots), as in the apiserver's validation.
DNS_LABEL_KINDS = frozenset({"Namespace", "Service"})


#: RBAC objects are named by path segment (ValidatePathSegmentName): `system:discovery` is a valid name
PATH_SEGMENT_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})


_DNS_LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character"
)
_DNS_SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character"
)


def name_causes(name: str, kind: str) -> list[Cause]:
    if kind in PATH_SEGMENT_KINDS:
        valid = name not in ("", ".", "..") and "/" not in name and "%" not in name
        rule = "may not contain '/' or '%'"
    elif kind in DNS_LABEL_KINDS:
        valid, rule = len(name) <= 63 and bool(_LABEL.match(name)), _DNS_LABEL_RULE
    else:
        valid, rule = len(name) <= 253 and bool(_SUBDOMAIN.match(name)), _DNS_SUBDOMAIN_RULE
    return [] if valid else [Cause("metadata.name", f'Invalid value: "{name}": {rule}')]


def label_causes(metadata: dict[str, Any]) -> list[Cause]:
    causes = []
    labels = metadata.get("labels") or {}
    if not isinstance(labels, dict):
        return [Cause("metadata.labels", "Invalid value: must be a map of strings")]
    for key, value in labels.items():
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            causes.append(
                Cause(
                    "metadata.labels",
                    f'Invalid value: "{value}": a valid label must be an empty string or consist of '
                    "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                    f"alphanumeric character (label {key})",
                )
            )
    annotations = metadata.get("annotations") or {}
    if not isinstance(annotations, dict) or any(not isinstance(v, str) for v in annotations.values()):
        causes.append(Cause("metadata.annotations", "Invalid value: annotation values must be strings"))
    return causes


def generated_name(prefix: str) -> str:
    return prefix + "".join(random.choices(_SUFFIX_ALPHABET, k=5))  # noqa: S311 - names, not secrets


def _without(obj: dict[str, Any], skip: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in skip}


def spec_changed(old: dict[str, Any], new: dict[str, Any], has_status: bool) -> bool:
    """Whether `generation` must be bumped: anything outside metadata (and status, if a subresource)
    changed."""
    skip = ("metadata", "status", "apiVersion", "kind") if has_status else ("metadata", "apiVersion", "kind")
    return _without(old, skip) != _without(new, skip)


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """The object minus the fields a no-op write would still change (resourceVersion, managedFields times).

    Who owns what stays in: a second manager applying the same value changes only managedFields, and
    that ownership must be stored (the apiserver skips a write only when the timestamps alone moved)."""
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    if "managedFields" in metadata:
        metadata["managedFields"] = [
            {k: v for k, v in entry.items() if k != "time"} for entry in metadata["managedFields"]
        ]
    return {**obj, "metadata": metadata}
