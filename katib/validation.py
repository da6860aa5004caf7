"""Katib's `ValidateExperiment` (pkg/webhook/v1beta1/experiment/validator/validator.go), field by field in
Katib's order, paths and wording, with what Argo-ML does not run refused by field.

Why Katib's order and early returns too: a Katib user fixing an Experiment sees the same first problem
from us as from Katib. Where Katib asks its cluster whether an algorithm, an early stopping rule or a
metrics collector is configured (katib-config), we answer from `katib.served`: the names our engine runs.
NAS (`spec.nasConfig`) is refused by field. The experiment is validated as given: the admission chain
defaults it first (`katib.defaults`), as Katib's mutating webhook does before its validating one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import fields
from fields import FieldError, as_dict
from katib import constants as k
from katib import served
from katib.template import ConfigMapReader, validate_trial_template
from katib.wording import forbidden, go_value, invalid, required

#: Katib's name rule, as Katib applies it: the pattern must match at the start (it is not anchored at the
#: end), and the name may not be longer than 40 characters.
NAME_PATTERN = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?")
NAME_MAX = 40
NAME_MESSAGE = (
    "name must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
    "and end with an alphanumeric character (e.g. 'my-name', or 'abc-123', regex used for validation is "
    "'^[a-z]([-a-z0-9]*[a-z0-9])?)') and may not be longer than 40 characters. "
)
_RESUME_POLICIES = ("", k.RESUME_NEVER, k.RESUME_LONG_RUNNING, k.RESUME_FROM_VOLUME)
_COUNTS = ("maxTrialCount", "parallelTrialCount", "maxFailedTrialCount")


def validate(
    experiment: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    *,
    configmaps: ConfigMapReader | None = None,
) -> list[FieldError]:
    """Every problem Katib's admission finds in `experiment` (and, on an update, against `old`), and every
    part of it we do not run; empty when it may be stored."""
    spec = as_dict(experiment.get("spec"))
    errors = _name(experiment) + _counts(spec)
    if old is not None:
        errors += _restart(spec, old)
    objective = _objective(spec.get("objective"))
    if objective:
        return errors + objective
    errors += _algorithm(spec.get("algorithm"))
    errors += _early_stopping(spec.get("earlyStopping"))
    resume = spec.get("resumePolicy") or ""
    if resume not in _RESUME_POLICIES:
        errors.append(invalid("spec.resumePolicy", resume, "invalid ResumePolicyType"))
    errors += validate_trial_template(experiment, configmaps)
    parameters, nas = spec.get("parameters"), spec.get("nasConfig")
    if not parameters and nas is None:
        errors.append(required("spec", "spec.parameters or spec.nasConfig must be specified"))
    if parameters and nas is not None:
        errors.append(invalid("spec", "", "only one of spec.parameters and spec.nasConfig can be specified"))
    if nas is not None:
        errors.append(
            invalid(
                "spec.nasConfig",
                "",
                "neural architecture search is not served by Argo-ML: search spec.parameters with one of "
                + ", ".join(served.ALGORITHMS),
            )
        )
    if parameters:
        errors += validate_parameters(parameters)
    return errors + _metrics_collector(spec)


def _name(experiment: Mapping[str, Any]) -> list[FieldError]:
    name = as_dict(experiment.get("metadata")).get("name") or ""
    if not isinstance(name, str) or not NAME_PATTERN.match(name) or len(name) > NAME_MAX:
        return [invalid("metadata.name", name, NAME_MESSAGE)]
    return []


def _counts(spec: Mapping[str, Any]) -> list[FieldError]:
    """The three budgets: Katib's bounds, and each against maxTrialCount. A count that is not an integer is
    refused in our shared wording (the CRD's schema refuses it before Katib's webhook ever sees it)."""
    errors: list[FieldError] = []
    counts: dict[str, int] = {}
    for key in _COUNTS:
        value = spec.get(key)
        if value is None:
            continue
        number = fields.as_int(value)
        if number is None:
            errors.append(FieldError(f"spec.{key}", f"must be an integer, not {value!r}"))
        else:
            counts[key] = number
    failed, trials, parallel = (
        counts.get(key) for key in ("maxFailedTrialCount", "maxTrialCount", "parallelTrialCount")
    )
    if failed is not None and failed < 0:
        errors.append(invalid("spec.maxFailedTrialCount", failed, "should not be less than 0"))
    if trials is not None and trials <= 0:
        errors.append(invalid("spec.maxTrialCount", trials, "must be greater than 0"))
    if parallel is not None and parallel <= 0:
        errors.append(invalid("spec.parallelTrialCount", parallel, "must be greater than 0"))
    if failed is not None and trials is not None and failed > trials:
        errors.append(
            invalid("spec.maxFailedTrialCount", failed, "should be less than or equal to spec.maxTrialCount")
        )
    if parallel is not None and trials is not None and parallel > trials:
        errors.append(
            invalid("spec.parallelTrialCount", parallel, "should be less than or equal to spec.maxTrialCount")
        )
    return errors


def _restart(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """An update: a finished Experiment restarts only as Katib allows it (succeeded by reaching its trial
    budget, resumePolicy LongRunning or FromVolume), with more trials than it ran; and only the three
    budgets may change. Specs compare as Go's semantic equality does (a field unset equals its zero value)."""
    errors: list[FieldError] = []
    old_spec = as_dict(old.get("spec"))
    restarting = _semantic(spec) != _semantic(old_spec)
    if restarting and _completed(old) and not _restartable(old):
        errors.append(
            invalid(
                "spec.resumePolicy",
                spec.get("resumePolicy") or "",
                "Experiment can be restarted if it is in succeeded state by reaching max trials and "
                f"spec.resumePolicy = {k.RESUME_LONG_RUNNING} or spec.resumePolicy = {k.RESUME_FROM_VOLUME}, "
                "when experiment is completed",
            )
        )
    trials = fields.as_int(spec.get("maxTrialCount"))
    ran = fields.as_int(as_dict(old.get("status")).get("trials")) or 0
    if restarting and trials is not None and trials <= ran:
        errors.append(invalid("spec.maxTrialCount", trials, "must be greater than status.trials count"))
    edited = {key: value for key, value in old_spec.items() if key not in _COUNTS}
    edited.update({key: spec[key] for key in _COUNTS if key in spec})
    if _semantic(dict(spec)) != _semantic(edited):
        errors.append(
            forbidden(
                "spec",
                "only spec.parallelTrialCount, spec.maxTrialCount and spec.maxFailedTrialCount are editable",
            )
        )
    return errors


