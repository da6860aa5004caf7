"""The bounds on a job's counts (jobs/bounds.py): a job at its bounds is valid, one past them is refused
naming the field, and refusing it costs the same whatever the count says: nothing per replica is built."""

from __future__ import annotations

import pytest

import limits
from fields import FieldError
from jobs import bounds
from jobs import spec as jobspec
from jobs.frameworks import MPI, Paddle, PyTorch, TensorFlow, framework_class
from jobs.plan import parse_job
from jobs.status import current_state
from jobs.tests.fakes import T0, make_job, peak_memory, plan_job, tf_job
from jobs.validation import validate

#: What the tests with small bounds allow: a few replicas, a few processes per pod.
REPLICAS, PROCESSES = 4, 8
#: One job of every kind with exactly REPLICAS replicas, its Workers last (they are the ones to grow).
AT_THE_BOUND = {
    "TFJob": {"Chief": 1, "PS": 1, "Worker": 2},
    "MXJob": {"Scheduler": 1, "Server": 1, "Worker": 2},
    "PyTorchJob": {"Master": 1, "Worker": 3},
    "MPIJob": {"Launcher": 1, "Worker": 3},
    "XGBoostJob": {"Master": 1, "Worker": 3},
    "JAXJob": {"Worker": 4},
    "PaddleJob": {"Master": 1, "Worker": 3},
}
#: Far past the default bound: what took the web process to 22 GB.
HOSTILE = 100_000
#: What refusing a hostile count may allocate at most (the job itself is a few hundred bytes).
CHEAP = 256 * 1024


@pytest.fixture
def small_bounds():
    with limits.overridden(replicas_per_job=REPLICAS, processes_per_node=PROCESSES):
        yield


@pytest.fixture
def no_parsing(monkeypatch):
    """A framework's options (TF_CONFIG's cluster, which names every replica) must not be read."""

    def refuse(*args, **kwargs):
        raise AssertionError("parse_options ran for a job past its bounds")

    monkeypatch.setattr(TensorFlow, "parse_options", refuse)


def over_by_one(kind: str) -> dict:
    counts = dict(AT_THE_BOUND[kind])
    counts["Worker"] += 1
    return make_job(kind, counts)


def too_many(
    count: int, what: str = "replicas", setting: str = "MAX_REPLICAS_PER_JOB", bound: int = 4
) -> str:
    return f"must be at most {bound} {what} ({setting}), not {count}"


# -- the sum of replicas, every kind ---------------------------------------------------------------------


@pytest.mark.usefixtures("small_bounds")
@pytest.mark.parametrize("kind", sorted(AT_THE_BOUND))
def test_a_job_at_the_bound_is_valid(kind):
    assert validate(make_job(kind, AT_THE_BOUND[kind])) == []


@pytest.mark.usefixtures("small_bounds")
@pytest.mark.parametrize("kind", sorted(AT_THE_BOUND))
def test_one_replica_past_the_bound_is_refused_at_the_largest_types_replicas(kind):
    counts = {**AT_THE_BOUND[kind], "Worker": AT_THE_BOUND[kind]["Worker"] + 1}
    spec_key = framework_class(kind).spec_key
    breakdown = " + ".join(f"{replica_type} {count}" for replica_type, count in counts.items())
    message = too_many(5) + (f" ({breakdown})" if len(counts) > 1 else "")

    assert validate(over_by_one(kind)) == [FieldError(f"spec.{spec_key}.Worker.replicas", message)]


@pytest.mark.usefixtures("small_bounds")
def test_the_field_is_named_as_written_and_a_single_type_needs_no_sum():
    job = make_job("TFJob", {"worker": 5})
    assert [str(error) for error in validate(job)] == [f"spec.tfReplicaSpecs.worker.replicas: {too_many(5)}"]


@pytest.mark.usefixtures("small_bounds")
def test_the_sum_counts_replica_types_that_leave_replicas_out_as_kubeflow_defaults_them():
    job = tf_job(chief=1, ps=1, workers=3)
    del job["spec"]["tfReplicaSpecs"]["Chief"]["replicas"]  # defaults to 1
    assert [error.path for error in validate(job)] == ["spec.tfReplicaSpecs.Worker.replicas"]


@pytest.mark.usefixtures("small_bounds")
def test_a_job_past_its_bounds_gets_those_errors_alone():
    job = tf_job(chief=0, ps=0, workers=5, restart_policy="Sometimes")
    assert [error.path for error in validate(job)] == ["spec.tfReplicaSpecs.Worker.replicas"]
    within = tf_job(chief=0, ps=0, workers=4, restart_policy="Sometimes")
    assert [error.path for error in validate(within)] == ["spec.tfReplicaSpecs.Worker.restartPolicy"]


# -- the frameworks' own counts ---------------------------------------------------------------------------


@pytest.mark.usefixtures("small_bounds")
@pytest.mark.parametrize("field", ["minReplicas", "maxReplicas"])
@pytest.mark.parametrize("kind", ["PyTorchJob", "PaddleJob"])
def test_the_elastic_bounds_are_held_to_the_bound_on_replicas(kind, field):
    at = make_job(kind, {"Worker": 2}, elasticPolicy={field: REPLICAS})
    past = make_job(kind, {"Worker": 2}, elasticPolicy={field: REPLICAS + 1})

    assert bounds.count_errors(at, framework_class(kind)()) == []
    assert validate(past) == [FieldError(f"spec.elasticPolicy.{field}", too_many(5))]


