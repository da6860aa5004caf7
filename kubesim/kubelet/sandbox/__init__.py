"""The process sandbox: pods as Linux namespaces under one node agent, for the process kubelet.

docs/kubesim.md, "The process sandbox", says what it relies on, what it isolates and what it does not.
"""

from kubesim.kubelet.sandbox.host import Container, Node
from kubesim.kubelet.sandbox.spec import (
    ContainerHandle,
    ContainerLaunch,
    ExitStatus,
    Mount,
    SandboxError,
    SandboxUnavailable,
)

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
