"""Memory limits through a cgroup the node may write: the v1 `memory` controller or cgroup v2.

The kubelet's side finds a writable place beneath its own cgroup and makes the node's cgroup there
(`discover`); the agent makes one child per container with its limit and reads its OOM kills.
Where no cgroup is writable (an ordinary user on most machines) there is none, and the container init sets
RLIMIT_AS instead (docs/kubesim.md, "The process sandbox").
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

NODE_PREFIX = "kubesim-node-"
_V1_LIMITS = ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes")  # memsw: no escape into swap
_V2_LIMITS = ("memory.max",)
_V2_NO_SWAP = "memory.swap.max"


def candidates(mountinfo: str, cgroups: str) -> list[tuple[int, str]]:
    """(version, directory of this process's own cgroup) for the memory controller, v1 first then v2.

    `mountinfo` is /proc/self/mountinfo, `cgroups` is /proc/self/cgroup.
    """
    own_v1 = own_v2 = None
    for line in cgroups.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and controllers == "":
            own_v2 = path
        elif "memory" in controllers.split(","):
            own_v1 = path
    found: list[tuple[int, str]] = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        root, mount_point = fields[3], fields[4]
        fstype, super_options = fields[dash + 1], fields[dash + 3] if len(fields) > dash + 3 else ""
        if fstype == "cgroup" and "memory" in super_options.split(",") and own_v1 is not None:
            found.append((1, _beneath(mount_point, root, own_v1)))
        elif fstype == "cgroup2" and own_v2 is not None:
            found.append((2, _beneath(mount_point, root, own_v2)))
    found.sort(key=lambda candidate: candidate[0])
    return [(version, path) for version, path in found if path]


def _beneath(mount_point: str, root: str, own: str) -> str:
    if root != "/" and not (own == root or own.startswith(root + "/")):
        return ""  # our cgroup is outside what this mount shows
    relative = own[len(root) :] if root != "/" else own
    return mount_point.rstrip("/") + "/" + relative.strip("/") if relative.strip("/") else mount_point


def discover(name: str) -> tuple[int, str] | None:
    """Makes the node's cgroup `<own cgroup>/<name>` where memory limits can be written; None where none can.

    Also removes the empty cgroups of nodes whose process has ended (a kubesim killed before it cleaned up).
    """
    mountinfo = Path("/proc/self/mountinfo").read_text()
    cgroups = Path("/proc/self/cgroup").read_text()
    for version, base in candidates(mountinfo, cgroups):
        _sweep_stale(base)
        node = os.path.join(base, name)
        try:
            if version == 2:
                if "memory" not in Path(base, "cgroup.subtree_control").read_text().split():
                    continue
                os.mkdir(node)
                Path(node, "cgroup.subtree_control").write_text("+memory")
            else:
                os.mkdir(node)
            probe = create(version, node, "probe", 64 << 20)
            remove(probe)
        except OSError:
            remove_tree(node)
            continue
        return version, node
    return None


def create(version: int, node: str, name: str, limit_bytes: int) -> str:
    """A child cgroup of the node's, limited to `limit_bytes` of memory without swap."""
    path = os.path.join(node, name)
    os.mkdir(path)
    try:
        for limit_file in _V1_LIMITS if version == 1 else _V2_LIMITS:
            if os.path.exists(os.path.join(path, limit_file)):
                Path(path, limit_file).write_text(str(limit_bytes))
        if version == 2 and os.path.exists(os.path.join(path, _V2_NO_SWAP)):
            Path(path, _V2_NO_SWAP).write_text("0")
    except OSError:
        remove(path)
        raise
    return path


def oom_kills(version: int, path: str) -> int:
    """How many processes of the cgroup the kernel's OOM killer has killed."""
    counters = Path(path, "memory.oom_control" if version == 1 else "memory.events").read_text()
    for line in counters.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


def remove(path: str) -> None:
    """Removes an emptied cgroup; its last processes may take a moment to leave it."""
    for _attempt in range(50):
        try:
            os.rmdir(path)
            return
        except OSError as error:
            if error.errno != errno.EBUSY:
                return
            time.sleep(0.02)


def remove_tree(node: str) -> None:
    if not os.path.isdir(node):
        return
    for entry in os.scandir(node):
        if entry.is_dir(follow_symlinks=False):
            remove(entry.path)
    remove(node)


def _sweep_stale(base: str) -> None:
    try:
        entries = [entry.name for entry in os.scandir(base) if entry.name.startswith(NODE_PREFIX)]
    except OSError:
        return
    for entry in entries:
        owner = entry[len(NODE_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            remove_tree(os.path.join(base, entry))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
