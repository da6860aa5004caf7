"""JobSet's volume claim policies, without JobSet: the PersistentVolumeClaims a runtime's
`template.spec.volumeClaimPolicies` asks for, and the volumes that mount them in the pods whose containers
name them. Trainer's torchtune runtimes rely on this: their initializers and trainer mount `initializer`
and declare no such volume; JobSet (pkg/controllers/volume_claim_policy.go) creates the claim
`<template>-<jobset>` and adds the volume to every Job whose containers or init containers mount that name.

Pure: manifests and templates in, manifests out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import fields
from trainer import constants as c
from trainer.operator import spec


def claim_name(job_name: str, template_name: str) -> str:
    """JobSet's generatePVCName: `<claim template>-<jobset>` (the JobSet is named after the TrainJob)."""
    return f"{template_name}-{job_name}"


def claims(job: spec.TrainJob, runtime: spec.Runtime, owner: fields.RawDict) -> tuple[fields.RawDict, ...]:
    """The claims to create: the template's labels plus the JobSet name label, its annotations and spec;
    owned by the TrainJob (so deleted with it) unless the policy retains them."""
    return tuple(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": claim_name(job.name, template.name),
                "namespace": job.namespace,
                "labels": {**template.labels, c.LABEL_JOBSET_NAME: job.name},
                **({"annotations": dict(template.annotations)} if template.annotations else {}),
                **({"ownerReferences": [owner]} if template.owned else {}),
            },
            "spec": dict(template.spec),
        }
        for template in runtime.volume_claims
    )


def _mounted(pod_spec: fields.RawDict) -> set[Any]:
    containers: Iterable[Any] = [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]
    return {
        mount.get("name")
        for container in containers
        if isinstance(container, dict)
        for mount in container.get("volumeMounts") or []
        if isinstance(mount, dict)
    }


def attach(job_name: str, runtime: spec.Runtime, pod_templates: Iterable[fields.RawDict]) -> None:
    """Add each claim's volume to the pod templates whose containers mount it (in place). JobSet appends it
    whatever the template holds; a volume of the same name the template already declares is kept instead,
    so the pod is not refused for a duplicate volume."""
    for template in pod_templates:
        pod_spec = template.setdefault("spec", {})
        mounted = _mounted(pod_spec)
        volumes = pod_spec.setdefault("volumes", [])
        declared = {volume.get("name") for volume in volumes if isinstance(volume, dict)}
        for claim in runtime.volume_claims:
            if claim.name in mounted and claim.name not in declared:
                source = {"claimName": claim_name(job_name, claim.name)}
                volumes.append({"name": claim.name, "persistentVolumeClaim": source})
        if not volumes:
            del pod_spec["volumes"]
