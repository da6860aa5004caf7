"""Katib's `Experiment.SetDefault` (experiments/v1beta1/experiment_defaults.go), step for step.

Why exactly Katib's: Kubeflow's Katib SDK reads `parallelTrialCount` and the metric strategies back from
the stored Experiment (and raises when they are missing), and a trial's success is judged by the
condition the defaults write; our mutating webhook writes the same values so both read what Katib
would have stored. Pure: the experiment is deep-copied, never changed in place; applying the defaults
twice gives what applying them once gives.
"""

from __future__ import annotations

import copy
from typing import Any

from fields import RawDict, as_dict
from katib import constants as k


def with_defaults(experiment: RawDict) -> RawDict:
    """A copy of `experiment` with Katib's defaults written in (SetDefault's six steps, in its order)."""
    defaulted = copy.deepcopy(experiment)
    spec = defaulted.get("spec")
    if not isinstance(spec, dict):
        # Go decodes a missing spec as an empty struct and SetDefault fills it.
        spec = defaulted["spec"] = {}
    _parallel_trial_count(spec)
    _resume_policy(spec)
    _objective(spec)
    _trial_template(spec)
    _metrics_collector(spec)
    _parameter_distribution(spec)
    return defaulted


def _parallel_trial_count(spec: RawDict) -> None:
    if spec.get("parallelTrialCount") is None:
        spec["parallelTrialCount"] = k.DEFAULT_TRIAL_PARALLEL_COUNT


def _resume_policy(spec: RawDict) -> None:
    if not spec.get("resumePolicy"):
        spec["resumePolicy"] = k.DEFAULT_RESUME_POLICY


def _objective(spec: RawDict) -> None:
    """The objective metric's strategy, then each additional metric's, by the objective's type (min for
    minimize, max for maximize, latest otherwise), unless a strategy already names the metric. As in
    Katib, names repeated in additionalMetricNames each get a strategy on the first pass only."""
    objective = spec.get("objective")
    if not isinstance(objective, dict):
        return
    strategies = objective.get("metricStrategies")
    if not isinstance(strategies, list):
        strategies = objective["metricStrategies"] = []
    metric = objective.get("objectiveMetricName") or ""
    named = [as_dict(strategy).get("name") or "" for strategy in strategies]
    by_type = _strategy_for(objective.get("type"))
    if metric not in named:
        strategies.append({"name": metric, "value": by_type} if metric else {"value": by_type})
    others = {name for name in named if name != metric}
    additional = objective.get("additionalMetricNames")
    for name in additional if isinstance(additional, list) else []:
        if name not in others:
            strategies.append({"name": name, "value": by_type})


def _strategy_for(objective_type: object) -> str:
    if objective_type == k.OBJECTIVE_MINIMIZE:
        return k.EXTRACT_BY_MIN
    if objective_type == k.OBJECTIVE_MAXIMIZE:
        return k.EXTRACT_BY_MAX
    return k.EXTRACT_BY_LATEST


def _trial_template(spec: RawDict) -> None:
    """Success and failure conditions by the trial's kind, and the primary pod labels of Kubeflow's kinds
    (TrainJob's are JobSet's first node). Only an inline trialSpec is defaulted: a ConfigMap's template is
    not read here, as Katib does not read it either."""
    template = spec.get("trialTemplate")
    if not isinstance(template, dict) or template.get("trialSpec") is None:
        return
    kind = as_dict(template.get("trialSpec")).get("kind")
    if kind == k.JOB_KIND:
        success, failure, labels = k.DEFAULT_JOB_SUCCESS_CONDITION, k.DEFAULT_JOB_FAILURE_CONDITION, None
    elif kind == k.TRAINJOB_KIND:
        success, failure = k.DEFAULT_TRAINJOB_SUCCESS_CONDITION, k.DEFAULT_TRAINJOB_FAILURE_CONDITION
        labels = k.DEFAULT_TRAINJOB_PRIMARY_POD_LABELS
    elif kind in k.KUBEFLOW_JOB_KINDS:
        success, failure = k.DEFAULT_KUBEFLOW_JOB_SUCCESS_CONDITION, k.DEFAULT_KUBEFLOW_JOB_FAILURE_CONDITION
        labels = k.DEFAULT_KUBEFLOW_JOB_PRIMARY_POD_LABELS
    else:
        return
    if not template.get("successCondition"):
        template["successCondition"] = success
    if not template.get("failureCondition"):
        template["failureCondition"] = failure
    if labels is not None and not template.get("primaryPodLabels"):
        template["primaryPodLabels"] = dict(labels)


def _metrics_collector(spec: RawDict) -> None:
    """StdOut when no collector is named; File, TensorFlowEvent and PrometheusMetric get their source."""
    collector_spec = spec.get("metricsCollectorSpec")
    if not isinstance(collector_spec, dict):
        collector_spec = spec["metricsCollectorSpec"] = {}
    collector = collector_spec.get("collector")
    if not isinstance(collector, dict):
        collector = collector_spec["collector"] = {"kind": k.STDOUT_COLLECTOR}
    kind = collector.get("kind")
    if kind == k.PROMETHEUS_COLLECTOR:
        http_get = _child(_child(collector_spec, "source"), "httpGet")
        if not http_get.get("path"):
            http_get["path"] = k.DEFAULT_PROMETHEUS_PATH
        # IntOrString's zero value (and the string "0") print as "0": Katib replaces both.
        if str(http_get.get("port", 0)) == "0":
            http_get["port"] = k.DEFAULT_PROMETHEUS_PORT
    elif kind == k.FILE_COLLECTOR:
        path = _child(_child(collector_spec, "source"), "fileSystemPath")
        _fill(path, kind=k.FILE_KIND, path=k.DEFAULT_FILE_PATH, format=k.TEXT_FORMAT)
    elif kind == k.TFEVENT_COLLECTOR:
        path = _child(_child(collector_spec, "source"), "fileSystemPath")
        _fill(path, kind=k.DIRECTORY_KIND, path=k.DEFAULT_TFEVENT_DIR_PATH)


def _parameter_distribution(spec: RawDict) -> None:
    """`uniform` for every parameter that names no distribution (Go's FeasibleSpace is a value, so a
    parameter without one gets `feasibleSpace: {distribution: uniform}`)."""
    parameters = spec.get("parameters")
    for parameter in parameters if isinstance(parameters, list) else []:
        if not isinstance(parameter, dict):
            continue
        space = _child(parameter, "feasibleSpace")
        if not space.get("distribution"):
            space["distribution"] = k.DISTRIBUTION_UNIFORM


def _child(parent: RawDict, key: str) -> RawDict:
    """`parent[key]`, made an empty object first when it is not one (Go's `if x == nil { x = &T{} }`)."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def _fill(target: RawDict, **values: Any) -> None:
    for key, value in values.items():
        if not target.get(key):
            target[key] = value
