"""What the API server side of exec, attach and port-forward needs from a kubelet that runs containers.

A kubelet implements `StreamBackend` and is registered with `Simulator.streams.backend = kubelet` (or
`PodStreams.backend` on a bare server). Without one the simulator answers these subresources with its
400 "not supported" Status, as it always did.

The server has already done what the API server does before it calls the kubelet: the pod exists, the
container is resolved (`container` is always a name of the pod's: the only container when the client named
none, as upstream defaults it) and the pod is bound to a node. A backend raises `kubesim.errors.ApiError`
for what a kubelet refuses. Over WebSocket (kubectl's first choice, the Python client) exec and attach
start once the stream is up, and the refusal reaches the client on the error channel as upstream's
translator reports a kubelet's: kubectl prints "error: Internal error occurred: unable to upgrade
connection: <message>". Over SPDY, and for port-forward's connect, it is the HTTP answer: kubectl prints
"error: unable to upgrade connection: <message>". The kubelet's words, for a backend to reuse: a
container that has not started or has ended, `container not found ("<name>")`; a pod the kubelet does not
run, `pod does not exist`.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Protocol


class ExitCode(Protocol):
    """How a session ended; the sandbox's `ExitStatus` is one (128+n for a process killed by signal n)."""

    @property
    def exit_code(self) -> int: ...


class StreamSession(Protocol):
    """A running exec'd process, or an attachment to a container's process (the sandbox's ContainerHandle
    has this shape).

    The server owns the three file descriptors once the backend returns the session: it reads `stdout` and
    `stderr` until end of file (EIO from a pty master counts as end of file), writes `stdin`, and closes
    all three when the stream ends; closing `stdin` is how a client's end of input reaches the process.
    With a tty, `stdout` carries the terminal's output and `stderr` may be any descriptor at end of file.
    `stdin` is None when the client did not ask for input or the container takes none. For attach, what
    closing it does is the backend's choice: a duplicate of the container's input keeps it open for the
    next client; the container's own end gives `stdinOnce` semantics.
    """

    stdout: int
    stderr: int
    stdin: int | None

    def wait(self, timeout: float | None = None) -> ExitCode | None:
        """The exit status once the process ended (exec) or the container's process ended (attach); None
        if it is still running after `timeout` seconds."""
        ...

    def resize(self, columns: int, rows: int) -> None:
        """The client's terminal changed size (tty sessions only)."""
        ...

    def kill(self) -> None:
        """Kill the exec'd process: its client went away. Never called for attach (the container keeps
        running when a client detaches; the server only closes its descriptors)."""
        ...


class StreamBackend(Protocol):
    """The kubelet end of the pod streams (exec, attach, portforward)."""

    def exec(
        self, namespace: str, pod: str, container: str, command: Sequence[str], *, stdin: bool, tty: bool
    ) -> StreamSession:
        """Start `command` in the container (`kubectl exec`)."""
        ...

    def attach(self, namespace: str, pod: str, container: str, *, stdin: bool, tty: bool) -> StreamSession:
        """A copy of the container's output from now on, and its input when `stdin` (`kubectl attach`)."""
        ...

    def connect(self, namespace: str, pod: str, port: int) -> socket.socket:
        """A connected TCP socket to `port` in the pod's network (`kubectl port-forward`); OSError (or
        ApiError) when nothing listens there, which the client receives on the port's error stream."""
        ...
