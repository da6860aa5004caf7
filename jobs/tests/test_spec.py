"""Parsing a job once (`jobs.spec.parse`): defaults applied, tolerant of anything, and the same reading as
the stored (defaulted) job gives."""

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs import spec as jobspec
from jobs.frameworks import JAX, MXNet, Paddle, PyTorch, TensorFlow, XGBoost, framework_class, kinds
from jobs.frameworks.pytorch import PyTorchOptions
from jobs.frameworks.tensorflow import TFOptions
from jobs.tests.fakes import make_job, tf_job

JOBS = [
    pytest.param(tf_job(), TensorFlow(), id="tf chief+ps+workers"),
    pytest.param(
        tf_job(chief=0, ps=0, workers=1, successPolicy="AllWorkers"), TensorFlow(), id="tf all-workers"
    ),
    pytest.param(
        make_job(
            "TFJob", {"worker": 2, "Evaluator": 1}, restart_policy="ExitCode", run_policy={"suspend": True}
        ),
        TensorFlow(),
        id="tf lowercase keys, ExitCode, suspended",
    ),
    pytest.param(make_job("MXJob", {"Scheduler": 1, "Server": 2, "Worker": 2}), MXNet(), id="mx"),
    pytest.param(
        make_job("PyTorchJob", {"Master": 1, "Worker": 3}, nprocPerNode="4"), PyTorch(), id="pytorch"
    ),
    pytest.param(
        make_job("PyTorchJob", {"Worker": 3}, elasticPolicy={"maxReplicas": 5, "nProcPerNode": 2}),
        PyTorch(),
        id="pytorch elastic",
    ),
    pytest.param(make_job("XGBoostJob", {"master": 1, "Worker": 2}), XGBoost(), id="xgboost"),
    pytest.param(make_job("JAXJob", {"Worker": 4}, restart_policy="OnFailure"), JAX(), id="jax"),
    pytest.param(
        make_job("PaddleJob", {"Worker": 3}, elasticPolicy={"minReplicas": 2}), Paddle(), id="paddle elastic"
    ),
]


@pytest.mark.parametrize(("job", "framework"), JOBS)
def test_a_job_reads_as_its_stored_defaulted_self(job, framework):
    assert jobspec.parse(job, framework) == jobspec.parse(jobspec.with_defaults(job, framework), framework)


def test_parsing_applies_the_defaults_in_the_frameworks_order():
    job = make_job("TFJob", {"worker": 2, "Chief": 1, "ps": 1}, run_policy={"backoffLimit": 3})
    job["spec"]["tfReplicaSpecs"]["worker"].pop("replicas")
    parsed = jobspec.parse(job, TensorFlow())
    assert list(parsed.replicas) == ["Chief", "PS", "Worker"]
    assert parsed.counts == {"Chief": 1, "PS": 1, "Worker": 1}
    assert {spec.restart_policy for spec in parsed.replicas.values()} == {"Never"}
    assert parsed.chief_type == "Chief"
    assert parsed.run_policy == jobspec.RunPolicy("Running", None, None, 3, False)
    assert isinstance(parsed.options, TFOptions)
    assert parsed.options.success_policy == ""
    assert parsed.slots[:2] == [jobspec.Slot("Chief", 0), jobspec.Slot("PS", 0)]
    assert (parsed.name, parsed.namespace, parsed.uid, parsed.generation) == (
        "train",
        "ml",
        "job-uid-train",
        1,
    )


def test_the_template_gets_the_default_port_and_the_job_as_written_is_left_alone():
    job = tf_job(chief=0, ps=0, workers=2)
    before = copy.deepcopy(job)
    parsed = jobspec.parse(job, TensorFlow())
    container = parsed.replicas["Worker"].template["spec"]["containers"][0]
    assert container["ports"] == [{"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}]
    assert (parsed.port("Worker"), parsed.port("PS")) == (2222, 2222)
    assert job == before


def test_a_named_port_wins_over_the_default():
    job = make_job("PyTorchJob", {"Master": 1, "Worker": 1})
    container = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    container["ports"] = [
        {"name": "pytorchjob-port", "containerPort": "x"},
        {"name": "pytorchjob-port", "containerPort": 29500},
    ]
    parsed = jobspec.parse(job, PyTorch())
    assert (parsed.port("Master"), parsed.port("Worker")) == (29500, 23456)


def test_tf_resolves_its_cluster_once_with_the_frameworks_domain():
    parsed = jobspec.parse(tf_job(chief=1, ps=0, workers=2, name="m"), TensorFlow("cluster.local"))
    assert json.loads(parsed.options.cluster) == {
        "chief": ["m-chief-0.ml.svc.cluster.local:2222"],
        "worker": ["m-worker-0.ml.svc.cluster.local:2222", "m-worker-1.ml.svc.cluster.local:2222"],
    }


def test_the_elastic_bounds_are_defaulted_from_the_workers():
    job = make_job("PyTorchJob", {"Worker": 3}, elasticPolicy={})
    options = jobspec.parse(job, PyTorch()).options
    assert isinstance(options, PyTorchOptions)
    assert options.elastic is not None
    assert (options.elastic.min_replicas, options.elastic.max_replicas) == (3, 3)
    assert options.nproc_per_node == "auto"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(kinds()),
    spec=st.dictionaries(
        st.sampled_from(
            [
                "tfReplicaSpecs",
                "mxReplicaSpecs",
                "pytorchReplicaSpecs",
                "xgbReplicaSpecs",
                "jaxReplicaSpecs",
                "paddleReplicaSpecs",
                "runPolicy",
                "successPolicy",
                "nprocPerNode",
                "elasticPolicy",
                "mpiReplicaSpecs",
                "slotsPerWorker",
                "mpiImplementation",
                "sshAuthMountPath",
                "launcherCreationPolicy",
            ]
        ),
        JSON,
    ),
    metadata=JSON,
)
def test_parsing_never_raises(kind, spec, metadata):
    jobspec.parse({"kind": kind, "metadata": metadata, "spec": spec}, framework_class(kind)())
