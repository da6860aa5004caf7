"""Katib's `validateTrialTemplate` and `validateTrialJob` (pkg/webhook/v1beta1/experiment/validator), with
the trial kinds we do not run refused by field.

Why a module of its own: the trial template is where a Katib Experiment meets a workload, and its checks
are the ones a user trips over (a `${trialParameters.x}` the template lacks, a reference to no parameter),
so they are ported case by case with Katib's early returns. Where Katib reads a ConfigMap from its
cluster, the caller hands in a reader (`ConfigMapReader`); without one the checks that need the text are
left to the caller that has the cluster.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from fields import FieldError, as_dict
from katib import constants as k
from katib import served
from katib.wording import cut, go_list, go_parameters, go_trial_parameters, invalid, required
from workflows import safeyaml

#: (namespace, name, key) → the text at that key of that ConfigMap, or None when either is missing.
ConfigMapReader = Callable[[str, str, str], str | None]

PATH = "spec.trialTemplate"
PARAMETERS_PATH = f"{PATH}.trialParameters"

# Fields a batch/v1 Job and its spec declare (Kubernetes 1.33): Katib converts a Job trial to the typed
# Job and refuses any field the conversion drops; we refuse the same unknown fields at these two levels,
# and leave the pod template's own fields to the Job's admission when the trial is created.
_JOB_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
_JOB_SPEC_FIELDS = frozenset(
    {
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "podFailurePolicy",
        "successPolicy",
        "backoffLimit",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
        "selector",
        "manualSelector",
        "template",
        "ttlSecondsAfterFinished",
        "completionMode",
        "suspend",
        "podReplacementPolicy",
        "managedBy",
    }
)
_POD_TEMPLATE_FIELDS = frozenset({"metadata", "spec"})
# The typed Job's levels down to the pod spec: (where, Go's type, the fields it declares, the next level).
_JOB_LEVELS = (
    ("", "Job", _JOB_FIELDS, "spec"),
    ("spec", "JobSpec", _JOB_SPEC_FIELDS, "template"),
    ("spec.template", "PodTemplateSpec", _POD_TEMPLATE_FIELDS, "spec"),
)


def validate_trial_template(
    experiment: Mapping[str, Any], configmaps: ConfigMapReader | None = None
) -> list[FieldError]:
    """Katib's validateTrialTemplate, in its order and with its early returns."""
    spec = as_dict(experiment.get("spec"))
    template = spec.get("trialTemplate")
    if not isinstance(template, Mapping):
        return [required(PATH, "must be specified")]
    errors: list[FieldError] = []
    if not template.get("primaryContainerName"):
        errors.append(required(f"{PATH}.primaryContainerName", "must be specified"))
    if not template.get("successCondition") or not template.get("failureCondition"):
        errors.append(required(PATH, "successCondition and failureCondition must be specified"))
    if template.get("trialParameters") is None:
        return [*errors, required(PARAMETERS_PATH, "must be specified")]
    trial_spec, config_map = template.get("trialSpec"), template.get("configMap")
    if trial_spec is None and config_map is None:
        return [
            *errors,
            required(
                f"{PATH}.TrialSource",
                "spec.trialTemplate.trialSpec or spec.trialTemplate.configMap must be specified",
            ),
        ]
    if trial_spec is not None and config_map is not None:
        return [
            *errors,
            required(
                PATH,
                "only one of spec.trialTemplate.trialSpec or spec.trialTemplate.configMap can be specified",
            ),
        ]
    source = as_dict(config_map)
    if config_map is not None and not all(
        source.get(key) for key in ("configMapName", "configMapNamespace", "templatePath")
    ):
        return [
            *errors,
            required(
                f"{PATH}.configMap", "configMapName, configMapNamespace and templatePath must be specified"
            ),
        ]
    if trial_spec is not None:
        return errors + _check_text(spec, template, go_json(trial_spec), True)
    if configmaps is None:
        return errors
    text = configmaps(
        str(source["configMapNamespace"]), str(source["configMapName"]), str(source["templatePath"])
    )
    if text is None:
        problem = (
            f"TemplatePath: {source['templatePath']} not found in ConfigMap "
            f"{source['configMapNamespace']}/{source['configMapName']}"
        )
        return [*errors, invalid(PATH, "", f"unable to parse spec.trialTemplate: {problem}")]
    return errors + _check_text(spec, template, text, False)


