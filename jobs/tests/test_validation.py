"""Validation: a list of errors, each naming the field it is about; an empty list means runnable."""

import pytest

from fields import FieldError
from jobs.tests.fakes import make_job, tf_job
from jobs.validation import validate


def messages(job) -> list[str]:
    return [str(error) for error in validate(job)]


def paths(job) -> list[str]:
    return [error.path for error in validate(job)]


@pytest.mark.parametrize(
    "job",
    [
        tf_job(chief=1, ps=2, workers=4, evaluator=1),
        tf_job(chief=0, ps=1, workers=2, successPolicy="AllWorkers"),
        make_job("TFJob", {"master": 1, "worker": 2}, restart_policy="ExitCode"),
        make_job("MXJob", {"Scheduler": 1, "Server": 2, "Worker": 2}, jobMode="MXTrain"),
        make_job("PyTorchJob", {"Master": 1, "Worker": 3}, nprocPerNode=8),
        make_job("PyTorchJob", {"Master": 1}, nprocPerNode="gpu"),
        tf_job(
            run_policy={
                "cleanPodPolicy": "All",
                "backoffLimit": 0,
                "activeDeadlineSeconds": 600,
                "ttlSecondsAfterFinished": 0,
                "suspend": True,
                "schedulingPolicy": {"minAvailable": 3, "queue": "gpu", "priorityClass": "high"},
            }
        ),
    ],
)
def test_a_well_formed_job_has_no_errors(job):
    assert validate(job) == []


def test_an_error_reads_as_its_path_and_message():
    assert str(FieldError("spec.x", "is wrong")) == "spec.x: is wrong"


class TestIdentity:
    def test_an_unknown_kind_is_reported_on_kind(self):
        assert messages({**tf_job(), "kind": "CaffeJob"}) == [
            "kind: kind 'CaffeJob' is not a training job kind; expected one of JAXJob, MPIJob, MXJob, "
            "PaddleJob, PyTorchJob, TFJob, XGBoostJob"
        ]

    def test_kubeflows_api_version_is_served_as_well_as_ours(self):
        assert messages({**tf_job(), "apiVersion": "kubeflow.org/v1"}) == []
        assert messages({**tf_job(), "apiVersion": "argoml.io/v1alpha1"}) == []

    def test_another_api_version_is_reported_with_both_served_ones(self):
        assert messages({**tf_job(), "apiVersion": "kubeflow.org/v2"}) == [
            "apiVersion: must be argoml.io/v1alpha1 or kubeflow.org/v1, not 'kubeflow.org/v2'"
        ]

    def test_a_job_that_is_not_a_mapping_is_one_error(self):
        assert messages(["not", "a", "job"]) == [": a job must be an object, not list"]

    def test_the_name_is_required(self):
        job = tf_job()
        del job["metadata"]["name"]
        assert paths(job) == ["metadata.name"]

    @pytest.mark.parametrize("name", ["Mnist", "1mnist", "mnist-", "mn_ist", "mn.ist"])
    def test_the_name_must_be_a_dns_1035_label(self, name):
        assert messages(tf_job(name=name)) == [
            f"metadata.name: {name!r} must be a DNS-1035 label: lowercase letters, digits and '-', "
            "starting with a letter and ending with a letter or digit"
        ]

    def test_a_name_longer_than_63_characters_is_refused(self):
        assert messages(tf_job(name="a" * 64)) == ["metadata.name: must be at most 63 characters, not 64"]

    def test_a_name_is_refused_when_a_child_name_would_pass_63_characters(self):
        name = "a" * 54
        assert validate(tf_job(chief=0, ps=0, workers=10, name=name)) == []  # ...-worker-9: 63 characters
        assert messages(tf_job(chief=0, ps=0, workers=11, name=name)) == [
            f"metadata.name: is too long: child '{name}-worker-10' would have 64 characters, "
            "more than the 63 Kubernetes allows"
        ]


