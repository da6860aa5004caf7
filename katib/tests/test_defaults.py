"""Katib's SetDefault (experiment_defaults.go, v0.19.0) step by step. Katib has no unit test of its own for
it; each case here follows one branch of its code."""

from __future__ import annotations

import copy

import pytest

from katib import constants as k
from katib.defaults import with_defaults
from katib.tests import fake
from katib.tests.fake import edited

VALID = fake.experiment()


def spec_of(experiment):
    return with_defaults(experiment)["spec"]


def test_defaults_are_written_into_a_copy_and_the_input_is_left_alone():
    given = fake.experiment(parallelTrialCount=None)
    before = copy.deepcopy(given)
    defaulted = with_defaults(given)
    assert given == before
    assert defaulted["spec"]["parallelTrialCount"] == 3
    assert defaulted["spec"]["trialTemplate"]["trialSpec"] is not given["spec"]["trialTemplate"]["trialSpec"]


@pytest.mark.parametrize(
    "experiment",
    [
        VALID,
        {},
        {"spec": None},
        fake.experiment(
            objective={"type": "minimize", "objectiveMetricName": "loss", "additionalMetricNames": ["a", "a"]}
        ),
        fake.experiment(metricsCollectorSpec={"collector": {"kind": k.PROMETHEUS_COLLECTOR}}),
        fake.experiment(metricsCollectorSpec={"collector": {"kind": k.FILE_COLLECTOR}}),
        fake.experiment(metricsCollectorSpec={"collector": {"kind": k.TFEVENT_COLLECTOR}}),
        edited(VALID, "spec.trialTemplate.trialSpec.kind", "TrainJob"),
    ],
)
def test_defaulting_twice_gives_what_defaulting_once_gives(experiment):
    once = with_defaults(experiment)
    assert with_defaults(once) == once


def test_parallel_trial_count_and_resume_policy_default_to_katibs():
    spec = spec_of(fake.experiment(parallelTrialCount=None))
    assert spec["parallelTrialCount"] == k.DEFAULT_TRIAL_PARALLEL_COUNT == 3
    assert spec["resumePolicy"] == "Never"
    kept = spec_of(fake.experiment(parallelTrialCount=5, resumePolicy="LongRunning"))
    assert (kept["parallelTrialCount"], kept["resumePolicy"]) == (5, "LongRunning")


def test_a_zero_parallel_trial_count_is_kept_for_validation_to_refuse():
    assert spec_of(fake.experiment(parallelTrialCount=0))["parallelTrialCount"] == 0


def test_a_missing_spec_is_defaulted_as_go_fills_an_empty_struct():
    assert with_defaults({"metadata": {"name": "x"}}) == {
        "metadata": {"name": "x"},
        "spec": {
            "parallelTrialCount": 3,
            "resumePolicy": "Never",
            "metricsCollectorSpec": {"collector": {"kind": "StdOut"}},
        },
    }


@pytest.mark.parametrize(
    ("objective_type", "strategy"),
    [("minimize", "min"), ("maximize", "max"), ("", "latest"), (None, "latest"), ("best", "latest")],
)
def test_metric_strategies_follow_the_objective_type_for_every_metric(objective_type, strategy):
    objective = {
        "type": objective_type,
        "objectiveMetricName": "loss",
        "additionalMetricNames": ["acc", "f1"],
    }
    assert spec_of(fake.experiment(objective=objective))["objective"]["metricStrategies"] == [
        {"name": "loss", "value": strategy},
        {"name": "acc", "value": strategy},
        {"name": "f1", "value": strategy},
    ]


def test_strategies_already_named_are_kept_and_the_rest_appended():
    objective = {
        "type": "minimize",
        "objectiveMetricName": "loss",
        "additionalMetricNames": ["accuracy", "f1"],
        "metricStrategies": [{"name": "accuracy", "value": "max"}, {"name": "loss", "value": "latest"}],
    }
    assert spec_of(fake.experiment(objective=objective))["objective"]["metricStrategies"] == [
        {"name": "accuracy", "value": "max"},
        {"name": "loss", "value": "latest"},
        {"name": "f1", "value": "min"},
    ]


