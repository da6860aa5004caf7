"""Framework plugins: what each framework declares, and the environment it gives each replica."""

import json

import pytest

from jobs.frameworks import (
    MPI,
    Framework,
    MXNet,
    PyTorch,
    TensorFlow,
    UnknownKind,
    framework_class,
    framework_for,
    kinds,
    register,
    unregister,
)
from jobs.tests.fakes import FakeCluster, env_of, make_job, tf_job


def tf_config(job: dict, replica_type: str, index: int, cluster_domain: str = "") -> dict:
    return json.loads(env_of(TensorFlow(cluster_domain), job, replica_type, index)["TF_CONFIG"])


class TestRegistry:
    def test_every_kind_of_the_issue_is_registered(self):
        assert kinds() == ("JAXJob", "MPIJob", "MXJob", "PaddleJob", "PyTorchJob", "TFJob", "XGBoostJob")

    @pytest.mark.parametrize(
        ("kind", "cls"), [("TFJob", TensorFlow), ("MXJob", MXNet), ("PyTorchJob", PyTorch), ("MPIJob", MPI)]
    )
    def test_a_kind_gives_its_framework(self, kind, cls):
        assert type(framework_for(kind)) is cls
        assert framework_class(kind) is cls

    def test_an_unknown_kind_is_an_error_naming_the_known_ones(self):
        with pytest.raises(
            UnknownKind, match="'CaffeJob' is not a training job kind; expected one of JAXJob, MPIJob, MXJob"
        ):
            framework_for("CaffeJob")

    def test_a_kind_cannot_be_taken_by_a_second_class(self):
        class Imposter(TensorFlow):
            pass

        with pytest.raises(ValueError, match="already handled by TensorFlow"):
            register(Imposter)

    def test_the_cluster_domain_reaches_the_framework(self):
        assert framework_for("TFJob", cluster_domain="cluster.local.").cluster_domain == "cluster.local"


@pytest.mark.parametrize(
    ("cls", "facts"),
    [
        (
            TensorFlow,
            (
                "TFJob",
                "tfjobs",
                "tfjob",
                "tfReplicaSpecs",
                "tensorflow",
                "tfjob-port",
                2222,
                "Never",
                "Running",
            ),
        ),
        (MXNet, ("MXJob", "mxjobs", "mxjob", "mxReplicaSpecs", "mxnet", "mxjob-port", 9091, "Never", "None")),
        (
            PyTorch,
            (
                "PyTorchJob",
                "pytorchjobs",
                "pytorchjob",
                "pytorchReplicaSpecs",
                "pytorch",
                "pytorchjob-port",
                23456,
                "OnFailure",
                "None",
            ),
        ),
    ],
)
def test_each_framework_declares_kubeflow_v1_names_and_defaults(cls, facts):
    assert (
        cls.kind,
        cls.plural,
        cls.short_name,
        cls.spec_key,
        cls.container_name,
        cls.port_name,
        cls.default_port,
        cls.default_restart_policy,
        cls.default_clean_pod_policy,
    ) == facts


def test_replica_types_have_canonical_casing_and_chiefs():
    assert TensorFlow.replica_types == ("Chief", "Master", "PS", "Worker", "Evaluator")
    assert TensorFlow.chief_types == ("Chief", "Master")
    assert MXNet.replica_types == ("Scheduler", "Server", "Worker")
    assert MXNet.chief_types == ()
    assert PyTorch.replica_types == ("Master", "Worker")
    assert PyTorch.chief_types == ("Master",)


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("worker", "Worker"),
        ("WORKER", "Worker"),
        ("ps", "PS"),
        ("Ps", "PS"),
        ("evaluator", "Evaluator"),
        ("chief", "Chief"),
    ],
)
def test_replica_types_match_whatever_their_case(given, canonical):
    assert TensorFlow.canonical_replica_type(given) == canonical


@pytest.mark.parametrize("given", ["Launcher", "", None, 3, "workers"])
def test_an_unknown_replica_type_has_no_canonical_name(given):
    assert TensorFlow.canonical_replica_type(given) is None


