"""The process sandbox on the real kernel: pods' networks, containers' files, processes and signals.

Nothing is skipped: where the machine cannot run the sandbox, the node fixture fails with the one-line
SandboxUnavailable message that says what to enable.
"""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesim.kubelet.sandbox import ExitStatus, Mount, Node, SandboxError
from kubesim.tests.sandbox_support import (
    CLIENT,
    ENV,
    PYTHON,
    SERVER,
    finish,
    launch,
    new_uid,
    read_line,
    run,
    sleeping,
)


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    # Under /var/tmp rather than /tmp: containers get a /tmp of their own, and the node's directory must be
    # on the part of the host they see, for the test that it is hidden from them to mean something.
    with (
        tempfile.TemporaryDirectory(dir="/var/tmp", prefix="kubesim-sandbox-") as run_dir,
        Node(Path(run_dir)) as started,
    ):
        yield started


@pytest.fixture
def pod(node: Node) -> Iterator[str]:
    uid = new_uid()
    node.create_pod(uid, "web-0")
    yield uid
    node.remove_pod(uid)


# The pod network -------------------------------------------------------------------------------------------


def test_two_pods_listen_on_one_port_and_reach_each_other_by_ip(node: Node) -> None:
    first, second = new_uid(), new_uid()
    first_ip, second_ip = node.create_pod(first, "first"), node.create_pod(second, "second")
    try:
        for uid, name in ((first, "I am first"), (second, "I am second")):
            server = launch(node, uid, PYTHON, "-c", SERVER, name, "2222")
            assert read_line(server.stdout) == "listening"

        assert run(node, first, PYTHON, "-c", CLIENT, second_ip, "2222")[1] == "I am second"
        assert run(node, second, PYTHON, "-c", CLIENT, first_ip, "2222")[1] == "I am first"
        # the containers of a pod share its network
        assert run(node, first, PYTHON, "-c", CLIENT, "127.0.0.1", "2222")[1] == "I am first"
    finally:
        node.remove_pod(first)
        node.remove_pod(second)
    assert first_ip != second_ip
    assert {first_ip.rsplit(".", 2)[0], second_ip.rsplit(".", 2)[0]} == {"10.244"}
    assert not {first_ip, second_ip} & {"10.244.0.0", "10.244.0.1"}


def test_a_pod_has_its_hostname_eth0_and_a_default_route(node: Node, pod: str) -> None:
    status, out, _ = run(
        node, pod, "sh", "-c", "hostname; cat /proc/sys/kernel/hostname; cat /proc/net/route"
    )

    hostname, proc_hostname, *routes = out.splitlines()
    assert (hostname, proc_hostname, status) == ("web-0", "web-0", ExitStatus(0))
    default = [line.split() for line in routes if line.split()[1:2] == ["00000000"]]
    assert [route[0] for route in default] == ["eth0"]


def test_connect_reaches_a_pod_from_the_node_and_refusals_are_oserrors(node: Node, pod: str) -> None:
    address = node.create_pod(serving := new_uid(), "server")
    try:
        server = launch(node, serving, PYTHON, "-c", SERVER, "hello from the pod", "8080")
        assert read_line(server.stdout) == "listening"

        with node.connect(address, 8080) as connection:
            assert connection.recv(100) == b"hello from the pod"
        with pytest.raises(ConnectionRefusedError):
            node.connect(address, 8081)
    finally:
        node.remove_pod(serving)


def test_an_exposed_host_port_reaches_a_server_on_the_hosts_loopback(node: Node, pod: str) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    greeting = f"host {uuid.uuid4().hex}".encode()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.sendall(greeting)

    threading.Thread(target=serve, daemon=True).start()
    with listener:
        node.expose_host_port("10.96.0.1", 443, ("127.0.0.1", listener.getsockname()[1]))
        status, out, err = run(node, pod, PYTHON, "-c", CLIENT, "10.96.0.1", "443")

    assert (status, out) == (ExitStatus(0), greeting.decode()), err
    with pytest.raises(ValueError, match=r"host_address: 10\.0\.0\.1 is not on the host's loopback"):
        node.expose_host_port("10.96.0.2", 443, ("10.0.0.1", 80))


