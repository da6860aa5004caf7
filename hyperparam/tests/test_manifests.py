"""Building a sweep's Argo Workflows: fan-out, names, ownership, labels, batching under the size limit."""

from __future__ import annotations

import copy
import json

import pytest

from fields import SpecError
from hyperparam.batching import (
    BATCH_BUDGET_BYTES,
    MAX_TRIALS_PER_BATCH,
    OBJECT_LIMIT_BYTES,
    BatchPlan,
    json_size,
    trial_status_bytes,
)
from hyperparam.manifests import (
    LABEL_BATCH,
    LABEL_SWEEP,
    LABEL_SWEEP_UID,
    build_batch,
    build_workflow,
    iter_workflows,
    label_value,
    plan_batches,
    sweep_of,
    sweep_selector,
    workflow_name,
)
from hyperparam.sweep import PlannedTrial
from hyperparam.tests import fake_argo
from hyperparam.tests.conftest import TRAIN_TEMPLATE, make_hpw, make_spec
from workflows.lint import lint_document


def only_workflow(hpw: dict) -> dict:
    [workflow] = list(iter_workflows(hpw))
    return workflow


def fanout_step(workflow: dict) -> dict:
    return fake_argo.entry_template(workflow)["steps"][0][0]


# --- one batch of a 3x4 grid ----------------------------------------------------------------------


def test_a_3x4_grid_is_one_workflow_with_twelve_items(hpw):
    workflow = only_workflow(hpw)
    items = fanout_step(workflow)["withItems"]
    assert [(item["argoml-trial"], item["lr"], item["batch-size"]) for item in items] == [
        (str(index), lr, bs)
        for index, (lr, bs) in enumerate(
            (lr, bs) for lr in ("0.1", "0.2", "0.3") for bs in ("16", "32", "64", "128")
        )
    ]


