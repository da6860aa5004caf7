"""Turning the process kubelet on in a Simulator: runtime, tokens, CA and provisioner, or one line why not."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kubesim.auth.security import Security
from kubesim.auth.tokens import Claims
from kubesim.errors import ApiError
from kubesim.kubelet.node import Kubelet
from kubesim.kubelet.process.images import ImageMap
from kubesim.kubelet.process.provisioner import Provisioner
from kubesim.kubelet.process.runtime import HostService, ProcessRuntime, RuntimeSettings
from kubesim.kubelet.process.streams import ProcessStreams
from kubesim.kubelet.process.volumes import TokenIssuer, VolumeError
from kubesim.kubelet.sandbox import SandboxUnavailable
from kubesim.server.app import ApiServer
from kubesim.server.streams.handler import PodStreams
from kubesim.store import Store

log = logging.getLogger(__name__)

#: what the API server grants a kubelet asking for 3607 s (service-account-extend-token-expiration)
EXTENDED_EXPIRATION = 365 * 24 * 3600


class Cluster(Protocol):
    """What of a Simulator the process kubelet is wired into."""

    store: Store
    security: Security
    kubelet: Kubelet
    streams: PodStreams
    server: ApiServer


@dataclass(frozen=True)
class ProcessOptions:
    """Where the process kubelet keeps pods' files (`root`), its image map, and what relative paths mean."""

    root: Path
    image_map: Path
    base: Path
    masked_paths: tuple[str, ...] = ()
    exposed: tuple[HostService, ...] = ()  # Services pods reach that listen on this machine


def token_issuer(simulator: Cluster) -> TokenIssuer:
    """Pods' ServiceAccount tokens, signed as TokenRequest signs them and bound to the pod."""

    def issue(
        namespace: str, account: str, audiences: tuple[str, ...], expiration: int, pod: Mapping[str, Any]
    ) -> str:
        gate = simulator.security.gate
        if gate is None:  # an insecure simulator reads no token; the file still exists, as on a cluster
            return "kubesim-insecure-simulator-token"
        try:
            found = simulator.store.get("serviceaccounts", account, namespace)
        except ApiError:
            raise VolumeError(f'serviceaccount "{account}" not found') from None
        now = int(simulator.store.clock.time())
        lifetime = EXTENDED_EXPIRATION if expiration == 3607 and not audiences else expiration
        name, uid = str(pod["metadata"]["name"]), str(pod["metadata"]["uid"])
        claims = Claims(
            namespace,
            account,
            str(found["metadata"]["uid"]),
            audiences or tuple(gate.audiences),
            now + lifetime,
            "pod",
            name,
            uid,
        )
        return gate.signer.issue(claims, now, {"pod": {"name": name, "uid": uid}})

    return issue


def enable(simulator: Cluster, options: ProcessOptions) -> Provisioner | None:
    """Run pods as processes from now on; None (and one warning line) when this machine cannot."""
    image_map = ImageMap.load(options.image_map, options.base)
    ca = simulator.security.ca
    runtime = ProcessRuntime(
        simulator.store,
        simulator.kubelet.logs,
        RuntimeSettings(
            root=options.root,
            image_map=image_map,
            issue_token=token_issuer(simulator),
            ca_certificate=ca.certificate.decode() if ca is not None else "",
            api_address=("127.0.0.1", int(simulator.server.address.rsplit(":", 1)[1])),
            masked_paths=options.masked_paths,
            exposed=options.exposed,
        ),
    )
    try:
        runtime.start()
    except SandboxUnavailable as error:
        log.warning("kubesim: pods stay scripted, the process kubelet cannot run here: %s", error)
        return None
    simulator.kubelet.run_processes(runtime)
    simulator.streams.backend = ProcessStreams(simulator.store, runtime, simulator.kubelet.logs)
    provisioner = Provisioner(simulator.store, options.root)
    provisioner.start()
    return provisioner
