"""PyTorch elastic (torchrun) jobs: the PET_* environment, Kubeflow's defaults, the checks of elasticPolicy.

The environment cases are our own, written from the cases of Kubeflow Training Operator v1's
`elastic_test.go` and `pytorchjob_controller_test.go` and the rules of its `envvar.go`, `elastic.go`,
`pytorch_defaults.go` and the PyTorchJob webhook.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.frameworks import PyTorch, elastic
from jobs.spec import with_defaults
from jobs.tests.fakes import env_of, make_job
from jobs.validation import validate

FULL_POLICY = {
    "minReplicas": 1,
    "maxReplicas": 3,
    "rdzvBackend": "c10d",
    "rdzvPort": 1234,
    "rdzvHost": "localhost",
    "rdzvId": "rdzv-id",
    "rdzvConf": [
        {"key": "rdzv-conf-name", "value": "rdzv-conf-value"},
        {"key": "rdzv-conf-name-1", "value": "rdzv-conf-value-1"},
    ],
    "maxRestarts": 3,
}


def pytorch_job(replicas, policy=None, **spec):
    if policy is not None:
        spec["elasticPolicy"] = policy
    return make_job("PyTorchJob", replicas, name="elastic-job", namespace="ns", **spec)


def env(job, replica_type="Worker", index=0):
    return env_of(PyTorch(), job, replica_type, index)


def messages(job):
    return [str(error) for error in validate(job)]


#: Kubeflow's elastic env cases: (case, replicas, policy, extra spec fields, PET_* env of every worker).
#: test_reconcile.py runs each on kubesim and through `render_job` too.
ELASTIC_ENV_CASES = [
    (
        "every rendezvous field given (Kubeflow's 'With ElasticPolicy')",
        {"Worker": 1},
        FULL_POLICY,
        {},
        {
            "PET_MAX_RESTARTS": "3",
            "PET_RDZV_BACKEND": "c10d",
            "PET_RDZV_ENDPOINT": "localhost:1234",
            "PET_RDZV_ID": "rdzv-id",
            "PET_RDZV_CONF": "rdzv-conf-name=rdzv-conf-value,rdzv-conf-name-1=rdzv-conf-value-1",
            "PET_NNODES": "1:3",
            "PET_NPROC_PER_NODE": "auto",
        },
    ),
    (
        "the endpoint defaults to worker 0's service and the Worker port; the backend to c10d",
        {"Worker": 2},
        {"minReplicas": 1, "maxReplicas": 3, "maxRestarts": 3},
        {},
        {
            "PET_RDZV_ENDPOINT": "elastic-job-worker-0:23456",
            "PET_RDZV_BACKEND": "c10d",
            "PET_NNODES": "1:3",
            "PET_MAX_RESTARTS": "3",
            "PET_NPROC_PER_NODE": "auto",
        },
    ),
    (
        "no bounds: both default to the Worker replica count (as the operator always rendered it)",
        {"Worker": 4},
        {},
        {},
        {
            "PET_RDZV_ENDPOINT": "elastic-job-worker-0:23456",
            "PET_RDZV_BACKEND": "c10d",
            "PET_NNODES": "4:4",
            "PET_NPROC_PER_NODE": "auto",
        },
    ),
    (
        "one bound stands for both",
        {"Worker": 2},
        {"maxReplicas": 2},
        {},
        {
            "PET_RDZV_ENDPOINT": "elastic-job-worker-0:23456",
            "PET_RDZV_BACKEND": "c10d",
            "PET_NNODES": "2:2",
            "PET_NPROC_PER_NODE": "auto",
        },
    ),
    (
        "the deprecated elasticPolicy.nProcPerNode, an etcd backend, host only, standalone",
        {"Worker": 2},
        {"rdzvBackend": "etcd-v2", "rdzvHost": "etcd.infra", "nProcPerNode": 8, "standalone": True},
        {},
        {
            "PET_RDZV_ENDPOINT": "etcd.infra:23456",
            "PET_RDZV_BACKEND": "etcd-v2",
            "PET_NNODES": "2:2",
            "PET_NPROC_PER_NODE": "8",
            "PET_STANDALONE": "",
        },
    ),
    (
        "spec.nprocPerNode and an empty rdzvConf (no PET_RDZV_CONF)",
        {"Worker": 2},
        {"minReplicas": 2, "maxReplicas": 4, "rdzvPort": 29400, "rdzvConf": []},
        {"nprocPerNode": "gpu"},
        {
            "PET_RDZV_ENDPOINT": "elastic-job-worker-0:29400",
            "PET_RDZV_BACKEND": "c10d",
            "PET_NNODES": "2:4",
            "PET_NPROC_PER_NODE": "gpu",
        },
    ),
]


@pytest.mark.parametrize(("case", "replicas", "policy", "spec", "expected"), ELASTIC_ENV_CASES)
def test_a_workers_only_elastic_job_meets_through_the_rendezvous(case, replicas, policy, spec, expected):
    for index in range(replicas["Worker"]):
        assert env(pytorch_job(replicas, policy, **spec), index=index) == {
            "PYTHONUNBUFFERED": "1",
            **expected,
        }


def test_the_default_endpoint_port_follows_the_worker_containers_port():
    job = pytorch_job({"Worker": 2}, {})
    container = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"name": "pytorchjob-port", "containerPort": 29500}]
    assert env(job)["PET_RDZV_ENDPOINT"] == "elastic-job-worker-0:29500"


def test_an_elastic_job_with_a_master_also_gets_the_master_variables():
    job = pytorch_job({"Master": 1, "Worker": 2}, {"minReplicas": 1, "maxReplicas": 3})
    assert env(job, "Worker", 1) == {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": "elastic-job-master-0",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "3",
        "RANK": "2",
        "PET_MASTER_ADDR": "elastic-job-master-0",
        "PET_MASTER_PORT": "23456",
        "PET_NODE_RANK": "2",
        "PET_NPROC_PER_NODE": "auto",
        "PET_RDZV_ENDPOINT": "elastic-job-worker-0:23456",
        "PET_RDZV_BACKEND": "c10d",
        "PET_NNODES": "1:3",
    }


@pytest.mark.parametrize("index", [0, 1, 2])
def test_a_workers_only_job_without_a_policy_uses_worker_0_as_its_master(index):
    assert env(pytorch_job({"Worker": 3}, nprocPerNode=2), index=index) == {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": "elastic-job-worker-0",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "6",
        "RANK": str(index),
        "PET_MASTER_ADDR": "elastic-job-worker-0",
        "PET_MASTER_PORT": "23456",
        "PET_NODE_RANK": str(index),
        "PET_NPROC_PER_NODE": "2",
        "PET_NNODES": "3",
    }


class TestDefaults:
    @pytest.mark.parametrize(
        ("policy", "bounds"),
        [
            ({}, (3, 3)),
            ({"minReplicas": 2}, (2, 2)),
            ({"maxReplicas": 5}, (5, 5)),
            ({"minReplicas": 1, "maxReplicas": 4}, (1, 4)),
        ],
    )
    def test_the_bounds_default_as_kubeflows(self, policy, bounds):
        spec = with_defaults(pytorch_job({"worker": 3}, policy), PyTorch())["spec"]
        assert (spec["elasticPolicy"]["minReplicas"], spec["elasticPolicy"]["maxReplicas"]) == bounds
        assert spec["nprocPerNode"] == "auto"

    def test_the_deprecated_nproc_per_node_keeps_spec_nproc_per_node_unset(self):
        job = with_defaults(pytorch_job({"Worker": 2}, {"nProcPerNode": 4}), PyTorch())
        assert "nprocPerNode" not in job["spec"]
        assert validate(job) == []
        assert env(job)["PET_NPROC_PER_NODE"] == "4"

    def test_defaulting_twice_changes_nothing(self):
        once = with_defaults(pytorch_job({"Worker": 2}, {"maxReplicas": 4}), PyTorch())
        assert with_defaults(once, PyTorch()) == once

    def test_a_job_without_a_policy_gets_none(self):
        assert "elasticPolicy" not in with_defaults(pytorch_job({"Worker": 2}), PyTorch())["spec"]


class TestValidation:
    def test_a_full_policy_is_valid(self):
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]
        assert messages(pytorch_job({"Worker": 2}, {**FULL_POLICY, "metrics": metrics})) == []

    def test_master_stays_optional_but_may_be_there(self):
        assert messages(pytorch_job({"Master": 1, "Worker": 2}, {"minReplicas": 1, "maxReplicas": 2})) == []

    @pytest.mark.parametrize(
        ("replicas", "policy", "expected"),
        [
            (
                {"Worker": 2},
                {"minReplicas": 3, "maxReplicas": 2},
                "spec.elasticPolicy.minReplicas: 3 is above maxReplicas 2",
            ),
            (
                {"Worker": 5},
                {"minReplicas": 2, "maxReplicas": 4},
                "spec.pytorchReplicaSpecs.Worker.replicas: 5 is outside the elastic policy's [2, 4]",
            ),
            (
                {"worker": 1},
                {"minReplicas": 2},
                "spec.pytorchReplicaSpecs.worker.replicas: 1 is outside the elastic policy's [2, 2]",
            ),
            (
                {"Master": 1},
                {},
                "spec.pytorchReplicaSpecs.Worker: is required: an elastic job scales its Workers",
            ),
            (
                {"Worker": 1},
                {"rdzvPort": 70000},
                "spec.elasticPolicy.rdzvPort: must be a port number 1-65535, not 70000",
            ),
            (
                {"Worker": 1},
                {"rdzvPort": "29400"},
                "spec.elasticPolicy.rdzvPort: must be a port number 1-65535, not '29400'",
            ),
            (
                {"Worker": 1},
                {"rdzvBackend": "zookeeper"},
                "spec.elasticPolicy.rdzvBackend: must be one of c10d, etcd, etcd-v2, not 'zookeeper'",
            ),
            (
                {"Worker": 1},
                {"minReplicas": 0},
                "spec.elasticPolicy.minReplicas: must be at least 1, not 0",
            ),
            (
                {"Worker": 1},
                {"maxRestarts": -1},
                "spec.elasticPolicy.maxRestarts: must be at least 0, not -1",
            ),
            (
                {"Worker": 1},
                {"rdzvHost": ""},
                "spec.elasticPolicy.rdzvHost: must be a non-empty string, not ''",
            ),
            (
                {"Worker": 1},
                {"standalone": "yes"},
                "spec.elasticPolicy.standalone: must be true or false, not 'yes'",
            ),
            (
                {"Worker": 1},
                {"rdzvConf": "a=b"},
                "spec.elasticPolicy.rdzvConf: must be a list of {key, value}",
            ),
            (
                {"Worker": 1},
                {"rdzvConf": [{"value": "b"}]},
                "spec.elasticPolicy.rdzvConf[0].key: is required: a non-empty string",
            ),
            (
                {"Worker": 1},
                {"metrics": [{"type": "Cpu"}]},
                "spec.elasticPolicy.metrics[0].type: must be one of ContainerResource, External, Object, "
                "Pods, Resource, not 'Cpu'",
            ),
            (
                {"Worker": 1},
                {"metrics": [{"type": "Pods"}]},
                "spec.elasticPolicy.metrics[0].pods: is required for a Pods metric",
            ),
            ({"Worker": 1}, {"minReplica": 1}, "spec.elasticPolicy.minReplica: unknown field"),
            ({"Worker": 1}, [], "spec.elasticPolicy: must be an object, not list"),
        ],
    )
    def test_each_problem_names_its_field(self, replicas, policy, expected):
        assert messages(pytorch_job(replicas, policy)) == [expected]

    def test_both_nproc_per_node_fields_are_refused(self):
        assert messages(pytorch_job({"Worker": 1}, {"nProcPerNode": 2}, nprocPerNode=2)) == [
            "spec.elasticPolicy.nProcPerNode: must not be used with spec.nprocPerNode (use that one)"
        ]


def test_parse_reads_a_malformed_policy_as_unset_values():
    policy = elastic.parse({"elasticPolicy": {"minReplicas": "2", "rdzvBackend": 3, "rdzvConf": "x"}})
    assert policy == elastic.ElasticPolicy(
        min_replicas=None,
        max_replicas=None,
        rdzv_backend="c10d",
        rdzv_host=None,
        rdzv_port=None,
        rdzv_id=None,
        rdzv_conf=None,
        standalone=False,
        nproc_per_node=None,
        max_restarts=None,
    )
    assert elastic.parse({}) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 70000) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12,
)
policies = st.dictionaries(st.sampled_from([*elastic.FIELDS, "other"]), json_values, max_size=6) | json_values


@settings(max_examples=200, deadline=None)
@given(policy=policies, replicas=json_values)
def test_any_policy_is_checked_defaulted_and_rendered_without_raising(policy, replicas):
    job = pytorch_job({"Worker": 2}, policy)
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = replicas
    validate(job)
    defaulted = with_defaults(job, PyTorch())
    assert env(defaulted)["PYTHONUNBUFFERED"] == "1"


class TestScaleBounds:
    """What a `kubectl scale` (or an autoscaler) may ask of a job: `elastic.scale_problem`."""

    @pytest.mark.parametrize(
        ("policy", "replicas", "problem"),
        [
            ({"minReplicas": 2, "maxReplicas": 4}, 2, None),
            ({"minReplicas": 2, "maxReplicas": 4}, 4, None),
            ({"minReplicas": 2, "maxReplicas": 4}, 5, "5 is outside the elastic policy's [2, 4]"),
            ({"minReplicas": 2, "maxReplicas": 4}, 1, "1 is outside the elastic policy's [2, 4]"),
            ({"minReplicas": 2, "maxReplicas": 4}, 0, "0 is outside the elastic policy's [2, 4]"),
            ({"maxReplicas": 3}, 2, "2 is outside the elastic policy's [3, 3]"),  # one bound stands for both
            ({"minReplicas": 3}, 3, None),
            ({}, 7, None),  # no bound yet (the webhook defaults them): no limit
            ({"minReplicas": 4, "maxReplicas": 2}, 3, None),  # an invalid policy is validation's to name
            ({"minReplicas": "two", "maxReplicas": 4}, 9, "9 is outside the elastic policy's [4, 4]"),
        ],
    )
    def test_an_elastic_job_scales_only_within_its_bounds(self, policy, replicas, problem):
        error = elastic.scale_problem({"elasticPolicy": policy}, replicas)
        if problem is None:
            assert error is None
        else:
            assert (error.path, error.message) == ("spec.pytorchReplicaSpecs.Worker.replicas", problem)

    def test_a_job_without_a_policy_scales_freely(self):
        assert elastic.scale_problem({}, 10) is None

    @given(
        low=st.integers(1, 8),
        span=st.integers(0, 8),
        replicas=st.integers(0, 20),
    )
    @settings(max_examples=200)
    def test_scale_problem_agrees_with_the_jobs_own_validation(self, low, span, replicas):
        policy = {"minReplicas": low, "maxReplicas": low + span}
        job = pytorch_job({"Worker": max(replicas, 1)}, dict(policy))
        refused_by_validation = any("outside" in m for m in messages(job))
        assert (elastic.scale_problem(job["spec"], max(replicas, 1)) is not None) == refused_by_validation
