"""How Argo names things, so readers of `status.nodes` and pod names see what a real controller writes.

Node names are paths: `wf` (the root), `wf[0]` (a step group), `wf[0].train` (a step), `wf[0].train(2:lr:0.1)`
(an expanded item), `wf.task` (a DAG task), `wf[0].train(1)` (a retry attempt), `wf.onExit`. Node ids are
`<wf>-<fnv32a(name)>` (the root's id is the workflow name); pod names are `<wf>-<template>-<fnv32a(name)>`
(Argo's POD_NAMES=v2, its default).
"""

from __future__ import annotations

import functools
import json
from typing import Any

_MAX_POD_PREFIX = 253 - 10 - 1  # Kubernetes name limit minus the hash and its dash


def fnv32a(text: str) -> int:
    value = 0x811C9DC5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


@functools.lru_cache(maxsize=65_536)
def node_id(workflow: str, node_name: str) -> str:
    return workflow if node_name == workflow else f"{workflow}-{fnv32a(node_name)}"


def pod_name(workflow: str, node_name: str, template: str) -> str:
    if node_name == workflow:
        return workflow
    prefix = f"{workflow}-{template}"[:_MAX_POD_PREFIX]
    return f"{prefix}-{fnv32a(node_name)}"


def go_string(value: Any) -> str:
    """A value as Argo prints it into names and `{{item}}`: strings raw, numbers and bools bare, else JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def item_description(item: Any) -> str:
    """What follows the index in an expanded node name: `a`, `1`, `key:value,other:2` (sorted), `[a b]`."""
    if isinstance(item, dict):
        return ",".join(sorted(f"{key}:{go_string(value)}" for key, value in item.items()))
    if isinstance(item, list):
        return "[" + " ".join(go_string(value) for value in item) + "]"
    return go_string(item)


def expanded_name(name: str, index: int, item: Any) -> str:
    return f"{name}({index}:{item_description(item)})"


def attempt_name(name: str, attempt: int) -> str:
    return f"{name}({attempt})"