class TestSpec:
    def test_the_spec_is_required(self):
        job = tf_job()
        del job["spec"]
        assert messages(job) == ["spec: is required"]

    def test_the_replica_specs_are_required(self):
        assert messages(make_job("TFJob", {})) == [
            "spec.tfReplicaSpecs: is required: a mapping of replica type to replica spec"
        ]

    def test_an_unknown_spec_field_is_named_with_the_allowed_ones(self):
        job = make_job("PyTorchJob", {"Master": 1}, successPolicy="AllWorkers")
        assert messages(job) == [
            "spec.successPolicy: unknown field for PyTorchJob; "
            "expected one of pytorchReplicaSpecs, runPolicy, nprocPerNode, elasticPolicy"
        ]

    def test_an_unknown_replica_type_lists_the_allowed_ones(self):
        assert messages(make_job("MXJob", {"Worker": 1, "Tuner": 1})) == [
            "spec.mxReplicaSpecs.Tuner: unknown replica type; expected one of Scheduler, Server, Worker"
        ]

    def test_the_same_type_twice_in_different_case_is_refused(self):
        job = tf_job(chief=0, ps=0, workers=1)
        job["spec"]["tfReplicaSpecs"]["worker"] = job["spec"]["tfReplicaSpecs"]["Worker"]
        assert messages(job) == ["spec.tfReplicaSpecs.worker: duplicates 'Worker' (types ignore case)"]

    @pytest.mark.parametrize(
        ("replicas", "problem"),
        [
            (-1, "must be at least 0"),
            ("2", "must be an integer"),
            (1.5, "must be an integer"),
            (True, "must be an integer"),
        ],
    )
    def test_replicas_must_be_a_whole_number_of_at_least_zero(self, replicas, problem):
        job = tf_job(chief=1, ps=0, workers=1)
        job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = replicas
        assert messages(job) == [f"spec.tfReplicaSpecs.Worker.replicas: {problem}, not {replicas!r}"]

    @pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never", "ExitCode"])
    def test_each_restart_policy_is_accepted(self, policy):
        assert validate(tf_job(restart_policy=policy)) == []

    def test_an_unknown_restart_policy_is_refused(self):
        assert messages(tf_job(chief=0, ps=0, workers=1, restart_policy="Sometimes")) == [
            "spec.tfReplicaSpecs.Worker.restartPolicy: must be one of Always, OnFailure, Never, ExitCode, "
            "not 'Sometimes'"
        ]

    def test_an_unknown_replica_spec_field_is_refused(self):
        job = tf_job(chief=0, ps=0, workers=1)
        job["spec"]["tfReplicaSpecs"]["Worker"]["replica"] = 3
        assert messages(job) == ["spec.tfReplicaSpecs.Worker.replica: unknown field"]

    def test_every_replica_needs_a_pod_template_with_containers(self):
        job = tf_job(chief=0, ps=0, workers=1)
        del job["spec"]["tfReplicaSpecs"]["Worker"]["template"]
        assert messages(job) == [
            "spec.tfReplicaSpecs.Worker.template.spec.containers: "
            "is required: a pod template with at least one container"
        ]

    def test_every_replica_needs_the_frameworks_container(self):
        job = make_job("PyTorchJob", {"Master": 1})
        job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["name"] = "main"
        assert messages(job) == [
            "spec.pytorchReplicaSpecs.Master.template.spec.containers: "
            "needs a container named 'pytorch' to run the PyTorchJob code"
        ]

    def test_the_frameworks_container_needs_an_image(self):
        job = make_job("MXJob", {"Worker": 1})
        del job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
        assert messages(job) == ["spec.mxReplicaSpecs.Worker.template.spec.containers[0].image: is required"]

    def test_the_framework_port_must_be_a_port_number(self):
        job = tf_job(chief=0, ps=0, workers=1)
        container = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
        container["ports"] = [{"name": "tfjob-port", "containerPort": 70000}]
        assert messages(job) == [
            "spec.tfReplicaSpecs.Worker.template.spec.containers[0].ports[0].containerPort: "
            "must be a port number 1-65535, not 70000"
        ]


class TestRoles:
    def test_a_tfjob_has_at_most_one_chief_or_master(self):
        assert messages(make_job("TFJob", {"Chief": 1, "Master": 1, "Worker": 1})) == [
            "spec.tfReplicaSpecs: has Chief and Master; a job has at most one chief or master"
        ]

    @pytest.mark.parametrize(
        ("kind", "replica_type"),
        [("TFJob", "Chief"), ("TFJob", "Evaluator"), ("PyTorchJob", "Master"), ("MXJob", "Scheduler")],
    )
    def test_singleton_types_have_exactly_one_replica(self, kind, replica_type):
        job = make_job(kind, {replica_type: 2, "Worker": 1})
        key = next(iter(job["spec"]))
        assert messages(job) == [
            f"spec.{key}.{replica_type}.replicas: a {kind} has exactly 1 {replica_type}, not 2"
        ]

    def test_a_pytorchjob_of_workers_only_is_valid(self):
        assert messages(make_job("PyTorchJob", {"Worker": 2})) == []

    def test_a_pytorchjob_with_neither_master_nor_workers_cannot_succeed(self):
        assert paths(make_job("PyTorchJob", {"Worker": 0})) == ["spec.pytorchReplicaSpecs.Worker"]

    @pytest.mark.parametrize("replicas", [{"PS": 1}, {"PS": 1, "Worker": 0}])
    def test_without_a_chief_there_must_be_a_worker_to_decide_success(self, replicas):
        assert messages(make_job("TFJob", replicas)) == [
            "spec.tfReplicaSpecs.Worker: needs at least 1 replica: without a chief, Worker 0 decides success"
        ]

    def test_an_mxjob_without_workers_cannot_succeed(self):
        assert paths(make_job("MXJob", {"Scheduler": 1, "Server": 1})) == ["spec.mxReplicaSpecs.Worker"]


