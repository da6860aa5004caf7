"""What a small pipeline can make the transpiler (or Argo, later) do is bounded (issue 27): a map's items,
with the maps around it, by `map_items`; how deep parallel, map and dag steps nest; and the Workflow it
writes, by `workflow_bytes` (each step's template repeats the configuration's secrets and its maps' items).
Each refusal names the step and the field, and costs little: time and peak traced memory are asserted."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import limits
from workflows.pipeline import PipelineError, transpile
from workflows.tests.pipeline_examples import IMAGE, lint_errors

MIB = 1024 * 1024
CONFIG = {"docker_image": IMAGE}


@contextmanager
def cheap(seconds: float, mib: int) -> Iterator[None]:
    """The block takes less than `seconds` of this process's CPU time (not the wall clock, which on a loaded
    machine counts other processes' turns) and `mib` MiB of traced memory at its peak."""
    tracemalloc.start()
    started = time.process_time()
    try:
        yield
        elapsed, peak = time.process_time() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < seconds, f"{elapsed:.2f} s"
    assert peak < mib * MIB, f"{peak / MIB:.1f} MiB"


def problems(pipeline: Any, config: Any = None, **kwargs: Any) -> list[str]:
    with pytest.raises(PipelineError) as caught:
        transpile(pipeline, config or CONFIG, **kwargs)
    return [str(problem) for problem in caught.value.problems]


def leaf() -> dict[str, Any]:
    return {"start_at": "work", "steps": {"work": {"type": "task", "command": "echo", "next": "ok"},
                                           "ok": {"type": "success"}}}  # fmt: skip


def around(step: dict[str, Any], name: str = "m") -> dict[str, Any]:
    """A graph that runs `step` (as `name`) and succeeds."""
    return {"start_at": name, "steps": {name: {**step, "next": "ok"}, "ok": {"type": "success"}}}


def a_map(branch: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"type": "map", "branch": branch, **fields}


# -- map fan-out --------------------------------------------------------------------------------------


def test_a_map_over_more_literal_items_than_the_bound_is_refused():
    pipeline = {"dag": around(a_map(leaf(), items=list(range(10_001))))}
    with cheap(seconds=1, mib=16):
        found = problems(pipeline)
    assert found == ["step m: items: must be at most 10000 items (MAX_MAP_ITEMS), not 10001"]


def test_a_map_at_the_bound_is_transpiled():
    with limits.overridden(map_items=3):
        workflow = transpile({"dag": around(a_map(leaf(), items=[1, 2, 3]))}, CONFIG).workflow
    assert lint_errors(workflow) == []


@pytest.mark.parametrize(
    ("where", "kwargs"),
    [
        ("its default", {}),
        ("as given", {"parameters": {"xs": json.dumps(list(range(20_000)))}}),
    ],
)
def test_a_map_over_a_list_parameter_counts_the_list_it_will_get(where, kwargs):
    pipeline = {"parameters": {"xs": list(range(20_000)) if not kwargs else ["a"]},
                "dag": around(a_map(leaf(), iterate_on="xs"))}  # fmt: skip
    assert problems(pipeline, **kwargs) == [
        "step m: iterate_on: must be at most 10000 items (MAX_MAP_ITEMS), not 20000 (the list in parameter "
        f"'xs', {where})"
    ]


def test_nested_maps_are_bounded_by_the_product_of_their_items():
    """Five maps of a hundred items, each inside the one before: 10^10 pods from 3 KB."""
    graph = leaf()
    for level in reversed(range(5)):
        graph = around(a_map(graph, items=list(range(100)), iterate_as=f"i{level}"), name=f"m{level}")
    with cheap(seconds=1, mib=8):
        found = problems({"dag": graph})
    assert found == [
        "step m0.m1.m2: items: must be at most 10000 items (MAX_MAP_ITEMS), not 1000000: with the maps "
        "around it, its branch runs 100 x 100 x 100 times"
    ]


# -- nesting ------------------------------------------------------------------------------------------


def test_steps_nested_deeper_than_a_document_may_nest_are_refused_not_crashed():
    """A JSON object is not read by the YAML reader, so its depth is bounded here: 400 dags in a dag."""
    step: dict[str, Any] = {"type": "task", "command": "echo"}
    for _ in range(400):
        step = {"type": "dag", "tasks": {"d": step}}
    with cheap(seconds=1, mib=16):
        found = problems({"dag": around(step, name="d")})
    depth = limits.current().yaml_depth // 2
    assert found == [
        f"step {'.'.join(['d'] * (depth + 1))}: tasks: nests parallel, map and dag steps more than {depth} "
        "deep (MAX_YAML_DEPTH / 2)"
    ]


def test_a_chain_of_thousands_of_steps_is_checked_without_recursion():
    count = 2500  # past Python's recursion limit (1,000), within the Workflow's bound
    steps = {f"s{i}": {"type": "task", "command": "echo", "next": f"s{i + 1}"} for i in range(count)}
    steps[f"s{count}"] = {"type": "success"}
    steps[f"s{count - 1}"]["next"] = "s0"  # a cycle through all of them
    found = problems({"dag": {"start_at": "s0", "steps": steps}})
    assert len(found) == 2
    assert found[1].startswith(f"step s{count - 1}: next: makes a cycle: s0 -> s1 -> ")
    steps[f"s{count - 1}"]["next"] = f"s{count}"
    workflow = transpile({"dag": {"start_at": "s0", "steps": steps}}, CONFIG).workflow
    assert len(workflow["spec"]["templates"]) == count + 1  # the entrypoint and one per task


# -- the Workflow's size ------------------------------------------------------------------------------


def test_secrets_repeated_in_every_step_stop_the_workflow_at_its_bound():
    """300 steps and 300 secrets are 25 KB of input and were a 7 MiB Workflow (62 MiB, 3 s)."""
    count = 300
    steps = {f"s{i}": {"type": "task", "command": "echo", "next": f"s{i + 1}"} for i in range(count)}
    steps[f"s{count}"] = {"type": "success"}
    config = {**CONFIG, "secrets_from_k8s": [f"E{i}=secret:key{i}" for i in range(count)]}
    with cheap(seconds=2, mib=64):
        found = problems({"dag": {"start_at": "s0", "steps": steps}}, config)
    assert len(found) == 1
    assert found[0].startswith("step s")
    assert ": must be at most 1048576 bytes of Workflow (MAX_WORKFLOW_BYTES), not " in found[0]
    assert "300 secret env vars (secrets_from_k8s)" in found[0]


def test_a_workflow_under_its_bound_is_written_whole():
    with limits.overridden(workflow_bytes=100_000):
        workflow = transpile({"dag": around(a_map(leaf(), items=[1, 2]))}, CONFIG).workflow
    assert len(json.dumps(workflow)) < 100_000


# -- the report -----------------------------------------------------------------------------------------


def test_a_report_lists_a_hundred_problems_and_counts_the_rest():
    """50,000 broken steps were 50,000 problems in the answer (130 MiB in the web process)."""
    steps = {f"k{i}": "not a step" for i in range(50_000)}
    with cheap(seconds=3, mib=48), pytest.raises(PipelineError) as caught:
        transpile({"dag": {"start_at": "k0", "steps": steps}}, CONFIG)
    assert caught.value.count == 50_000
    assert len(caught.value.problems) == 101
    assert str(caught.value.problems[-1]) == (
        "pipeline: and 49900 more problems, not listed (a report lists the first 100)"
    )
