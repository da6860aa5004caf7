"""Manifest builders: a job → its Pods and headless Services, names, labels, owners, env and ports."""

import copy
import json

import pytest

from jobs.frameworks import MPI, MXNet, PyTorch, TensorFlow
from jobs.manifests import (
    ENV_JOB_NAME,
    ENV_REPLICA_INDEX,
    ENV_REPLICA_TYPE,
    KUBEFLOW_JOB_NAME,
    KUBEFLOW_JOB_ROLE,
    KUBEFLOW_OPERATOR_NAME,
    KUBEFLOW_REPLICA_INDEX,
    KUBEFLOW_REPLICA_TYPE,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    desired_pods,
    desired_services,
    job_selector,
    merge_env,
    replica_name,
)
from jobs.tests.fakes import make_job, tf_job


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", [])}


def pods_by_name(job: dict, framework=None) -> dict[str, dict]:
    framework = framework or TensorFlow()
    return {p["metadata"]["name"]: p for p in desired_pods(job, framework)}


def masters(pods: list[dict]) -> list[str]:
    """The pods with the master role; ours and Kubeflow's role labels always agree."""
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels.get(LABEL_JOB_ROLE) == labels.get(KUBEFLOW_JOB_ROLE), pod["metadata"]["name"]
    return [p["metadata"]["name"] for p in pods if p["metadata"]["labels"].get(LABEL_JOB_ROLE) == "master"]


class TestATFJobWithChiefTwoPSAndFourWorkers:
    job = tf_job(chief=1, ps=2, workers=4, name="mnist", namespace="ml")

    def test_yields_seven_pods_and_seven_services_named_after_their_replicas(self):
        expected = ["mnist-chief-0", "mnist-ps-0", "mnist-ps-1"] + [f"mnist-worker-{i}" for i in range(4)]
        assert [p["metadata"]["name"] for p in desired_pods(self.job, TensorFlow())] == expected
        assert [s["metadata"]["name"] for s in desired_services(self.job, TensorFlow())] == expected

    def test_every_pod_carries_exactly_the_expected_tf_config(self):
        cluster = {
            "chief": ["mnist-chief-0.ml.svc:2222"],
            "ps": ["mnist-ps-0.ml.svc:2222", "mnist-ps-1.ml.svc:2222"],
            "worker": [f"mnist-worker-{i}.ml.svc:2222" for i in range(4)],
        }
        for pod in desired_pods(self.job, TensorFlow()):
            labels = pod["metadata"]["labels"]
            config = json.loads(env_of(pod["spec"]["containers"][0])["TF_CONFIG"])
            assert config == {
                "cluster": cluster,
                "task": {"type": labels[LABEL_REPLICA_TYPE], "index": int(labels[LABEL_REPLICA_INDEX])},
                "environment": "cloud",
            }

    def test_pods_are_labelled_with_job_type_and_index_and_only_the_chief_is_master(self):
        pods = pods_by_name(self.job)
        assert pods["mnist-ps-1"]["metadata"]["labels"] == {
            LABEL_JOB_NAME: "mnist",
            LABEL_REPLICA_TYPE: "ps",
            LABEL_REPLICA_INDEX: "1",
            KUBEFLOW_JOB_NAME: "mnist",
            KUBEFLOW_REPLICA_TYPE: "ps",
            KUBEFLOW_REPLICA_INDEX: "1",
            KUBEFLOW_OPERATOR_NAME: "tfjob-controller",
        }
        assert masters(list(pods.values())) == ["mnist-chief-0"]

    def test_pods_and_services_carry_kubeflows_labels_and_the_chief_its_master_role(self):
        pods = pods_by_name(self.job)
        kubeflow_masters = [
            name for name, pod in pods.items() if pod["metadata"]["labels"].get(KUBEFLOW_JOB_ROLE) == "master"
        ]
        assert kubeflow_masters == ["mnist-chief-0"]
        service = desired_services(self.job, TensorFlow())[0]
        assert service["metadata"]["labels"][KUBEFLOW_JOB_NAME] == "mnist"
        assert service["metadata"]["labels"][KUBEFLOW_REPLICA_TYPE] == "chief"
        assert KUBEFLOW_JOB_ROLE not in service["metadata"]["labels"]  # Kubeflow's services have no role

    def test_pods_and_services_are_controlled_by_the_job(self):
        owner = {
            "apiVersion": "argoml.io/v1alpha1",
            "kind": "TFJob",
            "name": "mnist",
            "uid": "job-uid-mnist",
            "controller": True,
            "blockOwnerDeletion": True,
        }
        children = desired_pods(self.job, TensorFlow()) + desired_services(self.job, TensorFlow())
        assert all(child["metadata"]["ownerReferences"] == [owner] for child in children)
        assert all(child["metadata"]["namespace"] == "ml" for child in children)

    def test_a_kubeflow_v1_job_owns_its_children_in_its_own_group(self):
        job = {**self.job, "apiVersion": "kubeflow.org/v1"}
        children = desired_pods(job, TensorFlow()) + desired_services(job, TensorFlow())
        assert {child["metadata"]["ownerReferences"][0]["apiVersion"] for child in children} == {
            "kubeflow.org/v1"
        }

    def test_each_service_is_headless_and_selects_exactly_its_pod(self):
        service = desired_services(self.job, TensorFlow())[4]
        assert service == {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "mnist-worker-1",
                "namespace": "ml",
                "labels": {
                    LABEL_JOB_NAME: "mnist",
                    LABEL_REPLICA_TYPE: "worker",
                    LABEL_REPLICA_INDEX: "1",
                    KUBEFLOW_JOB_NAME: "mnist",
                    KUBEFLOW_REPLICA_TYPE: "worker",
                    KUBEFLOW_REPLICA_INDEX: "1",
                    KUBEFLOW_OPERATOR_NAME: "tfjob-controller",
                },
                "ownerReferences": service["metadata"]["ownerReferences"],
            },
            "spec": {
                "clusterIP": "None",
                "selector": {LABEL_JOB_NAME: "mnist", LABEL_REPLICA_TYPE: "worker", LABEL_REPLICA_INDEX: "1"},
                "ports": [{"name": "tfjob-port", "port": 2222, "targetPort": 2222, "protocol": "TCP"}],
                "publishNotReadyAddresses": True,
            },
        }

    def test_the_output_is_deterministic_and_leaves_the_job_untouched(self):
        before = copy.deepcopy(self.job)
        assert desired_pods(self.job, TensorFlow()) == desired_pods(self.job, TensorFlow())
        assert self.job == before


