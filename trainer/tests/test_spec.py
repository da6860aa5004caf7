"""A TrainJob and its runtime are parsed once; every wrong field is named, all at once."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from fields import SpecError
from trainer import constants as c
from trainer.operator import policies, spec
from trainer.runtimes import catalog
from trainer.tests import factories as f


def problems(error: pytest.ExceptionInfo[SpecError]) -> dict[str, str]:
    return {problem.path: problem.message for problem in error.value.errors}


class TestParseTrainJob:
    def test_defaults_follow_the_2_3_api(self):
        job = spec.parse_train_job(f.train_job())
        assert job.runtime_ref == spec.RuntimeRef("test-runtime", c.CLUSTER_TRAINING_RUNTIME, c.GROUP)
        assert job.trainer is None
        assert (job.dataset, job.model, job.runtime_patches) == (None, None, ())
        assert job.suspend is False
        assert job.managed_by == c.MANAGED_BY_TRAINER
        assert job.ours
        assert job.active_deadline_seconds is None

    def test_every_field_is_read(self):
        job = spec.parse_train_job(
            f.train_job(
                runtime_kind=c.TRAINING_RUNTIME,
                trainer={
                    "image": "pytorch:2",
                    "command": ["torchrun", "train.py"],
                    "args": ["--epochs", "3"],
                    "env": [{"name": "LR", "value": "0.1"}],
                    "numNodes": 4,
                    "numProcPerNode": 2,
                    "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}},
                },
                initializer={
                    "dataset": {"storageUri": "hf://tatsu-lab/alpaca", "secretRef": {"name": "hf"}},
                    "model": {"storageUri": "hf://meta-llama/Llama", "env": [{"name": "A", "value": "b"}]},
                },
                suspend=True,
                managedBy=c.MANAGED_BY_MULTIKUEUE,
                activeDeadlineSeconds=600,
            )
        )
        assert job.runtime_ref.kind == c.TRAINING_RUNTIME
        assert job.trainer == spec.Trainer(
            image="pytorch:2",
            command=("torchrun", "train.py"),
            args=("--epochs", "3"),
            env=({"name": "LR", "value": "0.1"},),
            num_nodes=4,
            num_proc_per_node=2,
            resources_per_node={"limits": {"nvidia.com/gpu": 2}},
        )
        assert job.dataset == spec.Initializer("hf://tatsu-lab/alpaca", (), "hf")
        assert job.model == spec.Initializer("hf://meta-llama/Llama", ({"name": "A", "value": "b"},), None)
        assert job.suspend
        assert not job.ours
        assert job.active_deadline_seconds == 600

    def test_the_parsed_value_is_frozen(self):
        job = spec.parse_train_job(f.train_job())
        with pytest.raises(dataclasses.FrozenInstanceError):
            job.suspend = True  # type: ignore[misc]

    def test_a_runtime_ref_kind_that_is_not_a_runtime_is_named(self):
        with pytest.raises(SpecError) as error:
            spec.parse_train_job(f.train_job(runtime_kind="JobSet"))
        assert "spec.runtimeRef.kind" in problems(error)
        assert "TrainingRuntime, ClusterTrainingRuntime" in problems(error)["spec.runtimeRef.kind"]

    @pytest.mark.parametrize(
        ("trainer", "path", "words"),
        [
            ({"numNodes": 0}, "spec.trainer.numNodes", "at least 1"),
            ({"numNodes": "2"}, "spec.trainer.numNodes", "integer"),
            ({"numNodes": True}, "spec.trainer.numNodes", "integer"),
            ({"numProcPerNode": 0}, "spec.trainer.numProcPerNode", "at least 1"),
            ({"command": "python train.py"}, "spec.trainer.command", "list"),
            ({"args": [1, 2]}, "spec.trainer.args", "list of strings"),
            ({"env": [{"value": "x"}]}, "spec.trainer.env[0].name", "required"),
            ({"resourcesPerNode": "4"}, "spec.trainer.resourcesPerNode", "object"),
            ({"image": 3}, "spec.trainer.image", "string"),
        ],
    )
    def test_bad_trainer_fields_are_named(self, trainer, path, words):
        with pytest.raises(SpecError) as error:
            spec.parse_train_job(f.train_job(trainer=trainer))
        assert words in problems(error)[path]

    def test_every_problem_is_reported_at_once(self):
        body = f.train_job(
            trainer={"numNodes": 0}, managedBy="someone", activeDeadlineSeconds=0, suspend="yes"
        )
        body["spec"]["runtimeRef"] = {"kind": "Deployment", "apiGroup": "apps"}
        with pytest.raises(SpecError) as error:
            spec.parse_train_job(body)
        assert set(problems(error)) == {
            "spec.runtimeRef.kind",
            "spec.runtimeRef.apiGroup",
            "spec.runtimeRef.name",
            "spec.trainer.numNodes",
            "spec.managedBy",
            "spec.activeDeadlineSeconds",
            "spec.suspend",
        }

    def test_a_missing_runtime_ref_is_named(self):
        body = f.train_job()
        del body["spec"]["runtimeRef"]
        with pytest.raises(SpecError) as error:
            spec.parse_train_job(body)
        assert problems(error)["spec.runtimeRef"] == "is required"

    def test_runtime_patches_are_parsed_by_manager(self):
        patch = {
            "manager": "kueue.x-k8s.io/manager",
            "trainingRuntimeSpec": {
                "template": {
                    "metadata": {"labels": {"team": "a"}},
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "metadata": {"annotations": {"job": "x"}},
                                    "spec": {
                                        "template": {
                                            "metadata": {"labels": {"kueue": "yes"}},
                                            "spec": {"nodeSelector": {"gpu": "a100"}},
                                        }
                                    },
                                },
                            }
                        ]
                    },
                }
            },
        }
        job = spec.parse_train_job(f.train_job(runtimePatches=[patch]))
        assert job.runtime_patches == (
            spec.RuntimePatch(
                manager="kueue.x-k8s.io/manager",
                labels={"team": "a"},
                annotations={},
                replicated_jobs=(
                    spec.ReplicatedJobPatch(
                        name="node",
                        job_labels={},
                        job_annotations={"job": "x"},
                        pod_labels={"kueue": "yes"},
                        pod_annotations={},
                        pod_spec={"nodeSelector": {"gpu": "a100"}},
                    ),
                ),
            ),
        )

    def test_two_patches_of_one_manager_are_refused(self):
        patches = [{"manager": "me"}, {"manager": "me"}]
        with pytest.raises(SpecError) as error:
            spec.parse_train_job(f.train_job(runtimePatches=patches))
        assert "appears twice" in problems(error)["spec.runtimePatches[1].manager"]

    def test_a_secret_ref_needs_a_name(self):
        with pytest.raises(SpecError) as error:
            spec.parse_train_job(f.train_job(initializer={"model": {"secretRef": {}}}))
        assert problems(error) == {"spec.initializer.model.secretRef.name": "is required"}


class TestParseRuntime:
    def test_torch_runtime(self):
        runtime = spec.parse_runtime(f.torch_runtime(num_nodes=2))
        assert runtime.kind == c.CLUSTER_TRAINING_RUNTIME
        assert runtime.ml_policy == policies.MLPolicy(
            num_nodes=2, framework="torch", torch=policies.TorchPolicy()
        )
        assert runtime.trainer_job() is runtime.replicated_jobs[0]
        assert runtime.replicated_jobs[0].ancestor == c.ANCESTOR_TRAINER
        assert runtime.publish_not_ready_addresses
        assert runtime.subdomain is None

    def test_mpi_defaults(self):
        runtime = spec.parse_runtime(f.mpi_runtime())
        assert runtime.ml_policy is not None
        assert runtime.ml_policy.mpi == policies.MPIPolicy(
            num_proc_per_node=1,
            mpi_implementation="OpenMPI",
            ssh_auth_mount_path="/root/.ssh",
            run_launcher_as_node=False,
        )

    def test_mpi_fields(self):
        runtime = spec.parse_runtime(
            f.mpi_runtime(
                numProcPerNode=4,
                sshAuthMountPath="/home/mpiuser/.ssh",
                runLauncherAsNode=True,
                mpiImplementation="OpenMPI",
            )
        )
        assert runtime.ml_policy is not None
        assert runtime.ml_policy.mpi == policies.MPIPolicy(4, "OpenMPI", "/home/mpiuser/.ssh", True)

    def test_torch_env_injection_targets(self):
        body = f.torch_runtime(envInjection={"targets": [{"jobName": "node", "containerNames": ["sidecar"]}]})
        runtime = spec.parse_runtime(body)
        assert runtime.ml_policy is not None
        assert runtime.ml_policy.torch is not None
        assert runtime.ml_policy.torch.env_injection == (policies.EnvInjectionTarget("node", ("sidecar",)),)

    @pytest.mark.parametrize(
        ("policy", "path", "words"),
        [
            ({"numNodes": 0, "torch": {}}, "spec.mlPolicy.numNodes", "at least 1"),
            ({"torch": {}, "mpi": {}}, "spec.mlPolicy", "at most one"),
            ({"mpi": {"mpiImplementation": "MPICH"}}, "spec.mlPolicy.mpi.mpiImplementation", "OpenMPI"),
            ({"mpi": {"numProcPerNode": 0}}, "spec.mlPolicy.mpi.numProcPerNode", "at least 1"),
            ({"mpi": {"runLauncherAsNode": "yes"}}, "spec.mlPolicy.mpi.runLauncherAsNode", "true or false"),
            ({"flux": {}}, "spec.mlPolicy.flux", "not supported"),
        ],
    )
    def test_bad_ml_policies_are_named(self, policy, path, words):
        with pytest.raises(SpecError) as error:
            spec.parse_runtime(f.runtime(f.replicated_job("node"), ml_policy=policy))
        assert words in problems(error)[path]

    def test_pod_group_policies(self):
        coscheduling = spec.parse_runtime(
            f.runtime(
                f.replicated_job("node"), podGroupPolicy={"coscheduling": {"scheduleTimeoutSeconds": 120}}
            )
        )
        assert coscheduling.pod_group_policy == policies.PodGroupPolicy("coscheduling", 120)
        volcano = spec.parse_runtime(f.runtime(f.replicated_job("node"), podGroupPolicy={"volcano": {}}))
        assert volcano.pod_group_policy == policies.PodGroupPolicy("volcano")
        with pytest.raises(SpecError) as error:
            spec.parse_runtime(f.runtime(f.replicated_job("node"), podGroupPolicy={}))
        assert "exactly one" in problems(error)["spec.podGroupPolicy"]

    def test_replicated_jobs_must_be_valid(self):
        body = f.runtime(
            f.replicated_job("node"),
            f.replicated_job("node"),
            f.replicated_job("launcher", depends_on=[("ghost", "Ready"), ("node", "Running")]),
        )
        body["spec"]["template"]["spec"]["replicatedJobs"].append({"name": "empty", "template": {"spec": {}}})
        body["spec"]["template"]["spec"]["replicatedJobs"][0]["groupName"] = 7
        body["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] = -1
        with pytest.raises(SpecError) as error:
            spec.parse_runtime(body)
        jobs = "spec.template.spec.replicatedJobs"
        assert problems(error) == {
            f"{jobs}[0].groupName": "must be a string, not int",
            f"{jobs}[0].template.spec.backoffLimit": "must be between 0 and 2147483647, not -1",
            f"{jobs}[1].name": "'node' is used by an earlier replicated job",
            f"{jobs}[2].dependsOn[0].name": "must name an earlier replicated job, not 'ghost'",
            f"{jobs}[2].dependsOn[1].status": "must be Ready or Complete, not 'Running'",
            f"{jobs}[3].template.spec.template.spec.containers": "must list at least one container",
        }

    def test_a_replicated_job_reads_its_group_and_its_jobs_backoff_limit_with_jobsets_defaults(self):
        grouped = f.replicated_job("node")
        grouped["groupName"] = "workers"
        grouped["template"]["spec"]["backoffLimit"] = 0
        runtime = spec.parse_runtime(f.runtime(grouped, f.replicated_job("launcher")))
        assert [(job.group_name, job.backoff_limit) for job in runtime.replicated_jobs] == [
            ("workers", 0),
            ("default", 6),
        ]
        grouped["groupName"] = "x" * 64  # a label value on every pod: JobSet's DNS-1035 label
        with pytest.raises(SpecError) as error:
            spec.parse_runtime(f.runtime(grouped))
        assert (
            "must be no more than 63 characters"
            in problems(error)["spec.template.spec.replicatedJobs[0].groupName"]
        )

    def test_a_runtime_without_replicated_jobs_is_refused(self):
        with pytest.raises(SpecError) as error:
            spec.parse_runtime(f.runtime())
        assert "at least one" in problems(error)["spec.template.spec.replicatedJobs"]

    def test_other_kinds_are_refused(self):
        body = f.torch_runtime()
        body["kind"] = "JobSet"
        with pytest.raises(SpecError) as error:
            spec.parse_runtime(body)
        assert "kind" in problems(error)

    def test_network_settings(self):
        body = f.torch_runtime()
        body["spec"]["template"]["spec"]["network"] = {"subdomain": "mesh", "publishNotReadyAddresses": False}
        runtime = spec.parse_runtime(body)
        assert runtime.subdomain == "mesh"
        assert not runtime.publish_not_ready_addresses


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("spec", "template", "spec", "replicatedJobs", 0, "name"), "x" * 64),
        (("spec", "template", "spec", "replicatedJobs", 0, "name"), "Node"),
        (("spec", "template", "spec", "network", "subdomain"), "x" * 300_000),
        (("spec", "template", "spec", "network", "subdomain"), "not_a_label"),
    ],
)
def test_a_runtime_name_that_would_name_a_service_or_a_job_must_be_a_dns_label(where, value):
    """A replicated job's name and the network subdomain become Job and Service names: a runtime with one
    the API server would refuse failed the controller's own writes (issue 27's hostile-input suite)."""
    runtime = next(r for r in catalog.ready_made_runtimes() if r["metadata"]["name"] == "torch-distributed")
    node: Any = runtime
    for part in where[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    node[where[-1]] = value
    with pytest.raises(SpecError) as refused:
        spec.parse_runtime(runtime)
    path = ".".join(str(part) for part in where).replace(".0.", "[0].")
    assert any(problem.path == path for problem in refused.value.errors), refused.value.errors


@pytest.mark.parametrize(
    ("resources", "path"),
    [
        ({"limits": ["cpu"]}, "spec.trainer.resourcesPerNode.limits"),
        ({"requests": {"cpu": "lots"}}, "spec.trainer.resourcesPerNode.requests.cpu"),
        ({"limits": {f"r{i}": "v" for i in range(50_000)}}, "spec.trainer.resourcesPerNode.limits.r0"),
        ({"limits": {"cpu": True}}, "spec.trainer.resourcesPerNode.limits.cpu"),
    ],
)
def test_resources_per_node_must_be_maps_of_quantities(resources, path):
    """A list was a ValueError in the webhook's resolution; 50,000 bad amounts went on to the API server,
    which named every one (issue 27's hostile-input suite). The first wrong one is named."""
    with pytest.raises(SpecError) as refused:
        spec.parse_train_job(f.train_job(trainer={"resourcesPerNode": resources}))
    assert [problem.path for problem in refused.value.errors] == [path]


def test_resources_per_node_of_quantities_are_read():
    resources = {"limits": {"cpu": 2, "memory": "4Gi", "nvidia.com/gpu": "1"}, "requests": {"cpu": "1500m"}}
    job = spec.parse_train_job(f.train_job(trainer={"resourcesPerNode": resources}))
    assert job.trainer is not None
    assert job.trainer.resources_per_node == resources
