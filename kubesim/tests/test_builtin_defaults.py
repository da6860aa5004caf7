"""The API server's defaults for built-in kinds: the pure defaulting functions (kubesim.builtins.defaults)
and, through the real kubectl and the official client, what a created object comes back with."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from kubesim.builtins import defaults


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("registry:5000/team/app", "Always"),
        ("busybox:1.36", "IfNotPresent"),
        ("registry:5000/team/app:v2", "IfNotPresent"),
        ("busybox@sha256:" + "0" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    """ "If you omit the imagePullPolicy field, and the tag for the container image is :latest,
    imagePullPolicy is automatically set to Always; … you don't specify the tag …: Always; … you specify the
    tag … that isn't :latest, the imagePullPolicy is automatically set to IfNotPresent" (Images, "Default
    image pull policy"). A registry port is not a tag."""
    assert defaults.image_pull_policy(image) == policy


def test_a_pod_spec_gets_every_default_once() -> None:
    spec: dict[str, Any] = {
        "serviceAccountName": "runner",
        "containers": [
            {
                "name": "a",
                "image": "app:1",
                "ports": [{"containerPort": 80}],
                "readinessProbe": {"httpGet": {"port": 80}},
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            }
        ],
        "volumes": [{"name": "scratch"}, {"name": "conf", "configMap": {"name": "c"}}],
    }
    defaults.pod_spec(spec)
    once = json.dumps(spec, sort_keys=True)
    defaults.pod_spec(spec)
    assert json.dumps(spec, sort_keys=True) == once  # idempotent: it runs on every write
    assert {k: spec[k] for k in ("dnsPolicy", "restartPolicy", "securityContext")} == {
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "securityContext": {},
    }
    assert (spec["terminationGracePeriodSeconds"], spec["schedulerName"]) == (30, "default-scheduler")
    assert spec["serviceAccount"] == "runner"
    assert "enableServiceLinks" not in spec  # pods only (SetDefaults_Pod), not templates
    container = spec["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["readinessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert container["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert spec["volumes"] == [
        {"name": "scratch", "emptyDir": {}},
        {"name": "conf", "configMap": {"name": "c", "defaultMode": 420}},
    ]


def test_a_pod_also_gets_service_links_and_requests_from_limits() -> None:
    pod: dict[str, Any] = {
        "spec": {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"cpu": "1"}}}]}
    }
    defaults.pod(pod)
    assert pod["spec"]["enableServiceLinks"] is True
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}


def test_host_network_pods_publish_their_container_ports_on_the_host() -> None:
    spec: dict[str, Any] = {
        "hostNetwork": True,
        "containers": [{"name": "a", "ports": [{"containerPort": 9}]}],
    }
    defaults.pod_spec(spec)
    assert spec["containers"][0]["ports"] == [{"containerPort": 9, "protocol": "TCP", "hostPort": 9}]


