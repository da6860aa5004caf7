"""The parts of a pod spec the API server validates field by field: volumes and their sources, env and
envFrom, file paths and quantities (pkg/apis/core/validation `ValidateVolumes`, `ValidateEnv`,
`ValidateEnvFrom`). Pure; `podvalidation` puts them together per pod.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from kubesim.builtins import fielderrors as fe
from kubesim.errors import Cause

Obj = dict[str, Any]

#: validateVolumeSource's order, with the child path each reports a second source under (upstream's own
#: spelling, `downwarAPI` included)
_VOLUME_SOURCES = (
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
)
_CLAIM_SOURCES = ("persistentVolumeClaim", "ephemeral")
_FILE_MODE = "must be a number between 0 and 0777 (octal), both inclusive"
_HOST_PATH_TYPES = (
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
)
_ENV_FIELD_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
_VOLUME_FIELD_PATHS = (
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
)
#: what ConvertDownwardAPIFieldLabel accepts for v1 (anything else: "field label not supported")
_DOWNWARD_LABELS = frozenset(
    {
        *_ENV_FIELD_PATHS,
        "metadata.annotations",
        "metadata.labels",
        "spec.restartPolicy",
        "spec.schedulerName",
        "status.phase",
    }
)
_RESOURCE_FIELD_PATHS = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
_ONE_OF_VALUE_FROM = (
    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
)
_SUBSCRIPT = re.compile(r"^(metadata\.(?:annotations|labels))\['(.*)'\]$")
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"
)
_SUFFIXES = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_MAX_INT32 = 2**31 - 1


def items_of(value: Any) -> list[Obj]:
    return [item if isinstance(item, dict) else {} for item in value] if isinstance(value, list) else []


def quantity(value: Any) -> Decimal | None:
    """A resource.Quantity as a number (`500m` → 0.5, `1Gi` → 1073741824); None when it does not parse."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    match = _QUANTITY.match(str(value).strip())
    if not match:
        return None
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    try:
        if suffix.endswith("i"):
            return number * (1 << (10 * "KMGTPE".index(suffix[0]) + 10))
        if suffix[:1] in ("e", "E"):
            return number.scaleb(int(suffix[1:]))
        return number.scaleb(_SUFFIXES[suffix])
    except InvalidOperation:
        return None


# --- paths -------------------------------------------------------------------------------------------------


def no_backsteps(path_text: str, path: str) -> list[Cause]:
    if ".." in path_text.replace("\\", "/").split("/"):
        return [fe.invalid(path, path_text, "must not contain '..'")]
    return []


def local_descending(path_text: str, path: str) -> list[Cause]:
    causes = [fe.invalid(path, path_text, "must be a relative path")] if path_text.startswith("/") else []
    return causes + no_backsteps(path_text, path)


def _local_non_reserved(path_text: str, path: str) -> list[Cause]:
    causes = local_descending(path_text, path)
    if path_text.startswith("..") and not path_text.startswith("../"):
        causes.append(fe.invalid(path, path_text, "must not start with '..'"))
    return causes


def _mode(source: Obj, key: str, path: str) -> list[Cause]:
    mode = source.get(key)
    if isinstance(mode, int) and not 0 <= mode <= 0o777:
        return [fe.invalid(f"{path}.{key}", mode, _FILE_MODE)]
    return []


def _key_to_path(item: Obj, path: str) -> list[Cause]:
    causes = [] if item.get("key") else [fe.required(f"{path}.key")]
    if not item.get("path"):
        causes.append(fe.required(f"{path}.path"))
    return (
        causes + _local_non_reserved(str(item.get("path") or ""), f"{path}.path") + _mode(item, "mode", path)
    )


# --- volumes -----------------------------------------------------------------------------------------------


