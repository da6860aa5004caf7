"""The executor configuration: container settings for every step, and per-step ``mode_config.argo`` overrides.

The keys, their defaults and their meaning follow Magnus's Argo executor, and so does the file's shape: flat,
or wrapped as Magnus writes it (``executor:`` or ``mode:`` with ``type: argo`` and ``config:``), so a Magnus
user's file works unchanged. Values are checked here so that a bad quantity or pull policy is reported with
the step and field instead of being rejected by the cluster.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kube.names import NameFormat

from .errors import Problems, unknown_key_message
from .quantity import QuantityError, parse_quantity

DEFAULT_OUTPUT_FILE = "pipeline.yaml"
PULL_POLICIES = ("IfNotPresent", "Always", "Never")
ENVIRONMENT_PREFIX = "ARGOML_VAR_"
# Magnus's name for the same variables: read when the ARGOML_VAR_ one is unset, so its CI keeps working.
MAGNUS_ENVIRONMENT_PREFIX = "MAGNUS_VAR_"
EXECUTOR_TYPE = "argo"
# The two names Magnus gives the executor block (``mode`` in its design guidelines, ``executor`` elsewhere).
WRAPPER_KEYS = ("executor", "mode")
_WRAPPER_INNER_KEYS = ("type", "config")
# Magnus services that may sit beside the executor in its configuration file; they have no meaning here.
MAGNUS_SERVICES = ("run_log_store", "catalog", "secrets", "experiment_tracker")

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
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
    if any(key in document for key in WRAPPER_KEYS):
        unwrapped = _unwrap(document, problems)
        if unwrapped is None:
            return ExecutorConfig()
        document = unwrapped
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


def _unwrap(document: Mapping[str, Any], problems: Problems) -> Mapping[str, Any] | None:
    """The settings under Magnus's ``executor: {type: argo, config: {...}}`` (or ``mode:``), or None after
    reporting why they cannot be read."""
    wrappers = [key for key in WRAPPER_KEYS if key in document]
    if len(wrappers) > 1:
        problems.add("config", "mode", "executor and mode are two names for one block; keep one of them")
        return None
    wrapper_key = wrappers[0]
    for key in document:
        if key == wrapper_key:
            continue
        if key in MAGNUS_SERVICES:
            problems.warn(f"config: {key}: ignored (a Magnus service; Argo keeps its own logs and artifacts)")
        else:
            known = (wrapper_key, *MAGNUS_SERVICES)
            problems.add("config", str(key), unknown_key_message(str(key), known))
    wrapper = document[wrapper_key]
    if not isinstance(wrapper, Mapping):
        problems.add(
            "config", wrapper_key, "must be a mapping like {type: argo, config: {docker_image: ...}}"
        )
        return None
    for key in wrapper:
        if key not in _WRAPPER_INNER_KEYS:
            problems.add("config", f"{wrapper_key}.{key}", unknown_key_message(str(key), _WRAPPER_INNER_KEYS))
    executor_type = wrapper.get("type")
    if executor_type != EXECUTOR_TYPE:
        problems.add(
            "config",
            f"{wrapper_key}.type",
            f"{executor_type!r} is not supported: the only executor type is '{EXECUTOR_TYPE}'",
        )
    settings = wrapper.get("config")
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        problems.add("config", f"{wrapper_key}.config", "must be a mapping of settings (docker_image, ...)")
        return None
    return settings


def read_overrides(
    document: Any, where: str, problems: Problems, field_name: str = "mode_config"
) -> dict[str, Any]:
    """The checked ``mode_config`` (or ``executor_config``) of a step: only ``argo`` is known, and under it
    any step setting."""
    block = field_name
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        problems.add(where, block, "must be a mapping like {argo: {cpu_limit: 500m}}")
        return {}
    overrides: dict[str, Any] = {}
    for mode, settings in document.items():
        if mode != "argo":
            problems.add(where, f"{block}.{mode}", "only 'argo' is supported")
            continue
        if settings is None:
            continue
        if not isinstance(settings, Mapping):
            problems.add(where, f"{block}.argo", "must be a mapping of settings")
            continue
        for key, value in settings.items():
            field_name = f"{block}.argo.{key}"
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
    except _EntryErrors as error:
        for suffix, message in error.entries:
            problems.add(where, f"{field_name}{suffix}", message)
    except ValueError as error:
        problems.add(where, field_name, str(error))
    return _INVALID


class _EntryErrors(ValueError):
    """Problems with entries of a list or mapping setting, each with what names the entry in the field
    (``[2]``, ``.DB_PASSWORD``), so every malformed entry of a long list is reported at once."""

    def __init__(self, entries: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(message for _, message in entries))
        self.entries = entries


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
    """Magnus writes ``secrets_from_k8s`` three ways: a list of ``EnvVar=SecretName:Key``, one such string,
    or a mapping ``EnvVar: SecretName:Key``; all three are read, and every malformed entry is named."""
    if value is None:
        return ()
    entries: list[tuple[str, Any]]
    if isinstance(value, str):
        entries = [("", value)]
    elif isinstance(value, list):
        entries = [(f"[{index}]", entry) for index, entry in enumerate(value)]
    elif isinstance(value, Mapping):
        entries = [
            (f".{env_name}", f"{env_name}={reference}" if isinstance(reference, str) else reference)
            for env_name, reference in value.items()
        ]
    else:
        raise ValueError(
            "must be a list of EnvVar=SecretName:Key entries, one such entry, "
            "or a mapping EnvVar: SecretName:Key"
        )
    secrets: list[SecretEnv] = []
    errors: list[tuple[str, str]] = []
    seen: set[str] = set()
    for suffix, entry in entries:
        try:
            secret = parse_secret_entry(entry, mapping=isinstance(value, Mapping))
        except ValueError as error:
            errors.append((suffix, str(error)))
            continue
        if secret.env_name in seen:
            errors.append((suffix, f"{secret.env_name} is already set by an earlier entry"))
        seen.add(secret.env_name)
        secrets.append(secret)
    if errors:
        raise _EntryErrors(errors)
    return tuple(secrets)


def parse_secret_entry(entry: Any, *, mapping: bool = False) -> SecretEnv:
    """Read ``EnvVar=SecretName:Key`` (a mapping's ``EnvVar: SecretName:Key`` arrives joined that way)."""
    if mapping and isinstance(entry, str):
        shape = f"{entry.partition('=')[2]!r} must look like SecretName:Key"
    elif mapping:
        shape = f"{entry!r} must look like SecretName:Key"
    else:
        shape = f"{entry!r} must look like EnvVar=SecretName:Key"
    if not isinstance(entry, str) or "=" not in entry:
        raise ValueError(shape)
    env_name, _, reference = entry.partition("=")
    secret_name, colon, secret_key = reference.partition(":")
    env_name, secret_name, secret_key = env_name.strip(), secret_name.strip(), secret_key.strip()
    if not colon:
        raise ValueError(shape)
    if not _ENV_NAME.match(env_name):
        raise ValueError(f"{env_name!r} is not a valid environment variable name")
    if NameFormat.SUBDOMAIN.problems(secret_name):
        raise ValueError(f"{secret_name!r} is not a valid Secret name (a lowercase DNS name)")
    if not _SECRET_KEY.match(secret_key):
        raise ValueError(f"{secret_key!r} is not a valid Secret key")
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
    """Replace ``${name}`` with ``$ARGOML_VAR_name`` (or Magnus's ``$MAGNUS_VAR_name`` when that is unset) in
    every string, so CI can inject an image id."""

    def fill(value: Any, field_name: str) -> Any:
        if isinstance(value, str):
            return _PLACEHOLDER.sub(lambda match: substitute(match, field_name), value)
        if isinstance(value, list):
            return [fill(item, field_name) for item in value]
        if isinstance(value, Mapping):
            return {key: fill(item, field_name) for key, item in value.items()}
        return value

    def substitute(match: re.Match[str], field_name: str) -> str:
        name = match.group(1)
        if not _VARIABLE_NAME.match(name):
            problems.add("config", field_name, f"'${{{name}}}' is not a valid placeholder name")
            return match.group(0)
        for prefix in (ENVIRONMENT_PREFIX, MAGNUS_ENVIRONMENT_PREFIX):
            if prefix + name in environ:
                return environ[prefix + name]
        variable = ENVIRONMENT_PREFIX + name
        problems.add(
            "config",
            field_name,
            f"'${{{name}}}' needs the environment variable {variable} (or {MAGNUS_ENVIRONMENT_PREFIX}{name})",
        )
        return match.group(0)

    return {key: fill(value, str(key)) for key, value in document.items()}


__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_OUTPUT_FILE",
    "EXECUTOR_TYPE",
    "MAGNUS_ENVIRONMENT_PREFIX",
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
