""" "kubectl debug mypod -it --image=busybox" adds an ephemeral container through the pods/ephemeralcontainers
subresource (Debug Running Pods: "Debugging with an ephemeral debug container"); existing ephemeral containers
"may not be changed" nor removed. Driven by the real kubectl against the secured simulator."""

from __future__ import annotations

import json
from collections.abc import Callable

from kubesim.kubelet.ephemeral import update_causes
from kubesim.simulator import Simulator
from kubesim.testing import run_kubectl as kubectl


def test_kubectl_debug_adds_an_ephemeral_container(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(https=True, auth=True)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "web", "image": "nginx:1"}]},
    }
    kubectl(sim, "apply", "-f", "-", stdin=json.dumps(pod))
    kubectl(sim, "debug", "web", "--image=busybox:1.36", "--container=dbg", "--", "sleep", "3600")
    stored = sim.store.get("pods", "web", "default")
    (added,) = stored["spec"]["ephemeralContainers"]
    assert (added["name"], added["image"], added["command"]) == ("dbg", "busybox:1.36", ["sleep", "3600"])
    assert [c["name"] for c in stored["spec"]["containers"]] == ["web"]
    listed = json.loads(kubectl(sim, "get", "--raw", "/api/v1").stdout)["resources"]
    assert {
        "name": "pods/ephemeralcontainers",
        "singularName": "",
        "namespaced": True,
        "kind": "Pod",
        "verbs": ["get", "patch", "update"],
    } in listed
    path = "/api/v1/namespaces/default/pods/web/ephemeralcontainers"
    assert (
        json.loads(kubectl(sim, "get", "--raw", path).stdout)["metadata"]["uid"] == stored["metadata"]["uid"]
    )
    removed = {**stored, "spec": {**stored["spec"], "ephemeralContainers": []}}
    refused = kubectl(sim, "replace", "--raw", path, "-f", "-", stdin=json.dumps(removed), check=False)
    assert refused.returncode != 0
    assert (
        'The Pod "web" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers "dbg" '
        "may not be removed" in refused.stderr
    )


def test_existing_ephemeral_containers_may_neither_change_nor_go() -> None:
    debugger = {"name": "dbg", "image": "busybox"}
    assert update_causes([debugger], [debugger, {"name": "second", "image": "busybox"}]) == []
    (changed,) = update_causes([debugger], [{**debugger, "image": "alpine"}])
    assert (changed.field, changed.message) == (
        "spec.ephemeralContainers",
        'Forbidden: existing ephemeral containers "dbg" may not be changed\n',
    )
    (removed,) = update_causes([debugger], [])
    assert removed.message == 'Forbidden: existing ephemeral containers "dbg" may not be removed\n'
