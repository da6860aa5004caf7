"""HyperparamWorkflow: an Argo WorkflowSpec (kept as written) plus a search space, algorithm and objective."""

from __future__ import annotations

from kube.crds.definition import AGE, CustomResource, PrinterColumn
from kube.crds.schema import (
    any_value,
    array,
    boolean,
    conditions,
    date_time,
    embedded,
    integer,
    map_of,
    number,
    obj,
    string,
)

# Values and range bounds may be numbers or numeric strings ("0.10" keeps its written precision).
_BOUND = "A number, or a numeric string to keep its written precision."

HYPERPARAM = obj(
    {
        "name": string(
            "The entrypoint template's input parameter that receives the value.",
            pattern=r"^[a-zA-Z0-9_-]+$",
        ),
        "values": array(any_value("A value passed as written."), "A finite list of values.", min_items=1),
        "range": obj(
            {"min": any_value(_BOUND), "max": any_value(_BOUND), "step": any_value(_BOUND)},
            "min, min+step, ... up to max inclusive, in decimal arithmetic (no float drift).",
            required=("min", "max"),
        ),
        "uniform": obj(
            {"min": number(), "max": number()},
            "A float drawn uniformly (sampled search only).",
            required=("min", "max"),
        ),
        "loguniform": obj(
            {"min": number(), "max": number()},
            "A float drawn on a log scale, min > 0 (sampled search only).",
            required=("min", "max"),
        ),
        "int": obj(
            {
                "min": integer(bits=64),
                "max": integer(bits=64),
                "step": integer(minimum=1, bits=64),
                "log": boolean("Sample on a log scale (step 1 only)."),
            },
            "Integers min, min+step, ... max.",
            required=("min", "max"),
        ),
        "categorical": obj(
            {"values": array(any_value(), min_items=1)},
            "The same as values, named as Optuna names it.",
            required=("values",),
        ),
    },
    "One hyperparameter: its name and exactly one domain.",
    required=("name",),
    preserve_unknown=True,  # checked by the webhook, which names the domain meant (see the spec below)
)

HYPERPARAM_WORKFLOW_SPEC = obj(
    {
        "workflow": embedded("An Argo WorkflowSpec; its entrypoint declares an input per hyperparameter."),
        "hyperparams": array(HYPERPARAM, "The search space.", min_items=1),
        # A name (`algorithm: grid`) or an object ({name, samples, seed}). A structural schema cannot say
        # "string or object" (no type unions; int-or-string covers only those two), so the field keeps
        # any value and the admission webhook and the reconcile check it (hyperparam/sweep.py).
        "algorithm": any_value(
            "Search algorithm, grid by default: a name (grid, random, tpe, cmaes, qmc) or an object "
            "{name, samples (random search), seed}."
        ),
        "parallelism": integer("Trials running at once.", minimum=1),
        "maxTrials": integer("Stop after this many trials.", minimum=1),
        "maxFailedTrials": integer(
            "Failed trials tolerated; past it the sweep stops and fails. Unset: no early stop, and a sweep "
            "without an objective then succeeds only if every trial succeeded.",
            minimum=0,
        ),
        "objective": obj(
            {
                "metric": string("An output parameter of the entrypoint template.", min_length=1),
                "goal": string(enum=("minimize", "maximize")),
                "target": number("End the sweep early once the best metric reaches this."),
            },
            "What to optimise; required by tpe, cmaes and qmc. Without it trials just run.",
            required=("metric", "goal"),
        ),
    },
    # The sweep's own fields are checked by the admission webhook (hyperparam/sweep.py), not here: a field
    # this schema does not know reaches it instead of being refused by the API server, so the refusal can
    # name the field meant (a Katib user's `parameters`: did you mean "hyperparams"?). So are the two
    # required fields: a schema's "Required value" would come first and hide that hint.
    preserve_unknown=True,
)

HYPERPARAM_WORKFLOW_STATUS = obj(
    {
        "phase": string("Pending, Running, Succeeded or Failed."),
        "message": string(),
        "conditions": conditions(),
        "trials": map_of(integer(minimum=0), "Trial counts by phase."),
        "progress": string("Finished trials out of the total, e.g. 7/12."),
        "bestTrial": obj(
            {
                "index": integer(minimum=0, bits=64),
                "parameters": map_of(string(), "The exact strings the trial received."),
                "metric": number(),
                "workflow": string("The Workflow that ran it."),
            },
            "The best finished trial so far.",
        ),
        "trialErrors": array(
            obj(
                {
                    "index": integer(minimum=0, bits=64),
                    "phase": string("Failed, Error or MetricsUnavailable."),
                    "message": string("Why, from the trial's node or its missing metric."),
                }
            ),
            "The first failed trials, lowest index first.",
        ),
        "workflows": array(string(), "The generated Workflows, in batch order."),
        "trialsPerBatch": integer("Frozen on the first reconcile so a sweep is never re-sliced.", minimum=1),
        "startTime": date_time(),
        "completionTime": date_time(),
        "observedGeneration": integer(bits=64),
    },
    "Written by the controller only.",
    preserve_unknown=True,
)

HYPERPARAM_WORKFLOW = CustomResource(
    kind="HyperparamWorkflow",
    plural="hyperparamworkflows",
    short_names=("hpw",),
    description="An Argo Workflow run once per combination of a hyperparameter search space.",
    spec=HYPERPARAM_WORKFLOW_SPEC,
    status=HYPERPARAM_WORKFLOW_STATUS,
    columns=(
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("Trials", "string", ".status.progress", "Finished trials / total."),
        PrinterColumn("Best", "number", ".status.bestTrial.metric", "The best objective value so far."),
        PrinterColumn("Message", "string", ".status.message", "Why the sweep is in its phase.", priority=1),
        AGE,
    ),
)
