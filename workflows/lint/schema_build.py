"""Compile hera's models of Argo's API into argo_schema.json, the graph schema.py loads.

    .venv/bin/python -m workflows.lint.schema_build          # write workflows/lint/argo_schema.json
    .venv/bin/python -m workflows.lint.schema_build --check  # exit 1 if it is stale (a test does this too)

hera (pinned in requirements.txt) generates pydantic models from the ``swagger.json`` that Argo Workflows
publishes with each release (hera 7.1.0: Argo v4.0.5). We never validate with pydantic itself: we only read
each model's fields and their types, and compile them into SchemaNodes. Compiling takes about a second
(mostly importing hera's models), so it is done here, once per hera upgrade, rather than at every start:
a committed file is reviewed as a diff when hera changes, needs no writable cache directory in the image,
and cannot go stale unnoticed (workflows/tests/test_lint_schema.py compiles again and compares).

A few Argo types unmarshal from more than their OpenAPI schema says (Go types with their own JSON decoding);
those corrections are listed below, each with its reason, so that no field Argo accepts is rejected. Argo
v4.1 added fields that hera 7.1.0 does not model yet; _add_argo_v41_fields adds them, built from hera's own
Kubernetes types, until a hera release generated from Argo v4.1 replaces that function.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
import types
import typing
from importlib import metadata
from typing import Any

from pydantic import BaseModel, RootModel

from workflows.lint import schema

# Go types whose JSON decoding accepts any object (Plugin holds the plugin's own configuration; FieldsV1 is
# server-side-apply bookkeeping) although the generated model has no fields.
_FREE_FORM_MODELS = frozenset({"Plugin", "FieldsV1"})
# Go types that decode from a number as well as a string (Amount is a json.Number, Quantity parses both).
_SCALAR_MODELS = frozenset({"Amount", "Quantity"})
# Argo's AnyString fields: the OpenAPI spec says string, but numbers and booleans are accepted too.
_ANY_STRING_FIELDS = frozenset(
    {("Parameter", "value"), ("Parameter", "default"), ("Parameter", "enum"), ("ValueFrom", "default")}
)


class _Compiler:
    """Turns pydantic model classes into SchemaNodes, each class once (the API types are recursive)."""

    def __init__(self) -> None:
        self._objects: dict[type, schema.SchemaNode] = {}

    def node_for(self, annotation: Any) -> schema.SchemaNode:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            return self.node_for(typing.get_args(annotation)[0])
        if origin in (typing.Union, types.UnionType):
            return self._union(typing.get_args(annotation))
        if origin is list:
            return schema.SchemaNode(schema.LIST, item=self.node_for(typing.get_args(annotation)[0]))
        if origin is dict:
            return schema.SchemaNode(schema.MAP, item=self.node_for(typing.get_args(annotation)[1]))
        if origin is typing.Literal:
            return schema.SchemaNode(schema.STRING)
        if isinstance(annotation, type):
            return self._class(annotation)
        return schema.ANY_NODE

    def _union(self, members: tuple[Any, ...]) -> schema.SchemaNode:
        nodes = [self.node_for(member) for member in members if member is not type(None)]
        if len(nodes) == 1:
            return nodes[0]
        kinds = {node.kind for node in nodes}
        if kinds == {schema.STRING, schema.INTEGER}:
            return schema.SchemaNode(schema.INT_OR_STRING)
        if kinds <= schema.SCALAR_KINDS:
            return schema.SchemaNode(schema.SCALAR)
        return schema.ANY_NODE

    def _class(self, cls: type) -> schema.SchemaNode:
        if issubclass(cls, RootModel):
            return self._root_model(cls)
        if issubclass(cls, BaseModel):
            return self._object(cls)
        if issubclass(cls, bool):
            return schema.SchemaNode(schema.BOOLEAN)
        if issubclass(cls, int):
            return schema.SchemaNode(schema.INTEGER)
        if issubclass(cls, float):
            return schema.SchemaNode(schema.NUMBER)
        if issubclass(cls, str | enum.Enum):
            return schema.SchemaNode(schema.STRING)
        return schema.ANY_NODE

    def _root_model(self, cls: type[RootModel[Any]]) -> schema.SchemaNode:
        if cls.__name__ in _SCALAR_MODELS:
            return schema.SchemaNode(schema.SCALAR, cls.__name__)
        if cls.__name__ == "IntOrString":
            return schema.SchemaNode(schema.INT_OR_STRING, cls.__name__)
        return self.node_for(cls.model_fields["root"].annotation)

    def _object(self, cls: type[BaseModel]) -> schema.SchemaNode:
        if cls.__name__ in _FREE_FORM_MODELS:
            return schema.ANY_NODE
        known = self._objects.get(cls)
        if known is not None:
            return known
        node = schema.SchemaNode(schema.OBJECT, cls.__name__)
        self._objects[cls] = node  # registered before the fields so recursive types end here
        for name, info in cls.model_fields.items():
            key = info.alias or name
            if (cls.__name__, key) in _ANY_STRING_FIELDS:
                scalar = schema.SchemaNode(schema.SCALAR)
                node.fields[key] = schema.SchemaNode(schema.LIST, item=scalar) if key == "enum" else scalar
            else:
                node.fields[key] = self.node_for(info.annotation)
        return node


def compile_documents() -> dict[str, schema.SchemaNode]:
    """Every linted kind's schema, compiled from hera's models."""
    from hera.workflows.models.io.argoproj.workflow import v1alpha1

    compiler = _Compiler()
    documents = {name: compiler.node_for(getattr(v1alpha1, name)) for name in schema.DOCUMENT_MODELS.values()}
    _add_argo_v41_fields(compiler)
    for document in documents.values():
        if "status" in document.fields:
            # Written by the controller, never by users, and newer controllers add fields to it: an update
            # that carries a status must not be refused over it.
            document.fields["status"] = schema.ANY_NODE
    return documents


def _add_argo_v41_fields(compiler: _Compiler) -> None:
    """Fields of Argo v4.1 (podResources, resourceClaims, executorPlugins) missing from hera 7.1.0."""
    from hera.workflows.models.io.argoproj.workflow import v1alpha1
    from hera.workflows.models.io.k8s.api.core import v1
    from hera.workflows.models.io.k8s.apimachinery.pkg.apis.meta.v1 import ObjectMeta

    # Kubernetes core/v1 PodResourceClaim, which hera's model set does not include.
    pod_resource_claim = schema.SchemaNode(
        schema.OBJECT,
        "PodResourceClaim",
        {
            name: schema.SchemaNode(schema.STRING)
            for name in ("name", "resourceClaimName", "resourceClaimTemplateName")
        },
    )
    # An executor plugin's spec is the plugin's own configuration, which Argo passes on as it is.
    executor_plugin = schema.SchemaNode(
        schema.OBJECT, "ExecutorPlugin", {"metadata": compiler.node_for(ObjectMeta), "spec": schema.ANY_NODE}
    )
    for owner in (v1alpha1.WorkflowSpec, v1alpha1.Template):
        node = compiler.node_for(owner)
        node.fields.setdefault("podResources", compiler.node_for(v1.ResourceRequirements))
        node.fields.setdefault("resourceClaims", schema.SchemaNode(schema.LIST, item=pod_resource_claim))
    spec = compiler.node_for(v1alpha1.WorkflowSpec)
    spec.fields.setdefault("executorPlugins", schema.SchemaNode(schema.LIST, item=executor_plugin))


def encode(documents: dict[str, schema.SchemaNode]) -> dict[str, Any]:
    """The graph as JSON: each object node once in ``objects`` (types are recursive), referred to by its
    index; any other node written out where it is used."""
    objects: list[dict[str, Any]] = []
    index: dict[int, int] = {}

    def node(value: schema.SchemaNode) -> Any:
        if value.kind == schema.OBJECT:
            known = index.get(id(value))
            if known is None:
                known = index[id(value)] = len(objects)
                entry: dict[str, Any] = {"type": value.type_name, "fields": {}}
                objects.append(entry)
                entry["fields"] = {key: node(child) for key, child in value.fields.items()}
            return known
        if value.item is None and not value.type_name:
            return value.kind
        encoded: dict[str, Any] = {"kind": value.kind}
        if value.type_name:
            encoded["type"] = value.type_name
        if value.item is not None:
            encoded["item"] = node(value.item)
        return encoded

    encoded_documents = {name: node(document) for name, document in documents.items()}
    return {
        "generated_by": "workflows/lint/schema_build.py from hera " + metadata.version("hera"),
        "documents": encoded_documents,
        "objects": objects,
    }


def render() -> str:
    """The file's text, as committed."""
    return json.dumps(encode(compile_documents()), indent=1, sort_keys=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report a stale file; exit 1 if it is")
    arguments = parser.parse_args()
    text = render()
    current = schema.SCHEMA_FILE.read_text(encoding="utf-8") if schema.SCHEMA_FILE.exists() else None
    if current == text:
        return 0
    if arguments.check:
        print(f"{schema.SCHEMA_FILE} is stale: run python -m workflows.lint.schema_build", file=sys.stderr)
        return 1
    schema.SCHEMA_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {schema.SCHEMA_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
