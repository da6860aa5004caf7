"""A runtime's policies, parsed: `mlPolicy` (at most one framework source; torch's and mpi's have settings
of their own) and `podGroupPolicy` (which gang scheduler). Pure, as `trainer.operator.spec`, which reads the
rest of a runtime; `trainer.operator.plan.ML_PLUGINS` holds what each framework does to the pods."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import fields
from trainer import constants as c
from trainer.operator import readers


@dataclass(frozen=True)
class EnvInjectionTarget:
    job_name: str
    container_names: tuple[str, ...]


@dataclass(frozen=True)
class TorchPolicy:
    env_injection: tuple[EnvInjectionTarget, ...] = ()


@dataclass(frozen=True)
class MPIPolicy:
    num_proc_per_node: int = 1
    mpi_implementation: str = c.MPI_IMPLEMENTATION_OPENMPI
    ssh_auth_mount_path: str = c.MPI_DEFAULT_SSH_AUTH_MOUNT_PATH
    run_launcher_as_node: bool = False


@dataclass(frozen=True)
class MLPolicy:
    """`mlPolicy`: at most one framework source; `framework` is "plain" when none is set."""

    num_nodes: int = 1
    framework: str = "plain"
    torch: TorchPolicy | None = None
    mpi: MPIPolicy | None = None


@dataclass(frozen=True)
class PodGroupPolicy:
    """`podGroupPolicy`: which gang scheduler, with its one knob."""

    scheduler: str  # "coscheduling" | "volcano"
    schedule_timeout_seconds: int | None = None
    network_topology: fields.RawDict | None = None


#: mlPolicy's framework sources, in Trainer's order.
FRAMEWORKS = ("torch", "mpi", "jax", "xgboost", "flux")


def ml_policy(found: fields.ErrorList, raw: object) -> MLPolicy | None:
    if raw is None:
        return None
    spec = fields.obj(found, "spec.mlPolicy", raw)
    sources = [name for name in FRAMEWORKS if spec.get(name) is not None]
    if len(sources) > 1:
        found.add(
            "spec.mlPolicy", f"must set at most one of {', '.join(FRAMEWORKS)}, not {', '.join(sources)}"
        )
    if "flux" in sources:
        found.add("spec.mlPolicy.flux", "is not supported yet (torch, mpi, jax and xgboost are)")
    torch = _torch(found, spec["torch"]) if "torch" in sources else None
    mpi = _mpi(found, spec["mpi"]) if "mpi" in sources else None
    num_nodes = readers.count(
        found, "spec.mlPolicy.numNodes", spec.get("numNodes"), what="nodes", bound="replicas_per_job"
    )
    return MLPolicy(
        num_nodes=1 if num_nodes is None else num_nodes,
        framework=sources[0] if sources else "plain",
        torch=torch,
        mpi=mpi,
    )


def _torch(found: fields.ErrorList, raw: object) -> TorchPolicy:
    torch_spec = fields.obj(found, "spec.mlPolicy.torch", raw)
    injection = fields.obj(found, "spec.mlPolicy.torch.envInjection", torch_spec.get("envInjection"))
    targets = []
    for index, item in enumerate(
        fields.items(found, "spec.mlPolicy.torch.envInjection.targets", injection.get("targets"))
    ):
        path = f"spec.mlPolicy.torch.envInjection.targets[{index}]"
        target = fields.obj(found, path, item)
        targets.append(
            EnvInjectionTarget(
                job_name=fields.text(found, f"{path}.jobName", target.get("jobName"), required=True) or "",
                container_names=fields.texts(
                    found,
                    f"{path}.containerNames",
                    target.get("containerNames"),
                    max_items=readers.MAX_ARGUMENTS,
                )
                or (),
            )
        )
    return TorchPolicy(env_injection=tuple(targets))


def _mpi(found: fields.ErrorList, raw: object) -> MPIPolicy:
    mpi_spec = fields.obj(found, "spec.mlPolicy.mpi", raw)
    implementation = (
        fields.text(found, "spec.mlPolicy.mpi.mpiImplementation", mpi_spec.get("mpiImplementation"))
        or c.MPI_IMPLEMENTATION_OPENMPI
    )
    if implementation not in c.MPI_IMPLEMENTATIONS:
        found.add(
            "spec.mlPolicy.mpi.mpiImplementation",
            f"must be one of {', '.join(c.MPI_IMPLEMENTATIONS)}, not {implementation!r}",
        )
    slots = readers.processes(found, "spec.mlPolicy.mpi.numProcPerNode", mpi_spec.get("numProcPerNode"))
    return MPIPolicy(
        num_proc_per_node=1 if slots is None else slots,
        mpi_implementation=implementation,
        ssh_auth_mount_path=fields.text(
            found, "spec.mlPolicy.mpi.sshAuthMountPath", mpi_spec.get("sshAuthMountPath")
        )
        or c.MPI_DEFAULT_SSH_AUTH_MOUNT_PATH,
        run_launcher_as_node=fields.flag(
            found, "spec.mlPolicy.mpi.runLauncherAsNode", mpi_spec.get("runLauncherAsNode")
        ),
    )


def pod_group_policy(found: fields.ErrorList, raw: object) -> PodGroupPolicy | None:
    if raw is None:
        return None
    spec = fields.obj(found, "spec.podGroupPolicy", raw)
    chosen = [name for name in ("coscheduling", "volcano") if spec.get(name) is not None]
    if len(chosen) != 1:
        found.add("spec.podGroupPolicy", "must set exactly one of coscheduling, volcano")
        return None
    source = fields.obj(found, f"spec.podGroupPolicy.{chosen[0]}", spec[chosen[0]])
    if chosen[0] == "coscheduling":
        return PodGroupPolicy(
            scheduler="coscheduling",
            schedule_timeout_seconds=fields.integer(
                found,
                "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds",
                source.get("scheduleTimeoutSeconds"),
                minimum=0,
            ),
        )
    topology = source.get("networkTopology")
    return PodGroupPolicy(scheduler="volcano", network_topology=copy.deepcopy(topology) if topology else None)
