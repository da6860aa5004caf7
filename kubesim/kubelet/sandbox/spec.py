"""What the kubelet asks of the sandbox (a container's launch) and what it answers (an exit status)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


class SandboxUnavailable(RuntimeError):
    """The machine lacks what the sandbox needs; the message is one line: what is missing, what to enable."""


class SandboxError(RuntimeError):
    """The node agent refused or failed a request (an unknown pod, a mount it could not make...)."""


def _absolute_path(value: str, name: str) -> str:
    if not isinstance(value, str) or not value.startswith("/"):
        raise ValueError(f"{name}: must be an absolute path, not {value!r}")
    if "\0" in value:
        raise ValueError(f"{name}: must not contain a NUL character")
    if ".." in value.split("/"):
        raise ValueError(f"{name}: must not contain '..' ({value!r})")
    return posixpath.normpath(value)


@dataclass(frozen=True)
class Mount:
    """A host file or directory bound into a container (a volume, /etc/hosts, a service account token)."""

    host_path: str  # an existing file or directory on the host
    container_path: str  # absolute, inside the container; made when it does not exist on the host
    read_only: bool = False

    def __post_init__(self) -> None:
        _absolute_path(self.host_path, "host_path")
        _absolute_path(self.container_path, "container_path")


@dataclass(frozen=True)
class ContainerLaunch:
    """One container process: its exact argv, environment, working directory and files."""

    argv: tuple[str, ...]  # argv[0] absolute, or looked up in env["PATH"] inside the container
    env: Mapping[str, str]  # exactly the process environment
    working_dir: str = "/"  # inside the container; created if missing
    mounts: tuple[Mount, ...] = ()
    masked_paths: tuple[str, ...] = ()  # host paths hidden (an empty directory or file over them)
    memory_limit_bytes: int | None = None
    stdin: bool = False  # keep a pipe to the container's stdin (attach -i)
    tty: bool = False

    def __post_init__(self) -> None:
        check_argv(self.argv, "argv")
        check_env(self.env, "env")
        _absolute_path(self.working_dir, "working_dir")
        for index, path in enumerate(self.masked_paths):
            _absolute_path(path, f"masked_paths[{index}]")
        for index, mount in enumerate(self.mounts):
            if not isinstance(mount, Mount):
                raise ValueError(f"mounts[{index}]: must be a Mount, not {type(mount).__name__}")
        limit = self.memory_limit_bytes
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
            raise ValueError(f"memory_limit_bytes: must be a positive integer or None, not {limit!r}")


def check_argv(argv: object, name: str) -> None:
    if not isinstance(argv, tuple | list) or not argv:
        raise ValueError(f"{name}: must be a non-empty sequence of strings")
    for index, arg in enumerate(argv):
        if not isinstance(arg, str) or "\0" in arg:
            raise ValueError(f"{name}[{index}]: must be a string without NUL characters")
    if not argv[0]:
        raise ValueError(f"{name}[0]: must name an executable")


def check_env(env: object, name: str) -> None:
    if not isinstance(env, Mapping):
        raise ValueError(f"{name}: must be a mapping of strings to strings")
    for key, value in env.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise ValueError(f"{name}: {key!r} is not a variable name (non-empty, no '=' or NUL)")
        if not isinstance(value, str) or "\0" in value:
            raise ValueError(f"{name}[{key}]: must be a string without NUL characters")


@dataclass(frozen=True)
class ExitStatus:
    exit_code: int  # 128+signal when killed by a signal, as a container runtime reports
    oom_killed: bool = False


class ContainerHandle(Protocol):
    """What the runtime holds of a running container or exec (host.Container is the implementation)."""

    id: str  # the node's name for it (c<n> for containers, e<n> for execs)
    stdout: int  # read end; with tty=True it carries both streams
    stderr: int | None  # None with tty=True
    stdin: int | None

    def signal(self, signum: int) -> None: ...
    def kill(self) -> None: ...
    def wait(self, timeout: float | None = None) -> ExitStatus | None: ...
    def resize(self, columns: int, rows: int) -> None: ...
