"""Every count a sweep's spec carries is bounded before anything grows with it (issue 27): trials, trials at
once, workflows (batches and rounds), loops of the embedded workflow, the numbers of a domain, and the
static walk that sizes a batch. Each refusal names the field, in `limits.too_many`'s words, and costs
almost nothing: the hostile spec's peak memory and time are asserted alongside."""

from __future__ import annotations

import copy
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

import limits
from fields import SpecError
from hyperparam import manifests
from hyperparam.sweep import parse_sweep
from hyperparam.tests.conftest import TRAIN_TEMPLATE, make_hpw, make_spec

MIB = 1024 * 1024


@dataclass
class Cost:
    seconds: float = 0.0
    peak_bytes: int = 0


@contextmanager
def measured() -> Iterator[Cost]:
    """CPU time and peak traced memory of the block. CPU time of this process, not the wall clock: `make
    test` runs five test processes on two cores, and a wall clock there also counts the neighbours' turns."""
    cost = Cost()
    tracemalloc.start()
    started = time.process_time()
    try:
        yield cost
    finally:
        cost.seconds = time.process_time() - started
        cost.peak_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def assert_cheap(cost: Cost, *, seconds: float, mib: int) -> None:
    assert cost.seconds < seconds, f"{cost.seconds:.2f} s"
    assert cost.peak_bytes < mib * MIB, f"{cost.peak_bytes / MIB:.1f} MiB"


def swept(hyperparams: list[dict[str, Any]], **spec_fields: Any) -> dict[str, Any]:
    """A spec sweeping `hyperparams` over a template that declares each of them."""
    template = copy.deepcopy(TRAIN_TEMPLATE)
    template["inputs"]["parameters"] = [{"name": entry["name"]} for entry in hyperparams]
    template["container"]["args"] = [
        f"--{entry['name']}={{{{inputs.parameters.{entry['name']}}}}}" for entry in hyperparams
    ]
    spec = make_spec(hyperparams=hyperparams, **spec_fields)
    spec["workflow"]["templates"] = [template]
    return spec


def wide_grid(parameters: int = 20, values: int = 100, **spec_fields: Any) -> dict[str, Any]:
    """`values`^`parameters` combinations written in a few kilobytes."""
    return swept([{"name": f"p{i}", "values": list(range(values))} for i in range(parameters)], **spec_fields)


def refusals(spec: object, call: Callable[[Any], object] = parse_sweep) -> dict[str, str]:
    with pytest.raises(SpecError) as raised:
        call(spec)
    return {error.path: error.message for error in raised.value.errors}


def plan(spec: dict[str, Any]) -> object:
    return manifests.plan_batches(make_hpw(spec))


# -- trials ---------------------------------------------------------------------------------------------


def test_a_grid_of_twenty_parameters_of_a_hundred_values_is_refused_from_the_sizes_alone():
    with measured() as cost:
        found = refusals(wide_grid())
    assert found == {
        "spec.hyperparams": "must be at most 100000 combinations (MAX_TRIALS_PER_SWEEP), not "
        + str(100**20)
        + ": narrow the space or set spec.maxTrials"
    }
    assert_cheap(cost, seconds=0.5, mib=1)


def test_a_grid_whose_size_has_thousands_of_digits_is_refused_without_computing_it():
    spec = swept([{"name": f"p{i}", "int": {"min": 0, "max": "1e300"}} for i in range(100)])
    with measured() as cost:
        found = refusals(spec)
    assert found == {
        "spec.hyperparams": "must be at most 100000 combinations (MAX_TRIALS_PER_SWEEP), not more than "
        "10^100: narrow the space or set spec.maxTrials"
    }
    assert_cheap(cost, seconds=0.5, mib=1)


def test_a_grid_at_the_bound_runs_and_one_more_combination_is_refused():
    with limits.overridden(trials_per_sweep=12):
        assert parse_sweep(make_spec()).trial_count == 12
    with limits.overridden(trials_per_sweep=11):
        assert refusals(make_spec()) == {
            "spec.hyperparams": "must be at most 11 combinations (MAX_TRIALS_PER_SWEEP), not 12: "
            "narrow the space or set spec.maxTrials"
        }


def test_max_trials_runs_the_first_combinations_of_a_larger_grid_without_multiplying_it_out():
    sweep = parse_sweep(wide_grid(maxTrials=1000))
    assert sweep.trial_count == 1000
    trials = list(sweep.planned_trials(998, 1000))
    assert [trial.params["p19"] for trial in trials] == ["98", "99"]
    assert trials[0].params["p18"] == "9"


@pytest.mark.parametrize(
    ("field", "changes"),
    [
        ("spec.maxTrials", {"maxTrials": 100_001}),
        ("spec.algorithm.samples", {"algorithm": {"name": "random", "samples": 100_001}}),
    ],
)
def test_a_trial_budget_past_the_bound_is_refused_naming_the_field(field, changes):
    assert refusals(make_spec(**changes)) == {
        field: "must be at most 100000 trials (MAX_TRIALS_PER_SWEEP), not 100001"
    }