def _condition(experiment: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    conditions = as_dict(experiment.get("status")).get("conditions")
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def _true(experiment: Mapping[str, Any], kind: str) -> bool:
    condition = _condition(experiment, kind)
    return condition is not None and condition.get("status") == "True"


def _completed(experiment: Mapping[str, Any]) -> bool:
    return _true(experiment, "Succeeded") or _true(experiment, "Failed")


def _restartable(experiment: Mapping[str, Any]) -> bool:
    """Katib's IsCompletedExperimentRestartable."""
    succeeded = _condition(experiment, "Succeeded")
    resume = as_dict(experiment.get("spec")).get("resumePolicy")
    return (
        _true(experiment, "Succeeded")
        and succeeded is not None
        and succeeded.get("reason") == k.EXPERIMENT_MAX_TRIALS_REACHED_REASON
        and resume in (k.RESUME_LONG_RUNNING, k.RESUME_FROM_VOLUME)
    )


def _semantic(value: object) -> object:
    """`value` with what Go's decoder and `equality.Semantic` cannot tell from unset dropped: nulls, empty
    strings, false, and empty lists and objects (numbers stay: Katib's counts are pointers)."""
    if isinstance(value, Mapping):
        kept = {key: _semantic(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in (None, "", False, [], {})}
    if isinstance(value, list):
        return [_semantic(item) for item in value]
    return value


def _objective(raw: object) -> list[FieldError]:
    if raw is None:
        return [required("spec.objective", "must be specified")]
    objective = as_dict(raw)
    errors: list[FieldError] = []
    kind = objective.get("type") or ""
    if kind not in (k.OBJECTIVE_MINIMIZE, k.OBJECTIVE_MAXIMIZE):
        errors.append(
            invalid("spec.objective.type", kind, f"must be {k.OBJECTIVE_MINIMIZE} or {k.OBJECTIVE_MAXIMIZE}")
        )
    metric = objective.get("objectiveMetricName") or ""
    if not metric:
        errors.append(required("spec.objective.objectiveMetricName", "must be specified"))
    additional = objective.get("additionalMetricNames")
    if isinstance(additional, list) and metric in additional:
        errors.append(
            invalid(
                "spec.objective.additionalMetricNames",
                additional,
                "should not contain spec.objective.objectiveMetricName",
            )
        )
    return errors


def _algorithm(raw: object) -> list[FieldError]:
    if raw is None:
        return [required("spec.algorithm", "must be specified")]
    return _served_name(raw, "spec.algorithm", served.ALGORITHMS, "algorithm")


def _early_stopping(raw: object) -> list[FieldError]:
    if raw is None:
        return []
    return _served_name(raw, "spec.earlyStopping", served.EARLY_STOPPING, "early stopping algorithm")


def _served_name(raw: object, path: str, names: tuple[str, ...], what: str) -> list[FieldError]:
    """`<path>.algorithmName`: required, and one our engine runs. Katib asks katib-config for the service
    that runs it (and words a missing one as a lookup failure); we answer from `served`."""
    name = as_dict(raw).get("algorithmName") or ""
    if not name:
        return [required(f"{path}.algorithmName", "must be specified")]
    if name not in names:
        return [
            invalid(f"{path}.algorithmName", name, served.not_served(f"the {go_value(name)} {what}", names))
        ]
    return []


def validate_parameters(parameters: object) -> list[FieldError]:
    """Katib's validateParameters: each parameter's type, distribution and the parts of its feasible space
    its type allows. Numbers are not read here (Katib does not either): `katib.plan` reads them."""
    errors: list[FieldError] = []
    for index, raw in enumerate(parameters if isinstance(parameters, list) else []):
        path = f"spec.parameters[{index}]"
        parameter = as_dict(raw)
        kind = parameter.get("parameterType") or ""
        if kind not in k.PARAMETER_TYPES:
            errors.append(invalid(f"{path}.parameterType", kind, f"parameterType: {kind} is not supported"))
        space = as_dict(parameter.get("feasibleSpace"))
        distribution = space.get("distribution") or ""
        if distribution and distribution not in k.DISTRIBUTIONS:
            errors.append(
                invalid(
                    f"{path}.feasibleSpace.distribution",
                    distribution,
                    f"distribution: {distribution} is not supported",
                )
            )
        if not _semantic(dict(space)):
            errors.append(required(f"{path}.feasibleSpace", "feasibleSpace must be specified"))
        elif kind in (k.PARAMETER_DOUBLE, k.PARAMETER_INT):
            if space.get("list"):
                errors.append(
                    invalid(
                        f"{path}.feasibleSpace.list",
                        space["list"],
                        f"feasibleSpace.list is not supported for parameterType: {kind}",
                    )
                )
            if not space.get("max") or not space.get("min"):
                errors.append(
                    required(
                        f"{path}.feasibleSpace.max",
                        f"feasibleSpace.max or feasibleSpace.min must be specified for parameterType: {kind}",
                    )
                )
        elif kind in (k.PARAMETER_CATEGORICAL, k.PARAMETER_DISCRETE) and any(
            space.get(key) for key in ("max", "min", "step")
        ):
            errors.append(
                invalid(
                    f"{path}.feasibleSpace",
                    "",
                    f"feasibleSpace .max, .min and .step is not supported for parameterType: {kind}",
                )
            )
    return errors


def _metrics_collector(spec: Mapping[str, Any]) -> list[FieldError]:
    """Katib's validateMetricsCollector. Where Katib asks katib-config for a collector's sidecar, we refuse
    the kinds whose metrics we do not read; Katib's own checks of the kind follow either way."""
    collector_spec = as_dict(spec.get("metricsCollectorSpec"))
    if not isinstance(collector_spec.get("collector"), Mapping):
        return []  # the defaults name StdOut; an undefaulted spec has nothing to check yet
    kind = collector_spec["collector"].get("kind") or ""
    path = "spec.metricsCollectorSpec"
    errors: list[FieldError] = []
    if kind and kind not in served.COLLECTORS:
        errors.append(
            invalid(
                f"{path}.collector.kind",
                kind,
                served.not_served(f"the {go_value(kind)} metrics collector", served.COLLECTORS),
            )
        )
    source = collector_spec.get("source")
    source_spec = as_dict(source)
    system_path = source_spec.get("fileSystemPath")
    file_system = as_dict(system_path)
    if kind in (k.PUSH_COLLECTOR, k.STDOUT_COLLECTOR):
        return errors
    if kind == k.FILE_COLLECTOR:
        if file_system.get("kind") != k.FILE_KIND or not _absolute(file_system.get("path")):
            errors.append(
                required(
                    f"{path}.source.fileSystemPath.path", "file path where metrics file exists is required"
                )
            )
        file_format = file_system.get("format") or ""
        if file_format not in (k.TEXT_FORMAT, k.JSON_FORMAT):
            errors.append(
                required(
                    f"{path}.source.fileSystemPath.format",
                    "format of metrics file is required for metrics collector",
                )
            )
        if file_format == k.JSON_FORMAT and source_spec.get("filter") is not None:
            errors.append(
                invalid(f"{path}.source.filter", "", "filter must be nil when format of metrics file is json")
            )
    elif kind == k.TFEVENT_COLLECTOR:
        if file_system.get("kind") != k.DIRECTORY_KIND or not _absolute(file_system.get("path")):
            errors.append(
                required(
                    f"{path}.source",
                    "directory path where tensorflow event files exist is required by "
                    ".spec.metricsCollectorSpec.source.fileSystemPath.path",
                )
            )
        if file_system.get("format"):
            errors.append(
                invalid(f"{path}.source.fileSystemPath.format", file_system["format"], "must be empty")
            )
    elif kind == k.PROMETHEUS_COLLECTOR:
        errors += _prometheus(as_dict(source_spec.get("httpGet")), kind)
    elif kind == k.CUSTOM_COLLECTOR:
        if collector_spec["collector"].get("customCollector") is None:
            errors.append(
                required(f"{path}.collector.customCollector", f"metrics collector kind: {kind} is required")
            )
        if system_path is not None and (
            not _absolute(file_system.get("path"))
            or file_system.get("kind") not in (k.DIRECTORY_KIND, k.FILE_KIND)
        ):
            errors.append(
                invalid(f"{path}.source.fileSystemPath", "", ".spec.metricsCollectorSpec.source is invalid")
            )
    else:
        errors.append(invalid(f"{path}.collector.kind", kind, f"invalid metrics collector kind: {kind}"))
    return errors + _metrics_format(as_dict(source_spec.get("filter")).get("metricsFormat"))


def _prometheus(http_get: Mapping[str, Any], kind: str) -> list[FieldError]:
    path = "spec.metricsCollectorSpec.source.httpGet"
    errors: list[FieldError] = []
    port = str(http_get.get("port", 0))
    if not re.fullmatch(r"[+-]?[0-9]+", port) or int(port) <= 0:
        errors.append(
            invalid(
                f"{path}.port", port, f"must be a positive integer value for metrics collector kind: {kind}"
            )
        )
    route = http_get.get("path") or ""
    if not isinstance(route, str) or not route.startswith("/"):
        errors.append(invalid(f"{path}.path", route, f"path is invalid for metrics collector kind: {kind}"))
    return errors


def _metrics_format(formats: object) -> list[FieldError]:
    """Each filter must compile and hold two top subexpressions: the metric's name, then its value."""
    path = "spec.metricsCollectorSpec.source.filter.metricsFormat"
    errors: list[FieldError] = []
    for pattern in formats if isinstance(formats, list) else []:
        text = str(pattern)
        try:
            re.compile(text)
        except re.error as error:
            errors.append(invalid(path, text, f"invalid filter: {error}"))
            continue
        if not re.search(r".*\(.*\).*\(.*\).*", text):
            errors.append(invalid(path, text, "two top subexpressions are required"))
    return errors


def _absolute(path: object) -> bool:
    return isinstance(path, str) and path.startswith("/")
