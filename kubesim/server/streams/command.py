"""exec and attach, whatever the wire protocol: the options a request asks for, the exit Status the client
decodes, and the copying between a session's descriptors and the client's streams.

A protocol module (WebSocket channels or SPDY streams) gives a `CommandRun` an `Outlet` to write to and
calls its inbound methods from the thread that reads the client; `run()` copies output until the process
ends or the client goes away, then ends the stream with the Status.
"""

from __future__ import annotations

import errno
import json
import os
import select
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubesim.errors import ApiError
from kubesim.server.streams import bounds
from kubesim.server.streams.backend import ExitCode, StreamSession
from kubesim.server.streams.transport import StreamClosed

#: how often the run looks at the process, the client and the idle clock
_POLL_SECONDS = 0.2
#: a pipe write this small never blocks once poll says the pipe has room (POSIX PIPE_BUF)
_PIPE_BUF = 4096
#: how long a killed exec is given to be reaped by its backend before the stream lets go of it
_REAP_SECONDS = 5.0


@dataclass(frozen=True)
class CommandOptions:
    """The streams a client asks for (PodExecOptions / PodAttachOptions as the query carries them)."""

    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool
    container: str
    command: tuple[str, ...] = ()


def query_flag(values: Sequence[str]) -> bool:
    """A boolean query parameter as the API server converts it: absent, "", "false" and "0" are false."""
    return bool(values) and values[0].lower() not in ("", "false", "0")


def command_options(query: Mapping[str, Sequence[str]], *, exec_: bool) -> CommandOptions:
    """The options of an exec (or attach) request; 400 for what the API server or kubelet refuses."""
    tty = query_flag(query.get("tty", ()))
    stdin = query_flag(query.get("stdin", ()))
    stdout = query_flag(query.get("stdout", ()))
    # a terminal has one output stream: the kubelet drops stderr when tty is set
    stderr = query_flag(query.get("stderr", ())) and not tty
    if not (stdin or stdout or stderr):
        raise ApiError(400, "BadRequest", "you must specify at least 1 of stdin, stdout, stderr")
    command = tuple(query.get("command", ()))
    if exec_ and not command:
        raise ApiError(400, "BadRequest", "you must specify at least one command for the container")
    container = (query.get("container") or [""])[-1]
    return CommandOptions(stdin, stdout, stderr, tty, container, command)


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(command: Sequence[str], exit_code: int) -> dict[str, Any]:
    """The Status an exec ends with: Success, or NonZeroExitCode with the code as the ExitCode cause (what
    client-go turns into kubectl's exit code), worded as containerd's exec error is."""
    if exit_code == 0:
        return success_status()
    if not 0 < exit_code < 256:
        return internal_status(f"exit code {exit_code} is not between 0 and 255")
    return {
        "metadata": {},
        "status": "Failure",
        "message": (
            "command terminated with non-zero exit code: "
            f"error executing command [{' '.join(command)}], exit code {exit_code}"
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(exit_code)}]},
    }


def internal_status(message: str) -> dict[str, Any]:
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }


def terminal_sizes(payload: bytes) -> list[tuple[int, int]]:
    """(columns, rows) of each TerminalSize JSON document in `payload` ({"Width": 80, "Height": 24});
    clients send one per message, json.Encoder appends a newline; anything else is skipped."""
    decoder, text, at = json.JSONDecoder(), payload.decode("utf-8", "replace"), 0
    sizes: list[tuple[int, int]] = []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return sizes
        try:
            size, at = decoder.raw_decode(text, at)
        except ValueError:
            return sizes
        if isinstance(size, dict):
            width, height = size.get("Width"), size.get("Height")
            if (
                isinstance(width, int)
                and isinstance(height, int)
                and 0 <= width < 65536
                and 0 <= height < 65536
            ):
                sizes.append((width, height))


class Outlet(Protocol):
    """The client's side of a command stream, as a protocol module writes it."""

    def stdout(self, data: bytes) -> None: ...

    def stderr(self, data: bytes) -> None: ...

    def finish(self, status: dict[str, Any]) -> None:
        """End the output streams, send the Status, and wait (bounded) for the client to hang up."""
        ...


