"""Minimal Argo CRDs (Workflow, WorkflowTemplate): any spec and status, Argo's printer columns and no
subresources (Argo's own CRDs have none: its controller writes status with the whole object)."""

from __future__ import annotations

from typing import Any

from kubesim.errors import ApiError
from kubesim.store import Store

GROUP = "argoproj.io"
VERSION = "v1alpha1"
WORKFLOWS = f"workflows.{GROUP}"

_FREE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _crd(kind: str, plural: str, short_names: list[str], columns: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": columns,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "spec": _FREE,
                                "status": _FREE,
                            },
                        }
                    },
                }
            ],
        },
    }


def argo_crds() -> list[dict[str, Any]]:
    workflow_columns = [
        {
            "name": "Status",
            "type": "string",
            "jsonPath": ".status.phase",
            "description": "Status of the workflow",
        },
        {
            "name": "Age",
            "type": "date",
            "format": "date-time",
            "jsonPath": ".status.startedAt",
            "description": "When the workflow was started",
        },
        {
            "name": "Message",
            "type": "string",
            "jsonPath": ".status.message",
            "description": "Human readable message",
        },
    ]
    return [
        _crd("Workflow", "workflows", ["wf"], workflow_columns),
        _crd("WorkflowTemplate", "workflowtemplates", ["wftmpl"], []),
    ]


def install_crds(store: Store) -> None:
    """Create the Argo CRDs unless some are already there (a test may install its own)."""
    for crd in argo_crds():
        try:
            store.create(crd)
        except ApiError as error:
            if error.code != 409:
                raise
