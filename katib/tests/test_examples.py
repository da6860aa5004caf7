"""Katib 0.19's own example Experiments (copied byte for byte into examples/, see its README): each one of
the algorithms and trial kinds we serve is valid after Katib's defaults and gives a plan; each one of
what we do not serve is refused naming the field. Three examples are refused by Katib's own rules, and
are kept here to show we refuse them as Katib does."""

from __future__ import annotations

from pathlib import Path

import pytest

from fields import SpecError
from katib.defaults import with_defaults
from katib.plan import experiment_plan
from katib.validation import validate
from workflows import safeyaml

EXAMPLES = Path(__file__).parent / "examples"
TRIAL_TEMPLATES = safeyaml.load((EXAMPLES / "manifests" / "trial-templates.yaml").read_text())

# example → (Katib's algorithm, our engine's name, the trial's kind)
SERVED = {
    "hp-tuning/random.yaml": ("random", "random", "Job"),
    "hp-tuning/grid.yaml": ("grid", "grid", "Job"),
    "hp-tuning/tpe.yaml": ("tpe", "tpe", "Job"),
    "hp-tuning/multivariate-tpe.yaml": ("multivariate-tpe", "multivariate-tpe", "Job"),
    "hp-tuning/cma-es.yaml": ("cmaes", "cmaes", "Job"),
    "hp-tuning/sobol.yaml": ("sobol", "qmc", "Job"),
    "hp-tuning/optuna-distribution.yaml": ("tpe", "tpe", "Job"),
    "early-stopping/median-stop.yaml": ("random", "random", "Job"),
    "early-stopping/median-stop-with-json-format.yaml": ("random", "random", "Job"),
    "kubeflow-training-operator/pytorchjob-mnist.yaml": ("random", "random", "PyTorchJob"),
    "kubeflow-training-operator/xgboostjob-lightgbm.yaml": ("random", "random", "XGBoostJob"),
    "kubeflow-training-operator/mpijob-horovod.yaml": ("random", "random", "MPIJob"),
    "kubeflow-trainer/trainjob-pytorch.yaml": ("random", "random", "TrainJob"),
    "trial-template/trial-metadata-substitution.yaml": ("random", "random", "Job"),
    "metrics-collector/file-metrics-collector.yaml": ("random", "random", "Job"),
    "metrics-collector/file-metrics-collector-with-json-format.yaml": ("random", "random", "Job"),
    "metrics-collector/metrics-collection-strategy.yaml": ("tpe", "tpe", "Job"),
    "resume-experiment/from-volume-resume.yaml": ("random", "random", "Job"),
    "resume-experiment/long-running-resume.yaml": ("random", "random", "Job"),
}

# example → the fields its refusal names, in order
REFUSED_AT_ADMISSION = {
    "hp-tuning/hyperband.yaml": ["spec.algorithm.algorithmName"],
    "hp-tuning/bayesian-optimization.yaml": ["spec.algorithm.algorithmName"],
    # Katib refuses it too: maxFailedTrialCount 3 > maxTrialCount 2.
    "hp-tuning/simple-pbt.yaml": ["spec.maxFailedTrialCount", "spec.algorithm.algorithmName"],
    "nas/enas-cpu.yaml": ["spec.algorithm.algorithmName", "spec.nasConfig"],
    "nas/enas-gpu.yaml": ["spec.algorithm.algorithmName", "spec.nasConfig"],
    "nas/darts-cpu.yaml": ["spec.algorithm.algorithmName", "spec.nasConfig"],
    "nas/darts-gpu.yaml": ["spec.algorithm.algorithmName", "spec.nasConfig"],
    "kubeflow-training-operator/tfjob-mnist-with-summaries.yaml": [
        "spec.metricsCollectorSpec.collector.kind"
    ],
    "metrics-collector/custom-metrics-collector.yaml": ["spec.metricsCollectorSpec.collector.kind"],
    "argo/argo-workflow.yaml": ["spec.trialTemplate.trialSpec.kind"],
    # Katib refuses it too: its PipelineRun has no ${trialParameters.learningRate}.
    "tekton/pipeline-run.yaml": ["spec.trialTemplate.trialParameters[0].name"],
    # Katib refuses it too against its own default ConfigMap, whose template has no
    # ${trialParameters.numberLayers} (nor optimizer).
    "trial-template/trial-configmap-source.yaml": ["spec.trialTemplate.trialParameters[1].name"],
}

