"""How the Argo linter's time grows with a workflow's size: steps templates and DAGs of 1,000 to 8,000 nodes.

    .venv/bin/python bench/lint_scaling.py [--sizes 1000,2000,4000,8000] [--repeat 3]

Each workflow is a chain: node i passes `{{steps.s<i-1>.outputs.result}}` (or `{{tasks.t<i-1>...}}`, with a
dependency on it) to a script template, the shape a generated pipeline has. The DAG also gets a variant in
which the last task reads the `status` of a task it does not depend on, which must be reported. Prints
the best of `--repeat` CPU times per size (and wall times), and the ratio per doubling (near 2 means
linear; 4 quadratic).
Checks its own answers: the valid workflows lint clean, the broken one gets exactly the expected error.
Target: 8,000 steps under 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workflows.lint import lint_document, warm_up

TARGET_SECONDS_8000_STEPS = 0.5
WORK = {
    "name": "work",
    "inputs": {"parameters": [{"name": "x"}]},
    "script": {"image": "python:3.12", "command": ["python"], "source": "print({{inputs.parameters.x}})"},
}


def workflow(main: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": "scaling-"},
        "spec": {"entrypoint": "main", "templates": [main, WORK]},
    }


def steps_workflow(size: int) -> dict[str, Any]:
    def step(i: int) -> dict[str, Any]:
        value = f"{{{{steps.s{i - 1}.outputs.result}}}}" if i else "0"
        arguments = {"parameters": [{"name": "x", "value": value}]}
        return {"name": f"s{i}", "template": "work", "arguments": arguments}

    return workflow({"name": "main", "steps": [[step(i)] for i in range(size)]})


def dag_workflow(size: int, *, stray_status: bool = False) -> dict[str, Any]:
    def task(i: int) -> dict[str, Any]:
        value = f"{{{{tasks.t{i - 1}.outputs.result}}}}" if i else "0"
        node: dict[str, Any] = {
            "name": f"t{i}",
            "template": "work",
            "arguments": {"parameters": [{"name": "x", "value": value}]},
        }
        if i:
            node["dependencies"] = [f"t{i - 1}"]
        return node

    tasks = [task(i) for i in range(size)]
    if stray_status:
        # A root task reading the status of the last one, which it does not depend on: the walk of its
        # ancestors finds nothing, the costliest answer.
        tasks[0]["when"] = f"{{{{tasks.t{size - 1}.status}}}} == Succeeded"
    return workflow({"name": "main", "dag": {"tasks": tasks}})


def best_time(document: dict[str, Any], repeat: int) -> tuple[float, float, list[str]]:
    """The best CPU time and the best wall time of `repeat` lints, and the last lint's messages.

    CPU time is what the linter costs; on a shared machine the wall time also counts the other
    processes' turns on the cores, so the ratios are read from CPU time.
    """
    best_cpu = best_wall = float("inf")
    messages: list[str] = []
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        result = lint_document(document)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
        messages = [error.message for error in result.errors]
    return best_cpu, best_wall, messages


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,2000,4000,8000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"settings: sizes={sizes} repeat={args.repeat} (best of) python={platform.python_version()}"
        f" cpus={os.cpu_count()} load average before the run={load}"
    )
    warm_up()
    failures = []
    seconds: dict[str, dict[int, float]] = {}
    cases = {
        "steps": lambda n: (steps_workflow(n), []),
        "dag": lambda n: (dag_workflow(n), []),
        "dag, stray status": lambda n: (
            dag_workflow(n, stray_status=True),
            [f"templates.main.tasks.t0 failed to resolve {{{{tasks.t{n - 1}.status}}}}"],
        ),
    }
    for name, make in cases.items():
        seconds[name] = {}
        for size in sizes:
            document, expected = make(size)
            elapsed, wall, messages = best_time(document, args.repeat)
            seconds[name][size] = elapsed
            ratio = ""
            if size // 2 in seconds[name]:
                ratio = f"  x{elapsed / seconds[name][size // 2]:.2f} per doubling"
            times = f"{elapsed * 1000:8.1f} ms CPU ({wall * 1000:7.1f} ms wall)"
            print(f"{name:>18} {size:>6} nodes: {times}{ratio}")
            if messages != expected:
                failures.append(f"{name} {size}: expected {expected}, got {messages[:3]}")
    if 8000 in seconds["steps"] and seconds["steps"][8000] > TARGET_SECONDS_8000_STEPS:
        print(f"note: 8,000 steps took more than the {TARGET_SECONDS_8000_STEPS} s target (CPU time)")
    for failure in failures:
        print(f"WRONG ANSWER: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
