"""kubectl 1.37 exec, cp and attach against an HTTPS + RBAC simulator whose stream backend runs local
processes: the WebSocket v5 channel protocol kubectl prefers, the SPDY it falls back to, exit codes,
terminals, disconnects, and who may open a stream."""

from __future__ import annotations

import fcntl
import hashlib
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL, running_simulator
from kubesim.tests.local_backend import Container, LocalBackend, running_pod

SPDY = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pod-files")


@pytest.fixture(scope="module")
def backend(home: Path) -> Iterator[LocalBackend]:
    local = LocalBackend(home)
    yield local
    local.stop()


@pytest.fixture(scope="module")
def sim(backend: LocalBackend) -> Iterator[Simulator]:
    with running_simulator(https=True, auth=True) as simulator:
        simulator.streams.backend = backend
        running_pod(simulator, "shell")
        yield simulator


def kubectl(
    sim: Simulator, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path), **(env or {})}
    return subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, env=environment, check=False, timeout=120
    )


def upgrades(sim: Simulator, subresource: str, method: str) -> int:
    return sim.counters.count(resource=f"pods/{subresource}", method=method, code=101)


def wait_until(condition: object, what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


# --- exec over WebSocket ---------------------------------------------------------------------------------


def test_exec_keeps_stdout_and_stderr_apart_over_a_websocket(sim: Simulator) -> None:
    before = upgrades(sim, "exec", "GET")
    result = kubectl(sim, "exec", "shell", "--", "sh", "-c", "echo to-stdout; echo to-stderr >&2")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"to-stdout\n"
    assert result.stderr == b"to-stderr\n"
    assert upgrades(sim, "exec", "GET") == before + 1  # one WebSocket handshake, no SPDY fallback


def test_the_exit_code_of_the_command_is_kubectls(sim: Simulator) -> None:
    result = kubectl(sim, "exec", "shell", "--", "sh", "-c", "exit 3")
    assert result.returncode == 3
    assert b"command terminated with exit code 3" in result.stderr


def test_stdin_reaches_the_process_and_its_end_closes_the_input(sim: Simulator) -> None:
    """v5's close signal: `wc` only prints once its input ends."""
    data = os.urandom(1_500_000)
    result = kubectl(sim, "exec", "-i", "shell", "--", "sh", "-c", "sha256sum | cut -c1-64", stdin=data)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().strip() == hashlib.sha256(data).hexdigest()


def test_a_terminal_gets_kubectls_window_size_and_is_a_tty(sim: Simulator, backend: LocalBackend) -> None:
    """`kubectl exec -it` under a real pseudo-terminal of 40 rows by 100 columns: the resize channel sets the
    size of the exec's own terminal (the command waits for it: a process started before the size arrived
    sees 0x0 until its SIGWINCH)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)}
    script = 'until [ "$(stty size)" != "0 0" ]; do sleep 0.01; done; stty size; tty; exit 2'
    process = subprocess.Popen(
        [str(KUBECTL), "exec", "-it", "shell", "--", "sh", "-c", script],
        stdin=follower, stdout=follower, stderr=follower, env=env, start_new_session=True,
    )  # fmt: skip
    os.close(follower)
    output = b""
    while select.select([leader], [], [], 60)[0]:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: kubectl ended
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    assert process.wait(30) == 2
    lines = output.decode().splitlines()
    assert lines[0] == "40 100"
    assert lines[1].startswith("/dev/pts/")
    assert (100, 40) in backend.execs[-1].sizes


def test_kubectl_cp_copies_a_file_into_the_pod_and_back(sim: Simulator, home: Path, tmp_path: Path) -> None:
    """kubectl cp is tar through exec: `tar -xmf -` reads stdin to its end, `tar cf -` writes stdout."""
    original = tmp_path / "model.bin"
    original.write_bytes(os.urandom(3_000_000))
    (home / "upload").mkdir()
    into = kubectl(sim, "cp", str(original), f"shell:{home}/upload/model.bin")
    assert into.returncode == 0, into.stderr
    assert (home / "upload" / "model.bin").read_bytes() == original.read_bytes()
    back = tmp_path / "back.bin"
    out_of = kubectl(sim, "cp", f"shell:{home}/upload/model.bin", str(back))
    assert out_of.returncode == 0, out_of.stderr
    assert back.read_bytes() == original.read_bytes()


def test_a_client_that_disconnects_ends_its_exec(sim: Simulator, backend: LocalBackend, home: Path) -> None:
    pid_file = home / "sleeper.pid"
    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)}
    client = subprocess.Popen(
        [str(KUBECTL), "exec", "shell", "--", "sh", "-c", f"echo $$ > {pid_file}; exec sleep 600"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), "the exec to start")
    session = next(s for s in reversed(backend.execs) if s.command[-1].startswith("echo $$"))
    client.send_signal(signal.SIGKILL)
    client.wait()
    wait_until(lambda: session.process.poll() is not None, "the exec'd process to be killed")
    assert session.killed


# --- attach ------------------------------------------------------------------------------------------------


def test_attach_copies_the_containers_output_and_feeds_its_input(
    sim: Simulator, backend: LocalBackend
) -> None:
    running_pod(sim, "echoer")
    backend.containers[("default", "echoer")] = Container(
        [sys.executable, "-u", "-c", "import sys\nfor line in sys.stdin:\n    print('echo', line.strip())\n"
         "    if line.strip() == 'quit':\n        break\n"]
    )  # fmt: skip
    result = kubectl(sim, "attach", "-i", "echoer", stdin=b"one\ntwo\nquit\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"echo one\necho two\necho quit\n"
    assert not any(session.killed for session in backend.attachments)


def test_detaching_leaves_the_container_running(sim: Simulator, backend: LocalBackend) -> None:
    running_pod(sim, "ticker")
    ticker = Container(
        [sys.executable, "-u", "-c", "import time\nwhile True:\n    print('tick')\n    time.sleep(0.05)"]
    )
    backend.containers[("default", "ticker")] = ticker
    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)}
    client = subprocess.Popen([str(KUBECTL), "attach", "ticker"], env=env, stdout=subprocess.PIPE)
    assert client.stdout is not None
    assert client.stdout.readline() == b"tick\n"
    client.send_signal(signal.SIGKILL)
    client.wait()
    attached = len(backend.attachments)
    again = subprocess.Popen([str(KUBECTL), "attach", "ticker"], env=env, stdout=subprocess.PIPE)
    assert again.stdout is not None
    assert again.stdout.readline() == b"tick\n"  # a second client attaches to the same, still running process
    again.send_signal(signal.SIGKILL)
    again.wait()
    assert len(backend.attachments) == attached + 1
    assert ticker.process.poll() is None
    assert not any(session.killed for session in backend.attachments)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, b'error: Internal error occurred: unable to upgrade connection: container not found ("main")'),
        (SPDY, b'error: unable to upgrade connection: container not found ("main")'),
    ],
)
def test_a_container_that_is_not_running_is_refused_in_upstreams_words(
    sim: Simulator, env: dict[str, str], message: bytes
) -> None:
    """The backend refuses; over WebSocket kubectl reads it on the error channel (the API server's
    translator wraps a kubelet's refusal as an internal error), over SPDY as the HTTP answer."""
    if not sim.store.exists("pods", "stopped", "default"):
        running_pod(sim, "stopped")
    result = kubectl(sim, "attach", "stopped", env=env)
    assert result.returncode == 1
    assert message in result.stderr


# --- SPDY, what kubectl falls back to ----------------------------------------------------------------------


def test_exec_over_spdy_carries_output_input_and_the_exit_code(sim: Simulator) -> None:
    before = upgrades(sim, "exec", "POST")
    result = kubectl(
        sim,
        "exec",
        "-i",
        "shell",
        "--",
        "sh",
        "-c",
        "wc -c; echo to-stderr >&2; exit 4",
        stdin=b"x" * 100_000,
        env=SPDY,
    )
    assert result.returncode == 4
    assert result.stdout == b"100000\n"
    assert result.stderr == b"to-stderr\ncommand terminated with exit code 4\n"
    assert upgrades(sim, "exec", "POST") == before + 1


# --- who may open a stream ---------------------------------------------------------------------------------


def grant(sim: Simulator, user: str, verbs: list[str]) -> None:
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    if verbs:
        rules.append({"apiGroups": [""], "resources": ["pods/exec"], "verbs": verbs})
    group = "rbac.authorization.k8s.io"
    sim.store.create(
        {
            "apiVersion": f"{group}/v1",
            "kind": "Role",
            "metadata": {"name": user, "namespace": "default"},
            "rules": rules,
        }
    )
    sim.store.create(
        {
            "apiVersion": f"{group}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": user, "namespace": "default"},
            "roleRef": {"apiGroup": group, "kind": "Role", "name": user},
            "subjects": [{"kind": "User", "name": user, "apiGroup": group}],
        }
    )


@pytest.mark.parametrize(
    ("user", "verbs", "over"),
    [("exec-get-create", ["get", "create"], "GET"), ("exec-create", ["create"], "POST")],
)
def test_create_on_pods_exec_opens_a_stream(sim: Simulator, user: str, verbs: list[str], over: str) -> None:
    """With get and create kubectl's WebSocket succeeds; with create alone the WebSocket GET is refused and
    kubectl's SPDY fallback (a POST) succeeds, as on a real 1.35+ cluster."""
    grant(sim, user, verbs)
    before = upgrades(sim, "exec", over)
    result = kubectl(sim, "--as", user, "exec", "shell", "--", "echo", "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"hello\n"
    assert upgrades(sim, "exec", over) == before + 1


@pytest.mark.parametrize(("user", "verbs"), [("exec-none", []), ("exec-get", ["get"])])
def test_without_create_on_pods_exec_the_stream_is_forbidden(
    sim: Simulator, backend: LocalBackend, user: str, verbs: list[str]
) -> None:
    """`get` alone no longer opens a WebSocket exec (AuthorizePodWebsocketUpgradeCreatePermission), and
    nothing runs."""
    grant(sim, user, verbs)
    started = len(backend.execs)
    result = kubectl(sim, "--as", user, "exec", "shell", "--", "echo", "hello")
    assert result.returncode == 1
    assert result.stdout == b""
    refusal = (
        f'pods "shell" is forbidden: User "{user}" cannot create resource "pods/exec" in API group "" '
        'in the namespace "default"'
    )
    assert f"error: unable to upgrade connection: {refusal}".encode() in result.stderr
    assert len(backend.execs) == started


def test_a_pod_without_a_node_has_no_stream(sim: Simulator) -> None:
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "unscheduled", "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
        }
    )
    result = kubectl(sim, "exec", "unscheduled", "--", "true")
    assert result.returncode == 1
    assert (
        b"error: unable to upgrade connection: pod unscheduled does not have a host assigned" in result.stderr
    )