def test_a_repeated_additional_metric_gets_a_strategy_each_time_on_the_first_pass_as_in_katib():
    objective = {"type": "maximize", "objectiveMetricName": "acc", "additionalMetricNames": ["loss", "loss"]}
    strategies = spec_of(fake.experiment(objective=objective))["objective"]["metricStrategies"]
    assert strategies == [
        {"name": "acc", "value": "max"},
        {"name": "loss", "value": "max"},
        {"name": "loss", "value": "max"},
    ]


def test_an_objective_without_a_metric_name_gets_a_nameless_strategy_as_go_writes_it():
    strategies = spec_of(fake.experiment(objective={"type": "minimize"}))["objective"]["metricStrategies"]
    assert strategies == [{"value": "min"}]


def test_no_objective_gets_no_strategies():
    assert "objective" not in spec_of(fake.experiment(objective=None))


def _template(kind, **template_fields):
    trial_spec = {**fake.batch_job(), "kind": kind}
    template = {"trialSpec": trial_spec, "trialParameters": [], **template_fields}
    return spec_of(fake.experiment(trialTemplate=template))["trialTemplate"]


def test_a_job_trial_gets_jobs_conditions_and_no_primary_pod_labels():
    template = _template("Job")
    assert template["successCondition"] == 'status.conditions.#(type=="Complete")#|#(status=="True")#'
    assert template["failureCondition"] == 'status.conditions.#(type=="Failed")#|#(status=="True")#'
    assert "primaryPodLabels" not in template


@pytest.mark.parametrize("kind", ["TFJob", "PyTorchJob", "XGBoostJob", "MPIJob"])
def test_a_kubeflow_job_trial_gets_kubeflows_conditions_and_the_master_as_primary_pod(kind):
    template = _template(kind)
    assert template["successCondition"] == 'status.conditions.#(type=="Succeeded")#|#(status=="True")#'
    assert template["failureCondition"] == 'status.conditions.#(type=="Failed")#|#(status=="True")#'
    assert template["primaryPodLabels"] == {"training.kubeflow.org/job-role": "master"}


def test_a_trainjob_trial_gets_trainjobs_conditions_and_the_first_node_as_primary_pod():
    template = _template("TrainJob")
    assert template["successCondition"] == 'status.conditions.#(type=="Complete")#|#(status=="True")#'
    assert template["failureCondition"] == 'status.conditions.#(type=="Failed")#|#(status=="True")#'
    assert template["primaryPodLabels"] == {
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "batch.kubernetes.io/job-completion-index": "0",
    }


def test_conditions_and_labels_written_by_the_user_are_kept():
    template = _template(
        "PyTorchJob",
        successCondition="status.ok",
        failureCondition="status.bad",
        primaryPodLabels={"role": "x"},
    )
    assert (template["successCondition"], template["failureCondition"]) == ("status.ok", "status.bad")
    assert template["primaryPodLabels"] == {"role": "x"}


def test_default_labels_are_a_copy_not_katibs_shared_map():
    template = _template("TFJob")
    template["primaryPodLabels"]["changed"] = "yes"
    assert _template("TFJob")["primaryPodLabels"] == k.DEFAULT_KUBEFLOW_JOB_PRIMARY_POD_LABELS
    assert "changed" not in k.DEFAULT_KUBEFLOW_JOB_PRIMARY_POD_LABELS


@pytest.mark.parametrize("kind", ["Workflow", "CustomKind", None])
def test_other_kinds_and_config_map_templates_are_not_defaulted(kind):
    template = _template(kind)
    assert "successCondition" not in template
    assert "primaryPodLabels" not in template
    config_map_template = {"configMap": {"configMapName": "t"}, "trialParameters": []}
    defaulted = spec_of(fake.experiment(trialTemplate=config_map_template))["trialTemplate"]
    assert defaulted == config_map_template