class CommandRun:
    """One exec or attach session between a backend's process and one client.

    `start` runs the backend's exec or attach; over WebSocket it is called once the stream is up (so a
    terminal's first size can come first, and a kubelet-side refusal reaches the client on the error
    channel, as upstream's translator reports it), over SPDY it returns the session started before the
    upgrade. What the client sends before the start waits for it.
    """

    def __init__(
        self,
        start: Callable[[], StreamSession],
        options: CommandOptions,
        *,
        attach: bool,
        idle_for: Callable[[], float],
        idle_timeout: float = bounds.IDLE_TIMEOUT,
        first_size_wait: float = 0.0,
    ) -> None:
        self.options = options
        self.attach = attach
        self.session: StreamSession | None = None
        self._start = start
        self._idle_for = idle_for
        self._idle_timeout = idle_timeout
        self._first_size_wait = first_size_wait
        self._gone = threading.Event()
        self._started = threading.Event()
        self._exited = threading.Event()
        self._client_spoke = threading.Event()
        self._size_lock = threading.Lock()
        self._pending_size: tuple[int, int] | None = None
        self._stdin_lock = threading.Lock()
        self._stdin: int | None = None

    # --- what the client sends (called from the thread that reads it) -----------------------------

    def stdin(self, data: bytes) -> None:
        """Write to the process, waiting while its input is full, but never past the session's end (a
        process that does not read must not hold the client's reader forever)."""
        if not self.options.stdin or not self._wait_started():
            return
        with self._stdin_lock:
            fd = self._stdin
            if fd is None:
                return
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            view = memoryview(data)
            try:
                while view and not (self._gone.is_set() or self._exited.is_set()):
                    if poller.poll(_POLL_SECONDS * 1000):
                        view = view[os.write(fd, view[:_PIPE_BUF]) :]
            except OSError:  # the process closed its input or ended: what it did not read is dropped
                pass

    def close_stdin(self) -> None:
        """The client's input ended."""
        if self._wait_started():
            self._close_stdin()

    def resize(self, payload: bytes) -> None:
        if not self.options.tty:
            return
        sizes = terminal_sizes(payload)
        with self._size_lock:
            if self.session is None:
                self._pending_size = sizes[-1] if sizes else self._pending_size
                self._client_spoke.set()
                return
        for columns, rows in sizes:
            self.session.resize(columns, rows)

    def client_gone(self) -> None:
        self._gone.set()
        self._client_spoke.set()

    # --- the session ------------------------------------------------------------------------------

    def run(self, outlet: Outlet) -> None:
        """Start the session, copy output until the process ends (then finish with its Status) or the
        client goes away (then kill an exec'd process; an attached container keeps running). Closes the
        session's descriptors."""
        session = self._begin(outlet)
        if session is None:
            return
        pumps = [
            self._start_pump(session.stdout, outlet.stdout if self.options.stdout else None),
            self._start_pump(session.stderr, outlet.stderr if self.options.stderr else None),
        ]
        status = self._wait(session)
        if status is None and not self.attach:
            session.kill()
            session.wait(_REAP_SECONDS)
        self._exited.set()
        for pump in pumps:
            pump.join()
        try:
            if status is not None and not self._gone.is_set():
                outlet.finish(self._status(status))
        finally:
            self._close_stdin()
            for fd in {session.stdout, session.stderr}:
                os.close(fd)

    def _begin(self, outlet: Outlet) -> StreamSession | None:
        """The started session; None (after telling the client why) when it could not start."""
        if self.options.tty:  # kubectl sends the terminal's size first: start the process with it
            self._client_spoke.wait(self._first_size_wait)
        if self._gone.is_set():
            self._exited.set()
            return None
        try:
            session = self._start()
        except ApiError as error:
            self._exited.set()
            outlet.finish(internal_status(f"unable to upgrade connection: {error.message}"))
            return None
        with self._size_lock:
            self.session = session
            size = self._pending_size
        if size is not None:
            session.resize(*size)
        self._stdin = session.stdin
        self._started.set()
        return session

    def _wait_started(self) -> bool:
        """Until the session started (True) or will not (False); the client's data waits meanwhile."""
        self._client_spoke.set()
        while not self._started.wait(_POLL_SECONDS):
            if self._gone.is_set() or self._exited.is_set():
                return False
        return True

    def _close_stdin(self) -> None:
        with self._stdin_lock:
            if self._stdin is not None:
                os.close(self._stdin)
                self._stdin = None

    def _status(self, status: ExitCode) -> dict[str, Any]:
        return success_status() if self.attach else exit_status(self.options.command, status.exit_code)

    def _wait(self, session: StreamSession) -> ExitCode | None:
        """The exit status, or None once the client is gone or the stream was idle too long."""
        while not self._gone.is_set():
            status = session.wait(_POLL_SECONDS)
            if status is not None:
                return status
            if self._idle_for() >= self._idle_timeout:
                self._gone.set()
        return None

    def _start_pump(self, fd: int, forward: Callable[[bytes], None] | None) -> threading.Thread:
        thread = threading.Thread(
            target=self._pump, args=(fd, forward), name="kubesim-stream-pump", daemon=True
        )
        thread.start()
        return thread

    def _pump(self, fd: int, forward: Callable[[bytes], None] | None) -> None:
        """Read `fd` until end of file; once the process ended, until it has been quiet for a poll (what
        the process wrote is in the pipe by then; a background child holding it open does not keep the
        stream open). Output the client did not ask for is read and dropped, so the process never blocks."""
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        try:
            while not self._gone.is_set():
                ended_before = self._exited.is_set()
                if not poller.poll(_POLL_SECONDS * 1000):
                    if ended_before:
                        return
                    continue
                try:
                    data = os.read(fd, bounds.CHUNK_BYTES)
                except OSError as error:
                    if error.errno == errno.EIO:  # a pty master once the terminal's last process is gone
                        return
                    raise
                if not data:
                    return
                if forward is not None:
                    forward(data)
        except StreamClosed:
            self._gone.set()
