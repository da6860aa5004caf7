"""A container's private root, built by its init in a fresh mount namespace (runs as PID 1, before exec).

The root is a tmpfs holding read-only recursive binds of the host's top-level entries (symlinks recreated),
a fresh /proc and /sys, the host's /dev read-only, the pod's /dev/shm, a /tmp of its own, masks over hidden
host paths, then each mount at its container path. A container path the host lacks is made by replacing
the nearest read-only ancestor with a tmpfs that binds that ancestor's entries ("mirroring", bubblewrap's
technique: overlayfs is refused inside a user namespace on the kernels we meet). Last, every directory made
here becomes read-only, so the container can write only to its mounts, /tmp and /dev/shm.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

from kubesim.kubelet.sandbox import linux

FRESH = ("proc", "sys", "dev", "tmp")  # top-level entries the container gets its own of
OLD_ROOT = "/.kubesim-old-root"
STAGING = "/.kubesim-staging"
_TMPFS_FLAGS = linux.MS_NOSUID | linux.MS_NODEV
_SPECIAL_FLAGS = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC


class RootError(Exception):
    """The root cannot be built as asked (a mount source missing, a path of the wrong type...)."""


class BindMount:
    """A mount as the init receives it (a plain class: the init imports no dataclasses)."""

    __slots__ = ("read_only", "source", "target")

    def __init__(self, source: str, target: str, read_only: bool) -> None:
        self.source = source  # host path, resolved before the old root is put away
        self.target = target  # container path
        self.read_only = read_only


def build(
    staging_dir: str, pod_shm: str, mounts: list[BindMount], masked: list[str], working_dir: str
) -> None:
    """Builds the root in `staging_dir` (an empty host directory), pivots into it, and leaves the old root.

    `pod_shm` is the pod's /dev/shm tmpfs, mounted by the pause process in the pod's mount namespace.
    """
    linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)
    sources = [_resolve_source(mount) for mount in mounts]
    linux.mount("tmpfs", staging_dir, "tmpfs", _TMPFS_FLAGS, "mode=0755")
    for name in sorted(os.listdir("/")):
        _bind_host_entry(name, staging_dir)
    _mount_fresh(staging_dir, pod_shm)
    os.mkdir(staging_dir + OLD_ROOT)
    linux.pivot_root(staging_dir, staging_dir + OLD_ROOT)
    os.chdir("/")
    made = _Maker()
    for path in masked:
        _mask(path)
    ordered = sorted(zip(mounts, sources, strict=True), key=lambda pair: _depth(pair[0].target))
    for mount, source in ordered:
        _bind_mount(made, mount, OLD_ROOT + source)
    for path in _masked_inside_mounts(ordered, masked):
        _mask(path)
    made.directory(working_dir)
    linux.umount(OLD_ROOT, linux.MNT_DETACH)
    os.rmdir(OLD_ROOT)
    for directory in made.mirrors:
        linux.make_read_only(directory, recursive=False)
    linux.make_read_only("/", recursive=False)


def _masked_inside_mounts(mounts: list[tuple[BindMount, str]], masked: list[str]) -> list[str]:
    """Where a masked host path shows again through a mount of a directory holding it (the image map's
    mount of the repository at /app holds the dev stack's `.dev`): those container paths are masked too."""
    found = []
    for path in masked:
        real = os.path.realpath(path)
        for mount, source in mounts:
            if source != "/" and real.startswith(source.rstrip("/") + "/"):
                found.append(mount.target.rstrip("/") + real[len(source.rstrip("/")) :])
    return found


def _resolve_source(mount: BindMount) -> str:
    source = os.path.realpath(mount.source)
    if not os.path.exists(source):
        raise RootError(f"mount {mount.target}: host path {mount.source} does not exist")
    return source


def _bind_host_entry(name: str, root: str) -> None:
    host, target = "/" + name, root + "/" + name
    if name in FRESH:
        os.mkdir(target)
    elif os.path.islink(host):
        os.symlink(os.readlink(host), target)
    elif os.path.isdir(host):
        os.mkdir(target)
        linux.mount(host, target, None, linux.MS_BIND | linux.MS_REC)
        linux.make_read_only(target, recursive=True)
    else:
        with open(target, "w"):
            pass
        linux.mount(host, target, None, linux.MS_BIND)
        linux.make_read_only(target, recursive=True)


def _mount_fresh(root: str, pod_shm: str) -> None:
    linux.mount("proc", root + "/proc", "proc", _SPECIAL_FLAGS)
    linux.mount("sysfs", root + "/sys", "sysfs", _SPECIAL_FLAGS | linux.MS_RDONLY)
    linux.mount("/dev", root + "/dev", None, linux.MS_BIND | linux.MS_REC)
    linux.make_read_only(root + "/dev", recursive=True)
    # Container paths, not temporary files of ours (S108).
    if not os.path.isdir("/dev/shm"):  # noqa: S108
        raise RootError("the host has no /dev/shm to mount the pod's shared memory on")
    linux.mount(pod_shm, root + "/dev/shm", None, linux.MS_BIND)  # noqa: S108
    linux.mount("tmpfs", root + "/tmp", "tmpfs", _TMPFS_FLAGS, "mode=1777")  # noqa: S108


def _mask(path: str) -> None:
    if os.path.isdir(path):
        linux.mount("tmpfs", path, "tmpfs", _SPECIAL_FLAGS | linux.MS_RDONLY, "mode=0755")
    elif os.path.exists(path):
        linux.mount("/dev/null", path, None, linux.MS_BIND)
        linux.make_read_only(path, recursive=False)


def _bind_mount(made: _Maker, mount: BindMount, source: str) -> None:
    target = made.directory(mount.target) if os.path.isdir(source) else made.file(mount.target)
    linux.mount(source, target, None, linux.MS_BIND | linux.MS_REC)
    if mount.read_only:
        linux.make_read_only(target, recursive=True)


def _depth(path: str) -> int:
    return len([part for part in path.split("/") if part])


class _Maker:
    """Makes container paths, mirroring read-only directories that stand in the way."""

    def __init__(self) -> None:
        self.mirrors: list[str] = []

    def directory(self, path: str) -> str:
        """The real path of directory `path`, made (with its parents) if missing."""
        if os.path.isdir(path):
            return os.path.realpath(path)
        parent = self.directory(os.path.dirname(path))
        target = os.path.join(parent, os.path.basename(path))
        if os.path.lexists(target):
            kind = "a dangling symlink" if os.path.islink(target) else "not a directory"
            raise RootError(f"{path} is {kind} in the container")
        self._writable(parent, lambda: os.mkdir(target, 0o755))
        return target

    def file(self, path: str) -> str:
        """The real path of file `path`, an empty file made if missing; a symlink there is replaced."""
        parent = self.directory(os.path.dirname(path))
        target = os.path.join(parent, os.path.basename(path))
        if os.path.islink(target):
            self._writable(parent, lambda: os.unlink(target))
        if os.path.isdir(target):
            raise RootError(f"{path} is a directory in the container, and its host path a file")
        if not os.path.exists(target):
            self._writable(parent, lambda: os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644)))
        return target

    def _writable(self, directory: str, change: Callable[[], None]) -> None:
        try:
            change()
            return
        except OSError as error:
            if error.errno != errno.EROFS:
                raise
        self._mirror(directory)
        change()

    def _mirror(self, directory: str) -> None:
        mode = stat.S_IMODE(os.stat(directory).st_mode)
        os.mkdir(STAGING)
        linux.mount("tmpfs", STAGING, "tmpfs", _TMPFS_FLAGS, f"mode={mode:o}")
        for entry in os.scandir(directory):
            copy = os.path.join(STAGING, entry.name)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), copy)
                continue
            if entry.is_dir(follow_symlinks=False):
                os.mkdir(copy)
            else:
                os.close(os.open(copy, os.O_CREAT | os.O_WRONLY, 0o644))
            # A bind keeps its source mount's flags: what was read-only stays so, a volume stays writable.
            linux.mount(entry.path, copy, None, linux.MS_BIND | linux.MS_REC)
        linux.mount(STAGING, directory, None, linux.MS_MOVE)
        os.rmdir(STAGING)
        self.mirrors.append(directory)