def _check_text(
    spec: Mapping[str, Any], template: Mapping[str, Any], text: str, inline: bool
) -> list[FieldError]:
    """The checks on the template's text: every trial parameter used and defined, then the object.

    Katib replaces each parameter's placeholder in turn; we read the placeholders in one pass and replace
    them in one more, which answers the same for every template whose placeholders do not nest, and keeps
    a template of megabytes with thousands of parameters from costing a scan per parameter."""
    errors: list[FieldError] = []
    parameters = template.get("trialParameters")
    listed = _Lazy(lambda: go_trial_parameters(parameters))
    declared = _Lazy(lambda: go_parameters(spec.get("parameters")))
    experiment_parameters = {
        entry.get("name") for entry in _list(spec.get("parameters")) if isinstance(entry, Mapping)
    }
    used = {match.group(1) for match in k.TRIAL_PARAMETER_PATTERN.finditer(text)}
    names: set[str] = set()
    references: set[str] = set()
    for index, parameter in enumerate(_list(parameters)):
        entry = as_dict(parameter)
        name, reference = entry.get("name") or "", entry.get("reference") or ""
        path = f"{PARAMETERS_PATH}[{index}]"
        if not isinstance(name, str) or not isinstance(reference, str):
            errors.append(invalid(path, "", "name and reference must be strings"))
            continue
        if not name or not reference or "{" in name or "}" in name:
            errors.append(
                invalid(path, "", "name and reference must be specified and name must not contain '{' or '}'")
            )
            continue
        if name in names:
            errors.append(
                invalid(
                    f"{path}.name",
                    name,
                    f"parameter name {name} can't be duplicated in spec.trialTemplate.trialParameters: "
                    f"{listed()}",
                )
            )
            continue
        if reference in references:
            errors.append(
                invalid(
                    f"{path}.reference",
                    reference,
                    f"parameter reference {reference} can't be duplicated in "
                    f"spec.trialTemplate.trialParameters: {listed()}",
                )
            )
            continue
        names.add(name)
        references.add(reference)
        if experiment_parameters and not is_meta_key(reference) and reference not in experiment_parameters:
            errors.append(
                invalid(
                    f"{path}.reference",
                    reference,
                    f"parameter reference {reference} does not exist in spec.parameters: {declared()}",
                )
            )
        if name not in used:
            errors.append(
                invalid(
                    f"{path}.name",
                    name,
                    f"parameter name: {name} in spec.trialParameters not found in spec.trialTemplate: "
                    f"{cut(text)}",
                )
            )
            return errors
    text = k.TRIAL_PARAMETER_PATTERN.sub(
        lambda match: "test-value" if match.group(1) in names else match.group(0), text
    )
    left = [match.group(0) for match in k.TRIAL_PARAMETER_PATTERN.finditer(text)]
    if left:
        errors.append(
            invalid(
                PATH,
                "",
                f"parameters: {go_list(left)} in spec.trialTemplate not found in spec.trialParameters: "
                f"{listed()}",
            )
        )
    trial = _unstructured(text)
    if trial is None:
        return [
            *errors,
            invalid(PATH, "", f"unable to convert spec.trialTemplate: {cut(text)} to unstructured"),
        ]
    metadata = as_dict(trial.get("metadata"))
    if metadata.get("name") or metadata.get("namespace"):
        errors.append(
            invalid(PATH, "", "metadata.name and metadata.namespace in spec.trialTemplate must be omitted")
        )
    api_version, kind = trial.get("apiVersion") or "", trial.get("kind") or ""
    if not api_version or not kind:
        errors.append(required(PATH, "APIVersion and Kind in spec.trialTemplate must be specified"))
    else:
        errors.extend(_kind_served(str(api_version), str(kind), inline))
    problem = validate_trial_job(trial)
    if problem is not None:
        errors.append(invalid(PATH, "", f"invalid spec.trialTemplate: {problem}"))
    return errors


