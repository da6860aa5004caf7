"""MPI (Horovod, DeepSpeed, plain mpirun): a launcher that reaches its workers over SSH, as Kubeflow's MPIJob.

The spec is `kubeflow.org/v1` MPIJob's (training-operator v1.9: `mpiReplicaSpecs` Launcher/Worker,
`slotsPerWorker`, `runPolicy`) with the fields the mpi-operator v2 added (`mpiImplementation`,
`sshAuthMountPath`, `launcherCreationPolicy`); the children are the mpi-operator v2's, since the
training-operator's v1 alternative (`kubectl exec` through a delivered kubectl) needs an image and a Role per
job. Besides the pods: the ConfigMap `<job>-config` (`hostfile`, `discover_hosts.sh`), the Secret `<job>-ssh`
(kubernetes.io/ssh-auth, one key per job, mounted in every pod), and the headless Service `<job>` that
gives each pod its `<pod>.<job>.<namespace>.svc` name. The launcher's success is the job's.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from fields import FieldError, as_dict, as_int, integer_problem
from jobs.frameworks.base import Count, Framework
from jobs.frameworks.registry import register
from jobs.spec import CLEAN_POD_POLICIES, JobSpec, framework_container

OPENMPI, INTEL, MPICH = "OpenMPI", "Intel", "MPICH"
MPI_IMPLEMENTATIONS = (OPENMPI, INTEL, MPICH)
AT_STARTUP, WAIT_FOR_WORKERS_READY = "AtStartup", "WaitForWorkersReady"
LAUNCHER_CREATION_POLICIES = (AT_STARTUP, WAIT_FOR_WORKERS_READY)
ROOT_SSH_PATH = "/root/.ssh"

CONFIG_SUFFIX, SSH_SUFFIX = "-config", "-ssh"
CONFIG_VOLUME, CONFIG_MOUNT_PATH = "mpi-job-config", "/etc/mpi"
HOSTFILE, DISCOVER_HOSTS = "hostfile", "discover_hosts.sh"
SSH_VOLUME = "ssh-auth"
#: The keys of a kubernetes.io/ssh-auth Secret, and the files sshd and ssh read them from.
SSH_PRIVATE_KEY, SSH_PUBLIC_KEY = "ssh-privatekey", "ssh-publickey"
SSH_TYPE = "kubernetes.io/ssh-auth"
SSH_ITEMS = (
    {"key": SSH_PRIVATE_KEY, "path": "id_rsa"},  # the file name ssh tries by default, whatever the key type
    {"key": SSH_PUBLIC_KEY, "path": "id_rsa.pub"},
    {"key": SSH_PUBLIC_KEY, "path": "authorized_keys"},
)
CONNECTION_ATTEMPTS = "-o ConnectionAttempts=10"  # a worker's sshd may start after the launcher
#: The implementation's variables on the launcher: where the hostfile is, how ssh retries.
LAUNCHER_ENV = {
    OPENMPI: {
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "OMPI_MCA_orte_default_hostfile": f"{CONFIG_MOUNT_PATH}/{HOSTFILE}",
        "OMPI_MCA_plm_rsh_args": CONNECTION_ATTEMPTS,
    },
    INTEL: {
        "I_MPI_HYDRA_HOST_FILE": f"{CONFIG_MOUNT_PATH}/{HOSTFILE}",
        "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": CONNECTION_ATTEMPTS,
    },
    MPICH: {
        "HYDRA_HOST_FILE": f"{CONFIG_MOUNT_PATH}/{HOSTFILE}",
        "HYDRA_LAUNCH_EXTRA_ARGS": CONNECTION_ATTEMPTS,
    },
}
#: Where the implementation reads the slots per host from, when the hostfile does not say.
SLOTS_ENV = {OPENMPI: "OMPI_MCA_orte_set_default_slots", INTEL: "I_MPI_PERHOST"}
WORKER_COMMAND = ["/usr/sbin/sshd", "-De"]


@dataclass(frozen=True)
class MPIOptions:
    """An MPIJob's own fields, defaults applied; a value of the wrong type reads as its default."""

    slots_per_worker: int = 1
    implementation: str = OPENMPI
    ssh_auth_mount_path: str = ROOT_SSH_PATH
    launcher_creation_policy: str = AT_STARTUP


