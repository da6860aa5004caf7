"""Class admission: PriorityClasses give pods their priority, default IngressClasses and StorageClasses
fill in new Ingresses and claims (pure rules first, then the real kubectl)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest

from kubesim import classes
from kubesim.classes import Refused
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL


def priority_class(name: str, value: int, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "value": value, **fields}


# --- the pure rules ------------------------------------------------------------------------------------


def test_a_named_class_gives_its_value_and_policy() -> None:
    found = [priority_class("high", 1000, preemptionPolicy="Never"), priority_class("low", 1)]
    assert classes.pod_priority({"priorityClassName": "high"}, found) == {
        "priorityClassName": "high",
        "priority": 1000,
        "preemptionPolicy": "Never",
    }


def test_a_class_without_a_policy_gives_the_defaulted_one() -> None:
    fields = classes.pod_priority({"priorityClassName": "low"}, [priority_class("low", -5)])
    assert (fields["priority"], fields["preemptionPolicy"]) == (-5, "PreemptLowerPriority")


def test_without_a_name_the_global_default_applies_and_names_itself() -> None:
    found = [priority_class("high", 1000), priority_class("base", 10, globalDefault=True)]
    assert classes.pod_priority({}, found) == {
        "priorityClassName": "base",
        "priority": 10,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def test_without_a_name_or_a_default_the_priority_is_zero() -> None:
    assert classes.pod_priority({}, [priority_class("high", 1000)]) == {
        "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def test_of_several_defaults_the_lowest_value_wins() -> None:
    found = [priority_class("b", 20, globalDefault=True), priority_class("a", 5, globalDefault=True)]
    assert classes.global_default(found) == found[1]


def test_an_unknown_class_is_refused_with_the_apiservers_message() -> None:
    with pytest.raises(Refused, match=r"^no PriorityClass with name nope was found$"):
        classes.pod_priority({"priorityClassName": "nope"}, [])


def test_a_stated_priority_must_match_the_class() -> None:
    found = [priority_class("high", 1000)]
    assert classes.pod_priority({"priorityClassName": "high", "priority": 1000}, found)["priority"] == 1000
    with pytest.raises(
        Refused, match=r"the integer value of priority \(7\) must not be provided .* computed 1000"
    ):
        classes.pod_priority({"priorityClassName": "high", "priority": 7}, found)


def test_a_stated_policy_must_match_the_class() -> None:
    found = [priority_class("high", 1000, preemptionPolicy="Never")]
    with pytest.raises(Refused, match=r"PreemptionPolicy \(PreemptLowerPriority\) .* computed Never"):
        classes.pod_priority({"priorityClassName": "high", "preemptionPolicy": "PreemptLowerPriority"}, found)


def test_an_update_keeps_the_priority_it_leaves_out() -> None:
    old = {"priority": 1000, "preemptionPolicy": "Never"}
    assert classes.kept_priority({}, old) == old
    assert classes.kept_priority({"priority": 3}, old) == {"preemptionPolicy": "Never"}
    assert classes.kept_priority({}, {}) == {}


def test_only_one_global_default() -> None:
    base = priority_class("base", 10, globalDefault=True)
    other = priority_class("other", 20, globalDefault=True)
    reason = "PriorityClass base is marked as default. Only one default can exist"
    assert classes.second_default(other, "CREATE", [base]) == reason
    assert classes.second_default(other, "UPDATE", [base, priority_class("other", 20)]) == reason
    assert classes.second_default(base, "UPDATE", [base]) is None
    assert classes.second_default(base, "CREATE", []) is None
    assert classes.second_default(priority_class("plain", 1), "CREATE", [base]) is None


def annotated_class(name: str, created: str, **annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations}}


def test_the_default_class_is_the_newest_annotated_true_then_the_first_by_name() -> None:
    mark = classes.DEFAULT_STORAGE_CLASS
    older = annotated_class("fast", "2026-01-01T00:00:00Z", **{mark[0]: "true"})
    newer = annotated_class("slow", "2026-02-01T00:00:00Z", **{mark[1]: "true"})
    twin = annotated_class("alpha", "2026-02-01T00:00:00Z", **{mark[0]: "true"})
    not_default = annotated_class("zzz", "2026-03-01T00:00:00Z", **{mark[0]: "false"})
    assert classes.default_class([older, not_default], mark) == "fast"
    assert classes.default_class([older, newer], mark) == "slow"
    assert classes.default_class([newer, twin, older], mark) == "alpha"
    assert classes.default_class([not_default], mark) is None
    assert classes.default_class([older], classes.DEFAULT_INGRESS_CLASS) is None


def test_only_an_object_naming_no_class_the_new_way_or_the_old_gets_the_default() -> None:
    where = classes.STORAGE_CLASS_FIELD
    found = [annotated_class("fast", "2026-01-01T00:00:00Z", **{where.default_annotations[0]: "true"})]
    assert classes.defaulted_class({"spec": {}}, where, found) == "fast"
    assert classes.defaulted_class({"spec": {"storageClassName": ""}}, where, found) is None
    assert classes.defaulted_class({"spec": {"storageClassName": "slow"}}, where, found) is None
    legacy = {"metadata": {"annotations": {where.legacy_annotation: "slow"}}, "spec": {}}
    assert classes.defaulted_class(legacy, where, found) is None
    assert classes.defaulted_class({"spec": {}}, where, []) is None


# --- through the real kubectl --------------------------------------------------------------------------


def kubectl(sim: Simulator, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), "--namespace", "default", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)},
        check=False,
        timeout=60,
    )


def pod_manifest(name: str, **spec: Any) -> str:
    container = {"name": "main", "image": "busybox"}
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [container], **spec},
        }
    )


def spec_of(sim: Simulator, kind: str, name: str) -> dict[str, Any]:
    shown = kubectl(sim, "get", kind, name, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["spec"]


def test_kubectl_pods_get_priority_from_their_class(kubesim: Simulator) -> None:
    made = kubectl(kubesim, "create", "priorityclass", "high", "--value=1000", "--preemption-policy=Never")
    assert made.returncode == 0, made.stderr
    assert (
        kubectl(
            kubesim, "create", "-f", "-", stdin=pod_manifest("urgent", priorityClassName="high")
        ).returncode
        == 0
    )
    spec = spec_of(kubesim, "pod", "urgent")
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    assert kubectl(kubesim, "create", "-f", "-", stdin=pod_manifest("plain")).returncode == 0
    spec = spec_of(kubesim, "pod", "plain")
    assert (spec.get("priorityClassName"), spec["priority"]) == (None, 0)
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"


def test_kubectl_an_unknown_class_is_forbidden(kubesim: Simulator) -> None:
    refused = kubectl(kubesim, "create", "-f", "-", stdin=pod_manifest("lost", priorityClassName="nope"))
    assert refused.returncode != 0
    assert 'pods "lost" is forbidden: no PriorityClass with name nope was found' in refused.stderr


def test_kubectl_the_global_default_applies_and_only_one_may_exist(kubesim: Simulator) -> None:
    made = kubectl(kubesim, "create", "priorityclass", "base", "--value=10", "--global-default")
    assert made.returncode == 0, made.stderr
    second = kubectl(kubesim, "create", "priorityclass", "other", "--value=20", "--global-default")
    assert second.returncode != 0
    assert (
        'priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass base is marked as default. '
        "Only one default can exist" in second.stderr
    )
    assert kubectl(kubesim, "create", "-f", "-", stdin=pod_manifest("plain")).returncode == 0
    spec = spec_of(kubesim, "pod", "plain")
    assert (spec["priorityClassName"], spec["priority"]) == ("base", 10)


def test_kubectl_system_classes_exist_and_an_update_keeps_the_priority(kubesim: Simulator) -> None:
    listed = kubectl(kubesim, "get", "priorityclasses", "-o", "name")
    assert listed.stdout.split() == [
        "priorityclass.scheduling.k8s.io/system-cluster-critical",
        "priorityclass.scheduling.k8s.io/system-node-critical",
    ]
    created = kubectl(
        kubesim, "create", "-f", "-", stdin=pod_manifest("agent", priorityClassName="system-node-critical")
    )
    assert created.returncode == 0, created.stderr
    assert spec_of(kubesim, "pod", "agent")["priority"] == 2_000_001_000
    stored = json.loads(kubectl(kubesim, "get", "pod", "agent", "-o", "json").stdout)
    for field in ("priority", "preemptionPolicy"):  # what the Priority plugin set on create, left out
        del stored["spec"][field]
    replaced = kubectl(kubesim, "replace", "-f", "-", stdin=json.dumps(stored))
    assert replaced.returncode == 0, replaced.stderr
    assert spec_of(kubesim, "pod", "agent")["priority"] == 2_000_001_000


def test_kubectl_a_jobs_pods_get_their_templates_priority(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(kubelet=True)
    assert kubectl(sim, "create", "priorityclass", "batch", "--value=500").returncode == 0
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {
            "template": {
                "spec": {
                    "priorityClassName": "batch",
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                }
            }
        },
    }
    created = kubectl(sim, "create", "-f", "-", stdin=json.dumps(job))
    assert created.returncode == 0, created.stderr
    deadline = time.monotonic() + 30
    while not (pods := sim.store.list("pods", "default", label_selector="job-name=train")["items"]):
        assert time.monotonic() < deadline, "the Job controller made no pod"
        time.sleep(0.05)
    assert pods[0]["spec"]["priority"] == 500


DEFAULT_CLASSES = """
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: rancher.io/local-path
"""

CLAIMS_AND_INGRESS = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: static}
spec: {storageClassName: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""


def test_kubectl_new_ingresses_and_claims_get_the_default_class(kubesim: Simulator) -> None:
    before = kubectl(kubesim, "create", "ingress", "early", "--rule=/=web:80")
    assert before.returncode == 0, before.stderr
    assert "ingressClassName" not in spec_of(kubesim, "ingress", "early")
    applied = kubectl(kubesim, "apply", "-f", "-", stdin=DEFAULT_CLASSES)
    assert applied.returncode == 0, applied.stderr
    applied = kubectl(kubesim, "apply", "-f", "-", stdin=CLAIMS_AND_INGRESS)
    assert applied.returncode == 0, applied.stderr
    assert spec_of(kubesim, "pvc", "data")["storageClassName"] == "standard"
    assert spec_of(kubesim, "pvc", "static")["storageClassName"] == ""
    created = kubectl(kubesim, "create", "ingress", "site", "--rule=/=web:80")
    assert created.returncode == 0, created.stderr
    assert spec_of(kubesim, "ingress", "site")["ingressClassName"] == "nginx"
    assert "ingressClassName" not in spec_of(kubesim, "ingress", "early")
