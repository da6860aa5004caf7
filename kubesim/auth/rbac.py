"""RBAC as the apiserver's authorizer evaluates it, as pure functions over Role/Binding dicts.

A request is allowed when any rule reachable from the user allows it: the ClusterRoles bound cluster-wide by
ClusterRoleBindings, and in the request's namespace the Roles and ClusterRoles bound there by RoleBindings.
Nothing denies; no rule means 403. (rbac/v1 semantics: plugin/pkg/auth/authorizer/rbac/rbac.go.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubesim.errors import ApiError
from kubesim.identity import User
from kubesim.selectors import match_labels_selector

RBAC_GROUP = "rbac.authorization.k8s.io"
Rule = dict[str, Any]


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do (the apiserver's authorizer.Attributes)."""

    user: User
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _has(values: Iterable[str] | None, wanted: str) -> bool:
    listed = list(values or [])
    return "*" in listed or wanted in listed


def resource_matches(rule: Rule, resource: str, subresource: str) -> bool:
    """`*`, the exact `pods` / `pods/log`, or `*/log` for any resource's log subresource."""
    combined = f"{resource}/{subresource}" if subresource else resource
    for pattern in rule.get("resources") or []:
        if pattern in ("*", combined):
            return True
        if subresource and pattern == f"*/{subresource}":
            return True
    return False


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    """`*`, the exact path, or a prefix ending in `*` (`/healthz/*`)."""
    for pattern in rule.get("nonResourceURLs") or []:
        if pattern == "*" or pattern == path:
            return True
        if pattern.endswith("*") and path.startswith(pattern[:-1]):
            return True
    return False


def rule_allows(rule: Rule, attributes: Attributes) -> bool:
    if not _has(rule.get("verbs"), attributes.verb):
        return False
    if not attributes.resource_request:
        return non_resource_url_matches(rule, attributes.path)
    names = rule.get("resourceNames") or []
    return (
        _has(rule.get("apiGroups"), attributes.api_group)
        and resource_matches(rule, attributes.resource, attributes.subresource)
        and (not names or attributes.name in names)
    )


def subject_matches(subject: dict[str, Any], user: User, binding_namespace: str) -> bool:
    """A binding subject names this user: by User name, by one of its Groups, or as its ServiceAccount."""
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(user.name == f"system:serviceaccount:{namespace}:{name}")
    return False


def binds(binding: dict[str, Any], user: User) -> bool:
    namespace = (binding.get("metadata") or {}).get("namespace", "")
    return any(subject_matches(s, user, namespace) for s in binding.get("subjects") or [])


@dataclass
class Policy:
    """The RBAC objects an authorization decision reads (a snapshot: lists of dicts)."""

    cluster_roles: dict[str, dict[str, Any]]
    cluster_role_bindings: list[dict[str, Any]]
    roles: dict[tuple[str, str], dict[str, Any]]  # (namespace, name) → Role
    role_bindings: list[dict[str, Any]]

    def rules_for(self, user: User, namespace: str) -> list[Rule]:
        """Every rule that applies to `user` in `namespace` ("" → cluster-wide rules only)."""
        rules: list[Rule] = []
        for binding in self.cluster_role_bindings:
            if binds(binding, user):
                rules += self._role_rules(binding.get("roleRef") or {}, "")
        if namespace:
            for binding in self.role_bindings:
                if (binding.get("metadata") or {}).get("namespace") == namespace and binds(binding, user):
                    rules += self._role_rules(binding.get("roleRef") or {}, namespace)
        return rules

    def _role_rules(self, reference: dict[str, Any], namespace: str) -> list[Rule]:
        kind, name = reference.get("kind"), reference.get("name", "")
        if kind == "ClusterRole":
            role = self.cluster_roles.get(name)
        elif kind == "Role" and namespace:
            role = self.roles.get((namespace, name))
        else:
            role = None
        return [r for r in (role or {}).get("rules") or [] if isinstance(r, dict)]

    def allows(self, attributes: Attributes) -> bool:
        return any(rule_allows(r, attributes) for r in self.rules_for(attributes.user, attributes.namespace))