def test_workload_defaults() -> None:
    deployment: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "a", "image": "x:1"}]}}}
    defaults.deployment(deployment)
    assert deployment["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (deployment["replicas"], deployment["revisionHistoryLimit"]) == (1, 10)
    assert deployment["progressDeadlineSeconds"] == 600
    assert deployment["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    recreate: dict[str, Any] = {"strategy": {"type": "Recreate"}}
    defaults.deployment(recreate)
    assert recreate["strategy"] == {"type": "Recreate"}
    stateful: dict[str, Any] = {}
    defaults.stateful_set(stateful)
    assert stateful["podManagementPolicy"] == "OrderedReady"
    assert stateful["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert stateful["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    daemons: dict[str, Any] = {}
    defaults.daemon_set(daemons)
    assert daemons["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    cron: dict[str, Any] = {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}}
    defaults.cron_job(cron)
    assert (cron["concurrencyPolicy"], cron["suspend"]) == ("Allow", False)
    assert (cron["successfulJobsHistoryLimit"], cron["failedJobsHistoryLimit"]) == (3, 1)
    assert cron["jobTemplate"]["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"


def test_replication_controllers_take_selector_and_labels_from_the_template() -> None:
    controller: dict[str, Any] = {
        "metadata": {},
        "spec": {"template": {"metadata": {"labels": {"app": "a"}}}},
    }
    defaults.replication_controller(controller)
    assert controller["spec"]["selector"] == {"app": "a"}
    assert controller["metadata"]["labels"] == {"app": "a"}


def test_service_defaults_by_type() -> None:
    cluster_ip: dict[str, Any] = {"ports": [{"port": 80}]}
    defaults.service(cluster_ip)
    assert cluster_ip == {
        "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "internalTrafficPolicy": "Cluster",
    }
    balancer: dict[str, Any] = {"type": "LoadBalancer"}
    defaults.service(balancer)
    assert balancer["externalTrafficPolicy"] == "Cluster"
    assert balancer["allocateLoadBalancerNodePorts"] is True
    external: dict[str, Any] = {"type": "ExternalName", "externalName": "db.example.com"}
    defaults.service(external)
    assert "ipFamilies" not in external


# --- through the API ----------------------------------------------------------------------------------


def test_a_created_pod_comes_back_with_the_api_servers_defaults(core, namespace: str) -> None:
    """What `kubectl get pod -o yaml` shows on a real cluster for a pod created with only a name and an
    image (defaults.go: SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Container)."""
    created = core.create_namespaced_pod(
        namespace,
        {"metadata": {"name": "bare"}, "spec": {"containers": [{"name": "main", "image": "nginx"}]}},
    )
    spec = created.spec
    assert (spec.dns_policy, spec.restart_policy, spec.scheduler_name) == (
        "ClusterFirst",
        "Always",
        "default-scheduler",
    )
    assert (spec.termination_grace_period_seconds, spec.enable_service_links) == (30, True)
    assert (spec.service_account_name, spec.service_account) == ("default", "default")
    assert spec.security_context is not None
    container = spec.containers[0]
    assert (container.image_pull_policy, container.termination_message_policy) == ("Always", "File")
    assert container.termination_message_path == "/dev/termination-log"


def test_kubectl_sees_deployment_and_template_defaults(kubectl) -> None:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]
                },
            },
        },
    }
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    strategy = kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.strategy}").stdout
    assert json.loads(strategy) == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    fields = kubectl(
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.revisionHistoryLimit} {.spec.progressDeadlineSeconds} "
        "{.spec.template.spec.containers[0].imagePullPolicy} "
        "{.spec.template.spec.containers[0].ports[0].protocol}",
    ).stdout
    assert fields == "10 600 IfNotPresent TCP"
    # re-applying the same manifest changes nothing: the defaults are not a difference
    assert "unchanged" in kubectl("apply", "-f", "-", stdin=yaml.safe_dump(manifest)).stdout
    assert kubectl("get", "deployment", "web", "-o", "jsonpath={.metadata.generation}").stdout == "1"


def test_services_get_their_families_and_policies(core, namespace: str) -> None:
    created = core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
    )
    spec = created.spec
    assert (spec.ip_families, spec.ip_family_policy) == (["IPv4"], "SingleStack")
    assert (spec.internal_traffic_policy, spec.external_traffic_policy) == ("Cluster", "Cluster")
    assert spec.cluster_ip
    assert spec.cluster_ips == [spec.cluster_ip]
    assert 30000 <= spec.ports[0].node_port <= 32767
    assert (spec.ports[0].protocol, spec.ports[0].target_port) == ("TCP", 80)


def test_job_templates_get_pod_spec_defaults(kubectl) -> None:
    kubectl("create", "job", "once", "--image=busybox:1.36", "--", "true")
    template = json.loads(kubectl("get", "job", "once", "-o", "jsonpath={.spec.template.spec}").stdout)
    assert (template["dnsPolicy"], template["terminationGracePeriodSeconds"]) == ("ClusterFirst", 30)
    assert template["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_a_put_that_leaves_out_the_defaults_changes_nothing(apps, namespace: str) -> None:
    """Defaults are applied while decoding, before the server compares: replacing a Deployment with the
    manifest it was created from (no defaults in it) keeps its generation and resourceVersion."""
    manifest = {
        "metadata": {"name": "same"},
        "spec": {
            "selector": {"matchLabels": {"app": "same"}},
            "template": {
                "metadata": {"labels": {"app": "same"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }
    created = apps.create_namespaced_deployment(namespace, manifest)
    replaced = apps.replace_namespaced_deployment("same", namespace, manifest)
    assert replaced.metadata.generation == 1
    assert replaced.metadata.resource_version == created.metadata.resource_version