def test_a_service_spreads_connections_over_its_backends_in_turn(node: Node, pod: str) -> None:
    backends = {new_uid(): name for name in ("backend a", "backend b")}
    addresses = {uid: node.create_pod(uid, "backend") for uid in backends}
    try:
        for uid, name in backends.items():
            assert read_line(launch(node, uid, PYTHON, "-c", SERVER, name, "9000").stdout) == "listening"

        node.set_service("10.96.7.7", 80, [(addresses[uid], 9000) for uid in backends])
        answers = [run(node, pod, PYTHON, "-c", CLIENT, "10.96.7.7", "80")[1] for _ in range(4)]
        assert sorted(answers) == ["backend a", "backend a", "backend b", "backend b"]

        only_a = next(uid for uid, name in backends.items() if name == "backend a")
        node.set_service("10.96.7.7", 80, [(addresses[only_a], 9000)])
        assert {run(node, pod, PYTHON, "-c", CLIENT, "10.96.7.7", "80")[1] for _ in range(2)} == {"backend a"}

        node.set_service("10.96.7.7", 80, [])
        assert run(node, pod, PYTHON, "-c", CLIENT, "10.96.7.7", "80")[1].strip() in {
            "ConnectionRefusedError",
            "TimeoutError",
        }
    finally:
        for uid in backends:
            node.remove_pod(uid)


# Files -----------------------------------------------------------------------------------------------------

WRITE = """
import errno, sys
for path in sys.argv[1:]:
    try:
        with open(path, "w") as file:
            file.write("written in the container")
        print(path, "ok")
    except OSError as error:
        print(path, errno.errorcode[error.errno])
"""


def test_a_read_write_mount_writes_through_to_the_host(node: Node, pod: str, tmp_path: Path) -> None:
    (tmp_path / "volume").mkdir()

    status, out, _ = run(
        node, pod, PYTHON, "-c", WRITE, "/data/out", mounts=(Mount(str(tmp_path / "volume"), "/data"),)
    )

    assert (status, out) == (ExitStatus(0), "/data/out ok\n")
    assert (tmp_path / "volume" / "out").read_text() == "written in the container"


def test_a_read_only_mount_is_readable_and_refuses_writes_with_erofs(
    node: Node, pod: str, tmp_path: Path
) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.yaml").write_text("answer: 42\n")

    _, out, _ = run(
        node,
        pod,
        "sh",
        "-c",
        f"cat /etc/config/settings.yaml; {PYTHON} -c '{WRITE}' /etc/config/settings.yaml /etc/config/new",
        mounts=(Mount(str(tmp_path / "config"), "/etc/config", read_only=True),),
    )

    assert out.splitlines() == ["answer: 42", "/etc/config/settings.yaml EROFS", "/etc/config/new EROFS"]
    assert (tmp_path / "config" / "settings.yaml").read_text() == "answer: 42\n"


def test_mounts_at_paths_the_host_lacks_keep_the_hosts_entries_beside_them(
    node: Node, pod: str, tmp_path: Path
) -> None:
    token = tmp_path / "serviceaccount"
    token.mkdir()
    (token / "token").write_text("a-token")
    (tmp_path / "workspace").mkdir()
    assert not Path("/var/run/secrets/kubernetes.io").exists()
    assert not Path("/etc/config").exists()
    mounts = (
        Mount(str(token), "/var/run/secrets/kubernetes.io/serviceaccount", read_only=True),
        Mount(str(tmp_path / "workspace"), "/etc/config/deep/er"),
        Mount(str(tmp_path / "workspace"), "/workspace"),
    )
    script = (
        "cat /var/run/secrets/kubernetes.io/serviceaccount/token; echo; head -c 5 /etc/passwd; echo; "
        f"ls /run | grep -c . ; {PYTHON} -c '{WRITE}' /etc/new /run/new /workspace/ok /etc/config/deep/er/ok"
    )

    _, out, _ = run(node, pod, "sh", "-c", script, mounts=mounts)

    token_text, passwd, run_entries, *writes = out.splitlines()
    assert (token_text, passwd) == ("a-token", "root:")
    assert int(run_entries) == len(os.listdir("/run")) + 1  # the host's, and secrets/
    assert writes == ["/etc/new EROFS", "/run/new EROFS", "/workspace/ok ok", "/etc/config/deep/er/ok ok"]