# example → the fields the plan's refusal names (valid for Katib's admission; no domain of ours fits)
REFUSED_BY_PLAN = {
    "hp-tuning/hyperopt-distribution.yaml": [
        "spec.parameters[0].feasibleSpace.distribution",
        "spec.parameters[3].feasibleSpace.distribution",
    ],
}


def experiment(name):
    (document,) = safeyaml.load_documents((EXAMPLES / name).read_text())
    assert document["kind"] == "Experiment"
    return document


def trial_templates(namespace, name, key):
    """Katib's default trial-templates ConfigMap (manifests/v1beta1/components/controller)."""
    metadata = TRIAL_TEMPLATES["metadata"]
    if (namespace, name) != (metadata["namespace"], metadata["name"]):
        return None
    return TRIAL_TEMPLATES["data"].get(key)


def test_every_example_copied_has_an_expected_outcome():
    copied = {
        str(path.relative_to(EXAMPLES))
        for path in EXAMPLES.rglob("*.yaml")
        if path.parent.name != "manifests"
    }
    assert copied == set(SERVED) | set(REFUSED_AT_ADMISSION) | set(REFUSED_BY_PLAN)


@pytest.mark.parametrize("name", sorted(SERVED))
def test_served_examples_are_valid_after_katibs_defaults_and_give_a_plan(name):
    given = experiment(name)
    assert validate(with_defaults(given), configmaps=trial_templates) == []
    plan = experiment_plan(given)
    katib_name, engine, kind = SERVED[name]
    assert (plan.algorithm.katib_name, plan.algorithm.engine) == (katib_name, engine)
    assert given["spec"]["trialTemplate"]["trialSpec"]["kind"] == kind
    assert plan.budget.max_trials == given["spec"]["maxTrialCount"]
    assert len(plan.space.domains) == len(given["spec"]["parameters"])


@pytest.mark.parametrize("name", sorted(REFUSED_AT_ADMISSION))
def test_refused_examples_name_the_field(name):
    errors = validate(with_defaults(experiment(name)), configmaps=trial_templates)
    assert [error.path for error in errors] == REFUSED_AT_ADMISSION[name]
    if name == "trial-template/trial-configmap-source.yaml":
        return  # the plan reads no ConfigMap: admission, which has the cluster, refuses this one
    with pytest.raises(SpecError):
        experiment_plan(experiment(name))


@pytest.mark.parametrize("name", sorted(REFUSED_BY_PLAN))
def test_examples_with_no_domain_of_ours_are_refused_by_the_plan_naming_the_field(name):
    assert validate(with_defaults(experiment(name))) == []
    with pytest.raises(SpecError) as refused:
        experiment_plan(experiment(name))
    assert [error.path for error in refused.value.errors] == REFUSED_BY_PLAN[name]


def test_the_config_map_example_plans_once_its_config_map_holds_a_template_for_its_parameters():
    """Its refusal above is the default ConfigMap's; the Experiment itself is one we run (cmaes)."""
    given = experiment("trial-template/trial-configmap-source.yaml")
    template = (
        "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n"
        "        - name: training-container\n          image: trainer\n          command:\n"
        '            - "--lr=${trialParameters.learningRate}"\n'
        '            - "--num-layers=${trialParameters.numberLayers}"\n'
        '            - "--optimizer=${trialParameters.optimizer}"\n'
        "      restartPolicy: Never\n"
    )
    assert validate(with_defaults(given), configmaps=lambda namespace, name, key: template) == []
    assert experiment_plan(given).algorithm.engine == "cmaes"


def test_grid_example_plans_katibs_forty_five_combinations():
    plan = experiment_plan(experiment("hp-tuning/grid.yaml"))
    assert plan.space.grid_size_up_to(1000) == 9 * 5
    assert plan.space.grid_point(0) == {"lr": "0.010", "momentum": "0.5"}


def test_the_trainjob_example_is_defaulted_with_trainjob_conditions_and_labels():
    template = with_defaults(experiment("kubeflow-trainer/trainjob-pytorch.yaml"))["spec"]["trialTemplate"]
    assert template["successCondition"] == 'status.conditions.#(type=="Complete")#|#(status=="True")#'
    assert template["primaryPodLabels"] == {
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "batch.kubernetes.io/job-completion-index": "0",
    }
