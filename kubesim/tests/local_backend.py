"""A real StreamBackend for the stream tests: exec runs the command as a local process (pipes, or a pty for
a terminal), attach copies the output of a local process a test started as a pod's container, and connect
opens a TCP connection to a local server standing for the pod's port."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import signal
import socket
import struct
import subprocess
import termios
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesim.errors import ApiError
from kubesim.simulator import Simulator


@dataclass(frozen=True)
class ExitStatus:
    exit_code: int


def _status(returncode: int) -> ExitStatus:
    return ExitStatus(returncode if returncode >= 0 else 128 - returncode)


@dataclass
class ExecSession:
    command: tuple[str, ...]
    process: subprocess.Popen[bytes]
    stdout: int
    stderr: int
    stdin: int | None
    terminal: int | None = None
    sizes: list[tuple[int, int]] = field(default_factory=list)
    killed: bool = False

    def wait(self, timeout: float | None = None) -> ExitStatus | None:
        try:
            return _status(self.process.wait(timeout))
        except subprocess.TimeoutExpired:
            return None

    def resize(self, columns: int, rows: int) -> None:
        self.sizes.append((columns, rows))
        if self.terminal is not None:
            fcntl.ioctl(self.terminal, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def kill(self) -> None:
        self.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


class Container:
    """A long-running local process standing for a container: its output is copied to every attachment."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert self.process.stdin is not None
        self.stdin_fd = self.process.stdin.fileno()
        self._outputs: list[int] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._tee, daemon=True).start()

    def attach(self) -> int:
        read, write = os.pipe()
        with self._lock:
            self._outputs.append(write)
        return read

    def _tee(self) -> None:
        assert self.process.stdout is not None
        while chunk := os.read(self.process.stdout.fileno(), 4096):
            with self._lock:
                for fd in list(self._outputs):
                    try:
                        os.write(fd, chunk)
                    except OSError:  # the attachment ended
                        self._outputs.remove(fd)
                        os.close(fd)
        with self._lock:
            for fd in self._outputs:
                os.close(fd)
            self._outputs.clear()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@dataclass
class AttachSession:
    container: Container
    stdout: int
    stderr: int
    stdin: int | None
    killed: bool = False

    def wait(self, timeout: float | None = None) -> ExitStatus | None:
        try:
            return _status(self.container.process.wait(timeout))
        except subprocess.TimeoutExpired:
            return None

    def resize(self, columns: int, rows: int) -> None:
        pass

    def kill(self) -> None:
        self.killed = True  # never for attach: a test asserts it stays False


class LocalBackend:
    """exec, attach and connect against local processes and servers; `cwd` is the "container's" directory."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.execs: list[ExecSession] = []
        self.attachments: list[AttachSession] = []
        self.containers: dict[tuple[str, str], Container] = {}
        self.ports: dict[tuple[str, str, int], int] = {}

    def exec(
        self, namespace: str, pod: str, container: str, command: Sequence[str], *, stdin: bool, tty: bool
    ) -> ExecSession:
        if tty:
            session = self._terminal(command, stdin)
        else:
            child_in, parent_in = os.pipe() if stdin else (subprocess.DEVNULL, None)
            out_read, out_write = os.pipe()
            err_read, err_write = os.pipe()
            try:
                process = subprocess.Popen(
                    list(command), stdin=child_in, stdout=out_write, stderr=err_write, cwd=self.cwd,
                    start_new_session=True,
                )  # fmt: skip
            except OSError as error:
                raise ApiError(500, "InternalError", f"executable file not found: {error}") from error
            finally:
                for fd in (out_write, err_write, *([child_in] if stdin else [])):
                    os.close(fd)
            session = ExecSession(tuple(command), process, out_read, err_read, parent_in)
        self.execs.append(session)
        return session

    def _terminal(self, command: Sequence[str], stdin: bool) -> ExecSession:
        master, slave = pty.openpty()
        process = subprocess.Popen(
            list(command), stdin=slave, stdout=slave, stderr=slave, cwd=self.cwd, start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )  # fmt: skip
        os.close(slave)
        empty_read, empty_write = os.pipe()
        os.close(empty_write)
        stdin_fd = os.dup(master) if stdin else None
        return ExecSession(tuple(command), process, master, empty_read, stdin_fd, terminal=master)

    def attach(self, namespace: str, pod: str, container: str, *, stdin: bool, tty: bool) -> AttachSession:
        running = self.containers.get((namespace, pod))
        if running is None or running.process.poll() is not None:
            raise ApiError(500, "InternalError", f'container not found ("{container}")')
        empty_read, empty_write = os.pipe()
        os.close(empty_write)
        session = AttachSession(
            running, running.attach(), empty_read, os.dup(running.stdin_fd) if stdin else None
        )
        self.attachments.append(session)
        return session

    def connect(self, namespace: str, pod: str, port: int) -> socket.socket:
        local = self.ports.get((namespace, pod, port))
        if local is None:
            raise ConnectionRefusedError(f"dial tcp 127.0.0.1:{port}: connect: connection refused")
        return socket.create_connection(("127.0.0.1", local))

    def stop(self) -> None:
        for running in self.containers.values():
            running.stop()
        for session in self.execs:
            if session.process.poll() is None:
                session.kill()
                session.process.wait()


def running_pod(
    sim: Simulator, name: str, *, labels: dict[str, str] | None = None, ports: Sequence[int] = ()
) -> None:
    """A pod bound to a node and Running, with one container `main` (what kubectl port-forward checks)."""
    container: dict[str, Any] = {"name": "main", "image": "busybox:1.36"}
    if ports:
        container["ports"] = [{"containerPort": port, "name": f"port-{port}"} for port in ports]
    sim.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
            "spec": {"nodeName": "kubesim-node", "containers": [container]},
        }
    )

    def running(pod: dict[str, Any]) -> dict[str, Any]:
        pod["status"] = {
            "phase": "Running",
            "podIP": "10.244.0.5",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "main", "ready": True, "restartCount": 0, "image": "busybox:1.36", "imageID": "",
                 "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}}}
            ],
        }  # fmt: skip
        return pod

    sim.store.mutate("pods", name, running, namespace="default", subresource="status")
