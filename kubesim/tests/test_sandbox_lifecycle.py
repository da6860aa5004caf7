"""The node's life: nothing of it survives stop() or its owner's death; it says what the machine lacks; an
ordinary user runs it as root does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesim.kubelet.sandbox import ContainerLaunch, Node, SandboxError, boot
from kubesim.tests.sandbox_support import (
    ENV,
    PYTHON,
    new_uid,
    node_processes,
    sleeping,
    survivors,
    wait_for,
)

SOURCE_ROOT = boot.SOURCE_ROOT

# A kubelet's process in miniature: a node with two pods, each with a container whose grandchild left its
# session; it prints the agent's pid, then waits to be killed.
OWNER = """
import json, sys, time
sys.path.insert(0, sys.argv[2])
from kubesim.kubelet.sandbox import ContainerLaunch, Node
node = Node(sys.argv[1])
node.start()
for uid in ("a", "b"):
    node.create_pod(uid, uid)
    command = f"setsid sleep {sys.argv[3]} & exec sleep {sys.argv[3]}"
    node.start_container(uid, ContainerLaunch(argv=("sh", "-c", command), env={"PATH": "/usr/bin:/bin"}))
print(json.dumps({"agent": node.agent_pid}), flush=True)
time.sleep(3600)
"""

# The sandbox's key cases as an ordinary user would meet them, from the system's Python (the sandbox needs
# only the standard library; the simulator's own imports are left out as in boot.py).
AS_USER = """
import json, os, sys, types
source_root, run_dir, volume = sys.argv[1:4]
for name in ("kubesim", "kubesim.kubelet"):
    package = types.ModuleType(name)
    package.__path__ = [os.path.join(source_root, *name.split("."))]
    sys.modules[name] = package
from kubesim.kubelet.sandbox import ExitStatus, Mount, Node
from kubesim.tests.sandbox_support import (
    CLIENT, ENV, PYTHON, SERVER, finish, launch, node_processes, read_line, run, survivors,
)
results = {"uid": os.getuid()}
node = Node(run_dir)
node.start()
results["memory"] = node.memory_enforcement
first = node.create_pod("first", "first")
node.create_pod("second", "second")
results["listening"] = [
    read_line(launch(node, uid, PYTHON, "-c", SERVER, uid, "2222").stdout) for uid in ("first", "second")
]
results["reached"] = run(node, "second", PYTHON, "-c", CLIENT, first, "2222")[1]
results["hostname"] = run(node, "second", "hostname")[1]
write = "echo written > /data/out; touch /etc/x 2>&1; touch /config/x 2>&1; cat /config/settings"
mounts = (Mount(volume + "/data", "/data"), Mount(volume + "/config", "/config", read_only=True))
results["files"] = run(node, "first", "sh", "-c", write, mounts=mounts)[1]
results["on the host"] = open(volume + "/data/out").read()
status, _, err = run(node, "first", PYTHON, "-c", "b'x' * (512 << 20)", memory_limit_bytes=96 << 20)
results["memory limit"] = [status.exit_code, status.oom_killed, (err.splitlines() or [""])[-1]]
sleeper = launch(node, "first", "sh", "-c", "echo mine > /tmp/mine; echo ready; exec sleep 1000")
read_line(sleeper.stdout)
execute = node.exec("first", sleeper, ["cat", "/tmp/mine"], env=ENV, working_dir="/", stdin=False, tty=False)
results["exec"] = finish(execute)[1]
tree, namespaces = node_processes(node.agent_pid)
node.stop()
results["survivors"] = survivors(tree, namespaces)
print(json.dumps(results))
"""

PROBE = """
import sys
sys.path.insert(0, sys.argv[2])
from kubesim.kubelet.sandbox import Node, SandboxUnavailable
try:
    Node(sys.argv[1]).start()
except SandboxUnavailable as error:
    print(error)
