"""One running simulator: store + HTTP server + faults + counters + clock (+ optional persistence)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from kubesim import processes as process_kubelet
from kubesim import timeline
from kubesim.auth.aggregation import Aggregator
from kubesim.auth.security import Security
from kubesim.classes import ClassAdmission
from kubesim.clock import Clock
from kubesim.controllers import Controllers
from kubesim.counters import Counters
from kubesim.faults import Faults
from kubesim.kubeconfig import write_kubeconfig
from kubesim.kubelet.process.provisioner import Provisioner
from kubesim.podsecurity.admission import PodSecurity
from kubesim.podsecurity.config import PodSecurityConfig
from kubesim.processes import ProcessOptions
from kubesim.server.app import ApiServer
from kubesim.store import Store

log = logging.getLogger(__name__)

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_STATE_FILE = "state.json"


class Simulator:
    """Start with `start()` (or `with Simulator() as sim:`); `url`, `store`, `faults`, `counters`, `clock`."""

    def __init__(
        self,
        *,
        port: int = 0,
        clock: Clock | None = None,
        state_dir: Path | None = None,
        kubeconfig_path: Path | None = None,
        event_log_size: int = 10_000,
        bookmark_interval: float = 1.0,
        save_interval: float = 1.0,
        kubelet: bool = False,
        nodes: int = 1,
        argo: bool = False,
        webhooks: bool = True,
        namespaces: Sequence[str] = (),
        https: bool = False,
        auth: bool = False,
        anonymous: bool = False,
        admin_token: str | None = None,
        pod_security: PodSecurityConfig | None = None,
        processes: ProcessOptions | None = None,
    ) -> None:
        self.clock = clock or Clock()
        self.store = Store(self.clock, event_log_size=event_log_size)
        self.faults = Faults()
        self.counters = Counters()
        #: TLS with the simulator's own CA (`https`), authentication and RBAC (`auth`); see docs/kubesim.md
        self.security = Security(
            self.store, https=https, auth=auth, anonymous=anonymous, admin_token=admin_token
        )
        self.server = ApiServer(
            self.store,
            port=port,
            faults=self.faults,
            counters=self.counters,
            bookmark_interval=bookmark_interval,
            tls=self.security.tls_context("127.0.0.1"),
            gate=self.security.gate,
        )
        self.aggregator = Aggregator(self.store)
        self.pod_security = PodSecurity(self.store, pod_security)
        self.class_admission = ClassAdmission(self.store)
        self.controllers = Controllers(self.store, self.server, kubelet=kubelet, argo=argo, webhooks=webhooks)
        self.kubelet = self.controllers.kubelet
        self.kubelet.settings.node_count = nodes  # Ready Nodes the kubelet registers when it starts
        self.webhooks = self.controllers.webhooks
        self.argo = self.controllers.argo
        #: exec, attach, port-forward: `simulator.streams.backend = kubelet` serves them (server/streams)
        self.streams = self.controllers.streams
        self.state_dir = state_dir
        #: run pods' containers as local processes (`make run`); None keeps every pod scripted
        self.processes = processes
        self._provisioner: Provisioner | None = None
        self.kubeconfig_path = kubeconfig_path
        # Created at start besides the built-in ones, before the kubeconfig says the cluster is up.
        self.namespaces = (*DEFAULT_NAMESPACES, *namespaces)
        self._save_interval = save_interval
        self._stopping = threading.Event()
        self._saver: threading.Thread | None = None
        self._saved_rv = -1

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> Simulator:
        if self.state_dir is not None and self.store.load(self.state_dir / _STATE_FILE):
            log.info("kubesim: restored state from %s", self.state_dir)
            self._saved_rv = int(self.store.resource_version)
        for namespace in self.namespaces:
            self.store.ensure_namespace(namespace)
        self.security.install(self.server.add_subresource)
        self.aggregator.start()
        self.pod_security.install()
        self.class_admission.install()
        if self.kubeconfig_path is not None:
            write_kubeconfig(
                self.kubeconfig_path,
                self.url,
                cluster=self.security.kubeconfig_cluster(),
                user=self.security.kubeconfig_user(),
            )
        if self.processes is not None:
            self._provisioner = process_kubelet.enable(self, self.processes)
        self.controllers.start()
        self.server.start()
        if self.state_dir is not None:
            self._saver = threading.Thread(target=self._save_periodically, name="kubesim-saver", daemon=True)
            self._saver.start()
        return self

    def serve_forever(self) -> None:
        """Serve on the calling thread until `stop()` is called from elsewhere (the CLI's signal handler)."""
        self._stopping.wait()

    def stop(self) -> None:
        self._stopping.set()
        self.server.stop()
        if self._provisioner is not None:
            self._provisioner.stop()
        self.controllers.stop()
        self.aggregator.stop()
        self.store.close()
        self.security.close()
        self.clock.close()
        if self._saver is not None:
            self._saver.join(timeout=5)
        self.save()

    def save(self) -> None:
        if self.state_dir is None:
            return
        if int(self.store.resource_version) != self._saved_rv:
            self._saved_rv = self.store.save(self.state_dir / _STATE_FILE)

    def _save_periodically(self) -> None:
        while not self._stopping.wait(self._save_interval):
            try:
                self.save()
            except OSError:
                log.exception("kubesim: could not save state to %s", self.state_dir)

    def advance(self, seconds: float) -> None:
        """Advance the clock timer by timer, letting the kubelet and Argo react in between (timeline.py)."""
        timeline.advance(self.clock, self.store, seconds)

    def run_until(self, condition: Callable[[], bool], within: float = 3600.0) -> bool:
        """Advance simulated time until `condition()` holds (True) or `within` seconds passed (False)."""
        return timeline.run_until(self.clock, self.store, condition, within=within)

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
