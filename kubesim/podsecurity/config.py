"""The PodSecurity plugin's configuration, read from an apiserver AdmissionConfiguration file.

As `kube-apiserver --admission-control-config-file`: a `plugins` entry named `PodSecurity` whose
`configuration` (or the file its `path` names) is a `PodSecurityConfiguration` with `defaults` (the levels of
namespaces without labels) and `exemptions` (usernames, namespaces and runtimeClasses never checked).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesim.podsecurity.checks import LEVELS, PRIVILEGED

_KIND = "PodSecurityConfiguration"
_API_VERSIONS = ("pod-security.admission.config.k8s.io/v1", "pod-security.admission.config.k8s.io/v1beta1")


class ConfigError(ValueError):
    """A configuration the apiserver would refuse to start with; the message names the field."""


@dataclass(frozen=True)
class PodSecurityConfig:
    """Default levels for unlabelled namespaces and the requests exempt from every check."""

    enforce: str = PRIVILEGED
    warn: str = PRIVILEGED
    exempt_usernames: frozenset[str] = frozenset()
    exempt_namespaces: frozenset[str] = frozenset()
    exempt_runtime_classes: frozenset[str] = frozenset()


def _names(exemptions: dict[str, Any], key: str) -> frozenset[str]:
    values = exemptions.get(key) or []
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        raise ConfigError(f"exemptions.{key}: must be a list of non-empty strings, got {values!r}")
    return frozenset(values)


def _level(defaults: dict[str, Any], mode: str) -> str:
    level = defaults.get(mode, PRIVILEGED)
    if level not in LEVELS:
        raise ConfigError(
            f"defaults.{mode}: Unsupported value: {level!r}: supported values: {', '.join(LEVELS)}"
        )
    return str(level)


def parse_pod_security_configuration(document: Any) -> PodSecurityConfig:
    """A `PodSecurityConfiguration` document → PodSecurityConfig (ConfigError naming the bad field)."""
    if not isinstance(document, dict):
        raise ConfigError("PodSecurityConfiguration: must be a mapping")
    if document.get("kind") != _KIND or document.get("apiVersion") not in _API_VERSIONS:
        raise ConfigError(
            f"kind/apiVersion: expected {_KIND} in {' or '.join(_API_VERSIONS)}, "
            f"got {document.get('kind')!r} in {document.get('apiVersion')!r}"
        )
    defaults, exemptions = document.get("defaults") or {}, document.get("exemptions") or {}
    if not isinstance(defaults, dict) or not isinstance(exemptions, dict):
        raise ConfigError("defaults, exemptions: must be mappings")
    return PodSecurityConfig(
        enforce=_level(defaults, "enforce"),
        warn=_level(defaults, "warn"),
        exempt_usernames=_names(exemptions, "usernames"),
        exempt_namespaces=_names(exemptions, "namespaces"),
        exempt_runtime_classes=_names(exemptions, "runtimeClasses"),
    )


def load_admission_configuration(path: Path) -> PodSecurityConfig:
    """The PodSecurity configuration of an AdmissionConfiguration file (defaults when it has none)."""
    document = yaml.safe_load(path.read_text())
    if not isinstance(document, dict) or document.get("kind") != "AdmissionConfiguration":
        raise ConfigError(f"{path}: kind: expected AdmissionConfiguration")
    for index, plugin in enumerate(document.get("plugins") or []):
        if not isinstance(plugin, dict) or plugin.get("name") != "PodSecurity":
            continue
        if "configuration" in plugin:
            return parse_pod_security_configuration(plugin["configuration"])
        if "path" in plugin:
            return parse_pod_security_configuration(
                yaml.safe_load((path.parent / plugin["path"]).read_text())
            )
        raise ConfigError(f"plugins[{index}]: PodSecurity needs a configuration or a path")
    return PodSecurityConfig()
