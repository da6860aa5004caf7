"""The settings of containers and pods the API server validates beside their structure: resources, probes
and lifecycle handlers, security contexts, DNS config, tolerations (pkg/apis/core/validation
`validateResourceRequirements`, `validateProbe`, `validateHandler`, `ValidateSecurityContext`,
`validatePodDNSConfig`, `ValidateTolerations`). Pure; `podvalidation` calls them per container and pod.
"""

from __future__ import annotations

from typing import Any

from kubesim.builtins import fielderrors as fe
from kubesim.builtins.podfields import Obj, items_of, quantity
from kubesim.errors import Cause

_STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc", "sleep")
_PROBE_NUMBERS = (
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
)
_SCHEMES = ("HTTP", "HTTPS")
_MAX_ID = 2**31 - 1
_MATCH_ALL = 'operator must be Exists when `key` is empty, which means "match all values and all keys"'
_NEGATIVE = "must be greater than or equal to 0"


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _overcommit_allowed(name: str) -> bool:
    """helper.IsOvercommitAllowed: native resources but huge pages; extended resources never."""
    return _is_native(name) and not name.startswith("hugepages-")


def _resource_name_causes(name: str, path: str) -> list[Cause]:
    causes = fe.invalids(path, name, fe.qualified_name_problems(name))
    if causes:
        return causes
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not name.startswith("hugepages-"):
            return [fe.invalid(path, name, "must be a standard resource for containers")]
    elif not _is_native(name) and (
        name.startswith("requests.") or fe.qualified_name_problems(f"requests.{name}")
    ):
        return [fe.invalid(path, name, "doesn't follow extended resource name standard")]
    return []


def _quantity_causes(name: str, value: Any, path: str) -> list[Cause]:
    amount = quantity(value)
    if amount is None:
        return [
            fe.invalid(
                path,
                value,
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            )
        ]
    if amount < 0:
        return [fe.invalid(path, str(value), _NEGATIVE)]
    if not _is_native(name) and amount != amount.to_integral_value():
        return [fe.invalid(path, str(value), "must be an integer")]
    return []


def resources_causes(resources: Any, path: str) -> list[Cause]:
    """validateResourceRequirements: names, quantities, requests ≤ limits (= for extended resources)."""
    resources = resources if isinstance(resources, dict) else {}
    limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
    requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
    causes: list[Cause] = []
    for name, value in limits.items():
        here = f"{path}.limits[{name}]"
        causes += _resource_name_causes(str(name), here) + _quantity_causes(str(name), value, here)
    for name, value in requests.items():
        here = f"{path}.requests[{name}]"
        causes += _resource_name_causes(str(name), here) + _quantity_causes(str(name), value, here)
        amount = quantity(value)
        if name in limits:
            limit = quantity(limits[name])
            if amount is None or limit is None:
                continue
            if amount != limit and not _overcommit_allowed(str(name)):
                causes.append(
                    fe.invalid(
                        f"{path}.requests", str(value), f"must be equal to {name} limit of {limits[name]}"
                    )
                )
            elif amount > limit:
                causes.append(
                    fe.invalid(
                        f"{path}.requests",
                        str(value),
                        f"must be less than or equal to {name} limit of {limits[name]}",
                    )
                )
        elif not _overcommit_allowed(str(name)):
            causes.append(fe.required(f"{path}.limits", "Limit must be set for non overcommitable resources"))
    return causes


def _port_causes(port: Any, path: str) -> list[Cause]:
    """ValidatePortNumOrName."""
    if isinstance(port, str):
        return fe.invalids(path, port, fe.port_name_problems(port))
    return fe.invalids(path, port, fe.port_number_problems(port))


def handler_causes(handler: Obj, grace: Any, path: str, *, kinds: tuple[str, ...]) -> list[Cause]:
    """validateHandler: exactly one of the handler kinds a probe (exec, httpGet, tcpSocket, grpc) or a
    lifecycle hook (exec, httpGet, tcpSocket, sleep) may hold, each well-formed."""
    causes: list[Cause] = []
    found = 0
    for kind in _HANDLERS:
        action = handler.get(kind) if kind in kinds else None
        if not isinstance(action, dict):
            continue
        if found:
            causes.append(fe.forbidden(f"{path}.{kind}", "may not specify more than 1 handler type"))
            continue
        found += 1
        here = f"{path}.{kind}"
        if kind == "exec" and not action.get("command"):
            causes.append(fe.required(f"{here}.command"))
        elif kind == "httpGet":
            if not action.get("path"):
                causes.append(fe.required(f"{here}.path"))
            causes += _port_causes(action.get("port"), f"{here}.port")
            if action.get("scheme") not in _SCHEMES:
                causes.append(fe.not_supported(f"{here}.scheme", action.get("scheme") or "", _SCHEMES))
        elif kind in ("tcpSocket", "grpc"):
            causes += _port_causes(action.get("port"), f"{here}.port")
        elif kind == "sleep":
            seconds = action.get("seconds")
            if isinstance(grace, int) and isinstance(seconds, int) and not 0 <= seconds <= grace:
                message = f"must be non-negative and less than terminationGracePeriodSeconds ({grace})"
                causes.append(fe.invalid(here, seconds, message))
    if not found:
        causes.append(fe.required(path, "must specify a handler type"))
    return causes


