"""The agent's processes: it starts them, and as PID 1 of the node it reaps them and every orphan.

One thread waits for every child (waitpid(-1)); whoever cares about a process registers a callback before
it can end, so no exit status is lost to a reaper that got there first, and no pid is reused unseen: a pid
whose process is watched and has no status yet is still ours, so signalling it under `condition` is safe.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

from kubesim.kubelet.sandbox.linux import exit_code

ENVIRONMENT = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


class Reaper:
    def __init__(self) -> None:
        self.condition = threading.Condition()
        self._watchers: dict[int, Callable[[int], None]] = {}
        self._spawned = threading.Event()
        self.null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        stdin: int | None = None,
        stdout: int | None = None,
        stderr: int = 2,
        on_exit: Callable[[int], None] | None = None,
    ) -> int:
        """Starts argv[0] (an absolute path) in a session of its own, with a fixed small environment.

        `on_exit(exit_code)` runs on the reaper's thread, under `condition`, once the process has ended.
        """
        actions = [
            (os.POSIX_SPAWN_DUP2, self.null if stdin is None else stdin, 0),
            (os.POSIX_SPAWN_DUP2, self.null if stdout is None else stdout, 1),
            (os.POSIX_SPAWN_DUP2, stderr, 2),
        ]
        with self.condition:
            pid = os.posix_spawn(argv[0], list(argv), ENVIRONMENT, file_actions=actions, setsid=True)
            if on_exit is not None:
                self._watchers[pid] = on_exit
        self._spawned.set()
        return pid

    def adopt(self, pid: int, on_exit: Callable[[int], None]) -> None:
        """Watches a grandchild that becomes ours when its parent exits (a container's init)."""
        with self.condition:
            self._watchers[pid] = on_exit

    def run(self, arguments: Sequence[str], stdin_text: str = "") -> tuple[int, str]:
        """Runs a short command (`ip`), returns its exit code and what it wrote on stderr."""
        stdin_read, stdin_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        codes: list[int] = []
        try:
            os.write(stdin_write, stdin_text.encode())  # a few lines: well under a pipe's capacity
            os.close(stdin_write)
            self.spawn(arguments, stdin=stdin_read, stderr=stderr_write, on_exit=codes.append)
        finally:
            os.close(stdin_read)
            os.close(stderr_write)
        with os.fdopen(stderr_read, "rb") as stderr:
            errors = stderr.read().decode(errors="replace")
        with self.condition:
            self.condition.wait_for(lambda: codes)
        return codes[0], errors.strip()

    def serve_forever(self) -> None:
        """Reaps every child of the agent, on a thread of its own, from the agent's start."""
        while True:
            self._spawned.clear()
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                self._spawned.wait()
                continue
            with self.condition:
                watcher = self._watchers.pop(pid, None)
                if watcher is not None:
                    watcher(exit_code(status))
                self.condition.notify_all()
