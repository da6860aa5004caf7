"""Argo Workflows as the API server returns them once they ran, with nodes that output `tensorboard`
artifacts: the shapes Argo 3.5 writes (key-only artifacts in the default repository, the resolved
repository in status.artifactRepositoryRef, compressed or offloaded node status)."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from typing import Any

NAMESPACE = "team-a"
MINIO_REPOSITORY = {
    "s3": {
        "bucket": "ml-artifacts",
        "endpoint": "minio.argo:9000",
        "insecure": True,
        "accessKeySecret": {"name": "minio-cred", "key": "accesskey"},
        "secretKeySecret": {"name": "minio-cred", "key": "secretkey"},
    }
}


def s3_artifact(key: str, *, name: str = "tensorboard", archive: Any = "none", **s3: Any) -> dict[str, Any]:
    """An output artifact as Argo records it; `archive="none"` is `archive: {none: {}}`, None leaves it out
    (Argo's default: tar.gz), any other value is written as given."""
    artifact: dict[str, Any] = {"name": name, "path": "/tmp/tb", "s3": {"key": key, **s3}}
    if archive == "none":
        artifact["archive"] = {"none": {}}
    elif archive is not None:
        artifact["archive"] = archive
    return artifact


def node(
    workflow: str,
    display: str,
    *artifacts: dict[str, Any],
    path: str | None = None,
    phase: str = "Succeeded",
    started: str = "2025-01-01T10:00:00Z",
) -> tuple[str, dict[str, Any]]:
    """(node id, node) of a pod node named `<workflow>.<path or display>`."""
    name = f"{workflow}.{path or display}"
    node_id = f"{workflow}-{zlib.crc32(name.encode()):010d}"
    body: dict[str, Any] = {
        "id": node_id,
        "name": name,
        "displayName": display,
        "type": "Pod",
        "templateName": "train",
        "phase": phase,
        "startedAt": started,
        "finishedAt": "2025-01-01T11:00:00Z" if phase != "Running" else None,
    }
    if artifacts:
        body["outputs"] = {"artifacts": list(artifacts), "exitCode": "0"}
    return node_id, body


def workflow(
    name: str = "mnist-train",
    *nodes: tuple[str, dict[str, Any]],
    namespace: str = NAMESPACE,
    phase: str = "Succeeded",
    repository: dict[str, Any] | None = MINIO_REPOSITORY,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Workflow with the given nodes (plus its root Steps node) and the repository Argo resolved."""
    root = {"id": name, "name": name, "displayName": name, "type": "Steps", "phase": phase}
    status: dict[str, Any] = {
        "phase": phase,
        "startedAt": "2025-01-01T10:00:00Z",
        "nodes": {name: root, **dict(nodes)},
    }
    if repository is not None:
        status["artifactRepositoryRef"] = {
            "configMap": "artifact-repositories",
            "key": "default-v1",
            "namespace": namespace,
            "artifactRepository": repository,
        }
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": metadata,
        "spec": {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "python"}}]},
        "status": status,
    }


def compressed(wf: dict[str, Any]) -> dict[str, Any]:
    """The same workflow with its nodes gzipped into status.compressedNodes, as Argo stores large ones."""
    status = dict(wf["status"])
    nodes = status.pop("nodes")
    status["compressedNodes"] = base64.b64encode(gzip.compress(json.dumps(nodes).encode())).decode()
    return {**wf, "status": status}


def offloaded(wf: dict[str, Any]) -> dict[str, Any]:
    status = {key: value for key, value in wf["status"].items() if key != "nodes"}
    return {**wf, "status": {**status, "offloadNodeStatusVersion": "fnv:1234567890"}}


def mnist_workflow(name: str = "mnist-train", **options: Any) -> dict[str, Any]:
    """Two training steps writing TensorBoard logs, plus a model artifact."""
    return workflow(
        name,
        node(
            name,
            "train-small",
            s3_artifact(f"{name}/small/tb"),
            s3_artifact(f"{name}/small/model.tgz", name="model", archive=None),
        ),
        node(name, "train-large", s3_artifact(f"{name}/large/tb"), started="2025-01-01T10:05:00Z"),
        **options,
    )