class TestRunPolicy:
    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("cleanPodPolicy", "Some", "must be one of All, Running, None, not 'Some'"),
            ("backoffLimit", -1, "must be at least 0, not -1"),
            ("backoffLimit", "3", "must be an integer, not '3'"),
            ("ttlSecondsAfterFinished", -5, "must be at least 0, not -5"),
            ("activeDeadlineSeconds", 0, "must be at least 1, not 0"),
            ("suspend", "yes", "must be true or false, not 'yes'"),
            ("backofLimit", 3, "unknown field"),
        ],
    )
    def test_each_bad_value_names_its_field(self, field, value, message):
        assert messages(tf_job(run_policy={field: value})) == [f"spec.runPolicy.{field}: {message}"]

    def test_run_policy_must_be_a_mapping(self):
        assert messages(tf_job(run_policy=["All"])) == ["spec.runPolicy: must be an object, not list"]

    @pytest.mark.parametrize(
        ("policy", "message"),
        [
            ({"minAvailable": 0}, "minAvailable: must be at least 1, not 0"),
            ({"scheduleTimeoutSeconds": -1}, "scheduleTimeoutSeconds: must be at least 0, not -1"),
            ({"queue": 3}, "queue: must be a string"),
            (
                {"minResources": "4 cpus"},
                "minResources: must be an object of quantities by resource name, not str",
            ),
            ({"gang": True}, "gang: unknown field"),
        ],
    )
    def test_scheduling_policy_values_are_checked(self, policy, message):
        assert messages(tf_job(run_policy={"schedulingPolicy": policy})) == [
            f"spec.runPolicy.schedulingPolicy.{message}"
        ]


class TestFrameworkFields:
    def test_tf_success_policy_is_empty_or_all_workers(self):
        assert messages(tf_job(successPolicy="AnyWorker")) == [
            'spec.successPolicy: must be "" or "AllWorkers", not \'AnyWorker\''
        ]

    @pytest.mark.parametrize("nproc", [0, "zero", -2, True])
    def test_pytorch_nproc_per_node_is_a_positive_number_or_a_word(self, nproc):
        assert paths(make_job("PyTorchJob", {"Master": 1}, nprocPerNode=nproc)) == ["spec.nprocPerNode"]

    def test_mxnet_tuning_mode_is_not_supported(self):
        assert messages(make_job("MXJob", {"Worker": 1}, jobMode="MXTune")) == [
            "spec.jobMode: only \"MXTrain\" is supported, not 'MXTune'"
        ]

    def test_a_success_policy_is_not_a_pytorch_field(self):
        assert paths(make_job("PyTorchJob", {"Master": 1}, successPolicy="AllWorkers")) == [
            "spec.successPolicy"
        ]


def test_every_error_is_reported_at_once():
    job = tf_job(name="Bad_Name", restart_policy="Sometimes", run_policy={"cleanPodPolicy": "Some"})
    assert len(validate(job)) == 1 + 3 + 1


def test_pod_views_name_each_replica_template_under_the_key_the_user_wrote():
    from jobs.frameworks import framework_class
    from jobs.spec import pod_views
    from podsecurity import BASELINE, check_views

    job = {
        "spec": {
            "tfReplicaSpecs": {
                "worker": {"template": {"spec": {"hostPID": True, "containers": [{"name": "tensorflow"}]}}},
                "PS": {
                    "template": {
                        "metadata": {
                            "annotations": {"container.apparmor.security.beta.kubernetes.io/x": "unconfined"}
                        },
                        "spec": {
                            "containers": [{"name": "tensorflow", "securityContext": {"privileged": True}}]
                        },
                    }
                },
                "Nonsense": {"template": {"spec": {"hostPID": True}}},
                "Chief": "not a mapping",
            }
        }
    }
    found = check_views(BASELINE, pod_views(job, framework_class("TFJob")()))
    assert [v.path for v in found] == [
        "spec.tfReplicaSpecs.worker.template.spec.hostPID",
        "spec.tfReplicaSpecs.PS.template.spec.containers[0].securityContext.privileged",
        "spec.tfReplicaSpecs.PS.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/x]",
    ]


def test_a_job_of_fifty_thousand_unknown_replica_types_lists_the_first_hundred_problems_and_counts_the_rest():
    job = tf_job()
    job["spec"]["tfReplicaSpecs"].update({f"k{i}": {"replicas": 1} for i in range(50_000)})
    errors = validate(job)
    assert len(errors) == 101
    assert errors[0].path == "spec.tfReplicaSpecs.k0"
    assert errors[0].message.startswith("unknown replica type")
    assert errors[-1].message == "this and 49899 more problems after it are not listed"