def test_the_workflow_is_named_owned_and_labelled_by_the_sweep(hpw):
    workflow = only_workflow(hpw)
    assert workflow["apiVersion"] == "argoproj.io/v1alpha1"
    assert workflow["kind"] == "Workflow"
    assert workflow["metadata"]["name"] == "mnist-sweep-0"
    assert workflow["metadata"]["namespace"] == "team-a"
    assert workflow["metadata"]["labels"] == {
        LABEL_SWEEP: "mnist-sweep",
        LABEL_SWEEP_UID: "0b9f-uid",
        LABEL_BATCH: "0",
    }
    assert workflow["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "argoml.io/v1alpha1",
            "kind": "HyperparamWorkflow",
            "name": "mnist-sweep",
            "uid": "0b9f-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_the_workflow_selector_matches_the_labels(hpw):
    labels = only_workflow(hpw)["metadata"]["labels"]
    assert sweep_selector(hpw).items() <= labels.items()
    assert sweep_selector(make_hpw(uid="")) == {LABEL_SWEEP: "mnist-sweep"}


def test_the_users_templates_and_arguments_are_kept(hpw):
    workflow = only_workflow(hpw)
    user_spec = hpw["spec"]["workflow"]
    assert workflow["spec"]["templates"][0] == TRAIN_TEMPLATE
    assert workflow["spec"]["arguments"] == user_spec["arguments"]
    assert workflow["spec"]["entrypoint"] == "argoml-sweep"
    assert set(workflow["spec"]) == {"entrypoint", "templates", "arguments"}


def test_other_workflow_settings_pass_through_untouched(spec):
    spec["workflow"] |= {
        "serviceAccountName": "trainer",
        "podGC": {"strategy": "OnPodSuccess"},
        "parallelism": 8,
    }
    workflow = only_workflow(make_hpw(spec))
    assert workflow["spec"]["serviceAccountName"] == "trainer"
    assert workflow["spec"]["podGC"] == {"strategy": "OnPodSuccess"}
    assert workflow["spec"]["parallelism"] == 8


def test_the_sweep_is_not_modified_by_building(hpw):
    before = copy.deepcopy(hpw)
    workflow = only_workflow(hpw)
    workflow["spec"]["templates"][0]["name"] = "changed"
    assert hpw == before


def test_the_fanout_calls_the_entrypoint_with_every_hyperparameter_by_name(hpw):
    entry = fake_argo.entry_template(only_workflow(hpw))
    assert entry["parallelism"] == 4
    assert entry["failFast"] is False
    step = entry["steps"][0][0]
    assert step["template"] == "train"
    assert step["continueOn"] == {"failed": True, "error": True}
    assert step["arguments"]["parameters"] == [
        {"name": "lr", "value": "{{item.lr}}"},
        {"name": "batch-size", "value": "{{item.batch-size}}"},
    ]


def test_each_trial_receives_its_parameters_exactly_as_written(spec):
    spec["hyperparams"] = [
        {"name": "lr", "values": ["0.10", "1e-3", 0.1]},
        {"name": "batch-size", "range": {"min": 0.1, "max": 0.3, "step": 0.1}},
    ]
    received = [arguments for _, arguments in fake_argo.expand(only_workflow(make_hpw(spec)))]
    assert [(a["lr"], a["batch-size"]) for a in received] == [
        (lr, bs) for lr in ("0.10", "1e-3", "0.1") for bs in ("0.1", "0.2", "0.3")
    ]


def test_entrypoint_inputs_from_workflow_arguments_are_passed_on(spec):
    spec["workflow"]["templates"][0]["inputs"]["parameters"].append({"name": "dataset"})
    workflow = only_workflow(make_hpw(spec))
    assert fanout_step(workflow)["arguments"]["parameters"][-1] == {
        "name": "dataset",
        "value": "{{workflow.parameters.dataset}}",
    }
    assert all(arguments["dataset"] == "mnist" for _, arguments in fake_argo.expand(workflow))


def test_the_fanout_template_does_not_take_a_users_template_name(spec):
    for name in ("argoml-sweep", "argoml-sweep-2"):
        spec["workflow"]["templates"].append({"name": name, "container": {"image": "busybox"}})
    workflow = only_workflow(make_hpw(spec))
    assert workflow["spec"]["entrypoint"] == "argoml-sweep-3"
    assert [t["name"] for t in workflow["spec"]["templates"]] == [
        "train",
        "argoml-sweep",
        "argoml-sweep-2",
        "argoml-sweep-3",
    ]


def test_a_sweep_without_uid_renders_without_owner(spec):
    workflow = only_workflow(make_hpw(spec, uid=""))
    assert "ownerReferences" not in workflow["metadata"]
    assert LABEL_SWEEP_UID not in workflow["metadata"]["labels"]


def test_building_twice_gives_the_same_workflow(hpw):
    assert only_workflow(hpw) == only_workflow(copy.deepcopy(hpw))


def test_an_invalid_sweep_raises_its_field_errors(spec):
    spec["hyperparams"][0]["range"]["step"] = 0
    with pytest.raises(SpecError, match=r"spec\.hyperparams\[0\]\.range\.step: must be > 0"):
        only_workflow(make_hpw(spec))


# --- adaptive rounds: trials handed in ------------------------------------------------------------


def test_any_trials_can_be_built_into_a_batch(hpw):
    trials = [
        PlannedTrial(40, {"lr": "0.05", "batch-size": "24"}),
        PlannedTrial(41, {"lr": "1", "batch-size": "8"}),
    ]
    workflow = build_workflow(hpw, 7, trials)
    assert workflow["metadata"]["name"] == "mnist-sweep-7"
    assert workflow["metadata"]["labels"][LABEL_BATCH] == "7"
    assert fanout_step(workflow)["withItems"] == [
        {"argoml-trial": "40", "lr": "0.05", "batch-size": "24"},
        {"argoml-trial": "41", "lr": "1", "batch-size": "8"},
    ]


@pytest.mark.parametrize(
    "params",
    [{"lr": "0.1"}, {"lr": "0.1", "batch-size": "8", "extra": "1"}, {"lr": 0.1, "batch-size": "8"}],
)
def test_trials_must_carry_exactly_the_hyperparameters_as_strings(hpw, params):
    with pytest.raises(ValueError, match="trial 3: parameters must be strings"):
        build_workflow(hpw, 0, [PlannedTrial(3, params)])


def test_a_batch_cannot_exceed_the_plan(hpw):
    plan = plan_batches(hpw)
    trials = [PlannedTrial(i, {"lr": "0.1", "batch-size": "8"}) for i in range(plan.trials_per_batch + 1)]
    with pytest.raises(ValueError, match="exceed the plan"):
        build_workflow(hpw, 0, trials, plan=plan)
    with pytest.raises(ValueError, match="at least one trial"):
        build_workflow(hpw, 0, [], plan=plan)


# --- names --------------------------------------------------------------------------------------------------


def test_workflow_names_are_sweep_dash_batch():
    assert workflow_name("mnist", 0) == "mnist-0"
    assert workflow_name("mnist", 1234) == "mnist-1234"


def test_long_sweep_names_are_shortened_with_a_hash_within_63_characters():
    long_a, long_b = "a" * 70 + "-x", "a" * 70 + "-y"
    name_a = workflow_name(long_a, 123)
    assert len(name_a) <= 63
    assert name_a.endswith("-123")
    assert name_a == workflow_name(long_a, 123)
    assert name_a != workflow_name(long_b, 123)
    assert len(workflow_name("b" * 59, 0)) == 61
    assert workflow_name("b" * 62, 0) != "b" * 62 + "-0"


def test_label_values_fit_63_characters_and_stay_distinct():
    assert label_value("short") == "short"
    long_a, long_b = "n" * 80 + "a", "n" * 80 + "b"
    assert len(label_value(long_a)) <= 63
    assert label_value(long_a) != label_value(long_b)
    assert label_value(long_a)[-1].isalnum()


def test_a_long_sweep_name_still_builds_a_valid_workflow(spec):
    workflow = only_workflow(make_hpw(spec, name="x" * 200))
    assert len(workflow["metadata"]["name"]) <= 63
    assert len(workflow["metadata"]["labels"][LABEL_SWEEP]) <= 63


# --- batching -----------------------------------------------------------------------------------------------


def grid_100k(**overrides) -> dict:
    return make_hpw(
        make_spec(
            hyperparams=[
                {"name": "lr", "range": {"min": 0.0001, "max": 0.01, "step": 0.0001}},
                {"name": "batch-size", "range": {"min": 1, "max": 1000}},
            ],
            **overrides,
        )
    )


def test_a_100k_grid_is_split_into_workflows_well_under_the_size_limit():
    hpw = grid_100k(parallelism=50)
    plan = plan_batches(hpw)
    seen = 0
    for batch_index, workflow in enumerate(iter_workflows(hpw)):
        assert json_size(workflow) < BATCH_BUDGET_BYTES
        items = fanout_step(workflow)["withItems"]
        assert [int(item["argoml-trial"]) for item in items] == list(plan.batch_trials(batch_index))
        seen += len(items)
    assert seen == 100_000
    assert batch_index == plan.batch_count - 1


@pytest.mark.parametrize("which", ["first", "middle", "last"])
def test_a_100k_grid_batch_stays_under_1_mib_after_argo_writes_every_node(which):
    hpw = grid_100k(parallelism=50)
    plan = plan_batches(hpw)
    batch_index = {"first": 0, "middle": plan.batch_count // 2, "last": plan.batch_count - 1}[which]
    workflow = build_batch(hpw, batch_index, plan=plan)
    failed_with_long_messages = fake_argo.Outcome(phase="Failed", metric=None, message="OOMKilled " * 20)
    finished = fake_argo.run(workflow, lambda position, arguments: failed_with_long_messages)
    assert len(json.dumps(finished, separators=(",", ":")).encode()) < OBJECT_LIMIT_BYTES // 2


def test_the_status_estimate_is_at_least_a_real_nodes_size(hpw):
    sweep = sweep_of(hpw)
    workflow = build_batch(hpw, 0)
    finished = fake_argo.run(workflow, lambda p, a: fake_argo.Outcome(message="x" * 200))
    trial_nodes = [node for node in finished["status"]["nodes"].values() if node["type"] == "Pod"]
    real = max(json_size(node) for node in trial_nodes)
    name_length = max(len(node["name"]) for node in trial_nodes)
    assert trial_status_bytes(workflow["spec"], sweep.entrypoint, name_length) > 2 * real


def test_a_trial_that_runs_many_nodes_gets_smaller_batches(spec):
    simple = plan_batches(make_hpw(spec)).trials_per_batch
    spec["workflow"]["templates"] = [
        {**TRAIN_TEMPLATE, "name": "fit", "retryStrategy": {"limit": 2}},
        {
            "name": "train",
            "inputs": TRAIN_TEMPLATE["inputs"],
            "outputs": {
                "parameters": [
                    {"name": "loss", "valueFrom": {"parameter": "{{tasks.fit.outputs.parameters.loss}}"}}
                ]
            },
            "dag": {
                "tasks": [
                    {"name": "prepare", "template": "fit"},
                    {"name": "fit", "template": "fit", "dependencies": ["prepare"]},
                    {"name": "shards", "template": "fit", "withItems": [1, 2, 3, 4]},
                ]
            },
        },
    ]
    nested = plan_batches(make_hpw(spec)).trials_per_batch
    # One DAG node plus 6 tasks (4 behind a task group), each a retry node with 3 attempts: ~20 nodes a trial.
    assert simple / nested > 15


def test_a_trial_too_large_for_any_workflow_is_a_spec_error(spec):
    spec["workflow"]["templates"].append(
        {"name": "wide", "steps": [[{"name": "s", "template": "train", "withSequence": {"count": "5000"}}]]}
    )
    spec["workflow"]["templates"][0] = {
        **spec["workflow"]["templates"][0],
        "steps": [[{"name": "w", "template": "wide"}]],
    }
    del spec["workflow"]["templates"][0]["container"]
    with pytest.raises(SpecError, match=r"spec\.workflow: one trial's estimated Workflow status"):
        plan_batches(make_hpw(spec))


def test_batches_never_exceed_the_trial_cap():
    plan = plan_batches(
        make_hpw(
            make_spec(hyperparams=[{"name": "lr", "values": [1]}, {"name": "batch-size", "values": [1]}])
        )
    )
    assert plan.trials_per_batch <= MAX_TRIALS_PER_BATCH


def test_batch_ranges_cover_every_trial_once():
    plan = BatchPlan(trial_count=1001, trials_per_batch=100, parallelism=10)
    assert plan.batch_count == 11
    assert plan.batch_trials(0) == range(0, 100)
    assert plan.batch_trials(10) == range(1000, 1001)
    assert plan.batch_of(999) == 9
    with pytest.raises(IndexError):
        plan.batch_trials(11)


def test_one_batch_runs_at_a_time_when_it_can_hold_the_parallelism():
    plan = BatchPlan(trial_count=1000, trials_per_batch=100, parallelism=10)
    assert plan.concurrent_batches == 1
    assert plan.workflow_parallelism == 10
    assert plan.batches_to_create(existing=set(), finished=set()) == [0]
    assert plan.batches_to_create(existing={0}, finished=set()) == []
    assert plan.batches_to_create(existing={0}, finished={0}) == [1]
    assert plan.batches_to_create(existing=set(range(10)), finished=set(range(10))) == []


def test_parallelism_beyond_a_batch_runs_batches_side_by_side_without_exceeding_it():
    plan = BatchPlan(trial_count=10_000, trials_per_batch=150, parallelism=400)
    assert plan.concurrent_batches == 3
    assert plan.workflow_parallelism == 133
    assert plan.concurrent_batches * plan.workflow_parallelism <= 400
    assert plan.batches_to_create(existing=set(), finished=set()) == [0, 1, 2]
    assert plan.batches_to_create(existing={0, 1, 2}, finished={1}) == [3]


def test_a_small_sweep_is_not_split_into_idle_batches():
    plan = BatchPlan(trial_count=12, trials_per_batch=200, parallelism=1000)
    assert plan.batch_count == 1
    assert plan.concurrent_batches == 1
    assert plan.workflow_parallelism == 200


def test_the_plan_carries_the_sweeps_parallelism_into_each_workflow():
    hpw = grid_100k(parallelism=1000)
    plan = plan_batches(hpw)
    workflow = build_batch(hpw, 0, plan=plan)
    assert fake_argo.entry_template(workflow)["parallelism"] == plan.workflow_parallelism
    assert plan.concurrent_batches * plan.workflow_parallelism <= 1000


def test_random_batches_are_computed_independently():
    spec = make_spec(
        algorithm={"name": "random", "samples": 2000, "seed": 3},
        hyperparams=[
            {"name": "lr", "loguniform": {"min": 1e-5, "max": 1}},
            {"name": "batch-size", "int": {"min": 1, "max": 512}},
        ],
    )
    hpw = make_hpw(spec)
    everything = [item for workflow in iter_workflows(hpw) for item in fanout_step(workflow)["withItems"]]
    plan = plan_batches(hpw)
    last = fanout_step(build_batch(hpw, plan.batch_count - 1))["withItems"]
    assert everything[-len(last) :] == last
    assert len(everything) == 2000


# --- valid Argo: every generated Workflow passes our linter ----------------------------------------------


def dag_spec() -> dict:
    """A user entrypoint that is a DAG over other templates, with a retry and an exit handler."""
    spec = make_spec()
    spec["workflow"]["onExit"] = "notify"
    spec["workflow"]["templates"] = [
        {**TRAIN_TEMPLATE, "name": "fit", "retryStrategy": {"limit": "2"}},
        {"name": "notify", "container": {"image": "busybox", "command": ["echo", "{{workflow.status}}"]}},
        {
            "name": "train",
            "inputs": TRAIN_TEMPLATE["inputs"],
            "outputs": {
                "parameters": [
                    {"name": "loss", "valueFrom": {"parameter": "{{tasks.fit.outputs.parameters.loss}}"}}
                ]
            },
            "dag": {
                "tasks": [
                    {
                        "name": "fit",
                        "template": "fit",
                        "arguments": {
                            "parameters": [
                                {"name": "lr", "value": "{{inputs.parameters.lr}}"},
                                {"name": "batch-size", "value": "{{inputs.parameters.batch-size}}"},
                            ]
                        },
                    }
                ]
            },
        },
    ]
    return spec


LINTED_SWEEPS = {
    "3x4 grid": lambda: make_hpw(),
    "passthrough argument": lambda: make_hpw(
        make_spec(
            workflow={
                "entrypoint": "train",
                "arguments": {"parameters": [{"name": "dataset", "value": "mnist"}]},
                "templates": [
                    {
                        **TRAIN_TEMPLATE,
                        "inputs": {
                            "parameters": [*TRAIN_TEMPLATE["inputs"]["parameters"], {"name": "dataset"}]
                        },
                    }
                ],
            }
        )
    ),
    "random search": lambda: make_hpw(
        make_spec(
            algorithm={"name": "random", "samples": 50, "seed": 1},
            hyperparams=[
                {"name": "lr", "loguniform": {"min": 1e-5, "max": 1}},
                {"name": "batch-size", "int": {"min": 1, "max": 512}},
            ],
        )
    ),
    "DAG entrypoint with retries and exit handler": lambda: make_hpw(dag_spec()),
    "a 200-character sweep name": lambda: make_hpw(name="s" * 200),
    "no uid (render command)": lambda: make_hpw(uid=""),
}


@pytest.mark.parametrize("case", LINTED_SWEEPS)
def test_generated_workflows_lint_clean(case):
    for workflow in iter_workflows(LINTED_SWEEPS[case]()):
        result = lint_document(workflow)
        assert result.ok, result.messages


def test_an_adaptive_rounds_workflow_lints_clean(hpw):
    trials = [PlannedTrial(90 + i, {"lr": f"0.0{i}", "batch-size": str(8 * i)}) for i in range(1, 6)]
    result = lint_document(build_workflow(hpw, 3, trials))
    assert result.ok, result.messages


def test_every_workflow_of_a_100k_grid_lints_clean():
    for workflow in iter_workflows(grid_100k(parallelism=50)):
        result = lint_document(workflow)
        assert result.ok, (workflow["metadata"]["name"], result.messages)


def test_the_linter_would_catch_a_broken_fanout(hpw):
    workflow = only_workflow(hpw)
    fanout_step(workflow)["arguments"]["parameters"][0]["value"] = "{{item.learning_rate}}"
    assert not lint_document(workflow).ok
