"""A container's environment as the kubelet builds it (`makeEnvironmentVariables`): pure functions.

The order is the kubelet's: the image's own variables; then `envFrom` sources in order (with their prefix);
then `env` in order, each value `$(VAR)`-expanded against what is defined so far and the Service variables;
then the Service variables (`{SVC}_SERVICE_HOST`, docker-link `{SVC}_PORT_…`) that nothing overrode. What the
container runtime adds (HOSTNAME, HOME) comes last unless the spec set it. A reference that cannot be
resolved (a missing ConfigMap, Secret or key that is not optional) is a `ConfigError` whose message is the
kubelet's, shown as the container's `CreateContainerConfigError`.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from kubesim.kubelet.process.expansion import expand, lookup_in

#: what `resourceFieldRef` reads when the container sets no limit: the node's allocatable (kubesim's Nodes)
NODE_ALLOCATABLE = {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi"}
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_FIELD_KEY = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")
_SUFFIXES: dict[str, int | Decimal] = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
}  # fmt: skip


class ConfigError(ValueError):
    """A reference the kubelet cannot resolve; the container waits in CreateContainerConfigError."""


class Sources(Protocol):
    """The objects a pod's env and volumes read; None when the object does not exist."""

    def config_map(self, name: str) -> Mapping[str, Any] | None: ...

    def secret(self, name: str) -> Mapping[str, Any] | None: ...


@dataclass(frozen=True)
class PodContext:
    """What the kubelet knows of the pod beyond its spec: where it runs, and the Services of its namespace."""

    pod: Mapping[str, Any]
    pod_ip: str
    host_ip: str
    hostname: str
    services: Sequence[Mapping[str, Any]] = ()  # the pod's namespace's Services
    master_service: Mapping[str, Any] | None = None  # `kubernetes` in `default`: its variables are always set


def quantity(text: str) -> Decimal:
    """A Kubernetes quantity (`500m`, `2Gi`, `1e3`) as a number; ValueError when it is not one."""
    match = re.fullmatch(r"([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|([KMGTPE]i|[numkMGTPE])?)", str(text).strip())
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    number, exponent, suffix = match.groups()
    try:
        value = Decimal(number + (exponent or ""))
    except InvalidOperation:
        raise ValueError(f"not a quantity: {text!r}") from None
    return value * Decimal(_SUFFIXES[suffix or ""])


