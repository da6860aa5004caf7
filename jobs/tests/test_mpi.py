"""MPIJob: hostfile, environment, SSH key, launcher gating and status, with no cluster.

Expected values follow the upstream tests they cite: kubeflow/mpi-operator v0.8 `pkg/controller/
mpi_job_controller_test.go` (TestNewConfigMap, TestUpdateDiscoverHostsInConfigMap, TestNewLauncherAndWorker,
TestLauncherSucceeded, TestLauncherFailed) and kubeflow/training-operator v1.9 `pkg/controller.v1/mpi/
mpijob_controller_test.go` ("Should contain desired ReplicaStatuses and create a launcher pod") and
`pkg/apis/kubeflow.org/v1/mpi_defaults.go`.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from jobs import spec as jobspec
from jobs.frameworks import MPI
from jobs.frameworks.mpi import discover_hosts, hostfile
from jobs.tests.fakes import FakeCluster, env_of, make_job
from jobs.validation import validate
from workflows import safeyaml

KUBEFLOW_ELASTIC = Path(__file__).parent / "kubeflow" / "tensorflow-mnist-elastic.yaml"


def mpi_job(workers: int | None = 2, **spec: Any) -> dict[str, Any]:
    job = make_job("MPIJob", {"Launcher": 1, "Worker": workers or 0}, name="pi", namespace="tenant-a", **spec)
    if workers is None:
        del job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    return job


def parsed(job: dict[str, Any], domain: str = "") -> jobspec.JobSpec[Any]:
    return jobspec.parse(job, MPI(cluster_domain=domain))


def children(job: dict[str, Any], pods: list[dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    framework = MPI()
    found = framework.extra_children(parsed(job), {"uid": "u"}, {"argoml.io/job-name": "pi"}, pods or [])
    return {f"{c['kind']}/{c['metadata']['name']}": c for c in found}


class TestHostfile:
    """TestNewConfigMap: one line per worker under the job's Service, slots by implementation."""

    def test_open_mpi_lists_each_worker_with_its_slots(self):
        job = parsed(mpi_job(workers=2, slotsPerWorker=4))
        assert hostfile(job) == ("pi-worker-0.pi.tenant-a.svc slots=4\npi-worker-1.pi.tenant-a.svc slots=4\n")

    @pytest.mark.parametrize("implementation", ["Intel", "MPICH"])
    def test_intel_mpi_and_mpich_write_host_colon_slots(self, implementation):
        job = parsed(mpi_job(workers=2, slotsPerWorker=8, mpiImplementation=implementation))
        assert hostfile(job) == "pi-worker-0.pi.tenant-a.svc:8\npi-worker-1.pi.tenant-a.svc:8\n"

    def test_the_cluster_domain_suffixes_every_host(self):
        job = parsed(mpi_job(workers=1), domain="cluster.local")
        assert hostfile(job, "cluster.local") == "pi-worker-0.pi.tenant-a.svc.cluster.local slots=1\n"

    def test_no_workers_give_an_empty_hostfile(self):
        assert hostfile(parsed(mpi_job(workers=0))) == ""

    def test_discover_hosts_echoes_the_running_workers_in_order(self):
        job = parsed(mpi_job(workers=3))
        assert discover_hosts(job, []) == "#!/bin/sh\n"
        assert discover_hosts(job, [2, 0]) == (
            "#!/bin/sh\necho pi-worker-0.pi.tenant-a.svc\necho pi-worker-2.pi.tenant-a.svc\n"
        )


