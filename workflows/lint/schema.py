"""The shape of Argo documents: a small graph of SchemaNode that the structural walk (structure.py) follows.

The graph is compiled from hera's models by schema_build.py and committed as argo_schema.json beside this
file, so a process reads a 40 KB file instead of importing hera's models and compiling them (about a
second of CPU at every start of a command or the webhook listener). A test fails while the file is stale.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OBJECT = "object"
LIST = "array"
MAP = "map"
STRING = "string"
INTEGER = "integer"
NUMBER = "number"
BOOLEAN = "boolean"
INT_OR_STRING = "integer or string"
SCALAR = "scalar"
ANY = "any"

SCALAR_KINDS = frozenset({STRING, INTEGER, NUMBER, BOOLEAN, INT_OR_STRING, SCALAR})

DOCUMENT_MODELS = {
    "Workflow": "Workflow",
    "WorkflowTemplate": "WorkflowTemplate",
    "ClusterWorkflowTemplate": "ClusterWorkflowTemplate",
    "CronWorkflow": "CronWorkflow",
    "WorkflowEventBinding": "WorkflowEventBinding",
}


@dataclass(slots=True, eq=False)
class SchemaNode:
    """One type of the Argo API: an object with named fields, a list or map of items, or a scalar."""

    kind: str
    type_name: str = ""
    fields: dict[str, SchemaNode] = field(default_factory=dict)
    item: SchemaNode | None = None


ANY_NODE = SchemaNode(ANY)
SCHEMA_FILE = Path(__file__).with_name("argo_schema.json")


@functools.cache
def document_schema(kind: str) -> SchemaNode | None:
    """The schema of a whole document of this kind, or None for kinds the linter does not know."""
    model_name = DOCUMENT_MODELS.get(kind)
    if model_name is None:
        return None
    return _documents()[model_name]


@functools.cache
def _documents() -> dict[str, SchemaNode]:
    return decode(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def decode(data: dict[str, Any]) -> dict[str, SchemaNode]:
    """The document schemas of an encoded graph (schema_build.encode): objects by their index in
    ``objects``, each other node written out where it is used."""
    objects = [SchemaNode(OBJECT, entry["type"]) for entry in data["objects"]]

    def node(encoded: Any) -> SchemaNode:
        if isinstance(encoded, int):
            return objects[encoded]
        if encoded == ANY:
            return ANY_NODE
        if isinstance(encoded, str):
            return SchemaNode(encoded)
        item = encoded.get("item")
        return SchemaNode(encoded["kind"], encoded.get("type", ""), item=None if item is None else node(item))

    for target, entry in zip(objects, data["objects"], strict=True):
        target.fields = {key: node(value) for key, value in entry["fields"].items()}
    return {name: node(encoded) for name, encoded in data["documents"].items()}