def service_variables(services: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The docker-link style variables of each Service with a cluster IP, as the kubelet sets them."""
    variables: dict[str, str] = {}
    for service in services:
        spec = service.get("spec") or {}
        ip = spec.get("clusterIP")
        ports = [p for p in spec.get("ports") or [] if isinstance(p, Mapping)]
        if not ip or ip == "None" or not ports:
            continue
        name = str(service["metadata"]["name"]).upper().replace("-", "_")
        variables[f"{name}_SERVICE_HOST"] = ip
        variables[f"{name}_SERVICE_PORT"] = str(ports[0].get("port"))
        for port in ports:
            if port.get("name"):
                port_name = str(port["name"]).upper().replace("-", "_")
                variables[f"{name}_SERVICE_PORT_{port_name}"] = str(port.get("port"))
        first = ports[0]
        variables[f"{name}_PORT"] = f"{str(first.get('protocol', 'TCP')).lower()}://{ip}:{first.get('port')}"
        for port in ports:
            protocol = str(port.get("protocol", "TCP"))
            prefix = f"{name}_PORT_{port.get('port')}_{protocol.upper()}"
            variables[prefix] = f"{protocol.lower()}://{ip}:{port.get('port')}"
            variables[f"{prefix}_PROTO"] = protocol.lower()
            variables[f"{prefix}_PORT"] = str(port.get("port"))
            variables[f"{prefix}_ADDR"] = ip
    return variables


def field_value(path: str, context: PodContext) -> str:
    """A downward API `fieldRef` (env or volume file), as the kubelet resolves it."""
    pod = context.pod
    metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    keyed = _FIELD_KEY.match(path)
    if keyed:
        return str((metadata.get(keyed.group(1)) or {}).get(keyed.group(2), ""))
    simple = {
        "metadata.name": metadata.get("name", ""),
        "metadata.namespace": metadata.get("namespace", ""),
        "metadata.uid": metadata.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.hostIP": context.host_ip,
        "status.hostIPs": context.host_ip,
        "status.podIP": context.pod_ip,
        "status.podIPs": context.pod_ip,
    }
    if path in simple:
        return str(simple[path])
    if path in ("metadata.labels", "metadata.annotations"):
        values = metadata.get(path.split(".")[1]) or {}
        return "\n".join(f'{key}="{values[key]}"' for key in sorted(values))
    raise ConfigError(f"unsupported fieldRef fieldPath {path!r}")


def resource_value(reference: Mapping[str, Any], container: Mapping[str, Any]) -> str:
    """A `resourceFieldRef`: the container's limit or request over the divisor, rounded up as the kubelet."""
    resource = str(reference.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or name not in NODE_ALLOCATABLE:
        raise ConfigError(f"unsupported resourceFieldRef resource {resource!r}")
    resources = container.get("resources") or {}
    raw = (resources.get(kind) or {}).get(name)
    if raw is None and kind == "requests":
        raw = (resources.get("limits") or {}).get(name)
    if raw is None:
        raw = NODE_ALLOCATABLE[name] if kind == "limits" else "0"
    divisor = quantity(str(reference.get("divisor") or "1"))
    if divisor <= 0:
        raise ConfigError(f"resourceFieldRef divisor of {resource!r} must be positive")
    return str(math.ceil(quantity(str(raw)) / divisor))


def _key_value(
    kind: str, source: Mapping[str, Any] | None, reference: Mapping[str, Any], namespace: str
) -> str | None:
    """One key of a ConfigMap or Secret (`configMapKeyRef`/`secretKeyRef`); None when optional and absent."""
    name, key, optional = (
        str(reference.get("name", "")),
        str(reference.get("key", "")),
        bool(reference.get("optional")),
    )
    label = "configmap" if kind == "ConfigMap" else "secret"
    if source is None:
        if optional:
            return None
        raise ConfigError(f'{label} "{name}" not found')
    values = source_values(kind, source)
    if key not in values:
        if optional:
            return None
        raise ConfigError(f"couldn't find key {key} in {kind} {namespace}/{name}")
    return values[key]


def source_values(kind: str, source: Mapping[str, Any]) -> dict[str, str]:
    """The text values of a ConfigMap (data and binaryData) or a Secret (data decoded, stringData)."""
    values: dict[str, str] = {}
    if kind == "ConfigMap":
        values.update({k: str(v) for k, v in (source.get("data") or {}).items()})
        for key, encoded in (source.get("binaryData") or {}).items():
            values[key] = base64.b64decode(str(encoded)).decode("utf-8", "replace")
    else:
        for key, encoded in (source.get("data") or {}).items():
            values[key] = base64.b64decode(str(encoded)).decode("utf-8", "replace")
        values.update({k: str(v) for k, v in (source.get("stringData") or {}).items()})
    return values


def container_environment(
    container: Mapping[str, Any],
    context: PodContext,
    sources: Sources,
    image_env: Mapping[str, str],
) -> dict[str, str]:
    """The exact environment of one container's process; raises ConfigError as the kubelet would refuse it."""
    pod = context.pod
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    spec = pod.get("spec") or {}
    services = list(context.services) if spec.get("enableServiceLinks", True) is not False else []
    if context.master_service is not None:
        services.append(context.master_service)
    service_env = service_variables(services)
    defined: dict[str, str] = {}
    for entry in container.get("envFrom") or []:
        prefix = str(entry.get("prefix") or "")
        for kind, field in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            reference = entry.get(field)
            if reference is None:
                continue
            name = str(reference.get("name", ""))
            source = sources.config_map(name) if kind == "ConfigMap" else sources.secret(name)
            if source is None:
                if reference.get("optional"):
                    continue
                raise ConfigError(f'{"configmap" if kind == "ConfigMap" else "secret"} "{name}" not found')
            for key, text in source_values(kind, source).items():
                if _ENV_NAME.match(prefix + key):  # the kubelet skips invalid names (and records an event)
                    defined[prefix + key] = text
    for variable in container.get("env") or []:
        name = str(variable.get("name", ""))
        if "value" in variable or "valueFrom" not in variable:
            defined[name] = expand(str(variable.get("value") or ""), lookup_in(defined, service_env))
            continue
        value_from = variable.get("valueFrom") or {}
        value: str | None
        if "fieldRef" in value_from:
            value = field_value(str(value_from["fieldRef"].get("fieldPath", "")), context)
        elif "resourceFieldRef" in value_from:
            value = resource_value(value_from["resourceFieldRef"], container)
        elif "configMapKeyRef" in value_from:
            reference = value_from["configMapKeyRef"]
            value = _key_value(
                "ConfigMap", sources.config_map(str(reference.get("name", ""))), reference, namespace
            )
        elif "secretKeyRef" in value_from:
            reference = value_from["secretKeyRef"]
            value = _key_value("Secret", sources.secret(str(reference.get("name", ""))), reference, namespace)
        else:
            raise ConfigError(f"env {name}: unsupported valueFrom {sorted(value_from)}")
        if value is not None:
            defined[name] = value
    environment = dict(image_env)
    environment["HOSTNAME"] = context.hostname
    environment.update({k: v for k, v in service_env.items() if k not in defined})
    environment.update(defined)
    environment.setdefault("HOME", "/root")
    return environment


def container_argv(
    container: Mapping[str, Any],
    environment: Mapping[str, str],
    entrypoint: Sequence[str],
    default_args: Sequence[str],
) -> list[str]:
    """The process's argv: `command` replaces the image's entrypoint and drops its default args, `args`
    replaces the default args; both `$(VAR)`-expanded against the container's environment."""
    command = container.get("command")
    args = container.get("args")
    lookup = lookup_in(environment)
    if command:
        argv = [expand(str(part), lookup) for part in command]
        return argv + [expand(str(part), lookup) for part in args or []]
    tail = [expand(str(part), lookup) for part in args] if args is not None else list(default_args)
    return list(entrypoint) + tail
