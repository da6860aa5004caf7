"""Katib's TestValidateTrialTemplate and TestValidateTrialJob (validator_test.go, v0.19.0), case by case,
and our refusal of trial kinds we do not run. Katib mocks the template text its Generator returns; we put
the same text inline (trialSpec) or behind a ConfigMap reader, the two ways a template reaches us."""

from __future__ import annotations

import time

import pytest

from katib import served
from katib.template import go_json, is_meta_key, validate_trial_job, validate_trial_template
from katib.tests import fake
from katib.tests.fake import edited, kinds
from workflows import safeyaml

INVALID, REQUIRED = "Invalid value", "Required value"
VALID = fake.experiment()
TEMPLATE = "spec.trialTemplate"
CONFIG_MAP = {
    "configMapName": "config-map-name",
    "configMapNamespace": "config-map-namespace",
    "templatePath": "path",
}

INVALID_PARAMETER_JOB = """apiVersion: batch/v1
kind: Job
spec:
  template:
    spec:
      containers:
        - name: fake-trial
          image: test-image
          command:
            - --invalidParameter={'num_layers': 2, 'input_sizes': [32, 32, 3]}
            - --lr=${trialParameters.learningRate}"
            - --num-layers=${trialParameters.numberLayers}"""


def with_job_command(command):
    job = fake.batch_job()
    job["spec"]["template"]["spec"]["containers"][0]["command"] = command
    return edited(VALID, "spec.trialTemplate.trialSpec", job)


def from_config_map(text):
    """The fake Experiment with its template in a ConfigMap whose text is `text` (None: not found)."""
    experiment = edited(VALID, "spec.trialTemplate.trialSpec", None)
    experiment = edited(experiment, "spec.trialTemplate.configMap", dict(CONFIG_MAP))
    return experiment, (lambda namespace, name, key: text)


def trial_spec_edit(field, value):
    return edited(VALID, f"spec.trialTemplate.trialSpec.{field}", value)


