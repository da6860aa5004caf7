"""Defaults and validation of Validating/MutatingWebhookConfigurations (admissionregistration/v1)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kubesim.errors import Cause

_SIDE_EFFECTS = ("None", "NoneOnDryRun")
_FAILURE_POLICIES = ("Fail", "Ignore")
_OPERATIONS = ("*", "CREATE", "UPDATE", "DELETE", "CONNECT")
_SCOPES = ("*", "Cluster", "Namespaced")


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def apply_defaults(config: dict[str, Any], *, mutating: bool) -> None:
    """Fill what the apiserver fills: failurePolicy Fail, matchPolicy Equivalent, timeoutSeconds 10, ..."""
    for webhook in config.get("webhooks") or []:
        if not isinstance(webhook, dict):
            continue
        webhook.setdefault("failurePolicy", "Fail")
        webhook.setdefault("matchPolicy", "Equivalent")
        webhook.setdefault("timeoutSeconds", 10)
        webhook.setdefault("namespaceSelector", {})
        webhook.setdefault("objectSelector", {})
        if mutating:
            webhook.setdefault("reinvocationPolicy", "Never")
        service = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)
        for rule in webhook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def _client_config_causes(client_config: Any, path: str) -> list[Cause]:
    if not isinstance(client_config, dict) or bool(client_config.get("url")) == bool(
        client_config.get("service")
    ):
        return [
            Cause(path, "Required value: exactly one of url or service is required", "FieldValueRequired")
        ]
    url = client_config.get("url")
    if url and urlsplit(str(url)).scheme != "https":
        return [Cause(f"{path}.url", f"Invalid value: {url!r}: 'https' is the only allowed URL scheme")]
    service = client_config.get("service")
    if isinstance(service, dict):
        return [
            Cause(f"{path}.service.{key}", "Required value", "FieldValueRequired")
            for key in ("namespace", "name")
            if not service.get(key)
        ]
    return []


def _webhook_causes(webhook: dict[str, Any], path: str, seen: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    name = str(webhook.get("name") or "")
    if not name:
        causes.append(Cause(f"{path}.name", "Required value", "FieldValueRequired"))
    elif name.count(".") < 2:
        causes.append(
            Cause(
                f"{path}.name",
                f'Invalid value: "{name}": should be a domain with at least three segments separated by dots',
            )
        )
    elif name in seen:
        causes.append(Cause(f"{path}.name", f'Duplicate value: "{name}"', "FieldValueDuplicate"))
    seen.add(name)
    side_effects = webhook.get("sideEffects")
    if side_effects is None:
        causes.append(
            Cause(
                f"{path}.sideEffects",
                f"Required value: must specify one of {_quoted(_SIDE_EFFECTS)}",
                "FieldValueRequired",
            )
        )
    elif side_effects not in _SIDE_EFFECTS:
        causes.append(
            Cause(
                f"{path}.sideEffects",
                f'Unsupported value: "{side_effects}": supported values: {_quoted(_SIDE_EFFECTS)}',
                "FieldValueNotSupported",
            )
        )
    if not webhook.get("admissionReviewVersions"):
        causes.append(
            Cause(
                f"{path}.admissionReviewVersions",
                'Required value: must specify one of "v1", "v1beta1"',
                "FieldValueRequired",
            )
        )
    policy = webhook.get("failurePolicy", "Fail")
    if policy not in _FAILURE_POLICIES:
        causes.append(
            Cause(
                f"{path}.failurePolicy",
                f'Unsupported value: "{policy}": supported values: {_quoted(_FAILURE_POLICIES)}',
                "FieldValueNotSupported",
            )
        )
    timeout = webhook.get("timeoutSeconds", 10)
    if not isinstance(timeout, int) or not 1 <= timeout <= 30:
        causes.append(
            Cause(
                f"{path}.timeoutSeconds",
                f"Invalid value: {timeout}: the timeout value must be between 1 and 30 seconds",
            )
        )
    causes += _client_config_causes(webhook.get("clientConfig"), f"{path}.clientConfig")
    for index, rule in enumerate(webhook.get("rules") or []):
        rule = rule if isinstance(rule, dict) else {}
        for operation in rule.get("operations") or []:
            if operation not in _OPERATIONS:
                causes.append(
                    Cause(
                        f"{path}.rules[{index}].operations",
                        f'Unsupported value: "{operation}": supported values: {_quoted(_OPERATIONS)}',
                        "FieldValueNotSupported",
                    )
                )
        if rule.get("scope", "*") not in _SCOPES:
            causes.append(
                Cause(
                    f"{path}.rules[{index}].scope",
                    f'Unsupported value: "{rule.get("scope")}": supported values: {_quoted(_SCOPES)}',
                    "FieldValueNotSupported",
                )
            )
    return causes


def configuration_causes(config: dict[str, Any]) -> list[Cause]:
    """Every problem of a webhook configuration, with the field path the apiserver names."""
    webhooks = config.get("webhooks") or []
    if not isinstance(webhooks, list):
        return [Cause("webhooks", "Invalid value: must be a list")]
    seen: set[str] = set()
    causes: list[Cause] = []
    for index, webhook in enumerate(webhooks):
        if not isinstance(webhook, dict):
            causes.append(Cause(f"webhooks[{index}]", "Invalid value: must be an object"))
            continue
        causes += _webhook_causes(webhook, f"webhooks[{index}]", seen)
    return causes
