"""The simulated controllers a Simulator runs besides its apiserver: kubelet + Deployments, ReplicaSets and
Jobs, Argo, webhooks, and the `default` ServiceAccount of every namespace.

Admission webhooks are on by default (they do nothing until a WebhookConfiguration is registered); the
kubelet and Argo are opt-in, so contract tests that play the kubelet themselves are not raced by one.
"""

from __future__ import annotations

from kubesim.accounts import ServiceAccounts
from kubesim.admission import Webhooks
from kubesim.argo import ArgoController
from kubesim.kubelet import Kubelet
from kubesim.kubelet.deployments import DeploymentController
from kubesim.kubelet.disruption import DisruptionController
from kubesim.kubelet.ephemeral import SUBRESOURCE as EPHEMERAL_CONTAINERS
from kubesim.kubelet.ephemeral import EphemeralContainers
from kubesim.kubelet.eviction import Evictions
from kubesim.kubelet.jobs import JobController
from kubesim.kubelet.logs import log_handler
from kubesim.kubelet.replicasets import ReplicaSetController
from kubesim.server.app import ApiServer
from kubesim.server.streams.handler import STREAMS, PodStreams
from kubesim.server.streams.proxy import Proxies
from kubesim.store import Store


class Controllers:
    """Owns the controllers; `start()` runs the enabled ones, `stop()` ends them."""

    def __init__(self, store: Store, server: ApiServer, *, kubelet: bool, argo: bool, webhooks: bool) -> None:
        self.store = store
        self.server = server
        self.kubelet = Kubelet(store, store.clock)
        self.deployments = DeploymentController(store)
        self.replica_sets = ReplicaSetController(store)
        self.disruption = DisruptionController(store)
        self.jobs = JobController(store)
        self.webhooks = Webhooks(store)
        self.service_accounts = ServiceAccounts(store)
        self.argo = ArgoController(store, self.kubelet)
        #: exec, attach and port-forward; they answer 400 until a kubelet that runs containers sets `backend`
        self.streams = PodStreams(store, server.gate)
        #: pods/proxy and services/proxy, dialled through the same kubelet as port-forward
        self.proxies = Proxies(store, lambda: self.streams.backend)
        self.enabled = {"kubelet": kubelet or argo, "argo": argo, "webhooks": webhooks}

    def start(self) -> None:
        logs = log_handler(self.store, self.kubelet.logs, self.store.clock.time)
        self.server.add_subresource("pods", "log", logs)
        for stream in STREAMS:
            self.server.add_subresource("pods", stream, self.streams.handler(stream))
        self.server.add_subresource("pods", "eviction", Evictions(self.store).serve)
        self.server.add_subresource("pods", "proxy", self.proxies.serve_pod)
        self.server.add_subresource("services", "proxy", self.proxies.serve_service)
        self.server.add_subresource("pods", EPHEMERAL_CONTAINERS, EphemeralContainers(self.store).serve)
        self.service_accounts.start()
        if self.enabled["webhooks"]:
            self.webhooks.start()
        if self.enabled["kubelet"]:
            self.kubelet.start()
            self.replica_sets.start()
            self.deployments.start()
            self.disruption.start()
            self.jobs.start()
        if self.enabled["argo"]:
            self.argo.start()

    def stop(self) -> None:
        self.streams.stop()
        self.argo.stop()
        self.deployments.stop()
        self.disruption.stop()
        self.replica_sets.stop()
        self.jobs.stop()
        self.kubelet.stop()
        self.webhooks.stop()
        self.service_accounts.stop()