TEMPLATE_CASES = [
    (
        "Trial parameters is nil",
        edited(VALID, "spec.trialTemplate.trialParameters", None),
        None,
        [(f"{TEMPLATE}.trialParameters", REQUIRED)],
    ),
    (
        "Trial spec nil",
        edited(VALID, "spec.trialTemplate.trialSpec", None),
        None,
        [(f"{TEMPLATE}.TrialSource", REQUIRED)],
    ),
    (
        "Trial spec and ConfigMap is not nil",
        edited(VALID, "spec.trialTemplate.configMap", dict(CONFIG_MAP)),
        None,
        [(TEMPLATE, REQUIRED)],
    ),
    (
        "Missed template path in ConfigMap",
        edited(
            edited(VALID, "spec.trialTemplate.trialSpec", None),
            "spec.trialTemplate.configMap",
            {"configMapName": "config-map-name", "configMapNamespace": "config-map-namespace"},
        ),
        None,
        [(f"{TEMPLATE}.configMap", REQUIRED)],
    ),
    ("Wrong template path in ConfigMap", *from_config_map(None), [(TEMPLATE, INVALID)]),
    (
        "Empty reference or name in Trial parameters",
        edited(VALID, "spec.trialTemplate.trialParameters.0.reference", ""),
        None,
        [(f"{TEMPLATE}.trialParameters[0]", INVALID), (TEMPLATE, INVALID)],
    ),
    (
        "Wrong name in Trial parameters",
        edited(VALID, "spec.trialTemplate.trialParameters.0.name", "{invalid-name}"),
        None,
        [(f"{TEMPLATE}.trialParameters[0]", INVALID), (TEMPLATE, INVALID)],
    ),
    (
        "Duplicate name in Trial parameters",
        edited(VALID, "spec.trialTemplate.trialParameters.1.name", "learningRate"),
        None,
        [(f"{TEMPLATE}.trialParameters[1].name", INVALID), (TEMPLATE, INVALID)],
    ),
    (
        "Duplicate reference in Trial parameters",
        edited(VALID, "spec.trialTemplate.trialParameters.1.reference", "lr"),
        None,
        [(f"{TEMPLATE}.trialParameters[1].reference", INVALID), (TEMPLATE, INVALID)],
    ),
    (
        "Trial template contains Trial parameters which weren't referenced from spec.parameters",
        edited(VALID, "spec.trialTemplate.trialParameters.1.reference", "wrong-ref"),
        None,
        [(f"{TEMPLATE}.trialParameters[1].reference", INVALID)],
    ),
    (
        "Trial template contains Trial parameters when spec.parameters is empty",
        edited(
            edited(VALID, "spec.parameters", None),
            "spec.trialTemplate.trialParameters.1.reference",
            "wrong-ref",
        ),
        None,
        [],
    ),
    (
        "Trial template contains Trial metadata reference as parameter",
        edited(VALID, "spec.trialTemplate.trialParameters.1.reference", "${trialSpec.Name}"),
        None,
        [],
    ),
    (
        "Trial template contains Trial annotation reference as parameter",
        edited(
            VALID,
            "spec.trialTemplate.trialParameters.1.reference",
            "${trialSpec.Annotations[test-annotation]}",
        ),
        None,
        [],
    ),
    (
        "Trial template contains Trial's label reference as parameter",
        edited(VALID, "spec.trialTemplate.trialParameters.1.reference", "${trialSpec.Labels[test-label]}"),
        None,
        [],
    ),
    (
        "Trial template doesn't contain parameter from Trial parameters",
        with_job_command([*fake.COMMAND[:2], "--lr=${trialParameters.invalidParameter}", *fake.COMMAND[3:]]),
        None,
        [(TEMPLATE, INVALID)],
    ),
    (
        "Trial template contains extra parameter",
        with_job_command([*fake.COMMAND, "--extra-parameter=${trialParameters.extraParameter}"]),
        None,
        [(TEMPLATE, INVALID)],
    ),
    (
        "Trial template is unable to convert to unstructured after substitution",
        *from_config_map(INVALID_PARAMETER_JOB),
        [(f"{TEMPLATE}.trialParameters[1].name", INVALID)],
    ),
    (
        "Trial template contains metadata.name or metadata.namespace",
        trial_spec_edit("metadata", {"name": "trial-name", "namespace": "trial-namespace"}),
        None,
        [(TEMPLATE, INVALID)],
    ),
    (
        "Trial template doesn't contain APIVersion or Kind",
        trial_spec_edit("apiVersion", ""),
        None,
        [(TEMPLATE, REQUIRED)],
    ),
    (
        # Katib runs any kind its config lists; we refuse kinds no operator of ours runs, by field.
        "Trial template has custom Kind",
        trial_spec_edit("kind", "CustomKind"),
        None,
        [(f"{TEMPLATE}.trialSpec.kind", INVALID)],
    ),
    (
        "Trial template doesn't have PrimaryContainerName",
        edited(VALID, "spec.trialTemplate.primaryContainerName", ""),
        None,
        [(f"{TEMPLATE}.primaryContainerName", REQUIRED)],
    ),
    (
        "Trial template doesn't have SuccessCondition",
        edited(VALID, "spec.trialTemplate.successCondition", ""),
        None,
        [(TEMPLATE, REQUIRED)],
    ),
]


@pytest.mark.parametrize(
    ("instance", "configmaps", "wanted"),
    [case[1:] for case in TEMPLATE_CASES],
    ids=[case[0] for case in TEMPLATE_CASES],
)
def test_validate_trial_template(instance, configmaps, wanted):
    """TestValidateTrialTemplate."""
    assert kinds(validate_trial_template(instance, configmaps)) == wanted


def test_a_missing_template_and_parameters_are_worded_as_katib_words_them():
    missing = from_config_map(None)
    assert [str(error) for error in validate_trial_template(*missing)] == [
        'spec.trialTemplate: Invalid value: "": unable to parse spec.trialTemplate: TemplatePath: path not '
        "found in ConfigMap config-map-namespace/config-map-name"
    ]
    duplicate = edited(VALID, "spec.trialTemplate.trialParameters.1.name", "learningRate")
    assert str(validate_trial_template(duplicate)[0]) == (
        'spec.trialTemplate.trialParameters[1].name: Invalid value: "learningRate": parameter name '
        "learningRate "
        "can't be duplicated in spec.trialTemplate.trialParameters: [{learningRate Learning rate lr} "
        "{learningRate Momentum for the training model momentum}]"
    )
    wrong = edited(VALID, "spec.trialTemplate.trialParameters.1.reference", "wrong-ref")
    assert str(validate_trial_template(wrong)[0]) == (
        'spec.trialTemplate.trialParameters[1].reference: Invalid value: "wrong-ref": parameter reference '
        "wrong-ref does not exist in spec.parameters: [{lr int {5 1 []  uniform}} "
        "{momentum categorical {  [0.95 0.85 0.75]  }}]"
    )
    extra = with_job_command([*fake.COMMAND, "--a=${trialParameters.a}", "--b=${trialParameters.b}"])
    assert str(validate_trial_template(extra)[0]) == (
        'spec.trialTemplate: Invalid value: "": parameters: [${trialParameters.a} ${trialParameters.b}] in '
        "spec.trialTemplate not found in spec.trialParameters: [{learningRate Learning rate lr} "
        "{momentum Momentum for the training model momentum}]"
    )


