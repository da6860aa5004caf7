"""A TrainJob's overrides land on its runtime as Trainer resolves them; what Trainer refuses is named."""

from __future__ import annotations

import dataclasses

import pytest

from fields import SpecError
from trainer import constants as c
from trainer.operator import resolution, spec
from trainer.tests import factories as f
from trainer.tests.test_spec import problems


def resolve(job_body, runtime_body):
    return resolution.resolve(spec.parse_train_job(job_body), spec.parse_runtime(runtime_body))


class TestResolve:
    def test_the_reference_must_match_the_runtime(self):
        with pytest.raises(SpecError) as error:
            resolve(f.train_job(runtime_name="other"), f.torch_runtime())
        assert "names ClusterTrainingRuntime 'other'" in problems(error)["spec.runtimeRef"]

    def test_a_namespaced_runtime_must_share_the_namespace(self):
        body = f.runtime(f.replicated_job("node"), kind=c.TRAINING_RUNTIME, namespace="team-b")
        with pytest.raises(SpecError) as error:
            resolve(f.train_job(namespace="team-a", runtime_kind=c.TRAINING_RUNTIME), body)
        assert "own namespace 'team-a'" in problems(error)["spec.runtimeRef.name"]

    def test_a_trainer_override_needs_a_node_to_override(self):
        body = f.runtime(f.replicated_job("worker", f.container("worker"), ancestor=c.ANCESTOR_TRAINER))
        with pytest.raises(SpecError) as error:
            resolve(f.train_job(trainer={"image": "x"}), body)
        assert "container named 'node'" in problems(error)["spec.trainer"]

    def test_a_trainer_override_needs_a_trainer_step(self):
        body = f.runtime(f.replicated_job("node"))
        with pytest.raises(SpecError) as error:
            resolve(f.train_job(trainer={"numNodes": 2}), body)
        assert "trainjob-ancestor-step=trainer" in problems(error)["spec.trainer"]

    def test_trainer_overrides_reach_the_node_container(self):
        resolved = resolve(
            f.train_job(
                trainer={
                    "image": "mine:1",
                    "command": ["python"],
                    "args": ["train.py"],
                    "env": [{"name": "LR", "value": "0.1"}],
                    "numNodes": 3,
                    "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}},
                }
            ),
            f.runtime(
                f.replicated_job(
                    "node",
                    f.container(
                        env=[{"name": "LR", "value": "1"}, {"name": "KEEP", "value": "k"}],
                        resources={
                            "limits": {"cpu": "8", "nvidia.com/gpu": 1},
                            "requests": {"memory": "1Gi"},
                        },
                    ),
                    ancestor=c.ANCESTOR_TRAINER,
                ),
                ml_policy={"numNodes": 1, "torch": {}},
            ),
        )
        (node,) = resolved.replicated_jobs
        container = node.pod_template["spec"]["containers"][0]
        assert node.count == 3
        assert container["image"] == "mine:1"
        assert container["command"] == ["python"]
        assert container["args"] == ["train.py"]
        assert container["env"] == [{"name": "LR", "value": "0.1"}, {"name": "KEEP", "value": "k"}]
        assert container["resources"] == {
            "limits": {"cpu": "8", "nvidia.com/gpu": 4},
            "requests": {"memory": "1Gi"},
        }
        assert resolved.resources_per_node == {"limits": {"nvidia.com/gpu": 4}}

    def test_the_runtime_is_never_changed(self):
        runtime = spec.parse_runtime(f.torch_runtime())
        before = dataclasses.replace(runtime)
        resolution.resolve(spec.parse_train_job(f.train_job(trainer={"image": "other"})), runtime)
        assert runtime.replicated_jobs[0].pod_template == before.replicated_jobs[0].pod_template
        assert runtime.replicated_jobs[0].pod_template["spec"]["containers"][0]["image"] == "test:image"

    def test_without_a_trainer_the_runtime_resources_are_the_node_resources(self):
        body = f.runtime(
            f.replicated_job(
                "node", f.container(resources={"limits": {"cpu": "4"}}), ancestor=c.ANCESTOR_TRAINER
            ),
            ml_policy={"numNodes": 2, "torch": {}},
        )
        resolved = resolve(f.train_job(), body)
        assert resolved.resources_per_node == {"limits": {"cpu": "4"}}
        assert resolved.replicated_jobs[0].count == 2  # mlPolicy.numNodes

    @pytest.mark.parametrize(
        ("framework", "runtime_body", "reserved"),
        [
            ("torch", f.torch_runtime(), "PET_NNODES"),
            ("mpi", f.mpi_runtime(), "OMPI_MCA_orte_default_hostfile"),
            (
                "xgboost",
                f.runtime(f.replicated_job("node", ancestor="trainer"), ml_policy={"xgboost": {}}),
                "DMLC_TRACKER_URI",
            ),
        ],
    )
    def test_reserved_env_is_refused(self, framework, runtime_body, reserved):
        # Trainer's torch_test "reserved environment variable present", mpi_test "trainer has reserved MPI env
        # OMPI_MCA_orte_default_hostfile", xgboost_test "error when using reserved DMLC_TRACKER_URI env".
        job = f.train_job(trainer={"env": [{"name": reserved, "value": "x"}, {"name": "FREE", "value": "y"}]})
        with pytest.raises(SpecError) as error:
            resolve(job, runtime_body)
        assert problems(error)["spec.trainer.env"] == f"must not set the reserved variables {reserved}"

    def test_jax_reserves_nothing(self):
        body = f.runtime(f.replicated_job("node", ancestor="trainer"), ml_policy={"jax": {}})
        resolve(f.train_job(trainer={"env": [{"name": "PET_NNODES", "value": "1"}]}), body)

    @pytest.mark.parametrize(
        ("node", "launcher"),
        [(True, False), (False, True), (False, False)],
        ids=["no launcher", "no node", "neither"],
    )
    def test_launcher_as_node_needs_both_jobs_for_two_nodes(self, node, launcher):
        # Trainer's mpi_test "runtime does not have Launcher even though MPI with runLauncherAsNode has
        # 2 numNodes" and its siblings.
        jobs = []
        if node:
            jobs.append(f.replicated_job("node", f.container(), ancestor="trainer"))
        if launcher:
            jobs.append(f.replicated_job("launcher", f.container(), ancestor="trainer"))
        if not jobs:
            jobs.append(f.replicated_job("worker", f.container("node"), ancestor="trainer"))
        body = f.runtime(*jobs, ml_policy={"mpi": {"runLauncherAsNode": True}})
        with pytest.raises(SpecError) as error:
            resolve(f.train_job(trainer={"numNodes": 2}), body)
        assert "must be 1" in problems(error)["spec.trainer.numNodes"]
        resolve(f.train_job(trainer={"numNodes": 1}), body)  # "… but TrainJob has only 1 numNodes"

    def test_env_injection_targets_must_exist(self):
        # Trainer's torch_test "envInjection target container does not exist" / "target job does not exist".
        body = f.torch_runtime(
            envInjection={
                "targets": [
                    {"jobName": "node", "containerNames": ["missing"]},
                    {"jobName": "ghost", "containerNames": ["x"]},
                ]
            }
        )
        with pytest.raises(SpecError) as error:
            resolve(f.train_job(), body)
        assert [p.message for p in error.value.errors] == [
            "envInjection target job 'node' container 'missing' is not in the runtime's template",
            "envInjection target job 'ghost' container 'x' is not in the runtime's template",
        ]

    def test_initializers_get_their_storage_uri_env_and_secret(self):
        body = f.runtime(
            f.replicated_job(
                "dataset-initializer",
                f.container("dataset-initializer", env=[{"name": "STORAGE_URI", "value": "hf://default"}]),
                ancestor=c.DATASET_INITIALIZER,
            ),
            f.replicated_job(
                "model-initializer", f.container("model-initializer"), ancestor=c.MODEL_INITIALIZER
            ),
            f.replicated_job("node", ancestor=c.ANCESTOR_TRAINER),
        )
        resolved = resolve(
            f.train_job(
                initializer={
                    "dataset": {
                        "storageUri": "hf://tatsu-lab/alpaca",
                        "env": [{"name": "SPLIT", "value": "train"}],
                    },
                    "model": {
                        "storageUri": "hf://meta-llama/Llama-3.2-1B",
                        "secretRef": {"name": "hf-token"},
                    },
                }
            ),
            body,
        )
        dataset = resolved.find("dataset-initializer")
        model = resolved.find("model-initializer")
        assert dataset is not None
        assert model is not None
        assert dataset.pod_template["spec"]["containers"][0]["env"] == [
            {"name": "STORAGE_URI", "value": "hf://tatsu-lab/alpaca"},
            {"name": "SPLIT", "value": "train"},
        ]
        model_container = model.pod_template["spec"]["containers"][0]
        assert model_container["env"] == [{"name": "STORAGE_URI", "value": "hf://meta-llama/Llama-3.2-1B"}]
        assert model_container["envFrom"] == [{"secretRef": {"name": "hf-token"}}]