class TestChildren:
    def test_the_config_map_ssh_secret_and_job_service_are_owned_and_labelled(self):
        found = children(mpi_job(workers=2))
        assert sorted(found) == ["ConfigMap/pi-config", "Secret/pi-ssh", "Service/pi"]
        for child in found.values():
            assert child["metadata"]["ownerReferences"] == [{"uid": "u"}]
            assert child["metadata"]["labels"] == {"argoml.io/job-name": "pi"}
        assert found["Secret/pi-ssh"]["type"] == "kubernetes.io/ssh-auth"
        assert "data" not in found["Secret/pi-ssh"], "the key is made at creation, not in the plan"
        service = found["Service/pi"]["spec"]
        assert service == {
            "clusterIP": "None",
            "selector": {"argoml.io/job-name": "pi"},
            "publishNotReadyAddresses": True,
        }

    def test_the_discover_hosts_script_follows_the_running_workers(self):
        pods = [
            {"metadata": {"name": "pi-worker-1"}, "status": {"phase": "Running"}},
            {"metadata": {"name": "pi-worker-0"}, "status": {"phase": "Pending"}},
            {"metadata": {"name": "pi-launcher-0"}, "status": {"phase": "Running"}},
        ]
        data = children(mpi_job(workers=2), pods)["ConfigMap/pi-config"]["data"]
        assert data["discover_hosts.sh"] == "#!/bin/sh\necho pi-worker-1.pi.tenant-a.svc\n"

    def test_the_ssh_secret_gets_a_fresh_ed25519_key_pair_once_at_creation(self):
        secret = children(mpi_job())["Secret/pi-ssh"]
        first, second = MPI().complete_child(secret), MPI().complete_child(secret)
        private = base64.b64decode(first["data"]["ssh-privatekey"])
        public = base64.b64decode(first["data"]["ssh-publickey"])
        key = serialization.load_ssh_private_key(private, password=None)
        assert public.startswith(b"ssh-ed25519 ")
        assert public.endswith(b"\n")
        assert (
            key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
            == public.strip()
        )
        assert first["data"] != second["data"], "each job gets its own key"
        assert MPI().complete_child(first) is first, "a Secret with a key keeps it"


class TestEnvironment:
    """TestNewLauncherAndWorker: K_MPI_JOB_ROLE, the implementation's variables, the launcher's GPUs
    hidden."""

    def test_open_mpi_launcher(self):
        assert env_of(MPI(), mpi_job(slotsPerWorker=2), "Launcher", 0) == {
            "K_MPI_JOB_ROLE": "launcher",
            "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
            "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
            "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
            "OMPI_MCA_orte_set_default_slots": "2",
            "NVIDIA_VISIBLE_DEVICES": "",
            "NVIDIA_DRIVER_CAPABILITIES": "",
        }

    def test_intel_launcher(self):
        env = env_of(MPI(), mpi_job(slotsPerWorker=3, mpiImplementation="Intel"), "Launcher", 0)
        assert {k: v for k, v in env.items() if k.startswith("I_MPI")} == {
            "I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile",
            "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": "-o ConnectionAttempts=10",
            "I_MPI_PERHOST": "3",
        }

    def test_mpich_launcher_has_no_slots_variable(self):
        env = env_of(MPI(), mpi_job(mpiImplementation="MPICH"), "Launcher", 0)
        assert env["HYDRA_HOST_FILE"] == "/etc/mpi/hostfile"
        assert env["HYDRA_LAUNCH_EXTRA_ARGS"] == "-o ConnectionAttempts=10"
        assert not any(k.startswith(("OMPI_", "I_MPI_")) for k in env)

    def test_a_worker_only_knows_its_role(self):
        assert env_of(MPI(), mpi_job(), "Worker", 1) == {"K_MPI_JOB_ROLE": "worker"}


