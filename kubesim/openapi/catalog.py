"""Where the built-in kinds' schemas come from: kubernetes-validate's `_definitions.json` of one release.

The file (1.8 MB, every definition of the release as JSON Schema converted from the API server's swagger)
is read once per process on first use; nothing here imports kubernetes-validate itself (it would pull in
jsonschema), only its package data is read.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

KUBERNETES_RELEASE = "v1.37.0"
_REF_PREFIX = "#/$defs/"


def _definitions_path() -> Path:
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("kubernetes-validate is not installed: it carries the built-in kinds' schemas")
    package = Path(next(iter(spec.submodule_search_locations)))
    return package / "kubernetes-json-schema" / f"{KUBERNETES_RELEASE}-local" / "_definitions.json"


@functools.cache
def definitions() -> dict[str, dict[str, Any]]:
    """Every definition by its name (`io.k8s.api.core.v1.Pod`), as the package ships them."""
    with _definitions_path().open(encoding="utf-8") as handle:
        loaded: dict[str, dict[str, Any]] = json.load(handle)["$defs"]
    return loaded


@functools.cache
def _by_group_version_kind() -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, definition in definitions().items():
        for gvk in definition.get("x-kubernetes-group-version-kind") or ():
            # DeleteOptions, WatchEvent… are listed under every group: keep the kinds' own definitions
            key = (gvk.get("group", ""), gvk["version"], gvk["kind"])
            if key not in index or not name.startswith("io.k8s.apimachinery"):
                index[key] = name
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The definition of a served kind, or None for a kind the release does not have."""
    return _by_group_version_kind().get((group, version, kind))


def ref_name(reference: str) -> str:
    """`#/$defs/io.k8s.api.core.v1.PodSpec` → `io.k8s.api.core.v1.PodSpec`."""
    return reference.removeprefix(_REF_PREFIX)