def forbidden_message(attributes: Attributes) -> str:
    """The authorizer's reason, worded as the apiserver's `forbiddenMessage`."""
    user = attributes.user.name
    if not attributes.resource_request:
        return f'User "{user}" cannot {attributes.verb} path "{attributes.path}"'
    where = f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope"
    return (
        f'User "{user}" cannot {attributes.verb} resource "{attributes.combined_resource}" '
        f'in API group "{attributes.api_group}" {where}'
    )


def forbidden(attributes: Attributes) -> ApiError:
    """403 as the apiserver answers it: `pods "x" is forbidden: User "u" cannot get resource ...`."""
    reason = forbidden_message(attributes)
    if not attributes.resource_request:
        return ApiError(403, "Forbidden", f"forbidden: {reason}", {})
    qualified = (
        f"{attributes.resource}.{attributes.api_group}" if attributes.api_group else attributes.resource
    )
    subject = f'{qualified} "{attributes.name}"' if attributes.name else qualified
    details: dict[str, Any] = {"kind": attributes.resource}
    if attributes.name:
        details["name"] = attributes.name
    if attributes.api_group:
        details["group"] = attributes.api_group
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {reason}", details)


def aggregated_rules(role: dict[str, Any], cluster_roles: Iterable[dict[str, Any]]) -> list[Rule] | None:
    """The rules an aggregated ClusterRole must hold: those of every ClusterRole its `aggregationRule`
    selects, in name order, each rule once (the clusterrole-aggregation controller's result). None when
    `role` does not aggregate."""
    aggregation = role.get("aggregationRule")
    if not isinstance(aggregation, dict):
        return None
    selectors = [match_labels_selector(s) for s in aggregation.get("clusterRoleSelectors") or [] if s]
    own_name = (role.get("metadata") or {}).get("name")
    rules: list[Rule] = []
    for other in sorted(cluster_roles, key=lambda r: (r.get("metadata") or {}).get("name", "")):
        if (other.get("metadata") or {}).get("name") == own_name:
            continue
        if any(selector.matches(other) for selector in selectors):
            for rule in other.get("rules") or []:
                if rule not in rules:
                    rules.append(rule)
    return rules


def review_rules(rules: Iterable[Rule]) -> dict[str, Any]:
    """A SelfSubjectRulesReview status: the rules split into resource and non-resource rules."""
    resource_rules: list[dict[str, Any]] = []
    non_resource_rules: list[dict[str, Any]] = []
    for rule in rules:
        if rule.get("nonResourceURLs"):
            entry = {"verbs": list(rule.get("verbs") or []), "nonResourceURLs": list(rule["nonResourceURLs"])}
            if entry not in non_resource_rules:
                non_resource_rules.append(entry)
            continue
        entry = {"verbs": list(rule.get("verbs") or [])}
        for key in ("apiGroups", "resources", "resourceNames"):
            if rule.get(key):
                entry[key] = list(rule[key])
        if entry not in resource_rules:
            resource_rules.append(entry)
    return {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}


# --- escalation prevention: what a rule set grants that the requester does not hold -----------------------
# (k8s.io/component-helpers/auth/rbac/validation policy_comparator.go and pkg/registry/rbac/validation)


def breakdown(rule: Rule) -> list[Rule]:
    """A rule as single-verb, single-resource, single-name rules (upstream `BreakdownRule`)."""
    verbs = list(rule.get("verbs") or [])
    names = list(rule.get("resourceNames") or [])
    pieces: list[Rule] = []
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            for verb in verbs:
                base: Rule = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                pieces += [{**base, "resourceNames": [n]} for n in names] if names else [base]
    pieces += [
        {"nonResourceURLs": [u], "verbs": [v]} for u in rule.get("nonResourceURLs") or [] for v in verbs
    ]
    return pieces