def test_the_collector_defaults_to_stdout():
    assert spec_of(fake.experiment(metricsCollectorSpec=None))["metricsCollectorSpec"] == {
        "collector": {"kind": "StdOut"}
    }
    with_source = spec_of(
        fake.experiment(metricsCollectorSpec={"source": {"filter": {"metricsFormat": ["(a)(b)"]}}})
    )
    assert with_source["metricsCollectorSpec"] == {
        "source": {"filter": {"metricsFormat": ["(a)(b)"]}},
        "collector": {"kind": "StdOut"},
    }


def test_a_file_collector_gets_katibs_file_path_kind_and_text_format():
    spec = spec_of(fake.experiment(metricsCollectorSpec={"collector": {"kind": "File"}}))
    assert spec["metricsCollectorSpec"]["source"] == {
        "fileSystemPath": {"kind": "File", "path": "/var/log/katib/metrics.log", "format": "TEXT"}
    }
    kept = {
        "collector": {"kind": "File"},
        "source": {"fileSystemPath": {"path": "/m.json", "format": "JSON"}},
    }
    assert spec_of(fake.experiment(metricsCollectorSpec=kept))["metricsCollectorSpec"]["source"] == {
        "fileSystemPath": {"path": "/m.json", "format": "JSON", "kind": "File"}
    }


def test_a_tensorflow_event_collector_gets_katibs_directory():
    spec = spec_of(fake.experiment(metricsCollectorSpec={"collector": {"kind": "TensorFlowEvent"}}))
    assert spec["metricsCollectorSpec"]["source"] == {
        "fileSystemPath": {"kind": "Directory", "path": "/var/log/katib/tfevent/"}
    }


@pytest.mark.parametrize(
    ("http_get", "wanted"),
    [
        (None, {"path": "/metrics", "port": 8080}),
        ({"port": 0}, {"path": "/metrics", "port": 8080}),
        ({"port": "0"}, {"path": "/metrics", "port": 8080}),
        ({"port": 9090, "path": "/m"}, {"port": 9090, "path": "/m"}),
        ({"port": "http"}, {"port": "http", "path": "/metrics"}),
    ],
)
def test_a_prometheus_collector_gets_katibs_path_and_port(http_get, wanted):
    collector_spec = {"collector": {"kind": "PrometheusMetric"}}
    if http_get is not None:
        collector_spec["source"] = {"httpGet": http_get}
    spec = spec_of(fake.experiment(metricsCollectorSpec=collector_spec))
    assert spec["metricsCollectorSpec"]["source"]["httpGet"] == wanted


def test_push_and_custom_collectors_get_no_source():
    for kind in ("Push", "Custom"):
        spec = spec_of(fake.experiment(metricsCollectorSpec={"collector": {"kind": kind}}))
        assert spec["metricsCollectorSpec"] == {"collector": {"kind": kind}}


def test_every_parameter_gets_a_uniform_distribution_unless_it_names_one():
    parameters = [
        {"name": "a", "parameterType": "double", "feasibleSpace": {"min": "1", "max": "2"}},
        {
            "name": "b",
            "parameterType": "double",
            "feasibleSpace": {"min": "1", "max": "2", "distribution": "logUniform"},
        },
        {"name": "c", "parameterType": "categorical"},
    ]
    spec = spec_of(fake.experiment(parameters=parameters))
    assert [parameter["feasibleSpace"].get("distribution") for parameter in spec["parameters"]] == [
        "uniform",
        "logUniform",
        "uniform",
    ]
    assert spec["parameters"][2]["feasibleSpace"] == {"distribution": "uniform"}


def test_a_parameter_that_is_not_an_object_is_left_for_validation():
    assert spec_of(fake.experiment(parameters=["lr"]))["parameters"] == ["lr"]


def test_unknown_fields_are_left_as_they_are():
    given = edited(VALID, "spec.somethingNew", {"x": 1})
    assert with_defaults(given)["spec"]["somethingNew"] == {"x": 1}
