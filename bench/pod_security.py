"""The Pod Security check of a sweep's embedded Workflow: time per check as the templates grow.

    .venv/bin/python bench/pod_security.py [--templates 1000,4000,8000] [--repeat 5]

Builds a WorkflowSpec of N container templates, each with an init container, a sidecar and two volumes,
half of them breaking baseline (a privileged sidecar and a hostPath volume), and times
`workflows.pods.workflow_pod_views` + `podsecurity.check_views` at `restricted` (every check runs),
as the webhook and the API do for a HyperparamWorkflow. Pure: no Django, no database. Target: linear in N
(the webhook has a few seconds for everything, and 8,000 templates are far more than any sweep has).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from podsecurity import RESTRICTED, check_views
from workflows.pods import workflow_pod_views


def workflow(templates: int) -> dict[str, Any]:
    def template(index: int) -> dict[str, Any]:
        bad = index % 2 == 0
        return {
            "name": f"t{index}",
            "container": {"image": "python:3.11", "command": ["python", "train.py"]},
            "initContainers": [{"name": "fetch", "image": "busybox"}],
            "sidecars": [{"name": "side", "image": "busybox", "securityContext": {"privileged": bad}}],
            "volumes": [
                {"name": "scratch", "emptyDir": {}},
                {"name": "data", "hostPath": {"path": "/data"}} if bad else {"name": "data", "secret": {}},
            ],
        }

    return {"entrypoint": "t0", "templates": [template(i) for i in range(templates)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", default="1000,4000,8000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"settings: level={RESTRICTED} repeat={args.repeat} (median shown)")
    for count in (int(n) for n in args.templates.split(",")):
        spec = workflow(count)
        times = []
        found = 0
        for _ in range(args.repeat):
            start = time.perf_counter()
            found = len(check_views(RESTRICTED, workflow_pod_views(spec, "spec.workflow")))
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        print(
            f"{count:>6} templates: {median * 1000:8.1f} ms  "
            f"({median / count * 1e6:5.1f} µs per template, {found} violations)"
        )


if __name__ == "__main__":
    main()
