"""XGBoostJob, JAXJob and PaddleJob: each framework's environment as Kubeflow v1.9 writes it (the cases are
upstream's own tests, cited per test), its defaults, its validation and who decides success."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.frameworks import JAX, FieldRef, Paddle, XGBoost, framework_for, kinds
from jobs.manifests import desired_pods
from jobs.spec import with_defaults
from jobs.tests.fakes import FakeCluster, env_of, make_job
from jobs.validation import validate


def with_port(job: dict[str, Any], replica_type: str, name: str, number: int) -> dict[str, Any]:
    """`job` with a named port on the framework container of `replica_type` (as upstream's tests write it)."""
    spec = job["spec"][framework_for(job["kind"]).spec_key][replica_type]
    spec["template"]["spec"]["containers"][0]["ports"] = [{"name": name, "containerPort": number}]
    return job


def paths(job: dict[str, Any]) -> list[str]:
    return [error.path for error in validate(job)]


def test_the_three_kinds_are_registered_beside_the_first_three():
    assert {"XGBoostJob", "JAXJob", "PaddleJob"} <= set(kinds())


@pytest.mark.parametrize(
    ("cls", "facts"),
    [
        (
            XGBoost,
            ("XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", "xgboost", "xgboostjob-port", 9999, "Never"),
        ),
        (JAX, ("JAXJob", "jaxjobs", "jaxReplicaSpecs", "jax", "jaxjob-port", 6666, "Never")),
        (Paddle, ("PaddleJob", "paddlejobs", "paddleReplicaSpecs", "paddle", "master", 36543, "OnFailure")),
    ],
)
def test_each_declares_kubeflow_v1_9_names_and_defaults(cls, facts):
    """The constants of pkg/apis/kubeflow.org/v1/{xgboost,jax,paddlepaddle}_types.go; clean-pod policy None
    for all three (their SetDefaults_*)."""
    assert (
        cls.kind,
        cls.plural,
        cls.spec_key,
        cls.container_name,
        cls.port_name,
        cls.default_port,
        cls.default_restart_policy,
    ) == facts
    assert cls.default_clean_pod_policy == "None"


class TestXGBoost:
    """pkg/controller.v1/xgboost/xgboost.go `SetPodEnv`; the job is the one of xgboostjob_controller_test.go
    ("test-job": a Master and 2 Workers on port 9999)."""

    job = make_job("XGBoostJob", {"Master": 1, "Worker": 2}, name="test-job")

    def test_the_master_gets_rank_0_and_the_worker_addresses(self):
        assert env_of(XGBoost(), self.job, "Master", 0) == {
            "MASTER_PORT": "9999",
            "MASTER_ADDR": "test-job-master-0",
            "WORLD_SIZE": "3",
            "RANK": "0",
            "PYTHONUNBUFFERED": "1",
            "WORKER_PORT": "9999",
            "WORKER_ADDRS": "test-job-worker-0,test-job-worker-1",
        }

    def test_workers_rank_after_the_master_in_upstream_order(self):
        env = env_of(XGBoost(), self.job, "Worker", 1)
        assert env["RANK"] == "2"
        assert list(env) == [
            "MASTER_PORT",
            "MASTER_ADDR",
            "WORLD_SIZE",
            "RANK",
            "PYTHONUNBUFFERED",
            "WORKER_PORT",
            "WORKER_ADDRS",
        ]

    def test_a_lone_master_gets_no_worker_variables(self):
        env = env_of(XGBoost(), make_job("XGBoostJob", {"Master": 1}), "Master", 0)
        assert env == {
            "MASTER_PORT": "9999",
            "MASTER_ADDR": "train-master-0",
            "WORLD_SIZE": "1",
            "RANK": "0",
            "PYTHONUNBUFFERED": "1",
        }

    def test_each_port_is_read_from_its_own_replica_type(self):
        job = make_job("XGBoostJob", {"Master": 1, "Worker": 1})
        with_port(with_port(job, "Master", "xgboostjob-port", 9000), "Worker", "xgboostjob-port", 9001)
        env = env_of(XGBoost(), job, "Worker", 0)
        assert (env["MASTER_PORT"], env["WORKER_PORT"]) == ("9000", "9001")

    def test_defaults_fill_replicas_restart_policy_and_port(self):
        """xgboost_defaults_test.go "set spec with minimum setting"."""
        defaulted = with_defaults(make_job("XGBoostJob", {"Worker": None}), XGBoost())
        worker = defaulted["spec"]["xgbReplicaSpecs"]["Worker"]
        assert (worker["replicas"], worker["restartPolicy"]) == (1, "Never")
        assert worker["template"]["spec"]["containers"][0]["ports"] == [
            {"name": "xgboostjob-port", "containerPort": 9999, "protocol": "TCP"}
        ]
        assert defaulted["spec"]["runPolicy"]["cleanPodPolicy"] == "None"

    def test_a_job_needs_exactly_one_master(self):
        """xgboostjob_webhook_test.go "masterReplica does not exist" and "the number of replicas in
        masterReplica is other than 1"."""
        assert paths(make_job("XGBoostJob", {"Worker": 2})) == ["spec.xgbReplicaSpecs.Master"]
        assert paths(make_job("XGBoostJob", {"Master": 2})) == ["spec.xgbReplicaSpecs.Master.replicas"]
        assert paths(make_job("XGBoostJob", {"Master": 1, "Worker": 2})) == []

    def test_the_job_succeeds_when_the_master_does(self):
        """xgboostjob_controller.go `UpdateJobStatus`: the Master's success finishes the job."""
        cluster = FakeCluster(self.job)
        cluster.reconcile()
        cluster.run_all()
        cluster.set_pod("test-job-master-0", "Succeeded", exit_code=0)
        cluster.reconcile()
        assert cluster.state == "Succeeded"


class TestJAX:
    """pkg/controller.v1/jax/envvar.go `setPodEnv`."""

    def test_one_worker_as_upstreams_successful_setup(self):
        """envvar_test.go "successful environment variable setup": JAXJob "test-jaxjob", one Worker whose
        jaxjob-port is 6666, index 0; the variables in upstream's order."""
        job = with_port(make_job("JAXJob", {"Worker": 1}, name="test-jaxjob"), "Worker", "jaxjob-port", 6666)
        assert list(env_of(JAX(), job, "Worker", 0).items()) == [
            ("PYTHONUNBUFFERED", "1"),
            ("COORDINATOR_PORT", "6666"),
            ("COORDINATOR_ADDRESS", "test-jaxjob-worker-0"),
            ("NUM_PROCESSES", "1"),
            ("PROCESS_ID", "0"),
        ]

    def test_every_worker_reaches_worker_0_and_counts_as_one_process(self):
        job = with_port(make_job("JAXJob", {"Worker": 4}, name="spmd"), "Worker", "jaxjob-port", 1234)
        env = env_of(JAX(), job, "Worker", 3)
        assert (env["COORDINATOR_ADDRESS"], env["COORDINATOR_PORT"]) == ("spmd-worker-0", "1234")
        assert (env["NUM_PROCESSES"], env["PROCESS_ID"]) == ("4", "3")

    def test_a_worker_without_the_named_port_uses_the_default(self):
        """envvar_test.go "missing container port in JAXJob" fails there (the webhook's defaulting would
        have added the port); here parsing adds the default port, as that defaulting does."""
        job = with_port(make_job("JAXJob", {"Worker": 1}), "Worker", "wrong-port", 7777)
        assert env_of(JAX(), job, "Worker", 0)["COORDINATOR_PORT"] == "6666"

    def test_validation_wants_workers_and_the_jax_container(self):
        """jaxjob_webhook_test.go "jaxJob default container name doesn't present" and "replicaSpec is nil"."""
        job = make_job("JAXJob", {"Worker": 2})
        job["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
        assert paths(job) == ["spec.jaxReplicaSpecs.Worker.template.spec.containers"]
        assert paths({**job, "spec": {}}) == ["spec.jaxReplicaSpecs"]

    def test_the_job_succeeds_only_when_every_worker_has(self):
        """jaxjob_controller.go `UpdateJobStatus`: Succeeded when no Worker is left to succeed."""
        cluster = FakeCluster(make_job("JAXJob", {"Worker": 2}))
        cluster.reconcile()
        cluster.run_all()
        cluster.set_pod("train-worker-0", "Succeeded", exit_code=0)
        cluster.reconcile()
        assert cluster.state == "Running"
        cluster.set_pod("train-worker-1", "Succeeded", exit_code=0)
        cluster.reconcile()
        assert cluster.state == "Succeeded"


class TestPaddle:
    """pkg/controller.v1/paddlepaddle/envvar.go `setPodEnv`; the parameter-server job is the one of
    paddlepaddle_controller_test.go ("test-job": a Master and 2 Workers on port 8080)."""

    ps_job = with_port(
        with_port(
            make_job("PaddleJob", {"Master": 1, "Worker": 2}, name="test-job"), "Master", "master", 8080
        ),
        "Worker",
        "master",
        8080,
    )

    def test_master_0_announces_its_own_pod_ip(self):
        """paddlepaddle_controller_test.go "Should get the corresponding resources successfully": the master
        pod's PADDLE_MASTER is `$(POD_IP_DUMMY):8080`."""
        assert env_of(Paddle(), self.ps_job, "Master", 0) == {
            "PYTHONUNBUFFERED": "1",
            "PADDLE_JOB_ID": "test-job",
            "PADDLE_NNODES": "3",
            "POD_IP_DUMMY": FieldRef("status.podIP"),
            "PADDLE_MASTER": "$(POD_IP_DUMMY):8080",
            "PADDLE_SERVER_NUM": "1",
        }

    def test_trainers_reach_master_0_by_name(self):
        assert env_of(Paddle(), self.ps_job, "Worker", 1) == {
            "PYTHONUNBUFFERED": "1",
            "PADDLE_JOB_ID": "test-job",
            "PADDLE_NNODES": "3",
            "PADDLE_MASTER": "test-job-master-0:8080",
            "PADDLE_TRAINER_NUM": "1",
        }

    def test_collective_mode_meets_at_worker_0(self):
        job = make_job("PaddleJob", {"Worker": 2}, name="resnet")
        first, second = (env_of(Paddle(), job, "Worker", i) for i in (0, 1))
        assert first["PADDLE_MASTER"] == "$(POD_IP_DUMMY):36543"
        assert second["PADDLE_MASTER"] == "resnet-worker-0:36543"
        assert "PADDLE_TRAINER_NUM" not in second
        assert "PADDLE_SERVER_NUM" not in first
        assert first["PADDLE_NNODES"] == second["PADDLE_NNODES"] == "2"

    def test_the_pod_ip_comes_from_the_downward_api_before_it_is_used(self):
        pod = desired_pods(make_job("PaddleJob", {"Worker": 2}), Paddle())[0]
        env = pod["spec"]["containers"][0]["env"]
        names = [entry["name"] for entry in env]
        assert names.index("POD_IP_DUMMY") < names.index("PADDLE_MASTER")
        assert env[names.index("POD_IP_DUMMY")] == {
            "name": "POD_IP_DUMMY",
            "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
        }

    @pytest.mark.parametrize(
        ("given", "bounds"),
        [
            ({}, (3, 3)),
            ({"minReplicas": 2}, (2, 2)),
            ({"maxReplicas": 5}, (5, 5)),
            ({"minReplicas": 1, "maxReplicas": 4}, (1, 4)),
        ],
    )
    def test_the_elastic_bounds_default_as_upstream(self, given, bounds):
        """paddlepaddle_defautls.go `setPaddleElasticPolicy`."""
        job = make_job("PaddleJob", {"Worker": 3}, elasticPolicy=given)
        policy = with_defaults(job, Paddle())["spec"]["elasticPolicy"]
        assert (policy["minReplicas"], policy["maxReplicas"]) == bounds

    def test_a_bad_elastic_policy_is_named_field_by_field(self):
        job = make_job(
            "PaddleJob",
            {"Worker": 2},
            elasticPolicy={"minReplicas": 4, "maxReplicas": 2, "maxRestarts": -1, "rdzvBackend": "c10d"},
        )
        assert sorted(paths(job)) == [
            "spec.elasticPolicy.maxRestarts",
            "spec.elasticPolicy.minReplicas",
            "spec.elasticPolicy.rdzvBackend",
        ]
        assert paths(make_job("PaddleJob", {"Worker": 2}, elasticPolicy={"maxReplicas": 4})) == []

    def test_validation_wants_the_paddle_container(self):
        """paddlepaddle_webhook_test.go "paddle default container name doesn't find"."""
        job = make_job("PaddleJob", {"Worker": 1})
        job["spec"]["paddleReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
        assert paths(job) == ["spec.paddleReplicaSpecs.Worker.template.spec.containers"]

    def test_the_masters_decide_in_parameter_server_mode(self):
        """paddlepaddle_controller.go `UpdateJobStatus`: with a Master spec, the Masters' success finishes
        the job; without one, every Worker must succeed."""
        cluster = FakeCluster(self.ps_job)
        cluster.reconcile()
        cluster.run_all()
        cluster.set_pod("test-job-master-0", "Succeeded", exit_code=0)
        cluster.reconcile()
        assert cluster.state == "Succeeded"

    def test_every_worker_decides_in_collective_mode(self):
        cluster = FakeCluster(make_job("PaddleJob", {"Worker": 2}))
        cluster.reconcile()
        cluster.run_all()
        cluster.set_pod("train-worker-0", "Succeeded", exit_code=0)
        cluster.reconcile()
        assert cluster.state == "Running"
        cluster.set_pod("train-worker-1", "Succeeded", exit_code=0)
        cluster.reconcile()
        assert cluster.state == "Succeeded"
