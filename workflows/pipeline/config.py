"""The executor configuration: container settings for every step, and per-step ``mode_config.argo`` overrides.

The keys, their defaults and their meaning follow Magnus's Argo executor; values are checked here so that a
bad quantity or pull policy is reported with the step and field instead of being rejected by the cluster.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import Problems, unknown_key_message
from .quantity import QuantityError, parse_quantity

DEFAULT_OUTPUT_FILE = "pipeline.yaml"
PULL_POLICIES = ("IfNotPresent", "Always", "Never")
ENVIRONMENT_PREFIX = "ARGOML_VAR_"

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


@dataclass(frozen=True)
class SecretEnv:
    """An environment variable filled from a key of a Kubernetes Secret (``EnvVar=SecretName:Key``)."""

    env_name: str
    secret_name: str
    secret_key: str


@dataclass(frozen=True)
class StepSettings:
    """The container settings of one step: the configuration's defaults with the step's overrides applied."""

    docker_image: str = ""
    cpu_limit: str = "250m"
    memory_limit: str = "1G"
    cpu_request: str | None = None
    memory_request: str | None = None
    enable_caching: bool = False
    image_pull_policy: str = "Always"
    secrets_from_k8s: tuple[SecretEnv, ...] = ()

    @property
    def effective_cpu_request(self) -> str:
        """Requests default to the limits, which gives the step the Guaranteed QoS class."""
        return self.cpu_request if self.cpu_request is not None else self.cpu_limit

    @property
    def effective_memory_request(self) -> str:
        return self.memory_request if self.memory_request is not None else self.memory_limit


@dataclass(frozen=True)
class ExecutorConfig:
    """The whole configuration: where the workflow is written and the defaults every step starts from."""

    output_file: str = DEFAULT_OUTPUT_FILE
    defaults: StepSettings = StepSettings()


STEP_KEYS = tuple(field.name for field in dataclasses.fields(StepSettings))
CONFIG_KEYS = ("output_file", *STEP_KEYS)


def parse_config(document: Any, environ: Mapping[str, str]) -> ExecutorConfig:
    """Check a configuration document and fill its ``${var}`` placeholders from ``ARGOML_VAR_<var>``."""
    problems = Problems()
    config = read_config(document, environ, problems)
    problems.raise_if_any()
    return config


def read_config(document: Any, environ: Mapping[str, str], problems: Problems) -> ExecutorConfig:
    """Like parse_config, but adds problems to a shared collector so they are reported with the pipeline's."""
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        problems.add("config", "", f"must be a mapping of settings, not {type(document).__name__}")
        return ExecutorConfig()
    filled = _fill_placeholders(dict(document), environ, problems)
    output_file = DEFAULT_OUTPUT_FILE
    step_values: dict[str, Any] = {}
    for key, value in filled.items():
        if key == "output_file":
            if isinstance(value, str) and value.strip():
                output_file = value
            else:
                problems.add("config", key, "must be a file name")
        elif key in STEP_KEYS:
            checked = _check_value(key, value, "config", key, problems)
            if checked is not _INVALID:
                step_values[key] = checked
        else:
            problems.add("config", str(key), unknown_key_message(str(key), CONFIG_KEYS))
    defaults = StepSettings(**step_values)
    for field_name, message in settings_problems(defaults):
        problems.add("config", field_name, message)
    return ExecutorConfig(output_file=output_file, defaults=defaults)


def read_overrides(document: Any, where: str, problems: Problems) -> dict[str, Any]:
    """The checked ``mode_config`` of a step: only ``argo`` is known, and under it any step setting."""
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        problems.add(where, "mode_config", "must be a mapping like {argo: {cpu_limit: 500m}}")
        return {}
    overrides: dict[str, Any] = {}
    for mode, settings in document.items():
        if mode != "argo":
            problems.add(where, f"mode_config.{mode}", "only 'argo' is supported")
            continue
        if settings is None:
            continue
        if not isinstance(settings, Mapping):
            problems.add(where, "mode_config.argo", "must be a mapping of settings")
            continue
        for key, value in settings.items():
            field_name = f"mode_config.argo.{key}"
            if key == "output_file":
                problems.add(where, field_name, "is set once for the whole workflow, in the configuration")
            elif key not in STEP_KEYS:
                problems.add(where, field_name, unknown_key_message(str(key), STEP_KEYS))
            else:
                checked = _check_value(key, value, where, field_name, problems)
                if checked is not _INVALID:
                    overrides[key] = checked
    return overrides


def apply_overrides(settings: StepSettings, overrides: Mapping[str, Any]) -> StepSettings:
    """A step's settings: its parent's with its own overrides on top (overrides cascade to nested steps)."""
    return dataclasses.replace(settings, **overrides) if overrides else settings


