"""The kubelet's side of the sandbox: starts the node agent in its namespaces and sends it requests.

Everything runs as the invoking user: the agent is root only inside its user namespace. See docs/kubesim.md,
"The process sandbox", for what it isolates and what it does not.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import itertools
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubesim.kubelet.sandbox import boot, cgroup, network, relay
from kubesim.kubelet.sandbox.protocol import Channel, ProtocolError, close_all
from kubesim.kubelet.sandbox.spec import (
    ContainerHandle,
    ContainerLaunch,
    ExitStatus,
    SandboxError,
    SandboxUnavailable,
    check_argv,
    check_env,
)

START_TIMEOUT = 60.0
REQUEST_TIMEOUT = 60.0
CONTAINER_TIMEOUT = 180.0  # a root that mirrors large directories takes a while
TOOL_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
MAX_SOCKET_PATH = 107  # sun_path, less its terminating NUL
USERNS_SYSCTLS = (
    "user.max_user_namespaces",
    "kernel.unprivileged_userns_clone",
    "kernel.apparmor_restrict_unprivileged_userns",
)
_node_numbers = itertools.count(1)


def diagnose(message: str, sysctls: Mapping[str, str | None], *, root: bool) -> str:
    """One line for a sandbox that could not start: the sysctl to change when one is the cause.

    `message` is what unshare or the agent said; `sysctls` maps each of USERNS_SYSCTLS to its value (None
    where the kernel has no such setting); `root` whether the caller is root (unaffected by the last two).
    """
    if sysctls.get("user.max_user_namespaces") == "0":
        return (
            "the process sandbox needs user namespaces, and user.max_user_namespaces is 0: "
            "enable them with `sysctl -w user.max_user_namespaces=15000`"
        )
    if not root and sysctls.get("kernel.unprivileged_userns_clone") == "0":
        return (
            "the process sandbox needs unprivileged user namespaces: "
            "enable them with `sysctl -w kernel.unprivileged_userns_clone=1`"
        )
    if not root and sysctls.get("kernel.apparmor_restrict_unprivileged_userns") == "1":
        return (
            "the process sandbox needs unprivileged user namespaces, which AppArmor restricts: "
            "allow them with `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`"
        )
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    said = lines[-1] if lines else "the node agent ended without a word"
    return f"the process sandbox cannot start: {said}"


def read_sysctls() -> dict[str, str | None]:
    values: dict[str, str | None] = {}
    for name in USERNS_SYSCTLS:
        try:
            values[name] = Path("/proc/sys", *name.split(".")).read_text().strip()
        except OSError:
            values[name] = None
    return values


def find_tool(name: str, package: str) -> str:
    found = shutil.which(name, path=os.environ.get("PATH", "") + os.pathsep + TOOL_PATH)
    if found is None:
        raise SandboxUnavailable(
            f"the process sandbox needs `{name}` from {package}: install it (apt-get install {package})"
        )
    return found


class Container:
    """A container or an exec (the ContainerHandle): its streams, its signals, its exit status.

    The caller owns `stdout`, `stderr` and `stdin` and closes them. With a tty, `stdout` is the terminal's
    master end (both streams; reading it fails with EIO once the process and its children have all closed
    the terminal), `stderr` is None, and `stdin` a second descriptor of that master.
    """

    def __init__(
        self, node: Node, id: str, stdout: int, stderr: int | None, stdin: int | None, pty: int | None
    ) -> None:
        self.node = node
        self.id = id
        self.stdout = stdout
        self.stderr = stderr
        self.stdin = stdin
        self._pty = pty  # our own descriptor of the terminal, for resize(); closed with the exit status
        self._status: ExitStatus | None = None
        self._waiting = threading.Lock()
        self._terminal = threading.Lock()  # resize() against the close of _pty

    def signal(self, signum: int) -> None:
        """Sends `signum` to the container's init, which forwards it to the process (an exec's: to it).

        Signalling a process that has ended does nothing.
        """
        if self._status is None:
            self.node._request({"op": "signal", "id": self.id, "signal": int(signum)})

    def kill(self) -> None:
        """SIGKILL: for a container, its init, so the kernel ends every process of its pid namespace."""
        self.signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> ExitStatus | None:
        """The exit status, once the process has ended; None if it still runs after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._waiting.acquire(timeout=-1 if timeout is None else timeout):
            return None
        try:
            if self._status is None:
                left = None if deadline is None else max(deadline - time.monotonic(), 0)
                reply, _ = self.node._request(
                    {"op": "wait", "id": self.id, "timeout": left},
                    timeout=None if left is None else left + REQUEST_TIMEOUT,
                )
                if reply.get("running"):
                    return None
                self._status = ExitStatus(int(reply["exit_code"]), bool(reply["oom_killed"]))
                with self._terminal:
                    if self._pty is not None:
                        os.close(self._pty)
                        self._pty = None
            return self._status
        finally:
            self._waiting.release()

    def resize(self, columns: int, rows: int) -> None:
        """Sets the terminal's size; the kernel sends SIGWINCH to its foreground process group."""
        with self._terminal:
            if self._pty is None:
                raise SandboxError(f"{self.id} has no terminal to resize, or has ended")
            fcntl.ioctl(self._pty, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))


