"""Reading the agent's requests: each field checked, a wrong one named in the answer."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

MAX_FIELD = 4096


class RequestError(Exception):
    """The request cannot be done; its message is the answer."""


def text(request: dict[str, Any], name: str, limit: int = MAX_FIELD) -> str:
    value = request.get(name)
    if not isinstance(value, str) or not value or len(value) > limit or "\0" in value:
        raise RequestError(f"{name}: must be a non-empty string of at most {limit} characters")
    return value


def path(request: dict[str, Any], name: str) -> str:
    value = text(request, name)
    if not value.startswith("/"):
        raise RequestError(f"{name}: must be an absolute path")
    return value


def paths(request: dict[str, Any], name: str) -> list[str]:
    values = request.get(name, [])
    if not isinstance(values, list):
        raise RequestError(f"{name}: must be a list of absolute paths")
    return [path({name: value}, name) for value in values]


def integer(request: dict[str, Any], name: str, low: int, high: int) -> int:
    value = request.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RequestError(f"{name}: must be an integer from {low} to {high}")
    return value


def optional_integer(request: dict[str, Any], name: str) -> int | None:
    return None if request.get(name) is None else integer(request, name, 1, 1 << 62)


def address(request: dict[str, Any], name: str) -> str:
    value = text(request, name, limit=64)
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise RequestError(f"{name}: {value!r} is not an IPv4 address") from None


def pairs(values: list[Any]) -> list[list[Any]]:
    if not all(isinstance(value, list) and len(value) == 2 for value in values):
        raise RequestError("backends: must be a list of [ip, port] pairs")
    return values


def pid(answer: dict[str, Any]) -> int:
    pid = answer.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        raise RequestError(f"the launcher answered {answer!r}")
    return pid


def mounts(request: dict[str, Any]) -> list[list[Any]]:
    mounts = request.get("mounts", [])
    if not isinstance(mounts, list):
        raise RequestError("mounts: must be a list")
    checked = []
    for index, mount in enumerate(mounts):
        if not (isinstance(mount, list) and len(mount) == 3 and isinstance(mount[2], bool)):
            raise RequestError(f"mounts[{index}]: must be [host_path, container_path, read_only]")
        checked.append([path({"m": mount[0]}, "m"), path({"m": mount[1]}, "m"), mount[2]])
    return checked


def order(request: dict[str, Any], fds: list[int], namespaces: Sequence[str]) -> dict[str, Any]:
    """What a container's and an exec's orders share: argv, env, working_dir, tty, and where each of the
    descriptors is in what the launcher receives (the namespaces to join, then the request's stdio)."""
    argv = request.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and "\0" not in a for a in argv):
        raise RequestError("argv: must be a non-empty list of strings")
    env = request.get("env")
    if not isinstance(env, dict) or not all(
        isinstance(key, str) and isinstance(value, str) and key and "=" not in key
        for key, value in env.items()
    ):
        raise RequestError("env: must map variable names to strings")
    tty = request.get("tty")
    if not isinstance(tty, bool):
        raise RequestError("tty: must be true or false")
    stdio = request.get("stdio")
    if not isinstance(stdio, dict) or set(stdio) != {"stdin", "stdout", "stderr"}:
        raise RequestError("stdio: must name the descriptors of stdin, stdout and stderr")
    for name, index in stdio.items():
        valid = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(fds)
        if index is not None and not valid:
            raise RequestError(f"stdio.{name}: must be the index of a descriptor sent with the request")
    if stdio["stdout"] is None:
        raise RequestError("stdio.stdout: is required")
    offset = len(namespaces)
    return {
        "argv": argv,
        "env": env,
        "working_dir": path(request, "working_dir"),
        "tty": tty,
        "fds": {
            **{kind: index for index, kind in enumerate(namespaces)},
            **{name: None if index is None else index + offset for name, index in stdio.items()},
        },
    }
