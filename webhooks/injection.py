"""Injection rules: which Pods a rule selects, what it adds to them, and the checks an admin's rule passes.

Pure. A rule selects Pods by namespace (names or `*` patterns) and a Kubernetes label selector, and adds
env vars read from Secrets to every container and init container, imagePullSecrets, labels and
annotations. It only ever adds: whatever the Pod already sets (an env var, a label of the same name) wins,
and so does an earlier rule over a later one. Injected env vars go first in each container's list, so the
Pod's own variables can refer to them as `$(NAME)` (Kubernetes expands only variables defined earlier).
What the rules add is returned as a JSON Patch, ready for the AdmissionReview response.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kube.names import NameFormat
from workflows.lint.names import label_key_problems, label_value_problems

from .jsonpatch import Operation, escape

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
CONTAINER_LISTS = ("initContainers", "containers")

_NAMESPACE_PATTERN = re.compile(r"^[a-z0-9*?]([-a-z0-9*?]*[a-z0-9*?])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


@dataclass(frozen=True)
class SecretEnv:
    """An env var whose value is one key of a Secret in the Pod's namespace."""

    name: str
    secret_name: str
    key: str
    optional: bool = False

    def manifest(self) -> dict[str, Any]:
        reference: dict[str, Any] = {"name": self.secret_name, "key": self.key}
        if self.optional:
            reference["optional"] = True
        return {"name": self.name, "valueFrom": {"secretKeyRef": reference}}


@dataclass(frozen=True)
class Rule:
    """One enabled injection rule, as the webhook holds it in memory (no database behind it)."""

    name: str
    namespaces: tuple[str, ...] = ()
    pod_selector: Mapping[str, Any] = field(default_factory=dict)
    env: tuple[SecretEnv, ...] = ()
    image_pull_secrets: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    def selects(self, namespace: str, pod_labels: Mapping[str, Any]) -> bool:
        """Whether a Pod in `namespace` with `pod_labels` gets this rule: no namespaces means all of them."""
        in_namespace = not self.namespaces or any(
            fnmatch.fnmatchcase(namespace, pattern) for pattern in self.namespaces
        )
        return in_namespace and selector_matches(self.pod_selector, pod_labels)


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """A Kubernetes LabelSelector (`matchLabels` and `matchExpressions`, ANDed); an empty one matches all."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def injection_patch(
    pod: dict[str, Any], namespace: str, rules: Iterable[Rule]
) -> tuple[list[Operation], list[str]]:
    """The JSON Patch that applies every rule selecting `pod`, and the names of those rules (in order).

    The patch is built from the paths it touches, without copying the Pod: a Pod's admission must stay
    cheap however large its spec is. A field of the wrong type is left alone (the apiserver refuses it).
    """
    metadata = pod.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    selected = [rule for rule in rules if rule.selects(namespace, labels if isinstance(labels, dict) else {})]
    if not selected:
        return [], []
    env: dict[str, SecretEnv] = {}
    pull_secrets: dict[str, None] = {}
    added_labels: dict[str, str] = {}
    added_annotations: dict[str, str] = {}
    for rule in selected:  # the first rule to set a name wins
        for variable in rule.env:
            env.setdefault(variable.name, variable)
        pull_secrets.update(dict.fromkeys(rule.image_pull_secrets))
        for key, value in rule.labels.items():
            added_labels.setdefault(key, value)
        for key, value in rule.annotations.items():
            added_annotations.setdefault(key, value)
    operations: list[Operation] = []
    if isinstance(metadata, dict):
        operations += _add_keys(metadata, "/metadata", "labels", added_labels)
        operations += _add_keys(metadata, "/metadata", "annotations", added_annotations)
    spec = pod.get("spec")
    if isinstance(spec, dict):
        operations += _add_pull_secrets(spec, list(pull_secrets))
        for list_name in CONTAINER_LISTS:
            containers = spec.get(list_name)
            for index, container in enumerate(containers if isinstance(containers, list) else []):
                if isinstance(container, dict):
                    operations += _prepend_env(container, f"/spec/{list_name}/{index}", env.values())
    return operations, [rule.name for rule in selected]


def _add_keys(parent: dict[str, Any], path: str, key: str, additions: Mapping[str, str]) -> list[Operation]:
    """Add the keys of `additions` that `parent[key]` lacks (creating it when missing)."""
    current = parent.get(key)
    if current is None:
        return [{"op": "add", "path": f"{path}/{key}", "value": dict(additions)}] if additions else []
    if not isinstance(current, dict):
        return []
    return [
        {"op": "add", "path": f"{path}/{key}/{escape(name)}", "value": value}
        for name, value in additions.items()
        if name not in current
    ]


def _add_pull_secrets(spec: dict[str, Any], names: list[str]) -> list[Operation]:
    current = spec.get("imagePullSecrets")
    if current is None:
        return (
            [{"op": "add", "path": "/spec/imagePullSecrets", "value": [{"name": n} for n in names]}]
            if names
            else []
        )
    if not isinstance(current, list):
        return []
    have = {entry.get("name") for entry in current if isinstance(entry, dict)}
    return [
        {"op": "add", "path": "/spec/imagePullSecrets/-", "value": {"name": n}}
        for n in names
        if n not in have
    ]


def _prepend_env(container: dict[str, Any], path: str, variables: Iterable[SecretEnv]) -> list[Operation]:
    """Insert the variables the container lacks at the head of its env, in order."""
    current = container.get("env")
    if current is None:
        manifests = [variable.manifest() for variable in variables]
        return [{"op": "add", "path": f"{path}/env", "value": manifests}] if manifests else []
    if not isinstance(current, list):
        return []
    have = {entry.get("name") for entry in current if isinstance(entry, dict)}
    missing = [variable for variable in variables if variable.name not in have]
    return [
        {"op": "add", "path": f"{path}/env/{position}", "value": variable.manifest()}
        for position, variable in enumerate(missing)
    ]


# --- checks of what an admin enters (the model's clean() calls these) ---------------------------


def namespace_pattern_problems(patterns: object) -> list[str]:
    if not isinstance(patterns, list):
        return ["must be a list of namespace names or patterns such as team-*"]
    return [
        f"{pattern!r} is not a namespace name or a pattern of one (lowercase letters, digits, '-', '*', '?')"
        for pattern in patterns
        if not isinstance(pattern, str) or len(pattern) > 63 or not _NAMESPACE_PATTERN.match(pattern)
    ]


def selector_problems(selector: object) -> list[str]:
    """What is wrong with a LabelSelector, in Kubernetes' terms."""
    if not isinstance(selector, dict):
        return ["must be a label selector: an object with matchLabels and/or matchExpressions"]
    problems = [
        f"unknown field {key!r}" for key in selector if key not in ("matchLabels", "matchExpressions")
    ]
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, dict):
        problems.append("matchLabels must be an object of label key to value")
    else:
        problems += label_problems(match_labels, "matchLabels")
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return [*problems, "matchExpressions must be a list"]
    for index, expression in enumerate(expressions):
        problems += _expression_problems(expression, f"matchExpressions[{index}]")
    return problems


