"""Which registered webhooks a request goes to: rules, scope, namespaceSelector, objectSelector (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesim.selectors import match_labels_selector

NAME_LABEL = "kubernetes.io/metadata.name"  # the apiserver labels every namespace with its own name


@dataclass(frozen=True)
class Attributes:
    """What the apiserver knows about a request when it picks webhooks."""

    operation: str  # CREATE, UPDATE, DELETE, CONNECT
    group: str
    version: str
    resource: str  # plural
    subresource: str
    namespaced: bool
    namespace: str
    name: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None


def _listed(values: list[str] | None, value: str) -> bool:
    return "*" in (values or []) or value in (values or [])


def _resource_matches(patterns: list[str], resource: str, subresource: str) -> bool:
    for pattern in patterns:
        if pattern == "*/*":
            return True
        head, _, tail = pattern.partition("/")
        if head not in ("*", resource):
            continue
        if "/" in pattern and tail in ("*", subresource) and subresource:
            return True
        if "/" not in pattern and not subresource:
            return True
    return False


def rule_matches(rule: dict[str, Any], request: Attributes) -> bool:
    """One RuleWithOperations: operations, apiGroups, apiVersions, resources (with subresources), scope."""
    scope = rule.get("scope") or "*"
    cluster_scoped = not request.namespaced
    if (scope == "Namespaced" and cluster_scoped) or (scope == "Cluster" and not cluster_scoped):
        return False
    return (
        _listed(rule.get("operations"), request.operation)
        and _listed(rule.get("apiGroups"), request.group)
        and _listed(rule.get("apiVersions"), request.version)
        and _resource_matches(rule.get("resources") or [], request.resource, request.subresource)
    )


def _labels(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    return match_labels_selector(selector).matches({"metadata": {"labels": labels}})


def namespace_selected(
    webhook: dict[str, Any], request: Attributes, namespace: dict[str, Any] | None
) -> bool:
    """namespaceSelector against the request's namespace (a Namespace is judged by its own labels)."""
    selector = webhook.get("namespaceSelector")
    if not selector:
        return True
    if request.group == "" and request.resource == "namespaces":
        own = request.object or request.old_object
        return _selects(selector, {**_labels(own), NAME_LABEL: request.name})
    if not request.namespaced:
        return True
    return _selects(selector, {**_labels(namespace), NAME_LABEL: request.namespace})


def object_selected(webhook: dict[str, Any], request: Attributes) -> bool:
    """objectSelector matches when the new or the old object's labels match."""
    selector = webhook.get("objectSelector")
    if not selector:
        return True
    candidates = [obj for obj in (request.object, request.old_object) if obj is not None]
    return any(_selects(selector, _labels(obj)) for obj in candidates)


def webhook_applies(webhook: dict[str, Any], request: Attributes, namespace: dict[str, Any] | None) -> bool:
    return (
        any(rule_matches(rule, request) for rule in webhook.get("rules") or [])
        and namespace_selected(webhook, request, namespace)
        and object_selected(webhook, request)
    )