def test_a_template_not_checked_without_a_reader_is_left_to_the_caller_with_the_cluster():
    experiment, _ = from_config_map("anything")
    assert validate_trial_template(experiment) == []


def test_a_long_template_is_quoted_cut_short():
    job = fake.batch_job()
    job["spec"]["template"]["spec"]["containers"][0]["args"] = ["x" * 5000]
    experiment = edited(
        edited(VALID, "spec.trialTemplate.trialSpec", job),
        "spec.trialTemplate.trialParameters.0.name",
        "other",
    )
    message = validate_trial_template(experiment)[0].message
    assert len(message) < 600
    assert message.endswith("more characters)")


@pytest.mark.parametrize(("api_version", "kind"), served.TRIAL_KINDS)
def test_every_served_trial_kind_is_accepted(api_version, kind):
    spec = {**fake.batch_job(), "apiVersion": api_version, "kind": kind}
    assert validate_trial_template(edited(VALID, "spec.trialTemplate.trialSpec", spec)) == []


@pytest.mark.parametrize(
    ("api_version", "kind", "path"),
    [
        ("argoproj.io/v1alpha1", "Workflow", "spec.trialTemplate.trialSpec.kind"),
        ("tekton.dev/v1beta1", "PipelineRun", "spec.trialTemplate.trialSpec.kind"),
        ("kubeflow.org/v1", "MXJob", "spec.trialTemplate.trialSpec.kind"),
        ("argoml.io/v1alpha1", "TFJob", "spec.trialTemplate.trialSpec.apiVersion"),
        ("kubeflow.org/v1", "TrainJob", "spec.trialTemplate.trialSpec.apiVersion"),
    ],
)
def test_trial_kinds_we_do_not_run_are_refused_by_field(api_version, kind, path):
    spec = {
        "apiVersion": api_version,
        "kind": kind,
        "spec": {"args": ["${trialParameters.learningRate}", "${trialParameters.momentum}"]},
    }
    errors = validate_trial_template(edited(VALID, "spec.trialTemplate.trialSpec", spec))
    assert [error.path for error in errors] == [path]
    assert errors[0].message.endswith(
        f"the trial kind {api_version} {kind} is not served by Argo-ML: use one of batch/v1 Job, "
        "kubeflow.org/v1 "
        "TFJob, kubeflow.org/v1 PyTorchJob, kubeflow.org/v1 XGBoostJob, kubeflow.org/v1 MPIJob, "
        "trainer.kubeflow.org/v1alpha1 TrainJob"
    )


def test_a_config_map_template_of_a_kind_we_do_not_run_names_the_template_path():
    experiment, reader = from_config_map(
        "apiVersion: argoproj.io/v1alpha1\nkind: Workflow\nspec:\n  args: [${trialParameters.learningRate}, "
        "${trialParameters.momentum}]\n"
    )
    assert [error.path for error in validate_trial_template(experiment, reader)] == [
        "spec.trialTemplate.configMap.templatePath"
    ]


def test_a_template_without_a_kind_cannot_be_converted_as_in_kubernetes():
    errors = validate_trial_template(trial_spec_edit("kind", None))
    assert kinds(errors) == [(TEMPLATE, INVALID)]
    assert "to unstructured" in errors[0].message


def _job(text):
    return safeyaml.load(text)


JOB_CASES = [
    (
        "Trial template has invalid Batch Job parameter",
        "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n"
        "        name: container-must-be-list",
        True,
    ),
    (
        "Trial template has invalid Batch Job structure",
        "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    invalidSpec: not-job-format\n    spec:\n"
        "      containers:\n        - name: invalid-list",
        True,
    ),
    (
        "Valid case with nvidia.com/gpu resource in Trial template",
        "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n        "
        "- resources:\n"
        "            limits:\n              nvidia.com/gpu: 1\n            requests:\n              "
        "nvidia.com/gpu: 1",
        False,
    ),
    (
        "Only validate Kuernetes Job",
        "apiVersion: test/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n      - "
        "name: container",
        False,
    ),
]


