"""The process sandbox: pods as Linux namespaces under one node agent, for the process kubelet.

docs/kubesim.md, "The process sandbox", says what it relies on, what it isolates and what it does not.
"""

from typing import Protocol

from kubesim.kubelet.sandbox.host import Container, Node
from kubesim.kubelet.sandbox.spec import ContainerLaunch, ExitStatus, Mount, SandboxError, SandboxUnavailable


class ContainerHandle(Protocol):
    """What the runtime holds of a running container or exec (host.Container is the one implementation)."""

    stdout: int  # read end; with tty=True it carries both streams
    stderr: int | None  # None with tty=True
    stdin: int | None

    def signal(self, signum: int) -> None: ...
    def kill(self) -> None: ...
    def wait(self, timeout: float | None = None) -> ExitStatus | None: ...
    def resize(self, columns: int, rows: int) -> None: ...


__all__ = [
    "Container",
    "ContainerHandle",
    "ContainerLaunch",
    "ExitStatus",
    "Mount",
    "Node",
    "SandboxError",
    "SandboxUnavailable",
]