def _expression_problems(expression: object, where: str) -> list[str]:
    if not isinstance(expression, dict):
        return [f"{where} must be an object with key, operator and values"]
    problems = [
        f"{where}: unknown field {key!r}" for key in expression if key not in ("key", "operator", "values")
    ]
    key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values")
    if not isinstance(key, str) or not label_key_ok(key):
        problems.append(f"{where}.key: {key!r} is not a valid label key")
    if operator not in SELECTOR_OPERATORS:
        problems.append(f"{where}.operator: must be one of {', '.join(SELECTOR_OPERATORS)}, not {operator!r}")
    elif operator in ("In", "NotIn"):
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            problems.append(f"{where}.values: {operator} needs a non-empty list of strings")
    elif values:
        problems.append(f"{where}.values: must be empty for {operator}")
    return problems


def label_problems(labels: object, what: str, *, values_are_labels: bool = True) -> list[str]:
    """Problems of a label (or, with `values_are_labels=False`, annotation) mapping."""
    if not isinstance(labels, dict):
        return [f"{what} must be an object of key to string value"]
    problems = []
    for key, value in labels.items():
        if not label_key_ok(key):
            problems.append(
                f"{what}: {key!r} is not a valid key (an optional DNS prefix and '/', then a name)"
            )
        if not isinstance(value, str):
            problems.append(f"{what}: the value of {key!r} must be a string")
        elif values_are_labels and label_value_problems(value):
            problems.append(f"{what}: {value!r} is not a valid label value")
    return problems


def label_key_ok(key: object) -> bool:
    """Kubernetes' qualified name: `[prefix/]name`, a DNS-subdomain prefix and a 63-character name."""
    return isinstance(key, str) and not label_key_problems(key)


def secret_name_ok(name: object) -> bool:
    return isinstance(name, str) and not NameFormat.SUBDOMAIN.problems(name)


def secret_key_ok(key: object) -> bool:
    return isinstance(key, str) and 0 < len(key) <= 253 and bool(_SECRET_KEY.match(key))


def env_name_ok(name: object) -> bool:
    return isinstance(name, str) and bool(_ENV_NAME.match(name))