class TestTensorFlow:
    def test_a_chief_2_ps_and_4_workers_get_the_full_cluster_in_every_replica(self):
        job = tf_job(chief=1, ps=2, workers=4, name="mnist", namespace="ml")
        expected_cluster = {
            "chief": ["mnist-chief-0.ml.svc:2222"],
            "ps": ["mnist-ps-0.ml.svc:2222", "mnist-ps-1.ml.svc:2222"],
            "worker": [f"mnist-worker-{i}.ml.svc:2222" for i in range(4)],
        }
        for replica_type, count in (("Chief", 1), ("PS", 2), ("Worker", 4)):
            for index in range(count):
                assert tf_config(job, replica_type, index) == {
                    "cluster": expected_cluster,
                    "task": {"type": replica_type.lower(), "index": index},
                    "environment": "cloud",
                }

    def test_tf_config_is_compact_json_with_sorted_cluster_keys_like_upstream(self):
        job = tf_job(chief=1, ps=1, workers=1, name="a", namespace="n")
        assert env_of(TensorFlow(), job, "PS", 0)["TF_CONFIG"] == (
            '{"cluster":{"chief":["a-chief-0.n.svc:2222"],"ps":["a-ps-0.n.svc:2222"],'
            '"worker":["a-worker-0.n.svc:2222"]},"task":{"type":"ps","index":0},"environment":"cloud"}'
        )

    def test_the_evaluator_is_part_of_the_cluster_as_upstream_does_now(self):
        job = tf_job(chief=1, ps=0, workers=2, evaluator=1, name="e", namespace="n")
        config = tf_config(job, "Evaluator", 0)
        assert config["cluster"]["evaluator"] == ["e-evaluator-0.n.svc:2222"]
        assert config["task"] == {"type": "evaluator", "index": 0}
        assert "evaluator" in tf_config(job, "Worker", 1)["cluster"]

    def test_a_single_replica_job_trains_locally_without_tf_config(self):
        assert env_of(TensorFlow(), tf_job(chief=0, ps=0, workers=1), "Worker", 0) == {}

    def test_the_cluster_domain_is_appended_to_service_names(self):
        job = tf_job(chief=0, ps=0, workers=2, name="d", namespace="n")
        assert tf_config(job, "Worker", 0, "cluster.local")["cluster"]["worker"] == [
            "d-worker-0.n.svc.cluster.local:2222",
            "d-worker-1.n.svc.cluster.local:2222",
        ]

    def test_a_port_set_in_the_template_is_the_one_advertised(self):
        job = tf_job(chief=0, ps=1, workers=1, name="p", namespace="n")
        job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["ports"] = [
            {"name": "tfjob-port", "containerPort": 3333}
        ]
        assert tf_config(job, "Worker", 0)["cluster"] == {
            "ps": ["p-ps-0.n.svc:3333"],
            "worker": ["p-worker-0.n.svc:2222"],
        }

    def test_lowercase_keys_in_the_spec_give_the_same_cluster(self):
        job = tf_job(chief=0, ps=1, workers=2, name="k", namespace="n")
        specs = job["spec"]["tfReplicaSpecs"]
        job["spec"]["tfReplicaSpecs"] = {"ps": specs["PS"], "worker": specs["Worker"]}
        assert set(tf_config(job, "Worker", 0)["cluster"]) == {"ps", "worker"}

    def test_a_type_with_zero_replicas_is_left_out_of_the_cluster(self):
        job = tf_job(chief=0, ps=0, workers=2)
        job["spec"]["tfReplicaSpecs"]["PS"] = {**job["spec"]["tfReplicaSpecs"]["Worker"], "replicas": 0}
        assert set(tf_config(job, "Worker", 0)["cluster"]) == {"worker"}


class TestMXNet:
    job = make_job("MXJob", {"Scheduler": 1, "Server": 2, "Worker": 3}, name="mx", namespace="n")

    def test_a_worker_gets_the_ps_lite_variables_and_its_worker_id(self):
        env = env_of(MXNet(), self.job, "Worker", 2)
        assert {k: v for k, v in env.items() if k != "MX_CONFIG"} == {
            "DMLC_PS_ROOT_URI": "mx-scheduler-0",
            "DMLC_PS_ROOT_PORT": "9091",
            "DMLC_NUM_SERVER": "2",
            "DMLC_NUM_WORKER": "3",
            "DMLC_ROLE": "worker",
            "DMLC_USE_KUBERNETES": "1",
            "DMLC_WORKER_ID": "2",
        }

    @pytest.mark.parametrize(("replica_type", "role"), [("Scheduler", "scheduler"), ("Server", "server")])
    def test_schedulers_and_servers_get_their_role_but_no_worker_id(self, replica_type, role):
        env = env_of(MXNet(), self.job, replica_type, 0)
        assert env["DMLC_ROLE"] == role
        assert "DMLC_WORKER_ID" not in env

    def test_mx_config_lists_every_replica_with_its_port_as_upstream(self):
        text = env_of(MXNet(), self.job, "Server", 1)["MX_CONFIG"]
        config = json.loads(text)
        assert text == json.dumps(config, separators=(",", ":"))  # compact, in this key order
        assert config == {
            "cluster": {
                "scheduler": [{"url": "mx-scheduler-0", "port": 9091}],
                "server": [{"url": "mx-server-0", "port": 9091}, {"url": "mx-server-1", "port": 9091}],
                "worker": [{"url": f"mx-worker-{i}", "port": 9091} for i in range(3)],
            },
            "labels": {"scheduler": "", "server": "", "worker": ""},
            "task": {"type": "server", "index": 1},
        }

    def test_the_tuner_server_key_annotation_becomes_a_label(self):
        job = make_job("MXJob", {"Scheduler": 1, "Worker": 1})
        job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["metadata"] = {
            "annotations": {"tuner-server-key": "k1"}
        }
        assert json.loads(env_of(MXNet(), job, "Worker", 0)["MX_CONFIG"])["labels"]["worker"] == "k1"

    def test_without_a_scheduler_there_is_no_root_to_point_at(self):
        env = env_of(MXNet(), make_job("MXJob", {"Worker": 1}), "Worker", 0)
        assert "DMLC_PS_ROOT_URI" not in env
        assert env["DMLC_NUM_SERVER"] == "0"