@register
class MPI(Framework[MPIOptions]):
    kind = "MPIJob"
    spec_key = "mpiReplicaSpecs"
    replica_types = ("Launcher", "Worker")
    chief_types = ("Launcher",)
    required_types = ("Launcher",)
    singleton_types = ("Launcher",)
    container_name = "mpi"
    # Kubeflow v1's MPIJob controller and the mpi-operator both run the first container, whatever its name
    # (Kubeflow's own examples call it `mpi-launcher` and `mpi-worker`).
    first_container_runs_code = True
    port_name = "mpi-port"
    default_port = 9999
    default_replicas = {"Worker": 0}
    replica_services = False
    extra_child_kinds = ("ConfigMap", "Secret")
    extra_spec_fields = {
        "slotsPerWorker": 1,
        "mpiImplementation": OPENMPI,
        "sshAuthMountPath": ROOT_SSH_PATH,
        "launcherCreationPolicy": AT_STARTUP,
    }
    # Kubeflow v1.9's MPIJob also declares these two: `cleanPodPolicy`, the older place of
    # `runPolicy.cleanPodPolicy` (which wins when both are set; jobs.spec.run_policy), and `mainContainer`,
    # the container its kubectl-exec launcher entered on the workers. Accepted so that Kubeflow's manifests
    # apply unchanged; the second changes nothing here, where the launcher reaches the workers over SSH.
    optional_spec_fields = ("cleanPodPolicy", "mainContainer")

    def environment(self, job: JobSpec[MPIOptions], replica_type: str, index: int) -> dict[str, str]:
        """`K_MPI_JOB_ROLE` everywhere; on the launcher, the implementation's hostfile and ssh settings and
        its GPUs hidden (it only starts the workers' processes), as the mpi-operator writes them."""
        if replica_type != "Launcher":
            return {"K_MPI_JOB_ROLE": "worker"}
        implementation = job.options.implementation
        env = {"K_MPI_JOB_ROLE": "launcher", **LAUNCHER_ENV[implementation]}
        if implementation in SLOTS_ENV:
            env[SLOTS_ENV[implementation]] = str(job.options.slots_per_worker)
        return env | {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}

    def parse_options(self, spec: Mapping[str, Any], job: JobSpec[None]) -> MPIOptions:
        slots = as_int(spec.get("slotsPerWorker"))
        implementation = spec.get("mpiImplementation")
        path = spec.get("sshAuthMountPath")
        policy = spec.get("launcherCreationPolicy")
        return MPIOptions(
            slots_per_worker=slots if slots is not None and slots >= 1 else 1,
            implementation=implementation if implementation in MPI_IMPLEMENTATIONS else OPENMPI,
            ssh_auth_mount_path=path if isinstance(path, str) and path.startswith("/") else ROOT_SSH_PATH,
            launcher_creation_policy=policy if policy in LAUNCHER_CREATION_POLICIES else AT_STARTUP,
        )

    def validate_extra_fields(self, spec: dict[str, Any]) -> list[FieldError]:
        errors = []
        slots = spec.get("slotsPerWorker", 1)
        if problem := integer_problem(slots, minimum=1):
            errors.append(FieldError("spec.slotsPerWorker", problem))
        for field, allowed in (
            ("mpiImplementation", MPI_IMPLEMENTATIONS),
            ("launcherCreationPolicy", LAUNCHER_CREATION_POLICIES),
        ):
            value = spec.get(field, allowed[0])
            if value not in allowed:
                errors.append(
                    FieldError(f"spec.{field}", f"must be one of {', '.join(allowed)}, not {value!r}")
                )
        clean = spec.get("cleanPodPolicy", CLEAN_POD_POLICIES[0])
        if clean not in CLEAN_POD_POLICIES:
            errors.append(
                FieldError(
                    "spec.cleanPodPolicy", f"must be one of {', '.join(CLEAN_POD_POLICIES)}, not {clean!r}"
                )
            )
        if not isinstance(spec.get("mainContainer", ""), str):
            errors.append(FieldError("spec.mainContainer", "must be a container's name"))
        path = spec.get("sshAuthMountPath", ROOT_SSH_PATH)
        if not isinstance(path, str) or not path.startswith("/"):
            errors.append(FieldError("spec.sshAuthMountPath", f"must be an absolute path, not {path!r}"))
        return errors

    def counts(self, spec: Mapping[str, Any]) -> list[Count]:
        """`slotsPerWorker`: the processes mpirun starts in each worker."""
        slots = as_int(spec.get("slotsPerWorker"))
        if slots is None:
            return []
        return [Count.of_processes("spec.slotsPerWorker", slots)]

    # --- the children beyond the pods -------------------------------------------------------------

    def extra_children(
        self,
        job: JobSpec[MPIOptions],
        owner: Mapping[str, Any],
        labels: Mapping[str, str],
        pods: Sequence[Mapping[str, Any]],
    ) -> list[dict[str, Any]]:
        def metadata(name: str) -> dict[str, Any]:
            return {
                "name": name,
                "namespace": job.namespace,
                "labels": dict(labels),
                "ownerReferences": [dict(owner)],
            }

        running = running_workers(job, pods)
        config_map = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(job.name + CONFIG_SUFFIX),
            "data": {
                HOSTFILE: hostfile(job, self.cluster_domain),
                DISCOVER_HOSTS: discover_hosts(job, running, self.cluster_domain),
            },
        }
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata(job.name + SSH_SUFFIX),
            "type": SSH_TYPE,
        }
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata(job.name),
            "spec": {"clusterIP": "None", "selector": dict(labels), "publishNotReadyAddresses": True},
        }
        return [config_map, secret, service]

    def complete_child(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """The SSH Secret gets its key pair here, at creation: a plan stays deterministic, and a job keeps
        the one key it was created with (the Secret is never rewritten)."""
        if manifest.get("kind") != "Secret" or manifest.get("data"):
            return manifest
        private, public = new_ssh_key()
        data = {SSH_PRIVATE_KEY: private, SSH_PUBLIC_KEY: public}
        return {**manifest, "data": {key: base64.b64encode(value).decode() for key, value in data.items()}}

    def customize_pod(
        self, job: JobSpec[MPIOptions], replica_type: str, index: int, pod_spec: dict[str, Any]
    ) -> None:
        """Every pod: a hostname under the job's Service and the SSH key; workers run sshd unless told
        otherwise and search the job's domain (Intel MPI and MPICH call back by short name); the launcher
        mounts the hostfile at /etc/mpi."""
        pod_spec["hostname"] = job.host(replica_type, index)
        pod_spec["subdomain"] = job.name
        if pod_spec.get("hostNetwork"):
            pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        container = framework_container(pod_spec, self)
        volumes = _list_field(pod_spec, "volumes")
        secret_volume: dict[str, Any] = {
            "secretName": job.name + SSH_SUFFIX,
            "items": [*map(dict, SSH_ITEMS)],
        }
        if job.options.ssh_auth_mount_path == ROOT_SSH_PATH:
            secret_volume["defaultMode"] = 0o600  # sshd refuses keys others may read, under root's home
        volumes.append({"name": SSH_VOLUME, "secret": secret_volume})
        mounts = [{"name": SSH_VOLUME, "mountPath": job.options.ssh_auth_mount_path}]
        if replica_type == "Launcher":
            items = [{"key": HOSTFILE, "path": HOSTFILE, "mode": 0o444}]
            items.append({"key": DISCOVER_HOSTS, "path": DISCOVER_HOSTS, "mode": 0o555})
            volumes.append(
                {"name": CONFIG_VOLUME, "configMap": {"name": job.name + CONFIG_SUFFIX, "items": items}}
            )
            mounts.append({"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT_PATH})
        else:
            dns = pod_spec.get("dnsConfig")
            if not isinstance(dns, dict):
                dns = pod_spec["dnsConfig"] = {}
            _list_field(dns, "searches").append(
                f"{job.name}.{job.namespace}.svc.{self.cluster_domain or 'cluster.local'}"
            )
        if container is None:
            return
        _list_field(container, "volumeMounts").extend(mounts)
        if replica_type == "Worker" and not container.get("command") and not container.get("args"):
            container["command"] = list(WORKER_COMMAND)

    def may_create_pod(
        self,
        job: JobSpec[MPIOptions],
        replica_type: str,
        index: int,
        pods: Mapping[str, Mapping[str, Any]],
    ) -> bool:
        """The launcher waits until every worker pod exists (training-operator v1.9), and with
        `launcherCreationPolicy: WaitForWorkersReady` until every one is Ready (mpi-operator v2)."""
        if replica_type != "Launcher":
            return True
        workers = [pods.get(job.host("Worker", i)) for i in range(job.counts.get("Worker", 0))]
        if any(pod is None for pod in workers):
            return False
        if job.options.launcher_creation_policy == WAIT_FOR_WORKERS_READY:
            return all(is_ready(pod) for pod in workers if pod is not None)
        return True


def _list_field(parent: dict[str, Any], key: str) -> list[Any]:
    """`parent[key]` as a list to append to (a malformed value, which the API server would refuse anyway,
    is replaced rather than crashing every reconcile)."""
    value = parent.get(key)
    if not isinstance(value, list):
        value = parent[key] = []
    return value


def worker_fqdn(job: JobSpec[Any], index: int, cluster_domain: str) -> str:
    """`<job>-worker-<i>.<job>.<namespace>.svc`: the pod's hostname under the job's headless Service."""
    name = f"{job.host('Worker', index)}.{job.name}.{job.namespace}.svc"
    return f"{name}.{cluster_domain}" if cluster_domain else name


def hostfile(job: JobSpec[MPIOptions], cluster_domain: str = "") -> str:
    """One line per worker, as the mpi-operator writes it: `<host> slots=<n>` for Open MPI, `<host>:<n>`
    for Intel MPI and MPICH."""
    slots = job.options.slots_per_worker
    line = "{host} slots={slots}\n" if job.options.implementation == OPENMPI else "{host}:{slots}\n"
    return "".join(
        line.format(host=worker_fqdn(job, i, cluster_domain), slots=slots)
        for i in range(job.counts.get("Worker", 0))
    )


def discover_hosts(job: JobSpec[Any], running: Sequence[int], cluster_domain: str = "") -> str:
    """The script Horovod's elastic mode runs to find workers: one `echo <host>` per running worker."""
    lines = [f"echo {worker_fqdn(job, i, cluster_domain)}\n" for i in sorted(running)]
    return "#!/bin/sh\n" + "".join(lines)


def running_workers(job: JobSpec[Any], pods: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indexes of the job's worker pods that are running and not being deleted."""
    names = {job.host("Worker", i): i for i in range(job.counts.get("Worker", 0))}
    return sorted(
        names[str(as_dict(p.get("metadata")).get("name"))]
        for p in pods
        if as_dict(p.get("metadata")).get("name") in names
        and as_dict(p.get("status")).get("phase") == "Running"
        and not as_dict(p.get("metadata")).get("deletionTimestamp")
    )


def is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = as_dict(pod.get("status")).get("conditions") or []
    return any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


def new_ssh_key() -> tuple[bytes, bytes]:
    """A fresh ed25519 key pair: the private key in OpenSSH's format, the public key as an authorized_keys
    line."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"
