"""Helpers for the sandbox's tests: run containers, read their streams, find their processes on the host."""

from __future__ import annotations

import errno
import os
import selectors
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubesim.kubelet.sandbox import Container, ContainerLaunch, ExitStatus, Node

PYTHON = "/usr/bin/python3"  # the system's: an ordinary user can run it, unlike a venv under /root
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
DEADLINE = 60.0

SERVER = """
import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", int(sys.argv[2])))
server.listen()
print("listening", flush=True)
while True:
    connection, _ = server.accept()
    connection.sendall(sys.argv[1].encode())
    connection.close()
"""

CLIENT = """
import socket, sys
try:
    connection = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
except OSError as error:
    print(type(error).__name__)
    sys.exit(1)
print(connection.recv(1000).decode(), end="")
"""


def new_uid() -> str:
    return uuid.uuid4().hex[:12]


def launch(node: Node, pod: str, *argv: str, **fields: Any) -> Container:
    """Starts argv in the pod; `fields` are ContainerLaunch's (env defaults to ENV)."""
    return node.start_container(pod, ContainerLaunch(argv=argv, **{"env": ENV, **fields}))


def finish(handle: Container) -> tuple[ExitStatus, str, str]:
    """Reads both streams to their end, then the exit status; closes the streams."""
    streams = [fd for fd in (handle.stdout, handle.stderr) if fd is not None]
    read = {fd: bytearray() for fd in streams}
    selector = selectors.DefaultSelector()
    for fd in streams:
        selector.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + DEADLINE
    while selector.get_map():
        events = selector.select(timeout=max(deadline - time.monotonic(), 0))
        if not events:
            raise AssertionError(f"the process's streams did not end within {DEADLINE}s: {dict(read)}")
        for key, _mask in events:
            try:
                data = os.read(key.fd, 65536)
            except OSError as error:
                if error.errno != errno.EIO:  # a terminal's master, once its last user has gone
                    raise
                data = b""
            if data:
                read[key.fd] += data
            else:
                selector.unregister(key.fd)
    for fd in streams:
        os.close(fd)
    if handle.stdin is not None:
        os.close(handle.stdin)
    status = handle.wait(DEADLINE)
    assert status is not None, "the process did not end"
    out = read[handle.stdout].decode()
    err = read[handle.stderr].decode() if handle.stderr is not None else ""
    return status, out, err


def run(node: Node, pod: str, *argv: str, **fields: Any) -> tuple[ExitStatus, str, str]:
    return finish(launch(node, pod, *argv, **fields))


def read_line(fd: int) -> str:
    """One line from a stream (a pipe or a terminal), waiting for it."""
    line = bytearray()
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + DEADLINE
    while not line.endswith(b"\n"):
        if not selector.select(timeout=max(deadline - time.monotonic(), 0)):
            raise AssertionError(f"no line within {DEADLINE}s (so far {bytes(line)!r})")
        byte = os.read(fd, 1)
        if not byte:
            raise AssertionError(f"the stream ended before a whole line (so far {bytes(line)!r})")
        line += byte
    selector.close()
    return line.decode().rstrip("\r\n")


def sleeping(seconds: str) -> list[int]:
    """Host pids of the processes running exactly `sleep <seconds>` (a number unique to one test)."""
    wanted = b"sleep\0" + seconds.encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes() == wanted:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_for(condition: object, what: str) -> None:
    """Polls `condition()` until it holds; fails naming `what` after DEADLINE seconds."""
    assert callable(condition)
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {DEADLINE}s")
        time.sleep(0.05)


def process_tree(root: int) -> Iterator[int]:
    """`root` and its descendants (host pids), from /proc's children lists."""
    yield root
    try:
        tasks = list(Path(f"/proc/{root}/task").iterdir())
    except OSError:
        return
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            yield from process_tree(int(child))


def identity(pid: int) -> tuple[int, str] | None:
    """(pid, start time): a pid the kernel gave to another process since compares unequal."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return pid, stat.rsplit(")", 1)[1].split()[19]


def pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def node_processes(agent: int) -> tuple[list[tuple[int, str]], set[str]]:
    """The node's processes (the agent and its descendants, by identity) and their pid namespaces."""
    tree = [found for found in map(identity, process_tree(agent)) if found is not None]
    namespaces = {namespace for pid, _ in tree if (namespace := pid_namespace(pid)) is not None}
    return tree, namespaces


def survivors(before: list[tuple[int, str]], namespaces: set[str]) -> list[str]:
    """What is still alive of `before`, and any process at all in one of `namespaces`."""
    alive = [f"pid {pid}" for pid, started in before if identity(pid) == (pid, started)]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and pid_namespace(int(entry.name)) in namespaces:
            alive.append(f"pid {entry.name} in {pid_namespace(int(entry.name))}")
    return alive