def test_a_single_file_mount_replaces_etc_hosts(node: Node, pod: str, tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("10.244.0.9\tother-pod\n")

    _, out, _ = run(node, pod, "cat", "/etc/hosts", mounts=(Mount(str(hosts), "/etc/hosts", read_only=True),))

    assert out == "10.244.0.9\tother-pod\n"


def test_the_host_filesystem_is_visible_read_only(node: Node, pod: str) -> None:
    _, out, _ = run(
        node,
        pod,
        "sh",
        "-c",
        f"head -c 5 /etc/passwd; echo; {PYTHON} -c '{WRITE}' /etc/x /usr/x /x /var/tmp/x /proc/x",
    )

    assert out.splitlines() == [
        "root:",
        "/etc/x EROFS",
        "/usr/x EROFS",
        "/x EROFS",
        "/var/tmp/x EROFS",
        "/proc/x ENOENT",
    ]


def test_a_process_cannot_remount_its_view_of_the_host_writable(node: Node, pod: str) -> None:
    """It keeps Docker's default capabilities only; in a user namespace of its own, the mounts are locked."""
    remount = "mount -o remount,bind,rw /var 2>/dev/null && echo remounted"
    script = (
        "grep CapEff /proc/self/status; "
        f"{remount}; "
        f"unshare --user --map-root-user --mount sh -c '{remount}; umount /var 2>/dev/null || echo locked'; "
        f"{PYTHON} -c '{WRITE}' /var/tmp/x"
    )

    _, out, _ = run(node, pod, "sh", "-c", script)

    assert out.splitlines() == ["CapEff:\t00000000a80425fb", "locked", "/var/tmp/x EROFS"]


def test_masked_paths_and_the_nodes_own_directory_are_hidden(node: Node, pod: str) -> None:
    assert os.listdir("/usr/share")
    assert Path("/etc/hostname").read_text()

    _, out, _ = run(
        node,
        pod,
        "sh",
        "-c",
        f"ls -A /usr/share | wc -l; wc -c < /etc/hostname; ls -A {node.run_dir} | wc -l",
        masked_paths=("/usr/share", "/etc/hostname"),
    )

    assert out.split() == ["0", "0", "0"]


def test_tmp_is_private_to_a_container_and_dev_shm_shared_by_the_pod(node: Node, pod: str) -> None:
    writer = launch(
        node,
        pod,
        "sh",
        "-c",
        "echo mine > /tmp/mine; echo ours > /dev/shm/ours; echo written; exec sleep 1000",
    )
    assert read_line(writer.stdout) == "written"
    other_pod = new_uid()
    node.create_pod(other_pod, "other")
    try:
        look = "ls /tmp/mine /dev/shm/ours 2>/dev/null; true"
        assert run(node, pod, "sh", "-c", look)[1].split() == ["/dev/shm/ours"]
        assert run(node, other_pod, "sh", "-c", look)[1].split() == []
    finally:
        node.remove_pod(other_pod)
        writer.kill()


# Processes -------------------------------------------------------------------------------------------------


def test_the_environment_is_exactly_the_one_given(node: Node, pod: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "GREETING": "hello world", "EMPTY": "", "MULTI": "line one\nline two"}

    _, out, _ = run(node, pod, "env", "-0", env=env)

    assert dict(entry.split("=", 1) for entry in out.split("\0") if entry) == env


def test_argv0_is_looked_up_in_the_containers_own_path(node: Node, pod: str, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "greet").write_text("#!/bin/sh\necho greetings from $0\n")
    (tools / "greet").chmod(0o755)

    status, out, _ = run(
        node, pod, "greet", env={"PATH": "/opt/tools:/bin"}, mounts=(Mount(str(tools), "/opt/tools", True),)
    )

    assert (status, out) == (ExitStatus(0), "greetings from /opt/tools/greet\n")


def test_the_working_dir_is_entered_and_made_when_missing(node: Node, pod: str) -> None:
    assert run(node, pod, "pwd", working_dir="/usr/share")[1] == "/usr/share\n"
    assert run(node, pod, "pwd", working_dir="/workspace/runs/1")[1] == "/workspace/runs/1\n"


def test_exit_codes_and_a_missing_executable(node: Node, pod: str, tmp_path: Path) -> None:
    (tmp_path / "not-executable").write_text("echo no")
    assert run(node, pod, "true")[0] == ExitStatus(0)
    assert run(node, pod, "sh", "-c", "exit 3")[0] == ExitStatus(3)

    status, _, err = run(node, pod, "no-such-program", "--flag")
    assert (status, err) == (
        ExitStatus(127),
        'kubesim: exec: "no-such-program": executable file not found in $PATH\n',
    )
    status, _, err = run(node, pod, "/no/such/program")
    assert (status, err) == (
        ExitStatus(127),
        'kubesim: exec: "/no/such/program": no such file or directory\n',
    )
    status, _, err = run(
        node,
        pod,
        "/data/not-executable",
        mounts=(Mount(str(tmp_path / "not-executable"), "/data/not-executable"),),
    )
    assert (status, err) == (ExitStatus(126), 'kubesim: exec: "/data/not-executable": permission denied\n')


def test_sigterm_reaches_the_process_which_may_handle_it(node: Node, pod: str) -> None:
    handles = launch(
        node, pod, "sh", "-c", 'trap "echo got TERM; exit 0" TERM; echo ready; while :; do sleep 0.1; done'
    )
    assert read_line(handles.stdout) == "ready"

    handles.signal(signal.SIGTERM)

    status, out, _ = finish(handles)
    assert (status, out) == (ExitStatus(0), "got TERM\n")


def test_a_process_killed_by_sigterm_exits_143(node: Node, pod: str) -> None:
    sleeper = launch(node, pod, "sh", "-c", "echo ready; exec sleep 1000")
    assert read_line(sleeper.stdout) == "ready"

    sleeper.signal(signal.SIGTERM)

    assert finish(sleeper)[0] == ExitStatus(143)
    sleeper.kill()  # signalling what has ended does nothing


def test_kill_ends_a_grandchild_that_left_the_session(node: Node, pod: str) -> None:
    mark = f"{uuid.uuid4().int % 10**6}.5"
    container = launch(node, pod, "sh", "-c", f"setsid sleep {mark} & sleep 0.2; echo started; wait")
    assert read_line(container.stdout) == "started"
    grandchildren = sleeping(mark)
    assert len(grandchildren) == 1

    container.kill()

    assert finish(container)[0] == ExitStatus(137)
    assert sleeping(mark) == []


def test_running_out_of_memory_is_reported(node: Node, pod: str) -> None:
    status, _, err = run(
        node, pod, PYTHON, "-c", "data = b'x' * (512 << 20); print(len(data))", memory_limit_bytes=96 << 20
    )

    if node.memory_enforcement == "rlimit":  # no writable cgroup: the allocation fails instead
        assert (status, err.splitlines()[-1]) == (ExitStatus(1), "MemoryError")
    else:
        assert status == ExitStatus(137, oom_killed=True)


def test_stdin_reaches_the_process(node: Node, pod: str) -> None:
    cat = launch(node, pod, "cat", stdin=True)
    assert cat.stdin is not None
    os.write(cat.stdin, b"through the pipe\n")
    os.close(cat.stdin)
    cat.stdin = None

    assert finish(cat)[:2] == (ExitStatus(0), "through the pipe\n")


def test_a_terminal_carries_both_streams_and_follows_resizes(node: Node, pod: str) -> None:
    shell = launch(
        node, pod, "sh", "-c", "echo ready; read go; stty size; tty; echo to-stderr >&2", stdin=True, tty=True
    )
    assert shell.stderr is None
    assert shell.stdin is not None
    assert read_line(shell.stdout) == "ready"

    shell.resize(100, 40)
    os.write(shell.stdin, b"go\n")

    status, out, _ = finish(shell)
    echoed, size, terminal, to_stderr = out.splitlines()
    assert status == ExitStatus(0)
    assert (echoed, size, to_stderr) == ("go", "40 100", "to-stderr")  # the terminal echoes what was typed
    assert terminal.startswith("/dev/pts/")


# Exec ------------------------------------------------------------------------------------------------------


def test_exec_runs_in_the_containers_namespaces(node: Node, pod: str) -> None:
    container = launch(node, pod, "sh", "-c", "echo hello > /tmp/marker; echo ready; exec sleep 1000")
    assert read_line(container.stdout) == "ready"

    def execute(*argv: str, **fields: object) -> tuple[ExitStatus, str, str]:
        options = {"env": ENV, "working_dir": "/", "stdin": False, "tty": False, **fields}
        return finish(node.exec(pod, container, argv, **options))  # type: ignore[arg-type]

    assert execute("cat", "/tmp/marker")[1] == "hello\n"
    assert (
        execute("sh", "-c", "hostname; ps -o comm= -p 1 2>/dev/null || cat /proc/1/comm")[1].split()[0]
        == "web-0"
    )
    assert execute("sh", "-c", "exit 5")[0] == ExitStatus(5)
    assert execute("no-such-program")[0] == ExitStatus(127)
    assert execute("pwd", working_dir="/usr")[1] == "/usr\n"
    shell = node.exec(pod, container, ["sh", "-c", "tty"], env=ENV, working_dir="/", stdin=False, tty=True)
    assert finish(shell)[1].startswith("/dev/pts/")

    container.kill()
    assert finish(container)[0] == ExitStatus(137)
    with pytest.raises(SandboxError, match=r"no container c\d+ on this node \(or it has ended\)"):
        node.exec(pod, container, ["true"], env=ENV, working_dir="/", stdin=False, tty=False)


# The node's bookkeeping ------------------------------------------------------------------------------------


def test_removing_a_pod_ends_its_containers(node: Node) -> None:
    uid = new_uid()
    node.create_pod(uid, "short-lived")
    sleeper = launch(node, uid, "sh", "-c", "echo ready; exec sleep 1000")
    assert read_line(sleeper.stdout) == "ready"

    node.remove_pod(uid)

    assert finish(sleeper)[0] == ExitStatus(137)
    node.remove_pod(uid)  # a second removal is no error
    with pytest.raises(SandboxError, match=f"pod {uid} has no sandbox"):
        launch(node, uid, "true")
    node.create_pod(uid, "again")
    node.remove_pod(uid)


def test_pods_made_from_many_threads_at_once_get_their_own_addresses(node: Node) -> None:
    uids = [new_uid() for _ in range(8)]
    results: dict[str, tuple[str, str]] = {}

    def start(uid: str) -> None:
        address = node.create_pod(uid, f"pod-{uid}")
        results[uid] = (address, run(node, uid, "hostname")[1].strip())

    threads = [threading.Thread(target=start, args=(uid,)) for uid in uids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for uid in uids:
        node.remove_pod(uid)

    assert {uid: hostname for uid, (_, hostname) in results.items()} == {uid: f"pod-{uid}" for uid in uids}
    assert len({address for address, _ in results.values()}) == len(uids)


def test_a_pod_uid_is_used_once(node: Node, pod: str) -> None:
    with pytest.raises(SandboxError, match=f"pod {pod} already has a sandbox"):
        node.create_pod(pod, "twin")


def test_bad_requests_are_answered_and_the_agent_carries_on(node: Node, pod: str) -> None:
    def ask(raw: bytes) -> bytes:
        with socket.socket(socket.AF_UNIX) as connection:
            connection.connect(node.socket_path)
            connection.sendall(raw)
            connection.shutdown(socket.SHUT_WR)
            return connection.makefile("rb").read()

    assert ask(b"not json\n") == b""  # not a request: the connection just closes
    assert ask(b"[1, 2]\n") == b""
    assert ask(b'{"op": "create_pod"') == b""  # ended mid-message
    assert b"op: unknown operation 'format_disk'" in ask(b'{"op": "format_disk"}\n')
    assert b"uid: must be a non-empty string" in ask(b'{"op": "create_pod", "uid": 7}\n')
    assert b"argv: must be a non-empty list" in ask(
        b'{"op": "start_container", "pod": "%s", "argv": "ls"}\n' % pod.encode()
    )
    assert b"stdio.stdout: must be the index" in ask(
        b'{"op": "start_container", "pod": "%s", "argv": ["ls"], "env": {}, "tty": false, '
        b'"stdio": {"stdin": null, "stdout": 3, "stderr": null}}\n' % pod.encode()
    )
    assert b"no process nope" in ask(b'{"op": "wait", "id": "nope"}\n')

    assert run(node, pod, "true")[0] == ExitStatus(0)