def probe_causes(probe: Any, grace: Any, path: str, *, kind: str) -> list[Cause]:
    """validateLivenessProbe / validateReadinessProbe / validateStartupProbe."""
    if not isinstance(probe, dict):
        return []
    causes = handler_causes(probe, grace, path, kinds=("exec", "httpGet", "tcpSocket", "grpc"))
    for key in _PROBE_NUMBERS:
        value = probe.get(key, 0)
        if isinstance(value, int) and value < 0:
            causes.append(fe.invalid(f"{path}.{key}", value, _NEGATIVE))
    probe_grace = probe.get("terminationGracePeriodSeconds")
    if isinstance(probe_grace, int) and probe_grace <= 0:
        causes.append(
            fe.invalid(f"{path}.terminationGracePeriodSeconds", probe_grace, "must be greater than 0")
        )
    if kind in ("livenessProbe", "startupProbe") and probe.get("successThreshold", 1) != 1:
        causes.append(fe.invalid(f"{path}.successThreshold", probe.get("successThreshold"), "must be 1"))
    if kind == "readinessProbe" and probe_grace is not None:
        causes.append(
            fe.invalid(
                f"{path}.terminationGracePeriodSeconds", probe_grace, "must not be set for readinessProbes"
            )
        )
    return causes


def lifecycle_causes(lifecycle: Any, grace: Any, path: str) -> list[Cause]:
    lifecycle = lifecycle if isinstance(lifecycle, dict) else {}
    kinds = ("exec", "httpGet", "tcpSocket", "sleep")
    return [
        cause
        for hook in ("postStart", "preStop")
        if isinstance(lifecycle.get(hook), dict)
        for cause in handler_causes(lifecycle[hook], grace, f"{path}.{hook}", kinds=kinds)
    ]


def _id_causes(context: Obj, key: str, path: str) -> list[Cause]:
    value = context.get(key)
    if isinstance(value, int) and not 0 <= value <= _MAX_ID:
        return [fe.invalid(f"{path}.{key}", value, fe.inclusive_range(0, _MAX_ID))]
    return []


def security_context_causes(context: Any, path: str) -> list[Cause]:
    """ValidateSecurityContext (a container's)."""
    if not isinstance(context, dict):
        return []
    causes = _id_causes(context, "runAsUser", path) + _id_causes(context, "runAsGroup", path)
    proc_mount = context.get("procMount")
    if proc_mount is not None and proc_mount not in ("Default", "Unmasked"):
        causes.append(fe.not_supported(f"{path}.procMount", proc_mount, ("Default", "Unmasked")))
    if context.get("allowPrivilegeEscalation") is False:
        if context.get("privileged") is True:
            causes.append(
                fe.invalid(
                    path, context, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
                )
            )
        added = ((context.get("capabilities") or {}).get("add")) or []
        if "CAP_SYS_ADMIN" in added:
            causes.append(
                fe.invalid(
                    path,
                    context,
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                )
            )
    return causes


def pod_security_context_causes(context: Any, path: str) -> list[Cause]:
    """validatePodSpecSecurityContext: user and group ids, supplemental groups, fsGroupChangePolicy."""
    if not isinstance(context, dict):
        return []
    causes = _id_causes(context, "runAsUser", path) + _id_causes(context, "runAsGroup", path)
    causes += _id_causes(context, "fsGroup", path)
    for index, group in enumerate(context.get("supplementalGroups") or []):
        if isinstance(group, int) and not 0 <= group <= _MAX_ID:
            causes.append(
                fe.invalid(f"{path}.supplementalGroups[{index}]", group, fe.inclusive_range(0, _MAX_ID))
            )
    policy = context.get("fsGroupChangePolicy")
    if policy is not None and policy not in ("Always", "OnRootMismatch"):
        causes.append(fe.not_supported(f"{path}.fsGroupChangePolicy", policy, ("Always", "OnRootMismatch")))
    return causes


def dns_config_causes(config: Any, dns_policy: str, path: str) -> list[Cause]:
    """validatePodDNSConfig, the parts a pod trips over: `None` needs nameservers, at most 3 and 6… ."""
    if dns_policy == "None":
        if not isinstance(config, dict):
            return [fe.required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not config.get("nameservers"):
            return [
                fe.required(
                    f"{path}.nameservers", "must provide at least one DNS nameserver when `dnsPolicy` is None"
                )
            ]
    if not isinstance(config, dict):
        return []
    causes: list[Cause] = []
    servers = config.get("nameservers") or []
    if len(servers) > 3:
        causes.append(fe.invalid(f"{path}.nameservers", servers, "must not have more than 3 nameservers"))
    searches = config.get("searches") or []
    if len(searches) > 32:
        causes.append(fe.invalid(f"{path}.searches", searches, "must not have more than 32 search paths"))
    for index, option in enumerate(items_of(config.get("options"))):
        if not option.get("name"):
            causes.append(fe.required(f"{path}.options[{index}]", "Option.Name must not be empty"))
    return causes


def toleration_causes(tolerations: list[Obj], path: str) -> list[Cause]:
    """ValidateTolerations: operator and value, NoExecute for tolerationSeconds, the effect."""
    causes: list[Cause] = []
    for index, toleration in enumerate(tolerations):
        here = f"{path}[{index}]"
        key, operator = toleration.get("key") or "", toleration.get("operator") or ""
        if key:
            causes += fe.invalids(f"{here}.key", key, fe.qualified_name_problems(str(key)))
        elif operator != "Exists":
            causes.append(
                fe.invalid(
                    f"{here}.operator",
                    operator,
                    _MATCH_ALL,
                )
            )
        effect = toleration.get("effect") or ""
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(
                fe.invalid(
                    f"{here}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"
                )
            )
        if operator == "Exists" and toleration.get("value"):
            causes.append(
                fe.invalid(
                    f"{here}.operator", toleration["value"], "value must be empty when `operator` is 'Exists'"
                )
            )
        elif operator not in ("", "Equal", "Exists"):
            causes.append(fe.not_supported(f"{here}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            causes.append(
                fe.not_supported(f"{here}.effect", effect, ("NoSchedule", "PreferNoSchedule", "NoExecute"))
            )
    return causes