def _kind_served(api_version: str, kind: str, inline: bool) -> list[FieldError]:
    """Our refusal of a trial kind no operator of ours runs (Katib runs any kind its config lists)."""
    if (api_version, kind) in served.TRIAL_KINDS:
        return []
    if not inline:
        path, value = f"{PATH}.configMap.templatePath", kind
    elif kind in {served_kind for _, served_kind in served.TRIAL_KINDS}:
        path, value = f"{PATH}.trialSpec.apiVersion", api_version
    else:
        path, value = f"{PATH}.trialSpec.kind", kind
    return [
        invalid(path, value, served.not_served(f"the trial kind {api_version} {kind}", served.trial_kinds()))
    ]


def validate_trial_job(trial: Mapping[str, Any]) -> str | None:
    """Katib's validateTrialJob: a batch/v1 Job must convert to the typed Job without losing a field; any
    other kind is not checked here. What is wrong, in Katib's words, or None."""
    if trial.get("apiVersion") != "batch/v1" or trial.get("kind") != k.JOB_KIND:
        return None
    value: object = trial
    for field, go_type, known, child in _JOB_LEVELS:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            return _wrong_type(field, go_type, value)
        unknown = _unknown(value, known)
        if unknown is not None:
            return _lost("/" + "/".join([*filter(None, field.split(".")), unknown]), value[unknown])
        value = value.get(child)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return _wrong_type("spec.template.spec", "PodSpec", value)
    pod_spec = value
    for key in ("containers", "initContainers"):
        containers = pod_spec.get(key)
        if containers is not None and not isinstance(containers, list):
            return _wrong_type(f"spec.template.spec.{key}", "[]Container", containers)
        for index, container in enumerate(_list(containers)):
            if not isinstance(container, Mapping):
                return _wrong_type(f"spec.template.spec.{key}[{index}]", "Container", container)
    return None


def _unknown(value: Mapping[str, Any], known: frozenset[str]) -> str | None:
    """The first field (by name) of `value` that `known` does not declare, or None."""
    return min((str(key) for key in value if key not in known), default=None)


def _lost(pointer: str, value: object) -> str:
    return f"unable to convert: {pointer} - {cut(json.dumps(value, default=str))} to Job"


def _wrong_type(field: str, go_type: str, value: object) -> str:
    return (
        f"unable to convert spec.TrialTemplate to Job: {field}: cannot unmarshal "
        f"{type(value).__name__} into Go value of type {go_type}"
    )


def is_meta_key(reference: str) -> bool:
    """Katib's isMetaKey: `${trialSpec.Name}`, `${trialSpec.Labels[key]}` and the like refer to the trial's
    own metadata, not to a parameter."""
    match = k.TRIAL_META_PATTERN.search(reference)
    if match is None:
        return False
    key = match.group(1)
    if key in k.TRIAL_META_KEYS:
        return True
    indexed = k.TRIAL_META_INDEX_PATTERN.search(key)
    return indexed is not None and indexed.group(1) in k.TRIAL_META_KEYS


def go_json(value: object) -> str:
    """The trialSpec as Go's json.Marshal writes it (sorted keys, no spaces, <, > and & escaped): the text
    Katib looks for `${trialParameters.x}` in."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    for character, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(character, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _unstructured(text: str) -> Mapping[str, Any] | None:
    """Katib's ConvertStringToUnstructured: a YAML or JSON object with a kind, or None."""
    try:
        value = safeyaml.load_json(text) if text.lstrip().startswith("{") else safeyaml.load(text)
    except safeyaml.YamlRefused:
        return None
    if not isinstance(value, Mapping) or not value.get("kind"):
        return None
    return value


class _Lazy:
    """A message part built on first use and kept: a list of thousands of parameters is written once,
    whatever the number of errors that quote it."""

    def __init__(self, build: Callable[[], str]) -> None:
        self._build = build
        self._value: str | None = None

    def __call__(self) -> str:
        if self._value is None:
            self._value = self._build()
        return self._value


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
