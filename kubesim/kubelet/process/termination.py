"""A container's termination message, as a kubelet keeps it: an empty file at `terminationMessagePath`
(default /dev/termination-log) for each start, whose first 4096 bytes become `terminated.message`; with
`terminationMessagePolicy: FallbackToLogsOnError` and a failed exit, the last lines of the log when the
file is empty. The TensorBoard fetcher reports what it could not fetch this way."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubesim.kubelet.sandbox import Mount

TERMINATION_LOG = "/dev/termination-log"
MAX_MESSAGE = 4096  # the kubelet keeps at most this much of a termination message
FALLBACK_LOG_LINES = 80  # FallbackToLogsOnError: the kubelet's last lines of the log


def _file(pod_directory: Path, name: str) -> Path:
    return pod_directory / "termination" / name


def prepare(pod_directory: Path, container: Mapping[str, Any]) -> Mount:
    """A fresh empty file for this start, mounted where the container writes its message."""
    host = _file(pod_directory, str(container.get("name", "")))
    host.parent.mkdir(parents=True, exist_ok=True)
    host.unlink(missing_ok=True)
    host.touch(mode=0o600)  # processes run as the kubelet's user (not runAsUser)
    return Mount(str(host), str(container.get("terminationMessagePath") or TERMINATION_LOG), False)


def read(
    pod_directory: Path, container: Mapping[str, Any], exit_code: int, log_text: Callable[[], str]
) -> str:
    """The message the container left (never following a link it made), or its log's last lines."""
    message = ""
    with contextlib.suppress(OSError):
        descriptor = os.open(
            _file(pod_directory, str(container.get("name", ""))), os.O_RDONLY | os.O_NOFOLLOW
        )
        with os.fdopen(descriptor, "rb") as file:
            message = file.read(MAX_MESSAGE).decode("utf-8", "replace")
    if (
        not message
        and exit_code != 0
        and container.get("terminationMessagePolicy") == "FallbackToLogsOnError"
    ):
        message = "\n".join(log_text().splitlines()[-FALLBACK_LOG_LINES:])[-MAX_MESSAGE:]
    return message
