"""Which function reconciles which kind.

An app declares its reconciler in `<app>/reconcile.py`, which the registry imports by itself (like admin.py):

    from kube.queue import reconciler

    @reconciler("TFJob")
    def reconcile_tfjob(namespace: str, name: str) -> float | None:
        ...  # converge; return None, or seconds after which to reconcile again

`register(kind, func)` does the same from anywhere, e.g. an AppConfig.ready(). A raised exception is a
failure (retried with backoff); adding a controller never touches `kube`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.utils.module_loading import autodiscover_modules

Reconciler = Callable[[str, str], float | None]

RECONCILE_MODULE = "reconcile"


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

    def reconciler(self, kind: str) -> Callable[[Reconciler], Reconciler]:
        """Decorator form of `register`."""

        def decorate(func: Reconciler) -> Reconciler:
            self.register(kind, func)
            return func

        return decorate

    def lookup(self, kind: str) -> Reconciler:
        self.discover()
        try:
            return self._reconcilers[kind]
        except KeyError:
            known = ", ".join(sorted(self._reconcilers)) or "none"
            raise UnknownKindError(
                f"No reconciler is registered for kind {kind!r} (registered: {known}). Declare one with "
                f"@reconciler({kind!r}) in an installed app's {RECONCILE_MODULE}.py."
            ) from None

    def kinds(self) -> list[str]:
        self.discover()
        return sorted(self._reconcilers)

    def discover(self) -> None:
        """Import every installed app's reconcile module once (needs the Django app registry ready)."""
        if self._discovered:
            return
        with self._lock:
            if not self._discovered:
                autodiscover_modules(RECONCILE_MODULE)
                self._discovered = True


registry = Registry()
register = registry.register
reconciler = registry.reconciler
