"""The pods Argo creates for container and script templates, and what a finished pod says about its node.

A pod has the user's container as `main` (plus the template's init containers and sidecars), Argo's labels
and annotations, and the Workflow as controller owner. The simulator leaves out Argo's `init` and `wait`
containers: outputs come from the scripted annotation (kubesim/argo/scripting.py), from the main
container's log (`outputs.result`), and on a process pod from what the kubelet's argoexec read (its
output paths and input artifacts travel as annotations).
"""

from __future__ import annotations

import json
from typing import Any

from kubesim.argo.scripting import scripted_outputs
from kubesim.kubelet.process.argoexec import (
    INIT_FAILED_REASON,
    INPUT_ARTIFACTS_ANNOTATION,
    OUTPUT_PATHS_ANNOTATION,
    output_paths,
)

WORKFLOW_LABEL = "workflows.argoproj.io/workflow"
COMPLETED_LABEL = "workflows.argoproj.io/completed"
NODE_NAME_ANNOTATION = "workflows.argoproj.io/node-name"
NODE_ID_ANNOTATION = "workflows.argoproj.io/node-id"
MAIN = "main"
_RESULT_LIMIT = 256 * 1024
_WAITING_PROBLEMS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError")


def _main_container(template: dict[str, Any]) -> dict[str, Any]:
    if "script" in template:
        script = dict(template["script"])
        source = script.pop("source", "")
        container = {**script, "name": MAIN, "args": ["/argo/staging/script"]}
        container.setdefault("command", ["python"])
        container["env"] = [*(script.get("env") or []), {"name": "ARGO_TEMPLATE_SCRIPT", "value": source}]
        return container
    return {**(template.get("container") or {}), "name": MAIN}


