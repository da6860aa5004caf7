"""Pure builders: a HyperparamWorkflow (a dict as the apiserver returns it) → the Argo Workflows it runs.

Each Workflow is one batch of trials. It keeps the user's WorkflowSpec (templates, arguments, volumes, ...)
and adds one steps template that becomes the entrypoint: a single step calling the user's entrypoint
`withItems` the batch's combinations, passing every hyperparameter by name as `{{item.<name>}}` (so the exact
string we rendered reaches the template), with the sweep's parallelism, `failFast: false` (one failed trial
must not stop the others) and `continueOn` failures (the batch completes; trials carry their own phase).

Names are deterministic (`<sweep>-<batch>`, shortened with a hash past Argo's 63 characters), the Workflow is
owned by the HyperparamWorkflow (controller reference) and labelled with the sweep's name, uid and batch.

How a reconcile uses this module (everything here is pure; the reconcile does the I/O):
1. `sweep = sweep_of(hpw)`, then `plan = plan_batches(hpw, sweep)` on the first reconcile (for an adaptive
   search, its batches are its rounds); both raise SpecError (a Failed condition), and both bound every
   count before anything grows with it. Persist `plan.trials_per_batch` in status and later rebuild
   `BatchPlan(sweep.trial_count, that_number, sweep.parallelism)`, so a change of the size estimate in a newer
   release never re-slices a running sweep.
2. List the sweep's Workflows with `sweep_selector(hpw)`; the batch index is the LABEL_BATCH label.
3. Mirror trials with `trials.read_trials(workflow, sweep.metric)`; `trials.summarize` and
   `trials.stop_reason` say whether to go on.
4. Create `plan.batches_to_create(existing, finished)`: `build_batch(hpw, i, sweep=sweep, plan=plan)` for grid
   and random; for adaptive rounds ask the sampler for `len(plan.batch_trials(i))` trials, turn each value
   into its string with `Domain.render`, and call `build_workflow(hpw, i, trials, sweep=sweep, plan=plan)`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import limits
from fields import FieldError, SpecError
from hyperparam.batching import (
    BATCH_BUDGET_BYTES,
    BatchPlan,
    json_size,
    trial_status_bytes,
    trials_per_batch,
    workflow_status_bytes,
)
from hyperparam.space.counts import too_many
from hyperparam.space.domains import json_width
from hyperparam.sweep import TRIAL_KEY, PlannedTrial, Sweep, parse_sweep, seed_from_uid
from kube.names import HASH_LENGTH, label_value, short_hash
from kube.resources import controller_reference

API_VERSION = "argoml.io/v1alpha1"
KIND = "HyperparamWorkflow"
LABEL_SWEEP = "argoml.io/hyperparam-workflow"
LABEL_SWEEP_UID = "argoml.io/hyperparam-workflow-uid"
LABEL_BATCH = "argoml.io/hyperparam-batch"
FANOUT_TEMPLATE = "argoml-sweep"
TRIAL_STEP = "trial"
# Argo refuses Workflow names longer than this; label values have the same limit.
MAX_NAME_LENGTH = 63


def sweep_of(hpw: Mapping[str, Any]) -> Sweep:
    """The validated spec of a HyperparamWorkflow; an unseeded random sweep gets a seed from its uid."""
    uid = str(hpw.get("metadata", {}).get("uid") or "")
    return parse_sweep(hpw.get("spec"), fallback_seed=seed_from_uid(uid) if uid else 0)


def workflow_name(sweep_name: str, batch_index: int) -> str:
    """`<sweep>-<batch>`, or a truncated sweep name plus a hash of the full one when that is too long."""
    suffix = f"-{batch_index}"
    if len(sweep_name) + len(suffix) <= MAX_NAME_LENGTH:
        return sweep_name + suffix
    keep = MAX_NAME_LENGTH - len(suffix) - HASH_LENGTH - 1
    return f"{sweep_name[:keep].rstrip('-.')}-{short_hash(sweep_name)}{suffix}"


def sweep_selector(hpw: Mapping[str, Any]) -> dict[str, str]:
    """Labels selecting every Workflow of this sweep (by uid: a re-created sweep must not adopt old ones)."""
    metadata = hpw["metadata"]
    if metadata.get("uid"):
        return {LABEL_SWEEP_UID: str(metadata["uid"])}
    return {LABEL_SWEEP: label_value(metadata["name"])}


def plan_batches(hpw: Mapping[str, Any], sweep: Sweep | None = None) -> BatchPlan:
    """How the sweep's trials split into Workflows: as many trials as fit one (grid and random), or the
    rounds of an adaptive search (`parallelism` trials each, fewer when that many do not fit a Workflow,
    so the sampler learns from every round before the next). Raises SpecError if one trial cannot fit a
    Workflow, or if the plan makes more Workflows than a sweep may create."""
    sweep = sweep or sweep_of(hpw)
    item_bytes = _max_item_bytes(sweep)
    skeleton = _workflow(hpw, sweep, "x" * MAX_NAME_LENGTH, 0, parallelism=sweep.parallelism, items=[])
    # Bound every name-dependent figure with the longest name a batch can have.
    trial_node_name = MAX_NAME_LENGTH + len(f"[0].{TRIAL_STEP}(") + 8 + item_bytes
    per_trial = trial_status_bytes(skeleton["spec"], sweep.entrypoint, trial_node_name)
    base = json_size(skeleton) + workflow_status_bytes(skeleton["spec"], MAX_NAME_LENGTH)
    fit = trials_per_batch(base, item_bytes, per_trial)
    if fit == 0:
        raise SpecError([FieldError("spec.workflow", _no_fit(per_trial, base))])
    if sweep.algorithm.adaptive:
        fit = min(fit, sweep.parallelism)
    plan = BatchPlan(trial_count=sweep.trial_count, trials_per_batch=fit, parallelism=sweep.parallelism)
    if plan.batch_count > limits.current().workflows_per_sweep:
        message = too_many("workflows", plan.batch_count, "workflows_per_sweep")
        raise SpecError(
            [
                FieldError(
                    "spec.maxTrials" if sweep.max_trials is not None else "spec.hyperparams",
                    f"{message}: {plan.trial_count} trials, {fit} in each Workflow; lower "
                    f"{'spec.maxTrials' if sweep.max_trials is not None else 'the number of combinations'} "
                    "(or make a trial's Workflow smaller: spec.workflow)",
                )
            ]
        )
    return plan


def _no_fit(per_trial: int, base: int) -> str:
    if per_trial > BATCH_BUDGET_BYTES:
        return (
            f"one trial's estimated Workflow status is more than {BATCH_BUDGET_BYTES:,} bytes, the budget of "
            "a whole Workflow (one node per step, task, loop item and retry its templates run)"
        )
    return (
        f"one trial's estimated Workflow status ({per_trial:,} bytes) plus the spec ({base:,} bytes) does "
        f"not fit the {BATCH_BUDGET_BYTES:,}-byte budget of a Workflow"
    )


def build_workflow(
    hpw: Mapping[str, Any],
    batch_index: int,
    trials: Sequence[PlannedTrial],
    *,
    sweep: Sweep | None = None,
    plan: BatchPlan | None = None,
) -> dict[str, Any]:
    """The Workflow for one batch of trials (any trials: planned ones, or an adaptive round's)."""
    sweep = sweep or sweep_of(hpw)
    plan = plan or plan_batches(hpw, sweep)
    if not trials:
        raise ValueError("a batch needs at least one trial")
    if len(trials) > plan.trials_per_batch:
        raise ValueError(f"{len(trials)} trials exceed the plan's {plan.trials_per_batch} per Workflow")
    names = set(sweep.space.names)
    items: list[dict[str, str]] = []
    for trial in trials:
        if set(trial.params) != names or not all(isinstance(value, str) for value in trial.params.values()):
            raise ValueError(f"trial {trial.index}: parameters must be strings for exactly {sorted(names)}")
        items.append({TRIAL_KEY: str(trial.index), **trial.params})
    name = workflow_name(hpw["metadata"]["name"], batch_index)
    return _workflow(hpw, sweep, name, batch_index, parallelism=plan.workflow_parallelism, items=items)


def build_batch(
    hpw: Mapping[str, Any], batch_index: int, *, sweep: Sweep | None = None, plan: BatchPlan | None = None
) -> dict[str, Any]:
    """The Workflow for batch `batch_index` of a grid or random sweep, computed without the other batches."""
    sweep = sweep or sweep_of(hpw)
    plan = plan or plan_batches(hpw, sweep)
    batch = plan.batch_trials(batch_index)
    trials = list(sweep.planned_trials(batch.start, batch.stop))
    return build_workflow(hpw, batch_index, trials, sweep=sweep, plan=plan)


def iter_workflows(hpw: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every Workflow of a grid or random sweep, one at a time (for `render_hyperparam` and benchmarks)."""
    sweep = sweep_of(hpw)
    plan = plan_batches(hpw, sweep)
    for batch_index in range(plan.batch_count):
        yield build_batch(hpw, batch_index, sweep=sweep, plan=plan)


def fanout_template_name(workflow_spec: Mapping[str, Any]) -> str:
    """Our entrypoint's name: `argoml-sweep`, or with a number if the user already has a template so named."""
    taken = {t.get("name") for t in workflow_spec.get("templates", []) if isinstance(t, Mapping)}
    candidate, number = FANOUT_TEMPLATE, 1
    while candidate in taken:
        number += 1
        candidate = f"{FANOUT_TEMPLATE}-{number}"
    return candidate


def _workflow(
    hpw: Mapping[str, Any],
    sweep: Sweep,
    name: str,
    batch_index: int,
    *,
    parallelism: int,
    items: list[dict[str, str]],
) -> dict[str, Any]:
    metadata = hpw["metadata"]
    # A sweep named by generateName has no name yet when admission plans it: the Workflow's stands in.
    labels = {LABEL_SWEEP: label_value(metadata.get("name") or name), LABEL_BATCH: str(batch_index)}
    workflow_metadata: dict[str, Any] = {"name": name, "labels": labels}
    if metadata.get("namespace"):
        workflow_metadata["namespace"] = metadata["namespace"]
    if metadata.get("uid"):
        labels[LABEL_SWEEP_UID] = str(metadata["uid"])
        workflow_metadata["ownerReferences"] = [
            controller_reference(API_VERSION, KIND, metadata["name"], metadata["uid"])
        ]
    spec = copy.deepcopy(dict(sweep.workflow))
    fanout = fanout_template_name(spec)
    spec["templates"] = [*spec["templates"], _fanout_template(sweep, fanout, parallelism, items)]
    spec["entrypoint"] = fanout
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": workflow_metadata,
        "spec": spec,
    }


def _fanout_template(
    sweep: Sweep, name: str, parallelism: int, items: list[dict[str, str]]
) -> dict[str, Any]:
    arguments = [{"name": hp, "value": f"{{{{item.{hp}}}}}"} for hp in sweep.space.names]
    arguments += [
        {"name": p, "value": f"{{{{workflow.parameters.{p}}}}}"} for p in sweep.passthrough_parameters
    ]
    return {
        "name": name,
        "parallelism": parallelism,
        "failFast": False,
        "steps": [
            [
                {
                    "name": TRIAL_STEP,
                    "template": sweep.entrypoint,
                    "arguments": {"parameters": arguments},
                    "withItems": items,
                    "continueOn": {"failed": True, "error": True},
                }
            ]
        ],
    }


def _max_item_bytes(sweep: Sweep) -> int:
    """A bound on one fan-out item's JSON size: the trial key and each hyperparameter's widest value."""
    widest_index = json_width(str(max(sweep.trial_count - 1, 0)))
    fields = [json_width(TRIAL_KEY) + 1 + widest_index]
    fields += [json_width(d.name) + 1 + d.max_json_width() for d in sweep.space.domains]
    return 2 + sum(fields) + len(fields) - 1


__all__ = [
    "API_VERSION",
    "KIND",
    "LABEL_BATCH",
    "LABEL_SWEEP",
    "LABEL_SWEEP_UID",
    "BatchPlan",
    "build_batch",
    "build_workflow",
    "fanout_template_name",
    "iter_workflows",
    "label_value",
    "plan_batches",
    "sweep_of",
    "sweep_selector",
    "workflow_name",
]