class TestPods:
    def pods(self, job: dict[str, Any]) -> dict[str, dict[str, Any]]:
        cluster = FakeCluster(job)
        cluster.reconcile()
        cluster.run_all()
        cluster.reconcile()
        return cluster.pods

    def test_every_pod_has_a_hostname_under_the_job_service_and_the_ssh_key(self):
        pods = self.pods(mpi_job(workers=1))
        for name, pod in pods.items():
            spec = pod["spec"]
            assert (spec["hostname"], spec["subdomain"]) == (name, "pi")
            ssh = next(v for v in spec["volumes"] if v["name"] == "ssh-auth")["secret"]
            assert (ssh["secretName"], ssh["defaultMode"]) == ("pi-ssh", 0o600)
            assert [i["path"] for i in ssh["items"]] == ["id_rsa", "id_rsa.pub", "authorized_keys"]
            mounts = spec["containers"][0]["volumeMounts"]
            assert {"name": "ssh-auth", "mountPath": "/root/.ssh"} in mounts

    def test_only_the_launcher_mounts_the_hostfile_and_workers_run_sshd(self):
        pods = self.pods(mpi_job(workers=1))
        launcher, worker = pods["pi-launcher-0"]["spec"], pods["pi-worker-0"]["spec"]
        config = next(v for v in launcher["volumes"] if v["name"] == "mpi-job-config")["configMap"]
        assert config["name"] == "pi-config"
        assert [(i["path"], i["mode"]) for i in config["items"]] == [
            ("hostfile", 0o444),
            ("discover_hosts.sh", 0o555),
        ]
        assert {"name": "mpi-job-config", "mountPath": "/etc/mpi"} in launcher["containers"][0][
            "volumeMounts"
        ]
        assert not any(v["name"] == "mpi-job-config" for v in worker["volumes"])
        assert worker["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]
        assert "command" not in launcher["containers"][0]
        assert worker["dnsConfig"] == {"searches": ["pi.tenant-a.svc.cluster.local"]}

    def test_a_worker_command_of_the_user_is_kept_and_a_custom_mount_path_is_not_0600(self):
        job = mpi_job(workers=1, sshAuthMountPath="/home/mpiuser/.ssh")
        job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"] = ["sleep"]
        worker = self.pods(job)["pi-worker-0"]["spec"]
        assert "command" not in worker["containers"][0]
        ssh = next(v for v in worker["volumes"] if v["name"] == "ssh-auth")["secret"]
        assert "defaultMode" not in ssh
        assert {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"} in worker["containers"][0][
            "volumeMounts"
        ]


class TestLauncherGating:
    """training-operator v1.9: the launcher is created once the workers exist ("create a launcher pod");
    mpi-operator v2 TestLauncherActiveWorkerNotReady: with WaitForWorkersReady, once they are Ready."""

    def test_the_first_run_creates_config_secret_service_and_workers_but_no_launcher(self):
        cluster = FakeCluster(mpi_job(workers=2))
        first = cluster.reconcile()
        assert [(m["kind"], m["metadata"]["name"]) for m in first.create] == [
            ("ConfigMap", "pi-config"),
            ("Secret", "pi-ssh"),
            ("Service", "pi"),
            ("Pod", "pi-worker-0"),
            ("Pod", "pi-worker-1"),
        ]
        second = cluster.reconcile()
        assert [(m["kind"], m["metadata"]["name"]) for m in second.create] == [
            ("Secret", "pi-ssh"),  # never read back: created with every pod, 409 once it exists
            ("Pod", "pi-launcher-0"),
        ]
        assert not cluster.reconcile().create

    def test_wait_for_workers_ready_holds_the_launcher_until_every_worker_is_ready(self):
        cluster = FakeCluster(mpi_job(workers=2, launcherCreationPolicy="WaitForWorkersReady"))
        cluster.reconcile()
        cluster.run_all()
        assert "pi-launcher-0" not in {m["metadata"]["name"] for m in cluster.reconcile().create}
        for name in cluster.pods:
            cluster.pods[name]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        assert "pi-launcher-0" in {m["metadata"]["name"] for m in cluster.reconcile().create}

    def test_a_job_without_workers_starts_its_launcher_at_once(self):
        cluster = FakeCluster(mpi_job(workers=None))
        assert [m["metadata"]["name"] for m in cluster.reconcile().create if m["kind"] == "Pod"] == [
            "pi-launcher-0"
        ]

    def test_the_hostfile_config_map_is_updated_when_workers_are_added(self):
        cluster = FakeCluster(mpi_job(workers=1))
        cluster.reconcile()
        cluster.job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 2
        update = cluster.reconcile().update
        assert [(m["kind"], m["metadata"]["name"]) for m in update] == [("ConfigMap", "pi-config")]
        assert update[0]["data"]["hostfile"].count("slots=1") == 2
        assert update[0]["metadata"]["uid"] == cluster.config_maps["pi-config"]["metadata"]["uid"]


class TestStatus:
    """TestLauncherSucceeded / TestLauncherFailed: the launcher's outcome is the job's."""

    def started(self) -> FakeCluster:
        cluster = FakeCluster(mpi_job(workers=2))
        cluster.reconcile()
        cluster.reconcile()
        cluster.run_all()
        cluster.reconcile()
        return cluster

    def test_launcher_success_is_job_success_and_running_workers_stay_under_clean_pod_policy_none(self):
        cluster = self.started()
        cluster.set_pod("pi-launcher-0", "Succeeded", exit_code=0)
        finished = cluster.reconcile()
        assert cluster.state == "Succeeded"
        assert not finished.delete, "cleanPodPolicy None (Kubeflow's MPIJob default) keeps the workers"

    def test_clean_pod_policy_running_deletes_the_workers_once_the_launcher_succeeded(self):
        cluster = FakeCluster(mpi_job(workers=2, run_policy={"cleanPodPolicy": "Running"}))
        cluster.reconcile()
        cluster.reconcile()
        cluster.run_all()
        cluster.reconcile()
        cluster.set_pod("pi-launcher-0", "Succeeded", exit_code=0)
        finished = cluster.reconcile()
        assert cluster.state == "Succeeded"
        assert sorted((d.kind, d.name) for d in finished.delete) == [
            ("Pod", "pi-worker-0"),
            ("Pod", "pi-worker-1"),
        ]

    def test_a_failed_launcher_fails_the_job(self):
        cluster = self.started()
        cluster.set_pod("pi-launcher-0", "Failed", exit_code=1)
        cluster.reconcile()
        assert cluster.state == "Failed"

    def test_the_launcher_has_the_master_role(self):
        pods = self.started().pods
        assert pods["pi-launcher-0"]["metadata"]["labels"]["argoml.io/job-role"] == "master"
        assert "argoml.io/job-role" not in pods["pi-worker-0"]["metadata"]["labels"]


class TestSpec:
    """mpi_defaults.go: Launcher 1 replica, Worker 0, restartPolicy Never, cleanPodPolicy None."""

    def test_defaults(self):
        job = mpi_job(workers=None)
        job["spec"]["mpiReplicaSpecs"]["Launcher"].pop("replicas")
        defaulted = jobspec.with_defaults(job, MPI())["spec"]
        assert defaulted["mpiReplicaSpecs"]["Launcher"]["replicas"] == 1
        assert defaulted["mpiReplicaSpecs"]["Worker"]["replicas"] == 0
        assert defaulted["mpiReplicaSpecs"]["Worker"]["restartPolicy"] == "Never"
        assert defaulted["runPolicy"] == {"cleanPodPolicy": "None"}
        assert (defaulted["slotsPerWorker"], defaulted["mpiImplementation"]) == (1, "OpenMPI")
        assert defaulted["sshAuthMountPath"] == "/root/.ssh"
        assert defaulted["launcherCreationPolicy"] == "AtStartup"

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("slotsPerWorker", 0, "spec.slotsPerWorker: must be at least 1, not 0"),
            ("slotsPerWorker", "2", "spec.slotsPerWorker: must be an integer, not '2'"),
            (
                "mpiImplementation",
                "OpenMP",
                "spec.mpiImplementation: must be one of OpenMPI, Intel, MPICH, not 'OpenMP'",
            ),
            (
                "launcherCreationPolicy",
                "Later",
                "spec.launcherCreationPolicy: must be one of AtStartup, WaitForWorkersReady, not 'Later'",
            ),
            ("sshAuthMountPath", ".ssh", "spec.sshAuthMountPath: must be an absolute path, not '.ssh'"),
        ],
    )
    def test_bad_fields_are_named(self, field, value, message):
        assert [str(e) for e in validate(mpi_job(**{field: value}), MPI())] == [message]

    def test_a_job_needs_exactly_one_launcher(self):
        no_launcher = make_job("MPIJob", {"Worker": 2}, name="pi")
        assert [str(e) for e in validate(no_launcher, MPI())] == [
            "spec.mpiReplicaSpecs.Launcher: is required: a MPIJob needs one Launcher"
        ]
        two = make_job("MPIJob", {"Launcher": 2}, name="pi")
        assert [str(e) for e in validate(two, MPI())] == [
            "spec.mpiReplicaSpecs.Launcher.replicas: a MPIJob has exactly 1 Launcher, not 2"
        ]


