"""Process sandbox: how long a pod sandbox and a container take to start, and what each process costs.

    .venv/bin/python bench/sandbox.py [--samples 20]

Starts a node (kubesim/kubelet/sandbox) in a temporary directory under /var/tmp, then, one after another:

  pod        --samples pods: the time create_pod() takes (pause process, namespaces, veth, address);
  container  one idle container per pod (`sh -c 'echo ready; exec sleep ...'`): the time start_container()
             takes (its init forked, its root built, its process forked), and the time until the process's
             first line arrives on its stdout (exec of sh included).

Then the memory of the agent, of each pause process and of each idle container's init (the Python PID 1
of the container; the idle process itself is `sleep`, not the sandbox's), from /proc/<pid>/smaps_rollup:
RSS, and PSS (pages shared by several processes count a share each: with --samples inits alive, the
interpreter's shared pages count 1/--samples in each). Medians of the samples; the node is stopped at the
end and the script checks that none of its processes survived (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubesim.kubelet.sandbox import ContainerLaunch, Node
from kubesim.tests.sandbox_support import (
    node_processes,
    read_line,
    sleeping,
    survivors,
)


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        fields[key] = int(value.split()[0])
    return fields["Rss"], fields["Pss"]


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def command(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def median_ms(samples: list[float]) -> str:
    low, high = min(samples) * 1000, max(samples) * 1000
    return f"{statistics.median(samples) * 1000:7.1f} ms (min {low:.1f}, max {high:.1f})"


def medians(memory: list[tuple[int, int]]) -> str:
    rss, pss = statistics.median(rss for rss, _ in memory), statistics.median(pss for _, pss in memory)
    return f"RSS {rss / 1024:5.1f} MiB   PSS {pss / 1024:5.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=20)
    options = parser.parse_args()
    mark = f"{uuid.uuid4().int % 10**6}.5"
    pod_times: list[float] = []
    start_times: list[float] = []
    first_line_times: list[float] = []
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="kubesim-bench-") as run_dir:
        node = Node(Path(run_dir))
        began = time.perf_counter()
        node.start()
        node_start = time.perf_counter() - began
        pods = [f"pod-{index}" for index in range(options.samples)]
        for uid in pods:
            began = time.perf_counter()
            node.create_pod(uid, uid)
            pod_times.append(time.perf_counter() - began)
        for uid in pods:
            launch = ContainerLaunch(
                argv=("sh", "-c", f"echo ready; exec sleep {mark}"), env={"PATH": "/usr/bin:/bin"}
            )
            began = time.perf_counter()
            container = node.start_container(uid, launch)
            start_times.append(time.perf_counter() - began)
            assert read_line(container.stdout) == "ready"
            first_line_times.append(time.perf_counter() - began)

        assert node.agent_pid is not None
        sleepers = set(sleeping(mark))
        pauses, inits = [], []
        for child in children(node.agent_pid):
            argv = command(child)
            if argv == ["sleep", "infinity"]:
                pauses.append(child)
            elif set(children(child)) & sleepers:
                inits.append(child)
        assert len(pauses) == len(inits) == options.samples, (pauses, inits)
        agent_memory = memory_kib(node.agent_pid)
        pause_memory = [memory_kib(pid) for pid in pauses]
        init_memory = [memory_kib(pid) for pid in inits]
        tree, namespaces = node_processes(node.agent_pid)
        enforcement = node.memory_enforcement
        node.stop()
        left = survivors(tree, namespaces)

    print(f"node start (agent ready)    {node_start * 1000:7.1f} ms; memory limits by {enforcement}")
    print(f"create_pod                  {median_ms(pod_times)}")
    print(f"start_container             {median_ms(start_times)}")
    print(f"... to the first line       {median_ms(first_line_times)}")
    print(f"agent          {medians([agent_memory])}")
    print(f"pause (median) {medians(pause_memory)}")
    print(f"init (median)  {medians(init_memory)}")
    print(f"after stop(): {len(left)} of the node's {len(tree)} processes left")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