def volume_causes(volumes: list[Obj], path: str, pod_name: str = "") -> tuple[dict[str, Obj], list[Cause]]:
    """ValidateVolumes: the valid volumes by name (only those, so mounts of a broken one are not found) and
    every problem."""
    valid: dict[str, Obj] = {}
    causes: list[Cause] = []
    for index, volume in enumerate(volumes):
        here = f"{path}[{index}]"
        name = volume.get("name") or ""
        problems = _volume_source(volume, here, name, pod_name)
        if not name:
            problems.append(fe.required(f"{here}.name"))
        else:
            problems += fe.invalids(f"{here}.name", name, fe.dns_label_problems(str(name)))
        if name in valid:
            problems.append(fe.duplicate(f"{here}.name", name))
        if problems:
            causes += problems
        else:
            valid[name] = volume
    return valid, causes


def _volume_source(volume: Obj, path: str, name: str, pod_name: str) -> list[Cause]:
    causes: list[Cause] = []
    count = 0
    for key, reported in _VOLUME_SOURCES:
        if not isinstance(volume.get(key), dict):
            continue
        if count:
            causes.append(fe.forbidden(f"{path}.{reported}", "may not specify more than 1 volume type"))
            continue
        count += 1
        causes += _SOURCE_RULES.get(key, lambda _s, _p: [])(volume[key], f"{path}.{key}")
        if key == "ephemeral" and pod_name and name:
            claim = f"{pod_name}-{name}"
            causes += [
                fe.invalid(f"{path}.name", name, f'PVC name "{claim}": {p}')
                for p in fe.dns_subdomain_problems(claim)
            ]
    if not count:
        causes.append(fe.required(path, "must specify a volume type"))
    return causes


def _empty_dir(source: Obj, path: str) -> list[Cause]:
    size = quantity(source.get("sizeLimit")) if "sizeLimit" in source else None
    if size is not None and size < 0:
        return [fe.forbidden(f"{path}.sizeLimit", "SizeLimit field must be a valid resource quantity")]
    return []


def _host_path(source: Obj, path: str) -> list[Cause]:
    if not source.get("path"):
        return [fe.required(f"{path}.path")]
    causes = no_backsteps(str(source["path"]), f"{path}.path")
    kind = source.get("type")
    if kind is not None and kind not in _HOST_PATH_TYPES:
        causes.append(fe.not_supported(f"{path}.type", kind, _HOST_PATH_TYPES))
    return causes


def _items(source: Obj, path: str) -> list[Cause]:
    return [
        c
        for i, item in enumerate(items_of(source.get("items")))
        for c in _key_to_path(item, f"{path}.items[{i}]")
    ]


def _secret(source: Obj, path: str) -> list[Cause]:
    causes = [] if source.get("secretName") else [fe.required(f"{path}.secretName")]
    return causes + _mode(source, "defaultMode", path) + _items(source, path)


def _config_map(source: Obj, path: str) -> list[Cause]:
    causes = [] if source.get("name") else [fe.required(f"{path}.name")]
    return causes + _mode(source, "defaultMode", path) + _items(source, path)


def _claim(source: Obj, path: str) -> list[Cause]:
    return [] if source.get("claimName") else [fe.required(f"{path}.claimName")]


def _nfs(source: Obj, path: str) -> list[Cause]:
    causes = [] if source.get("server") else [fe.required(f"{path}.server")]
    if not source.get("path"):
        causes.append(fe.required(f"{path}.path"))
    if not str(source.get("path") or "").startswith("/"):
        causes.append(fe.invalid(f"{path}.path", source.get("path") or "", "must be an absolute path"))
    return causes


def _downward_file(item: Obj, path: str, field_paths: tuple[str, ...]) -> list[Cause]:
    causes = [] if item.get("path") else [fe.required(f"{path}.path")]
    causes += _local_non_reserved(str(item.get("path") or ""), f"{path}.path")
    if isinstance(item.get("fieldRef"), dict):
        causes += _field_selector(item["fieldRef"], field_paths, f"{path}.fieldRef")
        if isinstance(item.get("resourceFieldRef"), dict):
            causes.append(
                fe.invalid(
                    path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"
                )
            )
    elif isinstance(item.get("resourceFieldRef"), dict):
        causes += _resource_selector(item["resourceFieldRef"], f"{path}.resourceFieldRef", volume=True)
    else:
        causes.append(fe.required(path, "one of fieldRef and resourceFieldRef is required"))
    return causes + _mode(item, "mode", path)


