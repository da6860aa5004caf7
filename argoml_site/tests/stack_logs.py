"""What the dev stack's own processes printed, read for what a person at `make run`'s terminal must never see.

Every child the dev stack supervises (embedded Redis, the artifact server, kubesim, the worker with beat, the
web server and the TensorBoard origin, the webhook listener) and its one-off commands (install_crds, migrate,
dev_webhooks…) write to the terminal `make run` runs in: one stream, which the tests read whole. Process
pods' output is not in it (the kubelet keeps it for `kubectl logs`), so a training script's own traceback
is the example's business, not the stack's.
"""

from __future__ import annotations

import re

TRACEBACK = "Traceback (most recent call last)"
#: A web server's 5xx: runserver's access line (`"GET /x HTTP/1.1" 500 145`) and Django's request log,
#: which the gunicorn webhook listener writes too (it logs no access lines).
SERVER_ERROR = re.compile(r'"[A-Z]+ [^"]* HTTP/[\d.]+" 5\d\d\b|\bInternal Server Error: ')
#: Lines shown after each offending one: a traceback's frames and its exception.
CONTEXT_LINES = 25


def offending_lines(lines: list[str]) -> list[str]:
    """Each traceback and 5xx in the stack's output, with the lines that follow it (a traceback's frames),
    ready to print; empty when the stack printed none."""
    found = []
    for index, line in enumerate(lines):
        if TRACEBACK in line or SERVER_ERROR.search(line):
            found.append("".join(lines[index : index + CONTEXT_LINES]))
    return found


def report(found: list[str]) -> str:
    return f"{len(found)} traceback(s) or 5xx in the dev stack's processes' output:\n" + "\n---\n".join(found)
