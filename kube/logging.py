"""Which controller and which resource a log line is about, carried in a contextvar.

Code inside a reconcile or a watch handler runs under `log_context(controller, key)`; `ContextFilter`,
attached to the console handler in settings.LOGGING, copies both onto every record: JSON logs get
`controller` and `key` fields, text logs get ` [controller=… key=…]` after the message. Contextvars keep
the values per thread (and per asyncio task), so concurrent handlers never see each other's key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

WatchHandler = Callable[[str, dict[str, Any]], None]

#: The package of the controller runtime, whose loggers keep the names they had before it was one.
_RUNTIME_PACKAGE = "kube.controller."


def runtime_logger(module: str) -> logging.Logger:
    """The logger of a module of kube.controller, under the name its records carried before the runtime
    moved there (`kube.leader`, `kube.queue.core`): log filters, alerts and tests that read worker logs key
    on it."""
    return logging.getLogger(f"kube.{module.removeprefix(_RUNTIME_PACKAGE)}")


@dataclass(frozen=True)
class LogContext:
    controller: str | None = None
    key: str | None = None


_NO_CONTEXT = LogContext()  # frozen, so one shared default is safe
_current: ContextVar[LogContext] = ContextVar("kube_log_context", default=_NO_CONTEXT)


def current() -> LogContext:
    return _current.get()


@contextmanager
def log_context(controller: str | None = None, key: str | None = None) -> Iterator[LogContext]:
    """Log under `controller` and `key` inside the block; an argument left out keeps the outer value,
    so a watch loop can set its controller once and each event only its key."""
    outer = _current.get()
    context = LogContext(
        controller=controller if controller is not None else outer.controller,
        key=key if key is not None else outer.key,
    )
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def resource_key(namespace: str | None, name: str) -> str:
    """client-go's key: `namespace/name`, or just `name` for a cluster-scoped object."""
    return f"{namespace}/{name}" if namespace else name


def object_key(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return resource_key(metadata.get("namespace"), metadata.get("name") or "")


def with_log_context(controller: str, handler: WatchHandler) -> WatchHandler:
    """Wrap a watch handler `(event_type, obj)` so that everything it logs names the controller and
    the object's key."""

    def handle(event_type: str, obj: dict[str, Any]) -> None:
        with log_context(controller, object_key(obj)):
            handler(event_type, obj)

    handle.__name__ = getattr(handler, "__name__", "handle")
    handle.__doc__ = handler.__doc__
    return handle


class ContextFilter(logging.Filter):
    """Copy the log context onto each record; attach it to a handler so every logger's records pass it.

    `text=True` (for the plain-text formatter, whose format string has no place for extra fields) also
    appends the context to the message; JSON formatters pick the record attributes up as fields.
    Records outside any context are left as they are.
    """

    def __init__(self, name: str = "", text: bool = False) -> None:
        super().__init__(name)
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        context = _current.get()
        if context.controller is None and context.key is None:
            return True
        if context.controller is not None:
            record.controller = context.controller
        if context.key is not None:
            record.key = context.key
        if self.text and not getattr(record, "_kube_context_appended", False):
            # Format once here (a handler filter only runs for records that will be emitted anyway).
            record.msg = f"{record.getMessage()} [{_describe(context)}]"
            record.args = None
            record._kube_context_appended = True
        return True


def _describe(context: LogContext) -> str:
    parts = []
    if context.controller is not None:
        parts.append(f"controller={context.controller}")
    if context.key is not None:
        parts.append(f"key={context.key}")
    return " ".join(parts)