@pytest.mark.parametrize(
    ("framework", "replicas", "operator"),
    [
        (TensorFlow(), {"Worker": 2}, "tfjob-controller"),
        (PyTorch(), {"Master": 1, "Worker": 1}, "pytorchjob-controller"),
        (MXNet(), {"Scheduler": 1, "Server": 1, "Worker": 1}, "mxjob-controller"),
        (MPI(), {"Launcher": 1, "Worker": 2}, "mpijob-controller"),
    ],
)
def test_every_child_names_the_operator_as_kubeflow_names_its_controller(framework, replicas, operator):
    job = make_job(framework.kind, replicas)
    children = desired_pods(job, framework) + desired_services(job, framework)
    assert {child["metadata"]["labels"][KUBEFLOW_OPERATOR_NAME] for child in children} == {operator}


class TestTheMasterRole:
    def test_goes_to_worker_0_when_there_is_no_chief_or_master(self):
        assert masters(desired_pods(tf_job(chief=0, ps=1, workers=3), TensorFlow())) == ["train-worker-0"]

    def test_goes_to_a_tf_master_replica(self):
        job = make_job("TFJob", {"Master": 1, "Worker": 2})
        assert masters(desired_pods(job, TensorFlow())) == ["train-master-0"]

    def test_goes_to_the_pytorch_master(self):
        job = make_job("PyTorchJob", {"Master": 1, "Worker": 2})
        assert masters(desired_pods(job, PyTorch())) == ["train-master-0"]

    def test_goes_to_mxnet_worker_0_which_decides_success(self):
        job = make_job("MXJob", {"Scheduler": 1, "Server": 1, "Worker": 2})
        assert masters(desired_pods(job, MXNet())) == ["train-worker-0"]


