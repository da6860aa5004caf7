"""The planner gives each pod what JobSet, the Job controller and Trainer's ML plugins would have given it.
Cases marked with a quoted name are ported from Kubeflow Trainer's own tests
(pkg/runtime/framework/plugins/{torch,mpi,jax,xgboost}/*_test.go)."""

from __future__ import annotations

import pytest

from trainer import constants as c
from trainer.operator import plan, readers, resolution, spec
from trainer.tests import factories as f

RANK = {
    "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
    }
}


def planned(job_body, runtime_body) -> plan.Plan:
    return plan.plan(resolution.resolve(spec.parse_train_job(job_body), spec.parse_runtime(runtime_body)))


def env_of(pod, container="node"):
    found = next(x for x in pod["spec"]["containers"] if x["name"] == container)
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in found.get("env", [])}


def names(result: plan.Plan) -> list[str]:
    return [pod["metadata"]["name"] for pod in result.pods]


class TestPods:
    def test_names_hostnames_labels_and_owner_as_jobset_gives_them(self):
        result = planned(f.train_job(name="tj", namespace="ml", trainer={"numNodes": 2}), f.torch_runtime())
        assert names(result) == ["tj-node-0-0", "tj-node-0-1"]
        pod = result.pod("tj-node-0-1")
        assert pod["metadata"]["namespace"] == "ml"
        jobset = {
            "jobset.sigs.k8s.io/jobset-name": "tj",
            "jobset.sigs.k8s.io/jobset-uid": "uid-tj",
            "jobset.sigs.k8s.io/replicatedjob-name": "node",
            "jobset.sigs.k8s.io/restart-attempt": "0",
            "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
            "jobset.sigs.k8s.io/global-replicas": "1",
            "jobset.sigs.k8s.io/job-index": "0",
            # sha1("ml/tj-node-0"), as JobSet's jobHashKey computes it.
            "jobset.sigs.k8s.io/job-key": "bc6f974c3f54ed1ef85cdd4fc990f1b354e48145",
            "jobset.sigs.k8s.io/job-global-index": "0",
            "jobset.sigs.k8s.io/group-name": "default",
            "jobset.sigs.k8s.io/group-replicas": "1",
            "jobset.sigs.k8s.io/job-group-index": "0",
        }
        assert pod["metadata"]["labels"] == {
            **jobset,
            "batch.kubernetes.io/job-name": "tj-node-0",
            "batch.kubernetes.io/job-completion-index": "1",
            "trainer.kubeflow.org/trainjob-ancestor-step": "trainer",
        }
        assert pod["metadata"]["annotations"] == {**jobset, "batch.kubernetes.io/job-completion-index": "1"}
        assert pod["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "name": "tj",
                "uid": "uid-tj",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert pod["spec"]["hostname"] == "tj-node-0-1"
        assert pod["spec"]["subdomain"] == "tj"
        assert pod["spec"]["restartPolicy"] == "OnFailure"

    def test_jobset_indexes_count_across_replicated_jobs_and_within_groups_in_the_runtimes_order(self):
        workers = f.replicated_job("workers", replicas=2)
        workers["groupName"] = "side"
        body = f.runtime(workers, f.replicated_job("node", f.container(), ancestor=c.ANCESTOR_TRAINER))
        result = planned(f.train_job(name="tj", namespace="ml", trainer={}), body)
        keys = {
            pod["metadata"]["name"]: {
                key.removeprefix("jobset.sigs.k8s.io/"): value
                for key, value in pod["metadata"]["labels"].items()
                if key.endswith(("index", "replicas", "group-name"))
            }
            for pod in result.pods
        }
        assert keys["tj-workers-1-0"] == {
            "replicatedjob-replicas": "2",
            "global-replicas": "3",
            "job-index": "1",
            "job-global-index": "1",
            "group-name": "side",
            "group-replicas": "2",
            "job-group-index": "1",
            "batch.kubernetes.io/job-completion-index": "0",
        }
        assert keys["tj-node-0-0"] == {
            "replicatedjob-replicas": "1",
            "global-replicas": "3",
            "job-index": "0",
            "job-global-index": "2",
            "group-name": "default",
            "group-replicas": "1",
            "job-group-index": "0",
            "batch.kubernetes.io/job-completion-index": "0",
        }
        node = result.pod("tj-node-0-0")["metadata"]
        assert (
            node["labels"]["jobset.sigs.k8s.io/job-key"]
            != result.pod("tj-workers-1-0")["metadata"]["labels"]["jobset.sigs.k8s.io/job-key"]
        )
        assert {k: v for k, v in node["annotations"].items() if k.startswith("jobset.")} == {
            k: v for k, v in node["labels"].items() if k.startswith("jobset.")
        }

    def test_template_labels_and_restart_policy_are_kept(self):
        body = f.torch_runtime()
        template = body["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        template["metadata"] = {"labels": {"app": "x"}, "annotations": {"note": "y"}}
        template["spec"]["restartPolicy"] = "Never"
        pod = planned(f.train_job(), body).pods[0]
        assert pod["metadata"]["labels"]["app"] == "x"
        assert pod["metadata"]["annotations"]["note"] == "y"
        assert pod["metadata"]["annotations"][c.ANNOTATION_COMPLETION_INDEX] == "0"
        assert pod["spec"]["restartPolicy"] == "Never"

    def test_a_runtime_subdomain_names_the_service_and_the_pods_domain(self):
        body = f.torch_runtime()
        body["spec"]["template"]["spec"]["network"] = {"subdomain": "mesh", "publishNotReadyAddresses": False}
        result = planned(f.train_job(trainer={}), body)
        assert result.pods[0]["spec"]["subdomain"] == "mesh"
        assert result.service["metadata"]["name"] == "mesh"
        assert result.service["spec"]["publishNotReadyAddresses"] is False
        # Trainer writes the master's address with the TrainJob's name as its domain, whatever the subdomain.
        assert env_of(result.pods[0])["PET_MASTER_ADDR"] == "test-job-node-0-0.test-job"

    def test_one_headless_service_selects_every_pod(self):
        result = planned(f.train_job(name="tj"), f.torch_runtime())
        assert result.service == {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "tj",
                "namespace": "default",
                "labels": {"jobset.sigs.k8s.io/jobset-name": "tj"},
                "ownerReferences": result.pods[0]["metadata"]["ownerReferences"],
            },
            "spec": {
                "clusterIP": "None",
                "selector": {"jobset.sigs.k8s.io/jobset-name": "tj"},
                "publishNotReadyAddresses": True,
            },
        }

    def test_a_runtime_without_ml_policy_runs_its_templates_as_written(self):
        body = f.runtime(f.replicated_job("worker", parallelism=2, replicas=2))
        result = planned(f.train_job(name="tj"), body)
        assert names(result) == ["tj-worker-0-0", "tj-worker-0-1", "tj-worker-1-0", "tj-worker-1-1"]
        assert result.pod("tj-worker-1-0")["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"] == "1"
        assert "env" not in result.pods[0]["spec"]["containers"][0]
        assert result.config_maps == ()

    def test_a_suspended_train_job_has_no_pods_but_keeps_its_plan(self):
        result = planned(f.train_job(suspend=True, trainer={"numNodes": 2}), f.torch_runtime())
        assert result.pods == ()
        assert result.steps[0].pod_names == ("test-job-node-0-0", "test-job-node-0-1")
        assert result.service["metadata"]["name"] == "test-job"


def initializer_runtime(**node):
    return f.runtime(
        f.replicated_job("dataset-initializer", ancestor=c.DATASET_INITIALIZER),
        f.replicated_job("model-initializer", ancestor=c.MODEL_INITIALIZER),
        f.replicated_job("node", f.container(), ancestor=c.ANCESTOR_TRAINER, **node),
        ml_policy={"numNodes": 2, "torch": {}},
    )


class TestGangScheduling:
    def test_coscheduling_labels_every_pod_with_its_pod_group(self):
        # Trainer's coscheduling plugin: pods carry scheduling.x-k8s.io/pod-group; minMember counts every pod.
        body = initializer_runtime()
        body["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 60}}
        result = planned(f.train_job(name="tj"), body)
        assert {pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for pod in result.pods} == {"tj"}
        assert result.gang_size == 4

    def test_volcano_annotates_every_pod_with_its_group(self):
        body = f.torch_runtime()
        body["spec"]["podGroupPolicy"] = {"volcano": {}}
        pod = planned(f.train_job(name="tj"), body).pods[0]
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "tj"
        assert "scheduling.x-k8s.io/pod-group" not in pod["metadata"]["labels"]

    def test_without_a_policy_there_is_no_gang(self):
        result = planned(f.train_job(), f.torch_runtime())
        assert result.gang_size is None
        assert "scheduling.k8s.io/group-name" not in result.pods[0]["metadata"]["annotations"]


class TestSteps:
    def test_initializers_come_first_then_the_trainer(self):
        result = planned(f.train_job(name="tj"), initializer_runtime())
        assert [step.name for step in result.steps] == ["dataset-initializer", "model-initializer", "node"]
        assert result.steps[2].depends_on == (
            spec.Dependency("dataset-initializer", "Complete"),
            spec.Dependency("model-initializer", "Complete"),
        )
        assert result.steps[0].depends_on == ()
        assert names(result) == [
            "tj-dataset-initializer-0-0",
            "tj-model-initializer-0-0",
            "tj-node-0-0",
            "tj-node-0-1",
        ]
        assert (
            result.pod("tj-model-initializer-0-0")["metadata"]["labels"][c.LABEL_ANCESTOR]
            == "model-initializer"
        )

    def test_a_declared_depends_on_wins(self):
        result = planned(f.train_job(), initializer_runtime(depends_on=[("model-initializer", "Complete")]))
        assert result.steps[2].depends_on == (spec.Dependency("model-initializer", "Complete"),)

    def test_a_launcher_waits_for_ready_nodes(self):
        body = f.runtime(
            f.replicated_job("node", f.container()),
            f.replicated_job("launcher", f.container(), ancestor="trainer", depends_on=[("node", "Ready")]),
            ml_policy={"mpi": {}},
        )
        result = planned(f.train_job(), body)
        assert [step.name for step in result.steps] == ["node", "launcher"]
        assert result.steps[1].depends_on == (spec.Dependency("node", "Ready"),)

    def test_a_job_listed_first_still_runs_after_the_initializers(self):
        # JobSet starts jobs without dependsOn together; we keep Trainer's order: initializers first.
        body = f.runtime(
            f.replicated_job("node", f.container(), ancestor=c.ANCESTOR_TRAINER),
            f.replicated_job("model-initializer", ancestor=c.MODEL_INITIALIZER),
        )
        result = planned(f.train_job(), body)
        assert [step.name for step in result.steps] == ["model-initializer", "node"]


class TestTorch:
    def test_train_job_num_nodes_is_respected_rather_than_ml_policy_one(self):
        # "trainJob numNodes is respected rather than mlPolicy one"
        result = planned(f.train_job(trainer={"numNodes": 2}), f.torch_runtime(num_nodes=1))
        assert len(result.pods) == 2
        assert env_of(result.pods[1]) == {
            "PET_NNODES": "2",
            "PET_NPROC_PER_NODE": "1",
            "PET_NODE_RANK": RANK["valueFrom"],
            "PET_MASTER_ADDR": "test-job-node-0-0.test-job",
            "PET_MASTER_PORT": "29500",
        }
        assert result.pods[0]["spec"]["containers"][0]["ports"] == [{"containerPort": 29500}]

    @pytest.mark.parametrize(
        ("trainer", "expected"),
        [
            pytest.param({"resourcesPerNode": {"limits": {"cpu": "4"}}}, "4", id="auto with CPU limit"),
            pytest.param({}, "1", id="auto with no CPU resources"),
            pytest.param({"resourcesPerNode": {"limits": {"cpu": "2"}}}, "2", id="auto with low CPU limit"),
            pytest.param(
                {"resourcesPerNode": {"requests": {"cpu": "3"}}}, "3", id="auto with CPU request no limit"
            ),
            pytest.param(
                {"resourcesPerNode": {"limits": {"cpu": "2.5"}}}, "3", id="auto with millicore CPU limit"
            ),
            pytest.param(
                {"resourcesPerNode": {"limits": {"cpu": "0.7"}}}, "1", id="auto with fractional CPU limit"
            ),
            pytest.param(
                {"resourcesPerNode": {"limits": {"example.com/gpu": "2"}}},
                "auto",
                id="GPU request remains auto",
            ),
            pytest.param(
                {"numProcPerNode": 3, "resourcesPerNode": {"limits": {"cpu": "8"}}},
                "3",
                id="explicit is preserved",
            ),
            pytest.param({"resourcesPerNode": {"limits": {"cpu": "2500m"}}}, "3", id="millicore in m format"),
            pytest.param(
                {"resourcesPerNode": {"limits": {"cpu": "6", "example.com/gpu": "2"}}},
                "auto",
                id="GPU and CPU",
            ),
            pytest.param({"resourcesPerNode": {"limits": {"cpu": "3.7"}}}, "4", id="fractional CPU"),
            pytest.param(
                {"resourcesPerNode": {"requests": {"cpu": "2"}, "limits": {"cpu": "8"}}},
                "2",
                id="request over limit",
            ),
        ],
    )
    def test_nproc_per_node(self, trainer, expected):
        # "nproc_per_node=auto with CPU limit" … "nproc_per_node=cpu with fractional CPU"
        result = planned(f.train_job(trainer=trainer), f.torch_runtime())
        assert env_of(result.pods[0])["PET_NPROC_PER_NODE"] == expected

    def test_the_runtime_resources_count_when_the_job_sets_none(self):
        body = f.runtime(
            f.replicated_job("node", f.container(resources={"limits": {"cpu": "6"}}), ancestor="trainer"),
            ml_policy={"torch": {}},
        )
        assert env_of(planned(f.train_job(trainer={}), body).pods[0])["PET_NPROC_PER_NODE"] == "6"

    def test_multi_node_multi_gpu_training(self):
        # "multi-node multi-GPU training with complete info"
        trainer = {
            "numNodes": 2,
            "numProcPerNode": 8,
            "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}},
            "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
        }
        pod = planned(f.train_job(trainer=trainer), f.torch_runtime()).pods[1]
        assert env_of(pod) == {
            "NCCL_DEBUG": "INFO",
            "PET_NNODES": "2",
            "PET_NPROC_PER_NODE": "8",
            "PET_NODE_RANK": RANK["valueFrom"],
            "PET_MASTER_ADDR": "test-job-node-0-0.test-job",
            "PET_MASTER_PORT": "29500",
        }
        assert pod["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 8}}

    def test_without_a_trainer_nothing_is_injected(self):
        # Trainer's plugins inject nothing when spec.trainer is left out.
        pod = planned(f.train_job(), f.torch_runtime(num_nodes=2)).pods[1]
        assert "env" not in pod["spec"]["containers"][0]
        assert "ports" not in pod["spec"]["containers"][0]

    def env_injection_runtime(self, *targets):
        return f.runtime(
            f.replicated_job(
                "node",
                f.container(),
                f.container("sidecar"),
                ancestor="trainer",
                init_containers=[f.container("preflight"), f.container("untouched")],
            ),
            f.replicated_job("helper", f.container("helper")),
            ml_policy={"torch": {"envInjection": {"targets": list(targets)}}},
        )

    def test_env_injection_reaches_init_containers_and_sidecars(self):
        # "envInjection with init container", "envInjection with sidecar (regular container)",
        # "envInjection with multiple targets in different jobs leaves unlisted init container unchanged"
        body = self.env_injection_runtime(
            {"jobName": "node", "containerNames": ["preflight", "sidecar"]},
            {"jobName": "helper", "containerNames": ["helper"]},
        )
        result = planned(f.train_job(trainer={"numNodes": 2}), body)
        node = result.pod("test-job-node-0-0")
        expected = env_of(node)
        preflight, untouched = node["spec"]["initContainers"]
        assert {e["name"] for e in preflight["env"]} == set(expected)
        assert "env" not in untouched
        assert env_of(node, "sidecar") == expected
        assert env_of(result.pod("test-job-helper-0-0"), "helper") == expected

    def test_env_injection_with_empty_targets_changes_nothing_else(self):
        # "envInjection with empty targets (no additional injection)"
        result = planned(f.train_job(trainer={}), self.env_injection_runtime())
        assert "env" not in result.pods[0]["spec"]["containers"][1]

    def test_env_injection_happens_without_a_trainer_too(self):
        body = self.env_injection_runtime({"jobName": "node", "containerNames": ["sidecar"]})
        pod = planned(f.train_job(), body).pods[0]
        assert "env" not in pod["spec"]["containers"][0]
        assert env_of(pod, "sidecar")["PET_MASTER_PORT"] == "29500"


class TestMPI:
    def test_train_job_num_nodes_is_respected_rather_than_ml_policy_one(self):
        # "trainJob numNodes is respected rather than mlPolicy one"
        result = planned(f.train_job(name="tj", trainer={"numNodes": 2}), f.mpi_runtime(num_nodes=1))
        assert names(result) == ["tj-node-0-0", "tj-node-0-1", "tj-launcher-0-0"]
        (config_map,) = result.config_maps
        assert config_map["metadata"]["name"] == "tj-mpi-hostfile"
        assert config_map["data"] == {"hostfile": "tj-node-0-0.tj slots=1\ntj-node-0-1.tj slots=1\n"}
        assert result.ssh_auth_secret_name == "tj-mpi-ssh-auth"

    def test_train_job_num_proc_per_node_is_respected_rather_than_ml_policy_one(self):
        # "trainJob numProcPerNode is respected rather than mlPolicy one"
        result = planned(
            f.train_job(name="tj", trainer={"numProcPerNode": 2}), f.mpi_runtime(numProcPerNode=1)
        )
        assert result.config_maps[0]["data"]["hostfile"] == "tj-node-0-0.tj slots=2\n"
        assert env_of(result.pod("tj-launcher-0-0"))["OMPI_MCA_orte_set_default_slots"] == "2"

    def test_num_proc_per_node_is_set_to_the_number_of_gpus(self):
        # "numProcPerNode is set to number of GPUs in TrainJob"
        trainer = {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 5}}}
        result = planned(f.train_job(name="tj", trainer=trainer), f.mpi_runtime())
        assert result.config_maps[0]["data"]["hostfile"] == "tj-node-0-0.tj slots=5\n"

    def test_a_runtime_slot_count_above_one_is_kept_whatever_the_gpus(self):
        trainer = {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 5}}}
        result = planned(f.train_job(name="tj", trainer=trainer), f.mpi_runtime(numProcPerNode=3))
        assert result.config_maps[0]["data"]["hostfile"] == "tj-node-0-0.tj slots=3\n"

    def test_run_launcher_as_node(self):
        # "runLauncherAsNode is true": the launcher is in the hostfile and is one of the numNodes.
        body = f.mpi_runtime(launcher_first=True, runLauncherAsNode=True)
        trainer = {"numNodes": 3, "env": [{"name": "X", "value": "1"}]}
        result = planned(f.train_job(name="tj", trainer=trainer), body)
        assert names(result) == ["tj-launcher-0-0", "tj-node-0-0", "tj-node-0-1"]
        assert result.config_maps[0]["data"]["hostfile"] == (
            "tj-launcher-0-0.tj slots=1\ntj-node-0-0.tj slots=1\ntj-node-0-1.tj slots=1\n"
        )
        # The nodes train too, so they get the trainer's env (Trainer's jobset builder).
        assert env_of(result.pod("tj-node-0-1"))["X"] == "1"
        assert env_of(result.pod("tj-launcher-0-0"))["X"] == "1"

    def test_run_launcher_as_node_keeps_one_node_pod(self):
        result = planned(
            f.train_job(name="tj", trainer={"numNodes": 1}), f.mpi_runtime(runLauncherAsNode=True)
        )
        assert names(result) == ["tj-node-0-0", "tj-launcher-0-0"]

    def test_volumes_mounts_and_openmpi_env(self):
        body = f.mpi_runtime(sshAuthMountPath="/home/mpiuser/.ssh", numProcPerNode=4)
        result = planned(f.train_job(name="tj"), body)
        ssh_volume = {
            "name": "mpi-ssh-auth",
            "secret": {
                "secretName": "tj-mpi-ssh-auth",
                "defaultMode": 0o400,
                "items": [
                    {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                    {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                    {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
                ],
            },
        }
        node, launcher = result.pod("tj-node-0-0"), result.pod("tj-launcher-0-0")
        assert node["spec"]["volumes"] == [ssh_volume]
        assert launcher["spec"]["volumes"] == [
            ssh_volume,
            {
                "name": "mpi-hostfile",
                "configMap": {
                    "name": "tj-mpi-hostfile",
                    "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
                },
            },
        ]
        assert node["spec"]["containers"][0]["volumeMounts"] == [
            {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}
        ]
        assert launcher["spec"]["containers"][0]["volumeMounts"] == [
            {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
            {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
        ]
        assert env_of(launcher) == {
            "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
            "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
            "OMPI_MCA_orte_set_default_slots": "4",
            "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
        }
        assert "env" not in node["spec"]["containers"][0]
        assert result.config_maps[0]["metadata"]["ownerReferences"] == node["metadata"]["ownerReferences"]


def framework_runtime(framework, container=None):
    return f.runtime(
        f.replicated_job("node", container or f.container(), ancestor="trainer"),
        ml_policy={"numNodes": 1, framework: {}},
    )


class TestJAX:
    @pytest.mark.parametrize("num_nodes", [1, 3], ids=["single node JAX training", "multi-node JAX training"])
    def test_env(self, num_nodes):
        result = planned(f.train_job(name="tj", trainer={"numNodes": num_nodes}), framework_runtime("jax"))
        assert len(result.pods) == num_nodes
        assert env_of(result.pods[-1]) == {
            "JAX_NUM_PROCESSES": str(num_nodes),
            "JAX_PROCESS_ID": RANK["valueFrom"],
            "JAX_COORDINATOR_ADDRESS": "tj-node-0-0.tj:29500",
        }
        assert result.pods[0]["spec"]["containers"][0]["ports"] == [{"containerPort": 29500}]

    def test_gpus_do_not_change_the_process_count(self):
        # "JAX training with GPU resources": one process per node.
        trainer = {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}}
        result = planned(f.train_job(trainer=trainer), framework_runtime("jax"))
        assert env_of(result.pods[0])["JAX_NUM_PROCESSES"] == "2"

    def test_no_panic_when_the_trainer_step_is_absent(self):
        # "no panic when JAX policy is set but trainer PodSet is absent"
        body = f.runtime(f.replicated_job("worker"), ml_policy={"jax": {}})
        assert "env" not in planned(f.train_job(), body).pods[0]["spec"]["containers"][0]


class TestXGBoost:
    @pytest.mark.parametrize(
        ("trainer", "runtime_resources", "workers"),
        [
            pytest.param({"numNodes": 1}, None, "1", id="single node XGBoost training (CPU)"),
            pytest.param({"numNodes": 3}, None, "3", id="multi-node XGBoost training (CPU)"),
            pytest.param(
                {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}},
                None,
                "8",
                id="XGBoost training with GPU resources",
            ),
            pytest.param({"numNodes": 2}, None, "2", id="resources not set - defaults to 1 worker per node"),
            pytest.param(
                {"numNodes": 2}, {"limits": {"nvidia.com/gpu": 2}}, "4", id="resources set in Runtime only"
            ),
            pytest.param(
                {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 3}}},
                None,
                "6",
                id="resources set in TrainJob only",
            ),
            pytest.param(
                {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 3}}},
                {"limits": {"nvidia.com/gpu": 2}},
                "6",
                id="resources set in both Runtime and TrainJob",
            ),
        ],
    )
    def test_env(self, trainer, runtime_resources, workers):
        container = f.container(resources=runtime_resources) if runtime_resources else f.container()
        result = planned(f.train_job(name="tj", trainer=trainer), framework_runtime("xgboost", container))
        assert env_of(result.pods[-1]) == {
            "DMLC_TRACKER_URI": "tj-node-0-0.tj",
            "DMLC_TRACKER_PORT": "29500",
            "DMLC_TASK_ID": RANK["valueFrom"],
            "DMLC_NUM_WORKER": workers,
        }

    def test_no_env_injection_when_the_trainer_is_nil(self):
        # "no env injection when trainJob.Spec.Trainer is nil"
        result = planned(f.train_job(), framework_runtime("xgboost"))
        assert "env" not in result.pods[0]["spec"]["containers"][0]


class TestQuantities:
    @pytest.mark.parametrize(
        ("resources", "gpus"),
        [
            ({}, 0),
            ({"limits": {"nvidia.com/gpu": 2}}, 2),
            ({"requests": {"amd.com/gpu": "1"}, "limits": {"amd.com/gpu": "4"}}, 1),
            ({"requests": {"cpu": "4"}, "limits": {"nvidia.com/gpu": 8}}, 8),
            ({"limits": {"nvidia.com/GPU": "bogus"}}, 0),
        ],
    )
    def test_gpus_per_node(self, resources, gpus):
        assert readers.gpus_per_node(resources) == gpus

    @pytest.mark.parametrize(
        ("resources", "cpus"),
        [({}, 0), ({"limits": {"cpu": "1500m"}}, 2), ({"requests": {"cpu": 0}, "limits": {"cpu": 3}}, 3)],
    )
    def test_cpus_per_node(self, resources, cpus):
        assert readers.cpus_per_node(resources) == cpus