def patch(*replicated_jobs, manager="kueue.x-k8s.io/manager", labels=None):
    template: dict = {"spec": {"replicatedJobs": list(replicated_jobs)}}
    if labels:
        template["metadata"] = {"labels": labels}
    return {"manager": manager, "trainingRuntimeSpec": {"template": template}}


def job_patch(name, pod_spec=None, pod_labels=None, job_labels=None):
    template: dict = {"spec": {"template": {"spec": pod_spec or {}}}}
    if pod_labels:
        template["spec"]["template"]["metadata"] = {"labels": pod_labels}
    if job_labels:
        template["metadata"] = {"labels": job_labels}
    return {"name": name, "template": template}


class TestRuntimePatches:
    def runtime(self):
        return f.runtime(
            f.replicated_job(
                "node",
                f.container(volumeMounts=[{"name": "data", "mountPath": "/data"}]),
                f.container("sidecar", env=[{"name": "A", "value": "1"}]),
                ancestor=c.ANCESTOR_TRAINER,
            ),
            ml_policy={"torch": {}},
        )

    def test_patches_apply_in_order_to_the_named_job(self):
        first = patch(
            job_patch(
                "node",
                pod_spec={
                    "nodeSelector": {"gpu": "a100"},
                    "tolerations": [{"key": "gpu", "operator": "Exists"}],
                    "serviceAccountName": "trainer",
                    "containers": [
                        {"name": "sidecar", "env": [{"name": "A", "value": "2"}]},
                        {"name": "node", "volumeMounts": [{"name": "data", "mountPath": "/mnt/data"}]},
                    ],
                },
                pod_labels={"kueue.x-k8s.io/podset": "node"},
                job_labels={"team": "vision"},
            ),
            labels={"kueue.x-k8s.io/queue-name": "q"},
        )
        second = patch(job_patch("node", pod_spec={"nodeSelector": {"zone": "b"}}), manager="me")
        resolved = resolve(f.train_job(runtimePatches=[first, second]), self.runtime())
        (node,) = resolved.replicated_jobs
        pod_spec = node.pod_template["spec"]
        assert resolved.labels == {"kueue.x-k8s.io/queue-name": "q"}
        assert node.labels == {c.LABEL_ANCESTOR: "trainer", "team": "vision"}
        assert node.pod_template["metadata"]["labels"] == {"kueue.x-k8s.io/podset": "node"}
        assert pod_spec["nodeSelector"] == {"gpu": "a100", "zone": "b"}
        assert pod_spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
        assert pod_spec["serviceAccountName"] == "trainer"
        node_container, sidecar = pod_spec["containers"]
        assert node_container["volumeMounts"] == [{"name": "data", "mountPath": "/mnt/data"}]
        assert sidecar["env"] == [{"name": "A", "value": "2"}]

    @pytest.mark.parametrize(
        ("job", "path", "words"),
        [
            (job_patch("ghost"), ".replicatedJobs[0].name", "no replicated job 'ghost'"),
            (
                job_patch("node", pod_spec={"containers": [{"name": "nope"}]}),
                ".replicatedJobs[0].template.spec.template.spec.containers[0].name",
                "no container 'nope'",
            ),
            (
                job_patch(
                    "node", pod_spec={"containers": [{"name": "node", "env": [{"name": "X", "value": "1"}]}]}
                ),
                ".replicatedJobs[0].template.spec.template.spec.containers[0].env",
                "use spec.trainer",
            ),
            (
                job_patch("node", pod_spec={"hostNetwork": True}),
                ".replicatedJobs[0].template.spec.template.spec.hostNetwork",
                "may not be patched",
            ),
        ],
    )
    def test_bad_patches_are_named(self, job, path, words):
        with pytest.raises(SpecError) as error:
            resolve(f.train_job(runtimePatches=[patch(job)]), self.runtime())
        prefix = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec"
        assert words in problems(error)[prefix + path]