class Node:
    """One node: its agent, pods, containers, Services and exposed host ports (docs/kubesim.md)."""

    def __init__(self, run_dir: Path, *, pod_cidr: str = "10.244.0.0/16") -> None:
        self.run_dir = Path(run_dir).absolute()
        self.pod_cidr = str(network.parse_pod_cidr(pod_cidr))
        self.socket_path = str(self.run_dir / "agent.sock")
        if len(os.fsencode(self.socket_path)) + len("relay-00000.sock") - len("agent.sock") > MAX_SOCKET_PATH:
            raise ValueError(f"run_dir: {self.run_dir} is too long for a unix socket path")
        self.memory_cgroup: tuple[int, str] | None = None
        self.agent_pid: int | None = None  # the agent's pid on the host
        self._process: subprocess.Popen[bytes] | None = None
        self._lifeline: int | None = None
        self._lock = threading.Lock()
        self._relays: dict[tuple[str, int], relay.Forwarder] = {}
        self._relay_targets: dict[tuple[str, int], tuple[str, int]] = {}
        self._relay_numbers = itertools.count(1)

    @property
    def memory_enforcement(self) -> str:
        """How memory limits are enforced here: "cgroup v1", "cgroup v2" or "rlimit" (RLIMIT_AS)."""
        return "rlimit" if self.memory_cgroup is None else f"cgroup v{self.memory_cgroup[0]}"

    def __enter__(self) -> Node:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    # The agent -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Starts the node agent; raises SandboxUnavailable (one line) where the machine cannot."""
        if self._process is not None:
            raise SandboxError("the node is already started")
        unshare = find_tool("unshare", "util-linux")
        ip = find_tool("ip", "iproute2")
        sleep = find_tool("sleep", "coreutils")
        self.run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        for directory in ("root", "shm"):
            (self.run_dir / directory).mkdir(exist_ok=True)
        self._clear_stale_sockets()
        self.memory_cgroup = cgroup.discover(f"{cgroup.NODE_PREFIX}{os.getpid()}-{next(_node_numbers)}")
        lifeline_read, self._lifeline = os.pipe()
        config = {
            "socket": self.socket_path,
            "run_dir": str(self.run_dir),
            "pod_cidr": self.pod_cidr,
            "lifeline_fd": lifeline_read,
            "ip": ip,
            "sleep": sleep,
            "python": sys.executable,
            "memory_cgroup": self.memory_cgroup,
        }
        argv = [
            unshare,
            *("--user", "--map-root-user", "--net", "--mount", "--pid", "--fork"),
            *("--kill-child", "--mount-proc", "--"),
            *boot.python_argv("agent", json.dumps(config)),
        ]
        log_path = self.run_dir / "agent.log"
        try:
            with open(log_path, "wb") as log:
                self._process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    pass_fds=(lifeline_read,),
                    env={"PATH": TOOL_PATH},
                    cwd="/",
                )
        finally:
            os.close(lifeline_read)
        answer = self._read_ready()
        if answer.get("ready") is not True:
            said = str(answer.get("error") or log_path.read_text(errors="replace"))
            self.stop()
            raise SandboxUnavailable(diagnose(said, read_sysctls(), root=os.geteuid() == 0))
        self.agent_pid = _only_child(self._process.pid)

    def _read_ready(self) -> dict[str, Any]:
        assert self._process is not None
        assert self._process.stdout is not None
        with self._process.stdout as stdout:
            readable, _, _ = select.select([stdout], [], [], START_TIMEOUT)
            line = stdout.readline() if readable else b""
        try:
            answer = json.loads(line) if line else {}
        except ValueError:
            answer = {"error": line.decode(errors="replace")}
        return answer if isinstance(answer, dict) else {}

    def _clear_stale_sockets(self) -> None:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with probe:
            try:
                probe.connect(self.socket_path)
            except OSError:
                pass
            else:
                raise SandboxError(f"{self.run_dir} is in use by a running node agent")
        for stale in [self.run_dir / "agent.sock", *self.run_dir.glob("relay-*.sock")]:
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()

    def stop(self) -> None:
        """Ends the agent, and with it every process of every pod; nothing is left behind."""
        with self._lock:
            relays = list(self._relays.values())
            self._relays.clear()
            self._relay_targets.clear()
        for forwarder in relays:
            forwarder.close()
        if self._lifeline is not None:
            os.close(self._lifeline)  # the agent sees the end of the pipe and exits
            self._lifeline = None
        if self._process is not None:
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()  # unshare's --kill-child takes the agent with it
                self._process.wait()
            self._process = None
        self.agent_pid = None
        if self.memory_cgroup is not None:
            cgroup.remove_tree(self.memory_cgroup[1])
            self.memory_cgroup = None
        for stale in [self.run_dir / "agent.sock", *self.run_dir.glob("relay-*.sock")]:
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()

    def _request(
        self,
        message: dict[str, Any],
        fds: Sequence[int] = (),
        *,
        timeout: float | None = REQUEST_TIMEOUT,
        os_errors: bool = False,
    ) -> tuple[dict[str, Any], list[int]]:
        """One request on a connection of its own; the agent's refusal raises SandboxError (or OSError)."""
        if self._process is None:
            raise SandboxError("the node is not started")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        channel = Channel(sock)
        try:
            sock.connect(self.socket_path)
            channel.send(message, list(fds))
            reply, reply_fds = channel.receive()
        except (OSError, ProtocolError) as error:
            raise SandboxError(f"the node agent did not answer {message['op']}: {error}") from None
        finally:
            channel.close()
        if "error" in reply:
            close_all(reply_fds)
            if os_errors and reply.get("errno"):
                raise OSError(int(reply["errno"]), str(reply["error"]))
            raise SandboxError(str(reply["error"]))
        return reply, reply_fds

    # Pods and containers ---------------------------------------------------------------------------------

    def create_pod(self, uid: str, hostname: str) -> str:
        """Makes the pod's sandbox (pause process, network, hostname); returns its IP."""
        reply, _ = self._request({"op": "create_pod", "uid": uid, "hostname": hostname})
        return str(reply["ip"])

    def remove_pod(self, uid: str) -> None:
        """Kills the pod's containers and pause process and frees its IP (a pod not there is no error)."""
        self._request({"op": "remove_pod", "uid": uid})

    def start_container(self, pod_uid: str, launch: ContainerLaunch) -> Container:
        message = {
            "op": "start_container",
            "pod": pod_uid,
            "mounts": [[mount.host_path, mount.container_path, mount.read_only] for mount in launch.mounts],
            "masked": list(launch.masked_paths),
            "memory_limit_bytes": launch.memory_limit_bytes,
        }
        return self._run(message, launch.argv, launch.env, launch.working_dir, launch.stdin, launch.tty)

    def exec(
        self,
        pod_uid: str,
        container: ContainerHandle,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        working_dir: str,
        stdin: bool,
        tty: bool,
    ) -> Container:
        """Runs argv in a running container's namespaces (kubectl exec and cp)."""
        check_argv(tuple(argv), "argv")
        check_env(env, "env")
        message = {"op": "exec", "pod": pod_uid, "container": container.id}
        return self._run(message, argv, env, working_dir, stdin, tty)

    def _run(
        self,
        message: dict[str, Any],
        argv: Sequence[str],
        env: Mapping[str, str],
        working_dir: str,
        stdin: bool,
        tty: bool,
    ) -> Container:
        with _streams(stdin=stdin, tty=tty) as (stdio, theirs, ours):
            reply, _ = self._request(
                {
                    **message,
                    "argv": list(argv),
                    "env": dict(env),
                    "working_dir": working_dir,
                    "tty": tty,
                    "stdio": stdio,
                },
                theirs,
                timeout=CONTAINER_TIMEOUT,
            )
            return Container(self, str(reply["id"]), **ours)

    # The node's network ----------------------------------------------------------------------------------

    def connect(self, ip: str, port: int, timeout: float = 5.0) -> socket.socket:
        """A TCP connection to ip:port made from the node's network (port-forward, probes).

        Raises OSError as connect() would (ConnectionRefusedError, TimeoutError...).
        """
        reply, fds = self._request(
            {"op": "connect", "ip": ip, "port": port, "timeout": timeout},
            timeout=timeout + REQUEST_TIMEOUT,
            os_errors=True,
        )
        close_all(fds[1:])
        if not fds:
            raise SandboxError(f"the node agent answered connect without a connection: {reply}")
        return socket.socket(fileno=fds[0])

    def expose_host_port(self, ip: str, port: int, host_address: tuple[str, int]) -> None:
        """Pods connecting to ip:port (e.g. 10.96.0.1:443) reach host_address on the host's loopback.

        The agent cannot reach the host's network; it relays each connection through a unix socket of
        ours in run_dir, and we connect onward. Exposing ip:port again changes where it leads.
        """
        host, host_port = host_address
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"host_address: {host} is not on the host's loopback, the only one exposed")
        key = (ip, port)
        with self._lock:
            known = key in self._relays
            self._relay_targets[key] = (host, host_port)
        if known:
            return
        path = str(self.run_dir / f"relay-{next(self._relay_numbers)}.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        os.chmod(path, 0o600)
        listener.listen(128)
        forwarder = relay.Forwarder(listener, lambda: self._dial_host(key), f"{ip}:{port} to the host")
        with self._lock:
            self._relays[key] = forwarder
        try:
            self._request({"op": "expose", "ip": ip, "port": port, "socket": path})
        except BaseException:
            with self._lock:
                self._relays.pop(key, None)
                self._relay_targets.pop(key, None)
            forwarder.close()
            raise

    def _dial_host(self, key: tuple[str, int]) -> socket.socket:
        with self._lock:
            target = self._relay_targets[key]
        connection = socket.create_connection(target, timeout=10)
        connection.settimeout(None)
        return connection

    def set_service(self, ip: str, port: int, backends: Sequence[tuple[str, int]]) -> None:
        """ip:port in the node's network, proxied in turn to `backends` (ready pods); [] removes it."""
        pairs = [[str(address), int(backend_port)] for address, backend_port in backends]
        self._request({"op": "service", "ip": ip, "port": port, "backends": pairs})


@contextlib.contextmanager
def _streams(*, stdin: bool, tty: bool) -> Iterator[tuple[dict[str, int | None], list[int], dict[str, Any]]]:
    """The process's stdio: what the agent gets (indices and descriptors) and what the handle keeps.

    Our ends are closed if the request fails; the process's ends once they have been sent.
    """
    theirs: list[int] = []
    ours: list[int] = []
    try:
        if tty:
            master, slave = os.openpty()
            ours.append(master)
            theirs.append(slave)
            keep_stdin = os.dup(master) if stdin else None
            ours.extend(fd for fd in (keep_stdin,) if fd is not None)
            pty = os.dup(master)
            ours.append(pty)
            stdio: dict[str, int | None] = {"stdin": 0, "stdout": 0, "stderr": 0}  # a terminal is all three
            handle = {"stdout": master, "stderr": None, "stdin": keep_stdin, "pty": pty}
        else:
            out_read, out_write = os.pipe()
            err_read, err_write = os.pipe()
            ours += [out_read, err_read]
            theirs += [out_write, err_write]
            keep_stdin = None
            if stdin:
                in_read, keep_stdin = os.pipe()
                ours.append(keep_stdin)
                theirs.append(in_read)
            stdio = {"stdout": 0, "stderr": 1, "stdin": 2 if stdin else None}
            handle = {"stdout": out_read, "stderr": err_read, "stdin": keep_stdin, "pty": None}
        yield stdio, theirs, handle
    except BaseException:
        close_all(ours)
        raise
    finally:
        close_all(theirs)


def _only_child(pid: int) -> int | None:
    """The one child of `pid` (unshare's: the agent), from /proc."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None
