"""A private `redis-server` for fault tests and benchmarks: killed, restarted empty, paused, flushed.

Never the machine's shared Redis: a fault there would hit everyone using it. This one listens on a free
loopback port, keeps no data on disk (no RDB, no AOF: a restart comes back empty, as a Redis pod without a
volume does) and is killed when the block ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateRedis:
    """One redis-server process on a fixed port, restartable on that port."""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.paused = False

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis.from_url(self.url(db), decode_responses=True, socket_timeout=5)

    def start(self, timeout: float = 10.0) -> None:
        """Start the server, empty, and wait until it answers."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("the private redis-server is already running")
        log = (self.workdir / "redis.log").open("ab")
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", str(self.workdir), "--protected-mode", "no"]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if redis.Redis(port=self.port, socket_timeout=0.5).ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.02)
        raise RuntimeError(f"redis-server on port {self.port} did not answer within {timeout} s")

    def kill(self) -> None:
        """SIGKILL: everything in memory is gone, connections drop."""
        if self.process is not None and self.process.poll() is None:
            if self.paused:
                self.resume()
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def restart_empty(self, down_for: float = 0.0) -> None:
        """Kill it, wait `down_for` seconds, start it again on the same port with no data."""
        self.kill()
        time.sleep(down_for)
        self.start()

    def pause(self) -> None:
        """SIGSTOP: connections stay open, nothing answers (a frozen node, a network partition)."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)
        self.paused = False

    def flushall(self) -> None:
        """FLUSHALL on this private server only."""
        self.client().flushall()

    def stop(self) -> None:
        self.kill()


@contextmanager
def private_redis(workdir: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
