"""Which function reconciles which kind: the queue's table, looked up for every key a worker runs.

Apps fill it through `kube.controller.registry.register` in `<app>/controllers.py` (the one way to add a
controller), which this table imports by itself in every installed app the first time a kind is looked up,
so a worker that watches nothing still knows every reconciler. A reconciler returns None, or seconds after
which to reconcile again; a raised exception is a failure (retried with backoff).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.utils.module_loading import autodiscover_modules

Reconciler = Callable[[str, str], float | None]

#: The module of each installed app that registers its controllers (and so their reconcilers).
CONTROLLERS_MODULE = "controllers"


class UnknownKindError(LookupError):
    pass


class Registry:
    def __init__(self, *, discover_apps: bool = True) -> None:
        """`discover_apps=False` makes a registry of only what is registered on it (tests)."""
        self._reconcilers: dict[str, Reconciler] = {}
        self._discovered = not discover_apps
        self._lock = threading.Lock()

    def register(self, kind: str, func: Reconciler) -> None:
        """Make `func(namespace, name)` reconcile `kind`; registering the same function twice is fine."""
        if not callable(func):
            raise TypeError(f"func: the reconciler of {kind!r} must be callable, got {func!r}.")
        current = self._reconcilers.get(kind)
        if current is not None and current is not func:
            raise ValueError(
                f"kind: {kind!r} is already reconciled by {current.__module__}.{current.__qualname__}."
            )
        self._reconcilers[kind] = func

    def lookup(self, kind: str) -> Reconciler:
        self.discover()
        try:
            return self._reconcilers[kind]
        except KeyError:
            known = ", ".join(sorted(self._reconcilers)) or "none"
            raise UnknownKindError(
                f"No reconciler is registered for kind {kind!r} (registered: {known}). Register its "
                f"controller in an installed app's {CONTROLLERS_MODULE}.py (kube.controller.registry)."
            ) from None

    def kinds(self) -> list[str]:
        self.discover()
        return sorted(self._reconcilers)

    def discover(self) -> None:
        """Import every installed app's controllers module once (needs the Django app registry ready)."""
        if self._discovered:
            return
        with self._lock:
            if not self._discovered:
                autodiscover_modules(CONTROLLERS_MODULE)
                self._discovered = True


registry = Registry()
