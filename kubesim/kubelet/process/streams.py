"""The process kubelet's end of exec, attach and port-forward (kubesim/server/streams' StreamBackend).

exec joins the container's namespaces with the container's environment and working directory, as a
kubelet's runtime does; attach copies the container's output from now on (as the log store receives it)
and, for a container started with `stdin: true`, writes to its input; port-forward connects from the node's
network to the pod's IP. A pod the process kubelet does not run (a scripted one) is refused with the
kubelet's words.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubesim.errors import ApiError
from kubesim.kubelet.logs import LogStore
from kubesim.kubelet.sandbox import Container, ExitStatus
from kubesim.store import Store

if TYPE_CHECKING:
    from kubesim.kubelet.process.runtime import ProcessRuntime


def _not_running(container: str) -> ApiError:
    return ApiError(400, "BadRequest", f'container not found ("{container}")')


def _closed_pipe() -> int:
    """A descriptor already at end of file: the stderr of a tty session, whose output is all on stdout."""
    read, write = os.pipe()
    os.close(write)
    return read


@dataclass
class Session:
    """A StreamSession over the sandbox's handle of an exec'd process (stderr always a descriptor)."""

    process: Container
    stdout: int
    stderr: int
    stdin: int | None

    def wait(self, timeout: float | None = None) -> ExitStatus | None:
        return self.process.wait(timeout)

    def resize(self, columns: int, rows: int) -> None:
        self.process.resize(columns, rows)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()


@dataclass
class Attachment(Session):
    """A copy of a container's output from now on (`process` is the container); ends when the container's
    process does."""

    def kill(self) -> None:
        """Never called for attach (the server only closes its descriptors when a client detaches)."""


class ProcessStreams:
    """StreamBackend for the pods the process runtime runs."""

    def __init__(self, store: Store, runtime: ProcessRuntime, logs: LogStore) -> None:
        self.store = store
        self.runtime = runtime
        self.logs = logs

    def _uid(self, namespace: str, pod: str) -> str:
        try:
            return str(self.store.get("pods", pod, namespace)["metadata"]["uid"])
        except ApiError:
            raise ApiError(404, "NotFound", "pod does not exist") from None

    def exec(
        self, namespace: str, pod: str, container: str, command: Sequence[str], *, stdin: bool, tty: bool
    ) -> Session:
        uid = self._uid(namespace, pod)
        handle, launch = self.runtime.running(uid, container)
        if handle is None or launch is None:
            raise _not_running(container)
        process = self.runtime.node.exec(
            uid, handle, list(command), env=launch.env, working_dir=launch.working_dir, stdin=stdin, tty=tty
        )
        stderr = process.stderr if process.stderr is not None else _closed_pipe()
        return Session(process, process.stdout, stderr, process.stdin)

    def attach(self, namespace: str, pod: str, container: str, *, stdin: bool, tty: bool) -> Attachment:
        uid = self._uid(namespace, pod)
        handle, _launch = self.runtime.running(uid, container)
        if handle is None:
            raise _not_running(container)
        key = (namespace, pod, container)
        read, write = os.pipe()
        start = len(self.logs.snapshot(key, previous=False) or [])

        def copy() -> None:
            with contextlib.suppress(OSError):
                for lines in self.logs.follow(key, start):
                    os.write(write, "".join(line.text + "\n" for line in lines).encode())
            with contextlib.suppress(OSError):
                os.close(write)

        threading.Thread(target=copy, name=f"kubesim-attach-{pod}", daemon=True).start()
        given = os.dup(handle.stdin) if stdin and handle.stdin is not None else None
        return Attachment(handle, read, _closed_pipe(), given)

    def connect(self, namespace: str, pod: str, port: int) -> socket.socket:
        uid = self._uid(namespace, pod)
        ip = self.runtime.pod_ip(uid)
        if not ip:
            raise ApiError(400, "BadRequest", "pod does not exist")
        connection = self.runtime.node.connect(ip, port)
        connection.setblocking(True)
        return connection