class TestPyTorch:
    job = make_job("PyTorchJob", {"Master": 1, "Worker": 3}, name="pt", namespace="n")

    def test_the_master_has_rank_0_and_the_world_counts_every_pod(self):
        env = env_of(PyTorch(), self.job, "Master", 0)
        assert env == {
            "PYTHONUNBUFFERED": "1",
            "MASTER_ADDR": "pt-master-0",
            "MASTER_PORT": "23456",
            "WORLD_SIZE": "4",
            "RANK": "0",
            "PET_MASTER_ADDR": "pt-master-0",
            "PET_MASTER_PORT": "23456",
            "PET_NNODES": "4",
            "PET_NODE_RANK": "0",
            "PET_NPROC_PER_NODE": "auto",
        }

    @pytest.mark.parametrize("index", [0, 1, 2])
    def test_workers_rank_after_the_master(self, index):
        env = env_of(PyTorch(), self.job, "Worker", index)
        assert (env["RANK"], env["PET_NODE_RANK"]) == (str(index + 1), str(index + 1))

    @pytest.mark.parametrize("nproc", [4, "4"])
    def test_a_numeric_nproc_per_node_multiplies_the_world_size(self, nproc):
        job = {**self.job, "spec": {**self.job["spec"], "nprocPerNode": nproc}}
        env = env_of(PyTorch(), job, "Worker", 0)
        assert (env["WORLD_SIZE"], env["PET_NNODES"], env["PET_NPROC_PER_NODE"]) == ("16", "4", "4")

    def test_the_master_port_follows_the_masters_container_port(self):
        job = make_job("PyTorchJob", {"Master": 1, "Worker": 1})
        job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["ports"] = [
            {"name": "pytorchjob-port", "containerPort": 29500}
        ]
        assert env_of(PyTorch(), job, "Worker", 0)["MASTER_PORT"] == "29500"


class Toy(Framework):
    """A framework in a few lines: one replica type, one variable."""

    kind = "ToyJob"
    plural = "toyjobs"
    short_name = "toyjob"
    spec_key = "toyReplicaSpecs"
    replica_types = ("Worker",)
    container_name = "toy"
    port_name = "toyjob-port"
    default_port = 7777

    def environment(self, job, replica_type, index):
        return {"TOY_PEERS": ",".join(job.host("Worker", i) for i in range(job.counts["Worker"]))}


@pytest.fixture
def toy():
    register(Toy)
    yield Toy
    unregister("ToyJob")


def test_a_toy_framework_added_in_a_few_lines_runs_end_to_end(toy):
    cluster = FakeCluster(make_job("ToyJob", {"worker": 2}, name="toy"))
    first = cluster.reconcile()
    assert sorted(cluster.pods) == ["toy-worker-0", "toy-worker-1"]
    assert sorted(cluster.services) == ["toy-worker-0", "toy-worker-1"]
    env = {e["name"]: e["value"] for e in cluster.pods["toy-worker-1"]["spec"]["containers"][0]["env"]}
    assert env["TOY_PEERS"] == "toy-worker-0,toy-worker-1"
    assert cluster.pods["toy-worker-0"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 7777
    assert first.events[0].reason == "ToyJobCreated"

    cluster.run_all()
    cluster.reconcile()
    assert cluster.state == "Running"
    cluster.set_pod("toy-worker-0", "Succeeded", exit_code=0)
    cluster.reconcile()
    assert cluster.state == "Succeeded"
    assert cluster.status["replicaStatuses"] == {  # the worker still active counts as succeeded (Kubeflow)
        "Worker": {
            "active": 0,
            "succeeded": 2,
            "failed": 0,
            "selector": "argoml.io/job-name=toy,argoml.io/replica-type=worker",
        }
    }