def _downward_api(source: Obj, path: str) -> list[Cause]:
    causes = _mode(source, "defaultMode", path)
    for item in items_of(source.get("items")):
        causes += _downward_file(item, path, _VOLUME_FIELD_PATHS)
    return causes


def _projected(source: Obj, path: str) -> list[Cause]:
    causes = _mode(source, "defaultMode", path)
    seen: set[str] = set()
    for index, projection in enumerate(items_of(source.get("sources"))):
        here = f"{path}.sources[{index}]"
        kinds = [
            k
            for k in (
                "secret",
                "configMap",
                "downwardAPI",
                "serviceAccountToken",
                "clusterTrustBundle",
                "podCertificate",
            )
            if isinstance(projection.get(k), dict)
        ]
        for kind in ("secret", "configMap"):
            if kind in kinds:
                part = projection[kind]
                causes += [] if part.get("name") else [fe.required(f"{here}.{kind}.name")]
                for i, item in enumerate(items_of(part.get("items"))):
                    causes += _key_to_path(item, f"{here}.{kind}.items[{i}]")
                    if item.get("path") in seen:
                        causes.append(fe.invalid(path, part.get("name") or "", "conflicting duplicate paths"))
                    seen.add(item.get("path") or "")
        if "downwardAPI" in kinds:
            for item in items_of(projection["downwardAPI"].get("items")):
                causes += _downward_file(item, f"{here}.downwardAPI", _VOLUME_FIELD_PATHS)
        if "serviceAccountToken" in kinds:
            token = projection["serviceAccountToken"]
            seconds = token.get("expirationSeconds", 3600)
            if isinstance(seconds, int) and seconds < 600:
                causes.append(
                    fe.invalid(
                        f"{here}.serviceAccountToken.expirationSeconds",
                        seconds,
                        "may not specify a duration less than 10 minutes",
                    )
                )
            if isinstance(seconds, int) and seconds > 1 << 32:
                causes.append(
                    fe.invalid(
                        f"{here}.serviceAccountToken.expirationSeconds",
                        seconds,
                        "may not specify a duration larger than 2^32 seconds",
                    )
                )
            if not token.get("path"):
                causes.append(fe.required(f"{path}.path"))
            else:
                causes += _local_non_reserved(str(token["path"]), f"{path}.path")
        if len(kinds) > 1:
            causes.append(fe.forbidden(here, "may not specify more than 1 volume type per source"))
    return causes


def _csi(source: Obj, path: str) -> list[Cause]:
    return [] if source.get("driver") else [fe.required(f"{path}.driver")]


def _ephemeral(source: Obj, path: str) -> list[Cause]:
    template = source.get("volumeClaimTemplate")
    return [] if isinstance(template, dict) else [fe.required(f"{path}.volumeClaimTemplate")]


def _image(source: Obj, path: str) -> list[Cause]:
    return [] if source.get("reference") else [fe.required(f"{path}.reference", "must be set")]


_SOURCE_RULES = {
    "emptyDir": _empty_dir,
    "hostPath": _host_path,
    "secret": _secret,
    "configMap": _config_map,
    "persistentVolumeClaim": _claim,
    "nfs": _nfs,
    "downwardAPI": _downward_api,
    "projected": _projected,
    "csi": _csi,
    "ephemeral": _ephemeral,
    "image": _image,
}


# --- env ---------------------------------------------------------------------------------------------------