@pytest.mark.parametrize(
    ("text", "fails"), [case[1:] for case in JOB_CASES], ids=[case[0] for case in JOB_CASES]
)
def test_validate_trial_job(text, fails):
    """TestValidateTrialJob."""
    assert (validate_trial_job(_job(text)) is not None) == fails


def test_a_job_the_typed_job_cannot_hold_is_refused_at_admission():
    job = fake.batch_job()
    job["spec"]["template"]["invalidSpec"] = "not-job-format"
    errors = validate_trial_template(edited(VALID, "spec.trialTemplate.trialSpec", job))
    assert [str(error) for error in errors] == [
        'spec.trialTemplate: Invalid value: "": invalid spec.trialTemplate: unable to convert: '
        '/spec/template/invalidSpec - "not-job-format" to Job'
    ]


def test_a_config_map_template_that_is_not_yaml_cannot_be_converted():
    experiment, reader = from_config_map(
        "kind: Job\nargs: [${trialParameters.learningRate}, ${trialParameters.momentum}\n"
    )
    errors = validate_trial_template(experiment, reader)
    assert kinds(errors) == [(TEMPLATE, INVALID)]
    assert errors[0].message.startswith('Invalid value: "": unable to convert spec.trialTemplate: kind: Job')


@pytest.mark.parametrize(
    ("job", "wanted"),
    [
        ({}, None),
        ({"spec": {}}, None),
        ({"spec": {"template": {}}}, None),
        ({"spec": {"template": {"spec": []}}}, "PodSpec"),
        ({"spec": {"template": {"spec": {"containers": ["x"]}}}}, "Container"),
        ({"spec": {"template": {"spec": {"initContainers": {}}}}}, "[]Container"),
    ],
)
def test_each_level_of_the_typed_job_is_checked(job, wanted):
    problem = validate_trial_job({"apiVersion": "batch/v1", "kind": "Job", **job})
    assert (problem is None) if wanted is None else problem.endswith(f"into Go value of type {wanted}")


def test_a_job_field_the_typed_job_drops_is_named():
    assert validate_trial_job({"apiVersion": "batch/v1", "kind": "Job", "spec": {"backoffLimitt": 3}}) == (
        "unable to convert: /spec/backoffLimitt - 3 to Job"
    )
    assert validate_trial_job({"apiVersion": "batch/v1", "kind": "Job", "spek": {}}) == (
        "unable to convert: /spek - {} to Job"
    )
    assert "PodTemplateSpec" in validate_trial_job(
        {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": []}}
    )


@pytest.mark.parametrize(
    ("reference", "meta"),
    [
        ("${trialSpec.Name}", True),
        ("${trialSpec.Namespace}", True),
        ("${trialSpec.Kind}", True),
        ("${trialSpec.APIVersion}", True),
        ("${trialSpec.Labels[custom-key]}", True),
        ("${trialSpec.Annotations[custom-key]}", True),
        ("${trialSpec.UID}", False),
        ("${trialSpec.Spec[x]}", False),
        ("lr", False),
    ],
)
def test_meta_keys_are_katibs(reference, meta):
    assert is_meta_key(reference) is meta


def test_the_template_text_is_gos_json():
    assert go_json({"b": "<a&b>", "a": [1, "\u2028"]}) == '{"a":[1,"\\u2028"],"b":"\\u003ca\\u0026b\\u003e"}'


def test_thousands_of_parameters_in_a_large_template_cost_one_scan_not_one_per_parameter():
    count = 20_000
    job = fake.batch_job()
    job["spec"]["template"]["spec"]["containers"][0]["args"] = [
        f"--p{index}=${{trialParameters.p{index}}}" for index in range(count)
    ] + ["x" * 2_000_000]
    parameters = [
        {"name": f"p{index}", "reference": f"${{trialSpec.Labels[l{index}]}}"} for index in range(count)
    ]
    experiment = edited(
        edited(VALID, "spec.trialTemplate.trialSpec", job), "spec.trialTemplate.trialParameters", parameters
    )
    experiment = edited(experiment, "spec.parameters", None)
    started = time.process_time()  # CPU time: a loaded machine's wall clock counts other processes too
    errors = validate_trial_template(experiment)
    assert time.process_time() - started < 5
    assert kinds(errors) == [(TEMPLATE, INVALID)]  # the fake job's own two placeholders have no parameter
    duplicates = [{"name": "p0", "reference": f"${{trialSpec.Labels[r{index}]}}"} for index in range(count)]
    started = time.process_time()
    errors = validate_trial_template(edited(experiment, "spec.trialTemplate.trialParameters", duplicates))
    assert time.process_time() - started < 5
    assert len(errors) == count
