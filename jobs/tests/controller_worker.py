"""A real controller worker for the tests that run jobs end to end on the simulator."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.apps import apps

from kube.models import MirroredResource
from kube.tests.queue_harness import Worker, wait_for

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def leading_controller_worker(
    name: str, env: dict[str, str], logdir: Path, django_db_blocker: Any, *extra_args: str
) -> Iterator[Worker]:
    """`celery worker -Q reconcile` with the controllers on (`env` made with `controller_worker_env`), once it
    leads. On exit it is stopped, the tail of its log printed (pytest shows it when a test failed) and the
    rows it mirrored into the test database deleted, so later modules start clean."""
    logfile = logdir / "worker.log"
    command = [sys.executable, "-m", "celery", "-A", "argoml_site", "worker", "-Q", "reconcile",
               "-n", f"{name}@%h", "-c", "2", *extra_args, "--without-gossip", "--without-mingle",
               "--without-heartbeat", "-l", "INFO", "--logfile", str(logfile)]  # fmt: skip
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    running = Worker(name, process, logfile)
    try:
        running.wait_ready(60)
        wait_for(lambda: "became leader" in logfile.read_text(errors="replace"), 30, "the worker to lead")
        yield running
    finally:
        running.stop()
        print(logfile.read_text(errors="replace")[-6000:])
        with django_db_blocker.unblock():  # every app's mirror rows (their history goes with them)
            for model in apps.get_models():
                if issubclass(model, MirroredResource):
                    model.objects.all().delete()