@pytest.mark.usefixtures("small_bounds")
@pytest.mark.parametrize(
    ("kind", "field", "spec"),
    [
        ("PyTorchJob", "spec.nprocPerNode", lambda n: {"nprocPerNode": n}),
        ("PyTorchJob", "spec.nprocPerNode", lambda n: {"nprocPerNode": str(n)}),
        ("PyTorchJob", "spec.elasticPolicy.nProcPerNode", lambda n: {"elasticPolicy": {"nProcPerNode": n}}),
        ("MPIJob", "spec.slotsPerWorker", lambda n: {"slotsPerWorker": n}),
    ],
)
def test_processes_per_pod_are_held_to_their_bound(kind, field, spec):
    replicas = {"Launcher": 1, "Worker": 2} if kind == "MPIJob" else {"Worker": 2}

    assert validate(make_job(kind, replicas, **spec(PROCESSES))) == []
    assert validate(make_job(kind, replicas, **spec(PROCESSES + 1))) == [
        FieldError(field, too_many(9, "processes per node", "MAX_PROCESSES_PER_NODE", PROCESSES))
    ]


@pytest.mark.parametrize("nproc", ["²", "9" * 5000])
def test_digits_python_will_not_convert_are_a_field_error_not_a_crash(nproc):
    job = make_job("PyTorchJob", {"Worker": 1}, nprocPerNode=nproc)
    assert [error.path for error in validate(job)] == ["spec.nprocPerNode"]
    assert jobspec.parse(job, PyTorch()).options.nproc_per_node == nproc


def test_the_frameworks_name_their_counts_as_written():
    assert [(c.path, c.value, c.limit) for c in MPI().counts({"slotsPerWorker": 3})] == [
        ("spec.slotsPerWorker", 3, "processes_per_node")
    ]
    assert Paddle().counts({"elasticPolicy": {"maxReplicas": "x"}}) == []  # unreadable: validation's
    assert TensorFlow().counts({"successPolicy": "AllWorkers"}) == []


# -- a scale request -------------------------------------------------------------------------------------


@pytest.mark.usefixtures("small_bounds")
def test_a_scale_is_checked_as_the_job_it_would_make():
    job = make_job("PyTorchJob", {"Master": 1, "Worker": 2})
    assert bounds.scale_errors(job, PyTorch(), 3) == []
    assert bounds.scale_errors(job, PyTorch(), 4) == [
        FieldError("spec.pytorchReplicaSpecs.Worker.replicas", too_many(5) + " (Master 1 + Worker 4)")
    ]


# -- the controller's decision ----------------------------------------------------------------------------


@pytest.mark.usefixtures("small_bounds", "no_parsing")
def test_the_plan_of_a_job_past_its_bounds_fails_it_naming_the_field_and_builds_nothing():
    job = tf_job(chief=1, ps=1, workers=3, name="big")

    first = plan_job(job, [], [], T0)

    assert (first.create, first.delete, current_state(first.status)) == ((), (), "Failed")
    failed = next(c for c in first.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "FailedValidation"
    assert failed["message"] == (
        "TFJob ml/big is invalid: "
        f"spec.tfReplicaSpecs.Worker.replicas: {too_many(5)} (Chief 1 + PS 1 + Worker 3)"
    )
    assert first.status["replicaStatuses"] == {}
    job["status"] = first.status
    again = plan_job(job, [], [], T0)
    assert (again.status, again.events) == (first.status, ())


@pytest.mark.usefixtures("small_bounds", "no_parsing")
def test_a_finished_job_past_its_bounds_still_goes_when_its_ttl_says():
    job = tf_job(chief=0, ps=0, workers=5, run_policy={"ttlSecondsAfterFinished": 0})
    job["status"] = plan_job(job, [], [], T0).status
    assert plan_job(job, [], [], T0).delete_job


@pytest.mark.usefixtures("small_bounds")
def test_a_job_at_its_bounds_is_planned_in_full():
    created = plan_job(tf_job(chief=1, ps=1, workers=2), [], [], T0).create
    assert sorted(m["metadata"]["name"] for m in created if m["kind"] == "Pod") == [
        "train-chief-0", "train-ps-0", "train-worker-0", "train-worker-1"
    ]  # fmt: skip


@pytest.mark.usefixtures("small_bounds")
def test_parse_bounded_reads_a_job_past_its_bounds_without_its_replicas():
    over = parse_job(tf_job(workers=5), TensorFlow()).spec
    assert (over.replicas, over.options, over.name) == ({}, None, "train")
    assert parse_job(tf_job(workers=1), TensorFlow()).spec.counts == {"Chief": 1, "PS": 2, "Worker": 1}


@pytest.mark.usefixtures("no_parsing")
def test_the_default_bound_refuses_a_hundred_thousand_workers_without_building_anything():
    job = tf_job(chief=1, ps=1, workers=HOSTILE, name="huge")
    message = (
        too_many(HOSTILE + 2, bound=limits.DEFAULTS.replicas_per_job)
        + f" (Chief 1 + PS 1 + Worker {HOSTILE})"
    )

    with peak_memory() as peak:
        errors = validate(job)
        decided = plan_job(job, [], [], T0)

    assert errors == [FieldError("spec.tfReplicaSpecs.Worker.replicas", message)]
    assert (decided.create, current_state(decided.status)) == ((), "Failed")
    assert peak.bytes < CHEAP, f"{peak.mib:.1f} MiB"