def test_the_trial_bound_is_read_when_checking_not_when_importing():
    with limits.overridden(trials_per_sweep=5):
        assert refusals(make_spec(maxTrials=6)) == {
            "spec.maxTrials": "must be at most 5 trials (MAX_TRIALS_PER_SWEEP), not 6"
        }


# -- trials at once ---------------------------------------------------------------------------------------


def test_parallelism_past_the_bound_is_refused():
    assert refusals(make_spec(parallelism=10**9)) == {
        "spec.parallelism": "must be at most 1000 trials at once (MAX_PARALLEL_TRIALS), not 1000000000"
    }
    assert parse_sweep(make_spec(parallelism=1000)).parallelism == 1000


# -- the domains --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "field"),
    [
        ({"int": {"min": 0, "max": "1e400"}}, "spec.hyperparams[0].int.max"),
        ({"range": {"min": 0, "max": 1, "step": "1e-400"}}, "spec.hyperparams[0].range.step"),
        ({"uniform": {"min": "-1e309", "max": 0}}, "spec.hyperparams[0].uniform.min"),
    ],
)
def test_a_number_no_64_bit_float_holds_is_refused_naming_it(domain, field):
    spec = swept([{"name": "p", **domain}], algorithm="random", maxTrials=10)
    found = refusals(spec)
    assert list(found) == [field]
    assert "a number a 64-bit float holds" in found[field]


def test_a_range_with_more_values_than_decimal_arithmetic_divides_is_sampled_not_crashed():
    spec = swept(
        [{"name": "p", "range": {"min": 0, "max": "1e300", "step": "1e-300"}}],
        algorithm={"name": "random", "seed": 3},
        maxTrials=5,
    )
    sweep = parse_sweep(spec)
    values = [trial.params["p"] for trial in sweep.planned_trials(0, 5)]
    assert len(set(values)) == 5
    assert refusals({**spec, "algorithm": "grid", "maxTrials": None})["spec.hyperparams"].startswith(
        "must be at most 100000 combinations (MAX_TRIALS_PER_SWEEP), not more than 10^100"
    )


def test_large_domains_are_not_listed_to_parse_a_random_sweep():
    spec = swept(
        [{"name": f"p{i}", "int": {"min": 0, "max": 65_535}} for i in range(20)],
        algorithm={"name": "random", "samples": 10},
    )
    with measured() as cost:
        sweep = parse_sweep(spec)
        list(sweep.planned_trials(0, 10))
    assert_cheap(cost, seconds=0.5, mib=2)


def test_a_grid_capped_by_max_trials_lists_few_values_of_its_large_domains():
    spec = swept([{"name": f"p{i}", "int": {"min": 0, "max": 65_535}} for i in range(20)], maxTrials=500)
    with measured() as cost:
        hpw = make_hpw(spec)
        sweep = manifests.sweep_of(hpw)
        workflows = list(manifests.iter_workflows(hpw))
    assert sum(len(w["spec"]["templates"][-1]["steps"][0][0]["withItems"]) for w in workflows) == 500
    assert sweep.trial_count == 500
    assert_cheap(cost, seconds=2, mib=8)


@pytest.mark.parametrize(
    ("domain", "field"),
    [
        ({"int": {"min": 0, "max": 2**63}}, "spec.hyperparams[0].int.max"),
        ({"values": [1, -(2**63) - 1]}, "spec.hyperparams[0].values[1]"),
    ],
)
def test_an_integer_kubernetes_cannot_carry_is_refused_naming_it(domain, field):
    spec = swept([{"name": "p", **domain}], algorithm="random", maxTrials=10)
    assert refusals(spec) == {
        field: "must be an integer of at most 64 bits (write a larger number as a string)"
    }
    spec["hyperparams"][0] = {"name": "p", "int": {"min": 0, "max": str(2**63)}}
    assert parse_sweep(spec).space.domains[0].size == 2**63 + 1


def test_max_failed_trials_is_a_count_of_trials_too():
    assert refusals(make_spec(maxFailedTrials=2**70)) == {
        "spec.maxFailedTrials": f"must be at most 100000 trials (MAX_TRIALS_PER_SWEEP), not {2**70}"
    }


def test_a_report_lists_a_hundred_problems_and_counts_the_rest():
    spec = make_spec()
    spec["hyperparams"][1]["values"] = [16] * 50_000
    with pytest.raises(SpecError) as raised, measured() as cost:
        parse_sweep(spec)
    errors = raised.value.errors
    assert len(errors) == 101
    assert errors[-1].path == "spec.hyperparams[1].values[101]"
    assert errors[-1].message == (
        "this and 49898 more problems after it are not listed (a report lists the first 100)"
    )
    assert_cheap(cost, seconds=2, mib=2)


# -- workflows: batches, and rounds of an adaptive search -------------------------------------------------


def test_an_adaptive_search_of_more_rounds_than_workflows_a_sweep_may_create_is_refused():
    spec = make_spec(algorithm="tpe", maxTrials=100_000, parallelism=3)
    assert refusals(spec) == {
        "spec.maxTrials": "must be at most 5000 workflows (MAX_WORKFLOWS_PER_SWEEP), not 33334: an adaptive "
        "search runs spec.parallelism (3) trials a round, one Workflow each; raise spec.parallelism or "
        "lower spec.maxTrials"
    }


