"""`manage.py run_controllers`: the controllers' leader-elected watch loops in the foreground (development).

The same ControllerManager as the worker bootstep: it campaigns for the Lease, watches while it holds it,
enqueues reconcile keys for the workers, and releases the Lease on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand

from kube.controller.runtime import manager_from_settings


class Command(BaseCommand):
    help = "Run the registered controllers' informers (while holding the leader Lease) until interrupted."

    def handle(self, *args: Any, **options: Any) -> None:
        manager = manager_from_settings()
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        kinds = ", ".join(controller.kind for controller in manager.controllers) or "none"
        config = manager.elector.config
        self.stdout.write(f"Controllers: {kinds}.")
        self.stdout.write(f"Campaigning for lease {config.namespace}/{config.name} as {config.identity}.")
        manager.run_forever(stop)
        self.stdout.write("Stopped; the lease is released.")