class TestTheFrameworkContainer:
    def job_with_sidecar(self) -> dict:
        job = tf_job(chief=0, ps=0, workers=2)
        containers = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
        containers[0]["env"] = [{"name": "LR", "value": "0.1"}, {"name": "TF_CONFIG", "value": "stale"}]
        containers.insert(
            0, {"name": "proxy", "image": "envoy", "env": [{"name": "MODE", "value": "sidecar"}]}
        )
        return job

    def test_gets_the_cluster_env_while_other_containers_only_learn_the_replica_identity(self):
        pod = pods_by_name(self.job_with_sidecar())["train-worker-1"]
        proxy, tensorflow = pod["spec"]["containers"]
        identity = {ENV_JOB_NAME: "train", ENV_REPLICA_TYPE: "worker", ENV_REPLICA_INDEX: "1"}
        assert env_of(proxy) == {"MODE": "sidecar", **identity}
        assert set(env_of(tensorflow)) == {"LR", "TF_CONFIG", *identity}

    def test_replaces_a_user_variable_of_the_same_name_and_keeps_the_others_first(self):
        pod = pods_by_name(self.job_with_sidecar())["train-worker-0"]
        env = pod["spec"]["containers"][1]["env"]
        assert env[0] == {"name": "LR", "value": "0.1"}
        assert [e["name"] for e in env].count("TF_CONFIG") == 1
        assert json.loads(env_of(pod["spec"]["containers"][1])["TF_CONFIG"])["task"] == {
            "type": "worker",
            "index": 0,
        }

    def test_init_containers_learn_the_replica_identity_too(self):
        job = tf_job(chief=0, ps=0, workers=1)
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["initContainers"] = [
            {"name": "fetch", "image": "x"}
        ]
        init = desired_pods(job, TensorFlow())[0]["spec"]["initContainers"][0]
        assert env_of(init) == {ENV_JOB_NAME: "train", ENV_REPLICA_TYPE: "worker", ENV_REPLICA_INDEX: "0"}

    def test_gets_the_framework_port_when_missing(self):
        pod = desired_pods(tf_job(chief=0, ps=0, workers=1), TensorFlow())[0]
        assert pod["spec"]["containers"][0]["ports"] == [
            {"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}
        ]

    def test_keeps_its_own_port_and_the_service_follows_it(self):
        job = make_job("PyTorchJob", {"Master": 1})
        ports = [
            {"name": "metrics", "containerPort": 9100},
            {"name": "pytorchjob-port", "containerPort": 29500},
        ]
        job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["ports"] = ports
        pod = desired_pods(job, PyTorch())[0]
        assert pod["spec"]["containers"][0]["ports"] == ports
        assert desired_services(job, PyTorch())[0]["spec"]["ports"][0]["port"] == 29500


@pytest.mark.parametrize(
    ("policy", "pod_policy"),
    [
        ("Always", "Always"),
        ("OnFailure", "OnFailure"),
        ("Never", "Never"),
        ("ExitCode", "Never"),
        (None, "Never"),
    ],
)
def test_the_replica_restart_policy_becomes_the_pod_restart_policy(policy, pod_policy):
    job = tf_job(chief=0, ps=0, workers=1, restart_policy=policy)
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "Always"
    assert desired_pods(job, TensorFlow())[0]["spec"]["restartPolicy"] == pod_policy


def test_pytorch_replicas_default_to_on_failure():
    assert (
        desired_pods(make_job("PyTorchJob", {"Master": 1}), PyTorch())[0]["spec"]["restartPolicy"]
        == "OnFailure"
    )


def test_template_labels_and_annotations_are_kept_but_ours_win():
    job = tf_job(chief=0, ps=0, workers=1)
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "labels": {"team": "vision", LABEL_JOB_NAME: "spoofed"},
        "annotations": {"sidecar.istio.io/inject": "false"},
    }
    metadata = desired_pods(job, TensorFlow())[0]["metadata"]
    assert metadata["labels"]["team"] == "vision"
    assert metadata["labels"][LABEL_JOB_NAME] == "train"
    assert metadata["annotations"] == {"sidecar.istio.io/inject": "false"}


def test_replica_keys_in_any_case_give_canonical_children():
    job = make_job("TFJob", {"worker": 2, "ps": 1})
    assert [p["metadata"]["name"] for p in desired_pods(job, TensorFlow())] == [
        "train-ps-0",
        "train-worker-0",
        "train-worker-1",
    ]


def test_replicas_default_to_one_and_namespace_to_default():
    job = make_job("TFJob", {"Worker": 1})
    del job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"]
    del job["metadata"]["namespace"]
    pods = desired_pods(job, TensorFlow())
    assert [(p["metadata"]["name"], p["metadata"]["namespace"]) for p in pods] == [
        ("train-worker-0", "default")
    ]


def test_the_job_selector_lists_every_child_by_job_name():
    assert job_selector(tf_job(name="mnist")) == {LABEL_JOB_NAME: "mnist"}


def test_replica_names_lowercase_the_type():
    assert replica_name("mnist", "PS", 3) == "mnist-ps-3"


def test_merge_env_ignores_malformed_entries_and_appends_ours_in_order():
    assert merge_env(
        [{"name": "A", "value": "1"}, "junk", {"name": "B", "value": "old"}], {"B": "2", "C": "3"}
    ) == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "C", "value": "3"},
    ]
    assert merge_env(None, {"X": "1"}) == [{"name": "X", "value": "1"}]


def test_every_pod_of_an_mxjob_gets_dmlc_variables_in_the_mxnet_container():
    job = make_job("MXJob", {"Scheduler": 1, "Server": 1, "Worker": 2})
    roles = {
        p["metadata"]["name"]: env_of(p["spec"]["containers"][0])["DMLC_ROLE"]
        for p in desired_pods(job, MXNet())
    }
    assert roles == {
        "train-scheduler-0": "scheduler",
        "train-server-0": "server",
        "train-worker-0": "worker",
        "train-worker-1": "worker",
    }


def test_every_pod_of_a_pytorchjob_knows_the_master_and_its_rank():
    job = make_job("PyTorchJob", {"Master": 1, "Worker": 2})
    ranks = {
        p["metadata"]["name"]: env_of(p["spec"]["containers"][0])["RANK"]
        for p in desired_pods(job, PyTorch())
    }
    assert ranks == {"train-master-0": "0", "train-worker-0": "1", "train-worker-1": "2"}