def settings_problems(settings: StepSettings) -> list[tuple[str, str]]:
    """(field, problem) pairs only visible once settings are merged: a request may not exceed its limit."""
    found = []
    pairs = (
        ("cpu_request", settings.effective_cpu_request, "cpu_limit", settings.cpu_limit),
        ("memory_request", settings.effective_memory_request, "memory_limit", settings.memory_limit),
    )
    for request_name, request, limit_name, limit in pairs:
        if parse_quantity(request) > parse_quantity(limit):
            found.append((request_name, f"{request} is more than {limit_name} {limit}"))
    return found


class _Invalid:
    """Marks a value that failed its check (None is a valid value for the requests)."""


_INVALID: Any = _Invalid()


def _check_value(key: str, value: Any, where: str, field_name: str, problems: Problems) -> Any:
    checker = _CHECKERS[key]
    try:
        return checker(value)
    except _EntryError as error:
        problems.add(where, f"{field_name}[{error.index}]", str(error))
    except ValueError as error:
        problems.add(where, field_name, str(error))
    return _INVALID


class _EntryError(ValueError):
    """A problem with one entry of a list setting; the index goes into the field name."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def _check_image(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or any(char.isspace() for char in value):
        raise ValueError(f"{value!r} is not a container image reference")
    return value


def _check_quantity(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (examples: 500m, 2, 1G, 512Mi)")
    text = str(value)
    try:
        parse_quantity(text)
    except QuantityError as error:
        raise ValueError(str(error)) from error
    return text


def _check_optional_quantity(value: Any) -> str | None:
    return None if value is None else _check_quantity(value)


def _check_flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} must be true or false")
    return value


def _check_pull_policy(value: Any) -> str:
    if value not in PULL_POLICIES:
        raise ValueError(f"{value!r} must be one of {', '.join(PULL_POLICIES)}")
    return str(value)


def _check_secrets(value: Any) -> tuple[SecretEnv, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError("must be a list of EnvVar=SecretName:Key entries")
    secrets = tuple(parse_secret_entry(entry, index) for index, entry in enumerate(value))
    seen: set[str] = set()
    for index, secret in enumerate(secrets):
        if secret.env_name in seen:
            raise _EntryError(index, f"{secret.env_name} is already set by an earlier entry")
        seen.add(secret.env_name)
    return secrets


def parse_secret_entry(entry: Any, index: int) -> SecretEnv:
    """Read ``EnvVar=SecretName:Key``; the error names the entry so a long list stays debuggable."""
    shape = f"{entry!r} must look like EnvVar=SecretName:Key"
    if not isinstance(entry, str) or "=" not in entry:
        raise _EntryError(index, shape)
    env_name, _, reference = entry.partition("=")
    secret_name, colon, secret_key = reference.partition(":")
    env_name, secret_name, secret_key = env_name.strip(), secret_name.strip(), secret_key.strip()
    if not colon:
        raise _EntryError(index, shape)
    if not _ENV_NAME.match(env_name):
        raise _EntryError(index, f"{env_name!r} is not a valid environment variable name")
    if not _SECRET_NAME.match(secret_name) or len(secret_name) > 253:
        raise _EntryError(index, f"{secret_name!r} is not a valid Secret name (a lowercase DNS name)")
    if not _SECRET_KEY.match(secret_key):
        raise _EntryError(index, f"{secret_key!r} is not a valid Secret key")
    return SecretEnv(env_name=env_name, secret_name=secret_name, secret_key=secret_key)


_CHECKERS: dict[str, Callable[[Any], Any]] = {
    "docker_image": _check_image,
    "cpu_limit": _check_quantity,
    "memory_limit": _check_quantity,
    "cpu_request": _check_optional_quantity,
    "memory_request": _check_optional_quantity,
    "enable_caching": _check_flag,
    "image_pull_policy": _check_pull_policy,
    "secrets_from_k8s": _check_secrets,
}


def _fill_placeholders(
    document: dict[str, Any], environ: Mapping[str, str], problems: Problems
) -> dict[str, Any]:
    """Replace ``${name}`` with ``$ARGOML_VAR_name`` in every string, so CI can inject an image id."""

    def fill(value: Any, field_name: str) -> Any:
        if isinstance(value, str):
            return _PLACEHOLDER.sub(lambda match: substitute(match, field_name), value)
        if isinstance(value, list):
            return [fill(item, field_name) for item in value]
        return value

    def substitute(match: re.Match[str], field_name: str) -> str:
        name = match.group(1)
        if not _VARIABLE_NAME.match(name):
            problems.add("config", field_name, f"'${{{name}}}' is not a valid placeholder name")
            return match.group(0)
        variable = ENVIRONMENT_PREFIX + name
        if variable not in environ:
            problems.add("config", field_name, f"'${{{name}}}' needs the environment variable {variable}")
            return match.group(0)
        return environ[variable]

    return {key: fill(value, str(key)) for key, value in document.items()}


__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_OUTPUT_FILE",
    "PULL_POLICIES",
    "STEP_KEYS",
    "ExecutorConfig",
    "SecretEnv",
    "StepSettings",
    "apply_overrides",
    "parse_config",
    "read_config",
    "read_overrides",
    "settings_problems",
]