class TestKubeflowsOlderFields:
    """Kubeflow v1.9's MPIJob declares `spec.cleanPodPolicy` (and `mainContainer`) beside `runPolicy`; its
    controller reads `runPolicy.cleanPodPolicy` first, then the spec's (mpijob_controller.go)."""

    def test_kubeflows_elastic_example_is_valid_unchanged_and_its_clean_pod_policy_is_read(self):
        job = safeyaml.load(KUBEFLOW_ELASTIC.read_text())
        assert job["spec"]["cleanPodPolicy"] == "Running"
        assert "cleanPodPolicy" not in job["spec"].get("runPolicy", {})
        assert validate(job) == []
        assert jobspec.run_policy(job, MPI()).clean_pod_policy == "Running"
        assert jobspec.with_defaults(job, MPI())["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"

    @pytest.mark.parametrize(
        ("spec_level", "run_policy", "read"),
        [
            (None, None, "None"),
            ("All", None, "All"),
            ("All", "Running", "Running"),
            (None, "Running", "Running"),
        ],
    )
    def test_run_policy_wins_then_the_spec_then_kubeflows_default(self, spec_level, run_policy, read):
        job = {**mpi_job(), "apiVersion": "kubeflow.org/v1"}
        if spec_level:
            job["spec"]["cleanPodPolicy"] = spec_level
        if run_policy:
            job["spec"]["runPolicy"] = {"cleanPodPolicy": run_policy}
        assert jobspec.run_policy(job, MPI()).clean_pod_policy == read

    def test_a_wrong_clean_pod_policy_or_main_container_is_named(self):
        job = mpi_job()
        job["spec"]["cleanPodPolicy"] = "Sometimes"
        job["spec"]["mainContainer"] = 7
        assert [(e.path, e.message) for e in validate(job)] == [
            ("spec.cleanPodPolicy", "must be one of All, Running, None, not 'Sometimes'"),
            ("spec.mainContainer", "must be a container's name"),
        ]

    def test_the_first_container_runs_the_code_whatever_its_name_as_in_kubeflows_controller(self):
        """Kubeflow's example names its containers mpi-launcher and mpi-worker: they get the MPI environment
        and the hostfile, and the launcher's exit code is the job's outcome."""
        job = safeyaml.load(KUBEFLOW_ELASTIC.read_text())
        job["metadata"]["namespace"] = "tenant-a"
        cluster = FakeCluster(job)
        cluster.reconcile()
        cluster.reconcile()
        cluster.run_all()
        cluster.reconcile()
        launcher = cluster.pods["tensorflow-mnist-elastic-launcher-0"]["spec"]["containers"][0]
        assert launcher["name"] == "mpi-launcher"
        assert {"name": "K_MPI_JOB_ROLE", "value": "launcher"} in launcher["env"]
        assert any(mount["mountPath"] == "/etc/mpi" for mount in launcher["volumeMounts"])
        worker = cluster.pods["tensorflow-mnist-elastic-worker-0"]["spec"]["containers"][0]
        assert {"name": "K_MPI_JOB_ROLE", "value": "worker"} in worker["env"]
        cluster.set_pod("tensorflow-mnist-elastic-launcher-0", "Failed", exit_code=3)
        cluster.reconcile()
        assert cluster.state == "Failed"
        assert "exited with code 3" in cluster.status["conditions"][-1]["message"]

    def test_a_container_named_mpi_is_still_the_one_chosen_when_it_is_not_first(self):
        job = mpi_job()
        launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
        launcher["containers"].insert(0, {"name": "sidecar", "image": "busybox"})
        assert jobspec.replica_container_name(job, MPI(), "launcher") == "mpi"
        launcher["containers"][1]["name"] = "main"
        assert jobspec.replica_container_name(job, MPI(), "launcher") == "sidecar"
