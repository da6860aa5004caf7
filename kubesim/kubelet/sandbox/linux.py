"""The Linux system calls the sandbox needs and the standard library lacks (namespaces, mounts), via ctypes.

Imported by the processes inside the node (agent, pause, container init), so it imports nothing heavy.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_MOVE = 0x2000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

MNT_DETACH = 0x2
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1

# Neither call has a glibc wrapper on every distribution; their numbers are per architecture (mount_setattr
# is 442 everywhere, a number from the unified table of Linux 5.12).
_SYSCALLS = {
    "x86_64": {"pivot_root": 155, "mount_setattr": 442},
    "aarch64": {"pivot_root": 41, "mount_setattr": 442},
}

_libc = ctypes.CDLL(None, use_errno=True)


class _MountAttr(ctypes.Structure):
    _fields_ = (
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    )


def _check(result: int, what: str) -> None:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _syscall_number(name: str) -> int:
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        raise OSError(f"{name}: the sandbox knows the system call numbers of x86_64 and aarch64 only")
    return numbers[name]


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            None if fstype is None else fstype.encode(),
            ctypes.c_ulong(flags),
            None if data is None else data.encode(),
        ),
        f"mount {source} on {target}",
    )


def umount(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(target.encode(), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    number = _syscall_number("pivot_root")
    _check(_libc.syscall(ctypes.c_long(number), new_root.encode(), put_old.encode()), "pivot_root")


def make_read_only(target: str, *, recursive: bool) -> None:
    """Makes the mount at `target` (and with `recursive`, every mount under it) read-only.

    mount_setattr changes only the read-only bit; a remount would have to repeat every flag the kernel locked
    when the mount crossed into our user namespace (nosuid, nodev...), or fail with EPERM.
    """
    attr = _MountAttr(attr_set=MOUNT_ATTR_RDONLY)
    flags = AT_RECURSIVE if recursive else 0
    number = _syscall_number("mount_setattr")
    result = _libc.syscall(
        ctypes.c_long(number),
        ctypes.c_int(-100),  # AT_FDCWD
        target.encode(),
        ctypes.c_uint(flags),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    _check(result, f"make {target} read-only")


# Docker's default capabilities: a container's process keeps these and no others (CAP_SYS_ADMIN, for one,
# would let it remount its read-only view of the host read-write).
CONTAINER_CAPABILITIES = frozenset(
    {
        0,  # CHOWN
        1,  # DAC_OVERRIDE
        3,  # FOWNER
        4,  # FSETID
        5,  # KILL
        6,  # SETGID
        7,  # SETUID
        8,  # SETPCAP
        10,  # NET_BIND_SERVICE
        13,  # NET_RAW
        18,  # SYS_CHROOT
        27,  # MKNOD
        29,  # AUDIT_WRITE
        31,  # SETFCAP
    }
)


def limit_capabilities(keep: frozenset[int]) -> None:
    """Drops every capability but `keep` from the bounding set: what an exec'd program can ever have."""
    for capability in range(64):
        if capability in keep:
            continue
        if _libc.prctl(ctypes.c_int(PR_CAPBSET_DROP), ctypes.c_ulong(capability), 0, 0, 0) < 0:
            number = ctypes.get_errno()
            if number == errno.EINVAL:  # past the kernel's last capability
                return
            raise OSError(number, f"drop capability {capability}: {os.strerror(number)}")


def set_parent_death_signal(signum: int) -> None:
    _check(_libc.prctl(ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(signum), 0, 0, 0), "prctl")


def exit_code(status: int) -> int:
    """A wait status as a container runtime reports it: the exit code, or 128+signal when killed."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code