def test_rounds_smaller_than_parallelism_are_counted_when_the_plan_is_made():
    spec = make_spec(algorithm="tpe", maxTrials=40, parallelism=20)
    with limits.overridden(workflows_per_sweep=3):
        assert parse_sweep(spec).trial_count == 40  # two rounds of 20, as far as the spec tells
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("hyperparam.batching.MAX_TRIALS_PER_BATCH", 10)
            found = refusals(spec, plan)
    assert found == {
        "spec.maxTrials": "must be at most 3 workflows (MAX_WORKFLOWS_PER_SWEEP), not 4: 40 trials, 10 in "
        "each Workflow; lower spec.maxTrials (or make a trial's Workflow smaller: spec.workflow)"
    }


def test_an_adaptive_plan_is_made_of_rounds_of_parallelism_trials():
    planned = plan(make_spec(algorithm="tpe", maxTrials=12, parallelism=5))
    assert (planned.trials_per_batch, planned.batch_count, planned.concurrent_batches) == (5, 3, 1)


# -- the embedded workflow ----------------------------------------------------------------------------


def calling(loop: dict[str, Any], **template_fields: Any) -> dict[str, Any]:
    """A spec whose entrypoint runs `train` in one step with `loop` (withItems, withSequence, ...)."""
    spec = make_spec()
    entry = {
        "name": "main",
        "inputs": {"parameters": [{"name": "lr"}, {"name": "batch-size"}]},
        "outputs": {"parameters": [{"name": "loss", "valueFrom": {"parameter": "x"}}]},
        "steps": [[{"name": "fit", "template": "train", **loop}]],
        **template_fields,
    }
    spec["workflow"]["templates"].append(entry)
    spec["workflow"]["entrypoint"] = "main"
    return spec


@pytest.mark.parametrize(
    ("loop", "field", "count"),
    [
        ({"withSequence": {"count": "1000000000000"}}, "withSequence.count", 10**12),
        ({"withSequence": {"start": 5, "end": 2_000_004}}, "withSequence.end", 2_000_000),
        ({"withSequence": {"count": "9" * 5000}}, "withSequence.count", None),
        ({"withItems": list(range(10_001))}, "withItems", 10_001),
    ],
)
def test_a_loop_of_the_embedded_workflow_past_the_bound_is_refused_naming_it(loop, field, count):
    with measured() as cost:
        found = refusals(calling(loop))
    path = f"spec.workflow.templates[1].steps[0][0].{field}"
    assert list(found) == [path]
    shown = str(count) if count is not None else "more than 10^100"
    assert found[path] == f"must be at most 10000 items (MAX_MAP_ITEMS), not {shown}"
    assert cost.seconds < 0.5


def test_a_dag_task_loop_is_checked_too():
    spec = calling({})
    spec["workflow"]["templates"][1] = {
        **spec["workflow"]["templates"][1],
        "steps": None,
        "dag": {"tasks": [{"name": "fit", "template": "train", "withSequence": {"count": 20_000}}]},
    }
    del spec["workflow"]["templates"][1]["steps"]
    assert refusals(spec) == {
        "spec.workflow.templates[1].dag.tasks[0].withSequence.count": "must be at most 10000 items "
        "(MAX_MAP_ITEMS), not 20000"
    }


def test_parallelism_inside_the_embedded_workflow_is_bounded_as_trials_at_once_are():
    spec = calling({}, parallelism=10**6)
    spec["workflow"]["parallelism"] = 10**7
    assert refusals(spec) == {
        "spec.workflow.parallelism": "must be at most 1000 pods at once (MAX_PARALLEL_TRIALS), not 10000000",
        "spec.workflow.templates[1].parallelism": "must be at most 1000 pods at once "
        "(MAX_PARALLEL_TRIALS), not 1000000",
    }


def test_templates_that_call_each_other_ten_times_a_level_are_sized_without_walking_every_path():
    """Twelve levels of ten calls each: 10^12 paths through the templates, a few kilobytes of spec."""
    spec = make_spec()
    templates = spec["workflow"]["templates"]
    callee = "train"
    for level in range(12):
        name = f"level-{level}"
        tasks = [{"name": f"t{i}", "template": callee} for i in range(10)]
        templates.append({"name": name, "dag": {"tasks": tasks}})
        callee = name
    templates.append(
        {
            "name": "main",
            "inputs": {"parameters": [{"name": "lr"}, {"name": "batch-size"}]},
            "outputs": {"parameters": [{"name": "loss", "valueFrom": {"parameter": "x"}}]},
            "steps": [[{"name": "all", "template": callee}]],
        }
    )
    spec["workflow"]["entrypoint"] = "main"
    with measured() as cost:
        found = refusals(spec, plan)
    assert list(found) == ["spec.workflow"]
    assert "more than 655,360 bytes" in found["spec.workflow"]
    assert cost.seconds < 0.5


def test_an_ordinary_sweep_is_still_sized_as_before():
    assert plan(make_spec()).trials_per_batch > 100