def _field_selector(selector: Obj, allowed: tuple[str, ...], path: str) -> list[Cause]:
    if not selector.get("apiVersion"):
        return [fe.required(f"{path}.apiVersion")]
    field_path = selector.get("fieldPath") or ""
    if not field_path:
        return [fe.required(f"{path}.fieldPath")]
    subscripted = _SUBSCRIPT.match(field_path)
    if subscripted:
        key = subscripted.group(2)
        key = key.lower() if subscripted.group(1) == "metadata.annotations" else key
        return fe.invalids(path, key, fe.qualified_name_problems(key))
    if field_path not in _DOWNWARD_LABELS:
        return [
            fe.invalid(
                f"{path}.fieldPath",
                field_path,
                f"error converting fieldPath: field label not supported: {field_path}",
            )
        ]
    if field_path not in allowed:
        return [fe.not_supported(f"{path}.fieldPath", field_path, sorted(allowed))]
    return []


def _resource_selector(selector: Obj, path: str, *, volume: bool) -> list[Cause]:
    resource = selector.get("resource") or ""
    if volume and not selector.get("containerName"):
        return [fe.required(f"{path}.containerName")]
    if not resource:
        return [fe.required(f"{path}.resource")]
    if resource not in _RESOURCE_FIELD_PATHS and not resource.startswith(
        ("requests.hugepages-", "limits.hugepages-")
    ):
        return [fe.not_supported(f"{path}.resource", resource, _RESOURCE_FIELD_PATHS)]
    return []


def _key_selector(selector: Obj, path: str) -> list[Cause]:
    causes = fe.invalids(
        f"{path}.name", selector.get("name") or "", fe.dns_subdomain_problems(str(selector.get("name") or ""))
    )
    key = selector.get("key") or ""
    if not key:
        return [*causes, fe.required(f"{path}.key")]
    return causes + fe.invalids(f"{path}.key", key, fe.config_key_problems(str(key)))


def env_causes(variables: list[Obj], path: str) -> list[Cause]:
    """ValidateEnv: names (relaxed rules) and `valueFrom` with exactly one source and no `value`."""
    causes: list[Cause] = []
    for index, variable in enumerate(variables):
        here = f"{path}[{index}]"
        name = variable.get("name") or ""
        if not name:
            causes.append(fe.required(f"{here}.name"))
        else:
            causes += fe.invalids(f"{here}.name", name, fe.env_var_name_problems(str(name)))
        source = variable.get("valueFrom")
        if not isinstance(source, dict):
            continue
        found = 0
        for key in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef"):
            if isinstance(source.get(key), dict):
                found += 1
                sub = f"{here}.valueFrom.{key}"
                if key == "fieldRef":
                    causes += _field_selector(source[key], _ENV_FIELD_PATHS, sub)
                elif key == "resourceFieldRef":
                    causes += _resource_selector(source[key], sub, volume=False)
                else:
                    causes += _key_selector(source[key], sub)
        if not found:
            causes.append(
                fe.invalid(
                    f"{here}.valueFrom",
                    "",
                    _ONE_OF_VALUE_FROM,
                )
            )
        elif variable.get("value"):
            causes.append(
                fe.invalid(f"{here}.valueFrom", "", "may not be specified when `value` is not empty")
            )
        elif found > 1:
            causes.append(
                fe.invalid(f"{here}.valueFrom", "", "may not have more than one field specified at a time")
            )
    return causes


def env_from_causes(sources: list[Obj], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for index, source in enumerate(sources):
        here = f"{path}[{index}]"
        if source.get("prefix"):
            causes += fe.invalids(
                f"{here}.prefix", source["prefix"], fe.env_var_name_problems(str(source["prefix"]))
            )
        refs = [key for key in ("configMapRef", "secretRef") if isinstance(source.get(key), dict)]
        for key in refs:
            name = source[key].get("name") or ""
            if not name:
                causes.append(fe.required(f"{here}.{key}.name"))
            else:
                causes += fe.invalids(f"{here}.{key}.name", name, fe.dns_subdomain_problems(str(name)))
        if not refs:
            causes.append(fe.invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif len(refs) > 1:
            causes.append(fe.invalid(path, "", "may not have more than one field specified at a time"))
    return causes
