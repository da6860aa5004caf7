"""The programs the agent starts in the node: a pod's pause process, a container's init, an exec.

Each reads its orders (one message and the descriptors it names) from the control socket on fd 0 and
answers there: `{"ready": true}`, or `{"pid": n}` once it has forked what the agent must track, or
`{"error": "..."}`.

  pause      new net + mount + uts + ipc namespaces; the pod's /dev/shm tmpfs, hostname, eth0 and route;
             then it becomes `sleep infinity`, holding the namespaces for the pod's containers.
  container  joins the pod's namespaces, makes new pid + mount namespaces and forks their PID 1: that init
             builds the private root (rootfs.py), forks the container's process, forwards signals to its
             process group, reaps orphans, and exits with the process's status (128+signal if killed).
             The launcher exits once the agent has adopted the init.
  exec       joins a running container's namespaces and runs a process there, waiting for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import signal
import socket
import termios
from collections.abc import Sequence

from kubesim.kubelet.sandbox import linux, rootfs
from kubesim.kubelet.sandbox.protocol import Channel

TYPE_CHECKING = False  # typing costs every container's init a MiB; the names below are for mypy only
if TYPE_CHECKING:
    from typing import Any, NoReturn

FORWARDED = (
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGTERM,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
NOT_FOUND_EXIT, NOT_RUNNABLE_EXIT = 127, 126  # what a shell and docker report


def main(args: Sequence[str]) -> None:
    channel = Channel(socket.socket(fileno=0))
    config, fds = channel.receive()
    try:
        {"pause": _pause, "container": _container, "exec": _exec}[args[0]](channel, config, fds)
    except Exception as error:
        channel.send({"error": str(error) or type(error).__name__})
        os._exit(1)


def _pause(channel: Channel, config: dict[str, Any], _fds: list[int]) -> None:
    import subprocess  # here only: the containers' inits have no use for it

    linux.unshare(linux.CLONE_NEWNET | linux.CLONE_NEWNS | linux.CLONE_NEWUTS | linux.CLONE_NEWIPC)
    linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)
    linux.mount("tmpfs", config["shm"], "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "mode=1777,size=64m")
    socket.sethostname(config["hostname"])
    wiring = subprocess.run(
        [config["ip"], "-batch", "-"], input=config["script"].encode(), capture_output=True, check=False
    )
    if wiring.returncode != 0:
        raise OSError(f"ip: {wiring.stderr.decode(errors='replace').strip()}")
    channel.send({"ready": True})
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.execv(config["sleep"], ["sleep", "infinity"])  # noqa: S606 (a path the kubelet resolved)


def _join(fds: list[int], config: dict[str, Any], kinds: Sequence[str]) -> None:
    flags = {
        "pid": linux.CLONE_NEWPID,
        "net": linux.CLONE_NEWNET,
        "uts": linux.CLONE_NEWUTS,
        "ipc": linux.CLONE_NEWIPC,
        "mnt": linux.CLONE_NEWNS,  # last: joining it moves our root and working directory
    }
    if config.get("cgroup"):
        with open(os.path.join(config["cgroup"], "cgroup.procs"), "w") as procs:
            procs.write("0")
    for kind in kinds:
        fd = fds[config["fds"][kind]]
        linux.setns(fd, flags[kind])
        os.close(fd)


def _container(channel: Channel, config: dict[str, Any], fds: list[int]) -> None:
    _join(fds, config, ("net", "uts", "ipc", "mnt"))
    linux.unshare(linux.CLONE_NEWNS | linux.CLONE_NEWPID)
    told_read, told = os.pipe()  # the init's answers must come after ours
    init = os.fork()
    if init:
        channel.send({"pid": init})
        os.close(told)
        channel.receive()  # the agent has adopted the init: our exit hands it over
        os._exit(0)
    os.close(told)
    os.read(told_read, 1)
    os.close(told_read)
    mounts = [rootfs.BindMount(source, target, read_only) for source, target, read_only in config["mounts"]]
    rootfs.build(config["staging"], config["shm"], mounts, config["masked"], config["working_dir"])
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    child = _spawn(config, fds)
    for signum in FORWARDED:
        signal.signal(signum, lambda number, _frame: _forward(child, number))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    channel.send({"ready": True})
    channel.close()
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            os._exit(linux.exit_code(status))  # as PID 1 our exit ends every other process of the container


def _forward(child: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child, signum)


def _exec(channel: Channel, config: dict[str, Any], fds: list[int]) -> None:
    _join(fds, config, ("pid", "net", "uts", "ipc", "mnt"))
    child = _spawn(config, fds)
    channel.send({"pid": child})
    channel.close()
    _pid, status = os.waitpid(child, 0)
    os._exit(linux.exit_code(status))


def _spawn(config: dict[str, Any], fds: list[int]) -> int:
    """Forks the process the user asked for: own session, its stdio, exact environment, then exec."""
    stdio = config["fds"]
    child = os.fork()
    if child:
        for index in {stdio[name] for name in ("stdin", "stdout", "stderr")} - {None}:
            os.close(fds[index])
        return child
    try:
        for signum in (*FORWARDED, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(signum, signal.SIG_DFL)  # Python ignores SIGPIPE and SIGXFSZ; exec keeps that
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        stdin = fds[stdio["stdin"]] if stdio.get("stdin") is not None else null
        stdout = fds[stdio["stdout"]]
        stderr = fds[stdio["stderr"]] if stdio.get("stderr") is not None else stdout
        if config["tty"]:
            fcntl.ioctl(stdout, termios.TIOCSCTTY, 0)
        for target, source in ((0, stdin), (1, stdout), (2, stderr)):
            os.dup2(source, target)
        os.closerange(3, 1 << 20)
        if config.get("rlimit_as"):
            resource.setrlimit(resource.RLIMIT_AS, (config["rlimit_as"], config["rlimit_as"]))
        linux.limit_capabilities(linux.CONTAINER_CAPABILITIES)
        os.chdir(config["working_dir"])
    except OSError as error:
        os.write(2, f"kubesim: cannot start the process: {error}\n".encode())
        os._exit(NOT_RUNNABLE_EXIT)
    _execute(config["argv"], config["env"])


def _execute(argv: list[str], env: dict[str, str]) -> NoReturn:
    """execvp with the container's own PATH; a missing program exits 127 with a runtime's message."""
    program = argv[0]
    try:
        os.execvpe(program, argv, env)  # noqa: S606 (the container's command, by design)
    except FileNotFoundError:
        reason, code = (
            ("no such file or directory", NOT_FOUND_EXIT)
            if "/" in program
            else ("executable file not found in $PATH", NOT_FOUND_EXIT)
        )
    except PermissionError:
        reason, code = "permission denied", NOT_RUNNABLE_EXIT
    except OSError as error:
        reason, code = error.strerror or str(error), NOT_RUNNABLE_EXIT
    os.write(2, f'kubesim: exec: "{program}": {reason}\n'.encode())
    os._exit(code)