def pod_manifest(
    workflow: dict[str, Any],
    template: dict[str, Any],
    *,
    name: str,
    node_name: str,
    node_id: str,
    annotations: dict[str, str],
) -> dict[str, Any]:
    """The pod of one container/script node (template already substituted)."""
    metadata, spec = workflow["metadata"], workflow.get("spec") or {}
    pod_metadata = spec.get("podMetadata") or {}
    template_metadata = template.get("metadata") or {}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [_main_container(template), *(template.get("sidecars") or [])],
    }
    if template.get("initContainers"):
        pod_spec["initContainers"] = list(template["initContainers"])
    volumes = [*(spec.get("volumes") or []), *(template.get("volumes") or [])]
    if volumes:
        pod_spec["volumes"] = volumes
    for field in ("serviceAccountName", "nodeSelector", "tolerations", "affinity", "priorityClassName"):
        value = template.get(field, spec.get(field))
        if value:
            pod_spec[field] = value
    if template.get("activeDeadlineSeconds"):
        pod_spec["activeDeadlineSeconds"] = template["activeDeadlineSeconds"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": metadata.get("namespace", ""),
            "labels": {
                **(pod_metadata.get("labels") or {}),
                **(template_metadata.get("labels") or {}),
                WORKFLOW_LABEL: metadata["name"],
                COMPLETED_LABEL: "false",
            },
            "annotations": {
                **annotations,
                **(pod_metadata.get("annotations") or {}),
                **(template_metadata.get("annotations") or {}),
                NODE_NAME_ANNOTATION: node_name,
                NODE_ID_ANNOTATION: node_id,
                **_output_paths(template),
                **_input_artifacts(template),
            },
            "ownerReferences": [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Workflow",
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": pod_spec,
    }


def _output_paths(template: dict[str, Any]) -> dict[str, str]:
    """Where the process kubelet, as Argo's executor, reads the step's outputs (nothing when none)."""
    paths = output_paths(template)
    return {OUTPUT_PATHS_ANNOTATION: json.dumps(paths, sort_keys=True)} if paths else {}


def _input_artifacts(template: dict[str, Any]) -> dict[str, str]:
    """What the process kubelet, as Argo's executor, loads before the main container (its inputs resolved)."""
    artifacts = (template.get("inputs") or {}).get("artifacts")
    return {INPUT_ARTIFACTS_ANNOTATION: json.dumps(artifacts, sort_keys=True)} if artifacts else {}


def _container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == name:
            return status
    return {}


def main_exit(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The main container's `terminated` state once it has exited (Argo pods never restart)."""
    return (_container(pod, MAIN).get("state") or {}).get("terminated")


def running_sidecars(pod: dict[str, Any]) -> list[str]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return [s["name"] for s in statuses if s.get("name") != MAIN and "running" in (s.get("state") or {})]


def pod_outcome(pod: dict[str, Any]) -> tuple[str, str]:
    """(node phase, message) from the pod: the main container's exit decides, as Argo's wait container."""
    status = pod.get("status") or {}
    terminated = main_exit(pod)
    if terminated is not None:
        code = int(terminated.get("exitCode", 0))
        if code == 0:
            return "Succeeded", ""
        reason = terminated.get("reason") or "Error"
        return "Failed", f"{reason} (exit code {code})"
    if status.get("phase") == "Failed" and status.get("reason") == INIT_FAILED_REASON:
        return "Error", str(status.get("message"))  # the executor's init could not load an input artifact
    if status.get("phase") == "Failed":
        return "Failed", str(status.get("message") or status.get("reason") or "pod failed")
    if status.get("phase") == "Running":
        return "Running", ""
    waiting = (_container(pod, MAIN).get("state") or {}).get("waiting") or {}
    if waiting.get("reason") in _WAITING_PROBLEMS:
        return "Pending", f"{waiting['reason']}: {waiting.get('message', '')}".rstrip(": ")
    return "Pending", ""


def _artifact(declared: dict[str, Any], scripted: dict[str, Any], workflow: str, pod: str) -> dict[str, Any]:
    entry = {
        key: value for key, value in declared.items() if key not in ("from", "fromExpression", "archive")
    }
    locations = ("s3", "gcs", "oss", "hdfs", "http", "artifactory", "azure", "git", "raw")
    if not any(key in entry for key in locations) and not any(key in scripted for key in locations):
        entry["s3"] = {"key": f"{workflow}/{pod}/{declared.get('name')}.tgz"}
    return {**entry, **scripted}


def collect_outputs(
    template: dict[str, Any], pod: dict[str, Any], log_text: str, workflow: str
) -> tuple[dict[str, Any], str | None]:
    """The node's outputs from its finished pod, and an error message when a declared output has no value."""
    terminated = main_exit(pod) or {}
    outputs: dict[str, Any] = {}
    try:
        scripted = scripted_outputs(pod)
    except ValueError as error:
        return outputs, str(error)
    scripted_parameters = scripted.get("parameters") or {}
    scripted_artifacts = scripted.get("artifacts") or {}
    declared = template.get("outputs") or {}
    parameters = []
    for parameter in declared.get("parameters") or []:
        name = str(parameter.get("name", ""))
        source = parameter.get("valueFrom") or {}
        if name in scripted_parameters:
            value = str(scripted_parameters[name])
        elif "value" in parameter:
            value = str(parameter["value"])
        elif source.get("default") is not None:
            value = str(source["default"])
        else:
            where = source.get("path") or source.get("jsonPath") or "its source"
            return outputs, (
                f"kubesim: no value for output parameter {name!r} (from {where}); script it with the "
                "kubesim.argoml.io/outputs annotation or simulator.argo.script(parameters=...)"
            )
        parameters.append({"name": name, "value": value, **({"valueFrom": source} if source else {})})
    if parameters:
        outputs["parameters"] = parameters
    artifacts = [
        _artifact(a, scripted_artifacts.get(a.get("name"), {}), workflow, pod["metadata"]["name"])
        for a in declared.get("artifacts") or []
    ]
    if artifacts:
        outputs["artifacts"] = artifacts
    if log_text:
        outputs["result"] = log_text[:_RESULT_LIMIT].rstrip("\n")
    if "exitCode" in terminated:
        outputs["exitCode"] = str(terminated["exitCode"])
    return outputs, None