def _resources_cover(owned: list[str], wanted: list[str]) -> bool:
    if "*" in owned:
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource or f"*/{resource.split('/', 1)[1]}" not in owned:
            return False
    return True


def _urls_cover(owned: list[str], wanted: list[str]) -> bool:
    return all(
        any(o == w or (o.endswith("*") and w.startswith(o.rstrip("*"))) for o in owned) for w in wanted
    )


def rule_covers(owner: Rule, piece: Rule) -> bool:
    """Whether `owner` allows everything the broken-down `piece` allows (upstream `ruleCovers`)."""
    owner_verbs, owner_groups = list(owner.get("verbs") or []), list(owner.get("apiGroups") or [])
    owner_names = list(owner.get("resourceNames") or [])
    piece_names = list(piece.get("resourceNames") or [])
    names_match = not owner_names or (bool(piece_names) and set(piece_names) <= set(owner_names))
    return (
        ("*" in owner_verbs or set(piece.get("verbs") or []) <= set(owner_verbs))
        and ("*" in owner_groups or set(piece.get("apiGroups") or []) <= set(owner_groups))
        and _resources_cover(list(owner.get("resources") or []), list(piece.get("resources") or []))
        and _urls_cover(list(owner.get("nonResourceURLs") or []), list(piece.get("nonResourceURLs") or []))
        and names_match
    )


def uncovered(owner_rules: Iterable[Rule], rules: Iterable[Rule]) -> list[Rule]:
    """The broken-down pieces of `rules` that no owner rule covers (upstream `Covers`)."""
    owned = list(owner_rules)
    return [p for rule in rules for p in breakdown(rule) if not any(rule_covers(o, p) for o in owned)]


def compact(rules: Iterable[Rule]) -> list[Rule]:
    """Rules naming one group, one resource and at most one name merged when only their verbs differ
    (upstream `CompactRules`), so a refusal lists `Verbs:["get" "list"]` once."""
    merged: dict[tuple[str, str, str | None], Rule] = {}
    others: list[Rule] = []
    for rule in rules:
        groups, resources = rule.get("apiGroups") or [], rule.get("resources") or []
        names = rule.get("resourceNames") or []
        simple = (
            len(groups) == 1 and len(resources) == 1 and len(names) <= 1 and not rule.get("nonResourceURLs")
        )
        if not simple:
            others.append(rule)
            continue
        key = (groups[0], resources[0], names[0] if names else None)
        if key in merged:
            verbs = merged[key]["verbs"]
            verbs += [v for v in rule.get("verbs") or [] if v not in verbs]
        else:
            merged[key] = {**rule, "verbs": list(rule.get("verbs") or [])}
    return others + list(merged.values())


def _go_quoted(values: Iterable[str]) -> str:
    """A []string as Go's %q prints it: `["a" "b"]`."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def compact_string(rule: Rule) -> str:
    """A rule as the apiserver prints it in escalation errors (upstream `CompactString`):
    `{APIGroups:["apps"], Resources:["deployments"], Verbs:["delete"]}`."""
    labels = (
        ("apiGroups", "APIGroups"),
        ("resources", "Resources"),
        ("nonResourceURLs", "NonResourceURLs"),
        ("resourceNames", "ResourceNames"),
        ("verbs", "Verbs"),
    )
    parts = [f"{label}:{_go_quoted(rule[key])}" for key, label in labels if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def escalation_message(user: User, missing: Iterable[Rule]) -> str | None:
    """The apiserver's refusal when `missing` is not empty (upstream `ConfirmNoEscalation`), else None."""
    descriptions = sorted({compact_string(rule) for rule in compact(missing)})
    if not descriptions:
        return None
    return (
        f"user {json.dumps(user.name)} (groups={_go_quoted(user.groups)}) is attempting to grant RBAC "
        "permissions not currently held:\n" + "\n".join(descriptions)
    )
