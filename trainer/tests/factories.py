"""Small builders for TrainJob and runtime manifests, shaped as users and Kubeflow's manifests write them."""

from __future__ import annotations

from typing import Any

from trainer import constants as c


def container(name: str = "node", image: str = "test:image", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def replicated_job(
    name: str,
    *containers: dict[str, Any],
    ancestor: str | None = None,
    depends_on: list[tuple[str, str]] | None = None,
    parallelism: int | None = None,
    replicas: int | None = None,
    init_containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    job_spec: dict[str, Any] = {"template": {"spec": {"containers": list(containers) or [container(name)]}}}
    if init_containers:
        job_spec["template"]["spec"]["initContainers"] = init_containers
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    template: dict[str, Any] = {"spec": job_spec}
    if ancestor:
        template["metadata"] = {"labels": {c.LABEL_ANCESTOR: ancestor}}
    entry: dict[str, Any] = {"name": name, "template": template}
    if depends_on:
        entry["dependsOn"] = [{"name": dep, "status": status} for dep, status in depends_on]
    if replicas is not None:
        entry["replicas"] = replicas
    return entry


def runtime(
    *jobs: dict[str, Any],
    ml_policy: dict[str, Any] | None = None,
    name: str = "test-runtime",
    kind: str = c.CLUSTER_TRAINING_RUNTIME,
    namespace: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    body: dict[str, Any] = {"template": {"spec": {"replicatedJobs": list(jobs)}}, **spec}
    if ml_policy is not None:
        body["mlPolicy"] = ml_policy
    return {"apiVersion": c.API_VERSION, "kind": kind, "metadata": metadata, "spec": body}


def torch_runtime(num_nodes: int = 1, **torch: Any) -> dict[str, Any]:
    return runtime(
        replicated_job("node", container(), ancestor=c.ANCESTOR_TRAINER),
        ml_policy={"numNodes": num_nodes, "torch": torch},
    )


def torchtune_runtime(name: str = "torchtune-test", **policy: Any) -> dict[str, Any]:
    """Shaped as Kubeflow Trainer's torchtune runtimes (manifests/base/runtimes/torchtune): both
    initializers and the trainer mount `initializer`, a claim of the runtime's volumeClaimPolicies, and
    declare no volume of that name."""
    mount = [{"name": "initializer", "mountPath": "/workspace"}]
    claim = {
        "metadata": {"name": "initializer", "labels": {"app": "torchtune"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}},
    }
    built = runtime(
        replicated_job(
            c.DATASET_INITIALIZER,
            container(c.DATASET_INITIALIZER, volumeMounts=mount),
            ancestor=c.DATASET_INITIALIZER,
        ),
        replicated_job(
            c.MODEL_INITIALIZER,
            container(c.MODEL_INITIALIZER, volumeMounts=mount),
            ancestor=c.MODEL_INITIALIZER,
            depends_on=[(c.DATASET_INITIALIZER, "Complete")],
        ),
        replicated_job(
            "node",
            container(command=["tune", "run"], volumeMounts=mount),
            ancestor=c.ANCESTOR_TRAINER,
            depends_on=[(c.MODEL_INITIALIZER, "Complete")],
        ),
        ml_policy={"numNodes": 1, "torch": {}},
        name=name,
    )
    built["spec"]["template"]["spec"]["volumeClaimPolicies"] = [{"templates": [claim], **policy}]
    return built


def mpi_runtime(
    num_nodes: int = 1, *, launcher_first: bool = False, node: bool = True, launcher: bool = True, **mpi: Any
) -> dict[str, Any]:
    jobs = []
    if node:
        jobs.append(replicated_job("node", container()))
    if launcher:
        jobs.append(replicated_job("launcher", container(), ancestor=c.ANCESTOR_TRAINER))
    if launcher_first:
        jobs.reverse()
    return runtime(*jobs, ml_policy={"numNodes": num_nodes, "mpi": mpi})


def train_job(
    name: str = "test-job",
    namespace: str = "default",
    runtime_name: str = "test-runtime",
    runtime_kind: str | None = None,
    trainer: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": runtime_name}
    if runtime_kind:
        ref["kind"] = runtime_kind
    body: dict[str, Any] = {"runtimeRef": ref, **spec}
    if trainer is not None:
        body["trainer"] = trainer
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAIN_JOB_KIND,
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": body,
    }