"""


@pytest.fixture
def run_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="kubesim-sandbox-") as directory:
        yield Path(directory)


def test_stop_leaves_no_process_of_any_pod(run_dir: Path) -> None:
    mark = f"{uuid.uuid4().int % 10**6}.25"
    node = Node(run_dir)
    node.start()
    for uid in (new_uid(), new_uid()):
        node.create_pod(uid, "pod")
        command = f"setsid sleep {mark} & exec sleep {mark}"
        node.start_container(uid, ContainerLaunch(argv=("sh", "-c", command), env=ENV))
    assert node.agent_pid is not None
    wait_for(lambda: len(sleeping(mark)) == 4, "the pods' four sleeps")
    tree, namespaces = node_processes(node.agent_pid)
    assert set(sleeping(mark)) <= {pid for pid, _ in tree}

    node.stop()

    assert survivors(tree, namespaces) == []
    assert not (run_dir / "agent.sock").exists()


def test_the_node_ends_with_the_process_that_owns_it(run_dir: Path) -> None:
    mark = f"{uuid.uuid4().int % 10**6}.75"
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(run_dir), SOURCE_ROOT, mark], stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        agent = json.loads(owner.stdout.readline())["agent"]
        wait_for(lambda: len(sleeping(mark)) == 4, "the pods' four sleeps")
        tree, namespaces = node_processes(agent)
        assert set(sleeping(mark)) <= {pid for pid, _ in tree}
    finally:
        owner.kill()  # SIGKILL: no Python code of the owner runs
        owner.wait()

    wait_for(lambda: not survivors(tree, namespaces), "every process of the node to end")


def test_disabled_user_namespaces_are_named_in_one_line(run_dir: Path) -> None:
    # user.max_user_namespaces belongs to each user namespace: setting it to 0 inside one of our own
    # disables the sandbox there, as it would on a machine whose administrator did, and no one else's.
    disable = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    in_a_user_namespace = ["unshare", "--user", "--map-root-user", "sh", "-c", disable, "sh"]
    probe = subprocess.run(
        [*in_a_user_namespace, sys.executable, "-c", PROBE, str(run_dir), SOURCE_ROOT],
        capture_output=True,
        text=True,
        check=True,
    )

    assert probe.stdout == (
        "the process sandbox needs user namespaces, and user.max_user_namespaces is 0: "
        "enable them with `sysctl -w user.max_user_namespaces=15000`\n"
    )


def test_a_second_node_on_a_running_nodes_directory_is_refused(run_dir: Path) -> None:
    with Node(run_dir), pytest.raises(SandboxError, match="is in use by a running node agent"):
        Node(run_dir).start()


def test_an_ordinary_user_runs_pods_as_root_does(run_dir: Path) -> None:
    """As root, the check runs as `nobody` through setpriv; as anyone else, as themselves."""
    volume = run_dir / "volume"
    (volume / "data").mkdir(parents=True)
    (volume / "config").mkdir()
    (volume / "config" / "settings").write_text("from the config\n")
    user = 65534
    as_user: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv is not None, "setpriv (util-linux) runs the check as an ordinary user"
        as_user = [setpriv, f"--reuid={user}", f"--regid={user}", "--clear-groups", "--"]
        for path in (run_dir, volume, volume / "data"):
            os.chown(path, user, user)
    else:
        user = os.geteuid()

    check = subprocess.run(
        [*as_user, PYTHON, "-c", AS_USER, SOURCE_ROOT, str(run_dir), str(volume)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        cwd="/",
        timeout=240,
    )

    assert check.returncode == 0, check.stderr
    results = json.loads(check.stdout)
    assert results.pop("uid") == user
    # Ordinary users may write no memory cgroup on most machines: allocations past the limit then fail.
    memory = results.pop("memory")
    assert results.pop("memory limit") == (
        [1, False, "MemoryError"] if memory == "rlimit" else [137, True, ""]
    )
    assert results == {
        "listening": ["listening", "listening"],
        "reached": "first",
        "hostname": "second\n",
        "files": "touch: cannot touch '/etc/x': Read-only file system\n"
        "touch: cannot touch '/config/x': Read-only file system\n"
        "from the config\n",
        "on the host": "written\n",
        "exec": "mine\n",
        "survivors": [],
    }
