"""Pods and pod templates judged as pkg/apis/core/validation judges them: each case breaks one rule of a
valid, defaulted pod and expects upstream's field path and words (and nothing else)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kubesim.builtins import defaults, podvalidation
from kubesim.builtins.validation import workload_causes

Obj = dict[str, Any]


def valid_pod() -> Obj:
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer-0"},
        "spec": {
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {
                    "name": "config",
                    "configMap": {"name": "settings", "items": [{"key": "a", "path": "a.yaml"}]},
                },
                {"name": "claim", "persistentVolumeClaim": {"claimName": "shared"}},
                {
                    "name": "token",
                    "projected": {
                        "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]
                    },
                },
            ],
            "initContainers": [
                {
                    "name": "fetch",
                    "image": "busybox",
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                },
                {
                    "name": "proxy",
                    "image": "envoy",
                    "restartPolicy": "Always",
                    "readinessProbe": {"tcpSocket": {"port": 9901}},
                },
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.12",
                    "ports": [
                        {"name": "metrics", "containerPort": 9100},
                        {"containerPort": 2222, "hostPort": 2222},
                    ],
                    "env": [
                        {"name": "MASTER_ADDR", "value": "trainer-0"},
                        {"name": "my.weird-NAME:1", "value": "relaxed names are fine"},
                        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {
                            "name": "INDEX",
                            "valueFrom": {
                                "fieldRef": {
                                    "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"
                                }
                            },
                        },
                        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                        {
                            "name": "PASSWORD",
                            "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}},
                        },
                    ],
                    "envFrom": [{"prefix": "CFG_", "configMapRef": {"name": "settings"}}],
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/data", "subPath": "run/1"},
                        {"name": "config", "mountPath": "/etc/config", "readOnly": True},
                        {"name": "claim", "mountPath": "/shared"},
                        {"name": "token", "mountPath": "/var/run/token"},
                    ],
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "64Mi", "nvidia.com/gpu": "1"},
                        "limits": {"cpu": "1", "memory": "128Mi", "nvidia.com/gpu": "1"},
                    },
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"}},
                    "startupProbe": {"exec": {"command": ["true"]}},
                    "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
                    "securityContext": {"runAsUser": 1000, "allowPrivilegeEscalation": False},
                }
            ],
            "securityContext": {"fsGroup": 2000},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "serviceAccountName": "trainer",
            "hostname": "trainer-0",
            "subdomain": "trainers",
        },
    }
    defaults.pod(pod)
    return pod


def test_the_valid_pod_is_valid() -> None:
    assert podvalidation.pod_causes(valid_pod()) == []


def _main(pod: Obj) -> Obj:
    return pod["spec"]["containers"][0]  # type: ignore[no-any-return]


Change = Callable[[Obj], Any]
DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
ENV_NAME = "a valid environment variable name must consist only of printable ASCII characters other than '='"
C = "spec.containers[0]"
CASES: list[tuple[str, Change, str, str]] = [
    (
        "a mount names a volume the pod does not have",
        lambda p: _main(p)["volumeMounts"].append({"name": "missing", "mountPath": "/m"}),
        f"{C}.volumeMounts[4].name",
        'Not found: "missing"',
    ),
    (
        "two mounts share a path",
        lambda p: _main(p)["volumeMounts"].append({"name": "config", "mountPath": "/data"}),
        f"{C}.volumeMounts[4].mountPath",
        'Invalid value: "/data": must be unique',
    ),
    (
        "a subPath climbs out",
        lambda p: _main(p)["volumeMounts"][0].update(subPath="../etc"),
        f"{C}.volumeMounts.subPath",
        "Invalid value: \"../etc\": must not contain '..'",
    ),
    (
        "a subPath is absolute",
        lambda p: _main(p)["volumeMounts"][0].update(subPath="/etc"),
        f"{C}.volumeMounts.subPath",
        'Invalid value: "/etc": must be a relative path',
    ),
    (
        "a mount of a volume that is itself invalid is not found",
        lambda p: p["spec"]["volumes"][2]["persistentVolumeClaim"].update(claimName=""),
        "spec.volumes[2].persistentVolumeClaim.claimName",
        "Required value",
    ),
    (
        "two volumes share a name",
        lambda p: p["spec"]["volumes"].append({"name": "data", "emptyDir": {}}),
        "spec.volumes[4].name",
        'Duplicate value: "data"',
    ),
    (
        "a volume name is not a DNS label",
        lambda p: p["spec"]["volumes"].append({"name": "Data_1", "emptyDir": {}}),
        "spec.volumes[4].name",
        'Invalid value: "Data_1": ' + DNS_LABEL,
    ),
    (
        "a volume has two sources",
        lambda p: p["spec"]["volumes"][0].update(hostPath={"path": "/tmp"}),
        "spec.volumes[0].hostPath",
        "Forbidden: may not specify more than 1 volume type",
    ),
    (
        "a configMap item's path climbs out",
        lambda p: p["spec"]["volumes"][1]["configMap"]["items"][0].update(path="../a"),
        "spec.volumes[1].configMap.items[0].path",
        "Invalid value: \"../a\": must not contain '..'",
    ),
    (
        "a file mode is out of range",
        lambda p: p["spec"]["volumes"][1]["configMap"].update(defaultMode=0o1000),
        "spec.volumes[1].configMap.defaultMode",
        "Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
    ),
    (
        "a projected token expires too soon",
        lambda p: p["spec"]["volumes"][3]["projected"]["sources"][0]["serviceAccountToken"].update(
            expirationSeconds=60
        ),
        "spec.volumes[3].projected.sources[0].serviceAccountToken.expirationSeconds",
        "Invalid value: 60: may not specify a duration less than 10 minutes",
    ),
    (
        "a container name is not a DNS label",
        lambda p: _main(p).update(name="Main"),
        f"{C}.name",
        'Invalid value: "Main": ' + DNS_LABEL,
    ),
    (
        "an init container reuses a container's name",
        lambda p: p["spec"]["initContainers"][0].update(name="main"),
        "spec.initContainers[0].name",
        'Duplicate value: "main"',
    ),
    (
        "two containers share a name",
        lambda p: p["spec"]["containers"].append({**copy.deepcopy(_main(p)), "ports": []}),
        "spec.containers[1].name",
        'Duplicate value: "main"',
    ),
    ("the image is missing", lambda p: _main(p).pop("image"), f"{C}.image", "Required value"),
    (
        "the image has trailing whitespace",
        lambda p: _main(p).update(image="python "),
        f"{C}.image",
        'Invalid value: "python ": must not have leading or trailing whitespace',
    ),
    (
        "a port is out of range",
        lambda p: _main(p)["ports"][0].update(containerPort=70000),
        f"{C}.ports[0].containerPort",
        "Invalid value: 70000: must be between 1 and 65535, inclusive",
    ),
    (
        "a port name is too long",
        lambda p: _main(p)["ports"][0].update(name="prometheus-metrics"),
        f"{C}.ports[0].name",
        'Invalid value: "prometheus-metrics": must be no more than 15 characters',
    ),
    (
        "two ports share a name",
        lambda p: _main(p)["ports"][1].update(name="metrics"),
        f"{C}.ports[1].name",
        'Duplicate value: "metrics"',
    ),
    (
        "a protocol is unknown",
        lambda p: _main(p)["ports"][0].update(protocol="HTTP"),
        f"{C}.ports[0].protocol",
        'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
    ),
    (
        "an env name holds '='",
        lambda p: _main(p)["env"][0].update(name="A=B"),
        f"{C}.env[0].name",
        'Invalid value: "A=B": ' + ENV_NAME,
    ),
    (
        "an env var has a value and a valueFrom",
        lambda p: _main(p)["env"][2].update(value="x"),
        f"{C}.env[2].valueFrom",
        'Invalid value: "": may not be specified when `value` is not empty',
    ),
    (
        "a valueFrom has no source",
        lambda p: _main(p)["env"][2].update(valueFrom={}),
        f"{C}.env[2].valueFrom",
        'Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or '
        "`secretKeyRef`",
    ),
    (
        "a downward API field is not offered to env",
        lambda p: _main(p)["env"][2]["valueFrom"]["fieldRef"].update(fieldPath="status.phase"),
        f"{C}.env[2].valueFrom.fieldRef.fieldPath",
        'Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", '
        '"metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", '
        '"status.podIP", "status.podIPs"',
    ),
    (
        "a secretKeyRef has no key",
        lambda p: _main(p)["env"][5]["valueFrom"]["secretKeyRef"].pop("key"),
        f"{C}.env[5].valueFrom.secretKeyRef.key",
        "Required value",
    ),
    (
        "an envFrom prefix holds '='",
        lambda p: _main(p)["envFrom"][0].update(prefix="A="),
        f"{C}.envFrom[0].prefix",
        'Invalid value: "A=": ' + ENV_NAME,
    ),
    (
        "a request exceeds its limit",
        lambda p: _main(p)["resources"]["requests"].update(cpu="2"),
        f"{C}.resources.requests",
        'Invalid value: "2": must be less than or equal to cpu limit of 1',
    ),
    (
        "an extended resource is requested beyond its limit",
        lambda p: _main(p)["resources"]["requests"].update({"nvidia.com/gpu": "2"}),
        f"{C}.resources.requests",
        'Invalid value: "2": must be equal to nvidia.com/gpu limit of 1',
    ),
    (
        "a resource name is not standard",
        lambda p: _main(p)["resources"]["limits"].update(gpu="1"),
        f"{C}.resources.limits[gpu]",
        'Invalid value: "gpu": must be a standard resource for containers',
    ),
    (
        "a quantity is negative",
        lambda p: _main(p)["resources"]["limits"].update(memory="-1Gi"),
        f"{C}.resources.limits[memory]",
        'Invalid value: "-1Gi": must be greater than or equal to 0',
    ),
    (
        "a probe has two handlers",
        lambda p: _main(p)["livenessProbe"].update(exec={"command": ["true"]}),
        f"{C}.livenessProbe.httpGet",
        "Forbidden: may not specify more than 1 handler type",
    ),
    (
        "a probe has no handler",
        lambda p: _main(p).update(readinessProbe={"periodSeconds": 5}),
        f"{C}.readinessProbe",
        "Required value: must specify a handler type",
    ),
    (
        "a liveness probe succeeds twice",
        lambda p: _main(p)["livenessProbe"].update(successThreshold=2),
        f"{C}.livenessProbe.successThreshold",
        "Invalid value: 2: must be 1",
    ),
    (
        "a preStop sleep outlasts the grace period",
        lambda p: _main(p)["lifecycle"]["preStop"]["sleep"].update(seconds=60),
        f"{C}.lifecycle.preStop.sleep",
        "Invalid value: 60: must be non-negative and less than terminationGracePeriodSeconds (30)",
    ),
    (
        "a plain init container has a probe",
        lambda p: p["spec"]["initContainers"][0].update(readinessProbe={"exec": {"command": ["true"]}}),
        "spec.initContainers[0].readinessProbe",
        "Forbidden: may not be set for init containers without restartPolicy=Always",
    ),
    (
        "a regular container sets a restart policy",
        lambda p: _main(p).update(restartPolicy="Always"),
        f"{C}.restartPolicy",
        "Forbidden: may not be set for non-init containers",
    ),
    (
        "an init container restarts OnFailure",
        lambda p: p["spec"]["initContainers"][0].update(restartPolicy="OnFailure"),
        "spec.initContainers[0].restartPolicy",
        'Unsupported value: "OnFailure": supported values: "Always"',
    ),
    (
        "privilege escalation is off for a privileged container",
        lambda p: _main(p)["securityContext"].update(privileged=True),
        f"{C}.securityContext",
        # Go prints the struct's fields in declaration order; here they come in the manifest's order
        'Invalid value: {"runAsUser":1000,"allowPrivilegeEscalation":false,"privileged":true}: cannot set '
        "`allowPrivilegeEscalation` to false and `privileged` to true",
    ),
    (
        "a user id is negative",
        lambda p: _main(p)["securityContext"].update(runAsUser=-1),
        f"{C}.securityContext.runAsUser",
        "Invalid value: -1: must be between 0 and 2147483647, inclusive",
    ),
    (
        "the pull policy is unknown",
        lambda p: _main(p).update(imagePullPolicy="Sometimes"),
        f"{C}.imagePullPolicy",
        'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
    ),
    (
        "the restart policy is unknown",
        lambda p: p["spec"].update(restartPolicy="Sometimes"),
        "spec.restartPolicy",
        'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    ),
    (
        "the DNS policy is unknown",
        lambda p: p["spec"].update(dnsPolicy="Google"),
        "spec.dnsPolicy",
        'Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", '
        '"Default", "None"',
    ),
    (
        "DNS policy None without nameservers",
        lambda p: p["spec"].update(dnsPolicy="None"),
        "spec.dnsConfig",
        "Required value: must provide `dnsConfig` when `dnsPolicy` is None",
    ),
    (
        "a deadline of zero",
        lambda p: p["spec"].update(activeDeadlineSeconds=0),
        "spec.activeDeadlineSeconds",
        "Invalid value: 0: must be between 1 and 2147483647, inclusive",
    ),
    (
        "a toleration without a key that is not Exists",
        lambda p: p["spec"]["tolerations"][0].update(key="", operator="Equal"),
        "spec.tolerations[0].operator",
        'Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values '
        'and all keys"',
    ),
    (
        "a hostPort used twice",
        lambda p: p["spec"]["containers"].append(
            {
                **copy.deepcopy(_main(p)),
                "name": "twin",
                "ports": [{"containerPort": 2222, "hostPort": 2222, "protocol": "TCP"}],
            }
        ),
        "spec.containers[1].ports[0].hostPort",
        'Duplicate value: "TCP//2222"',
    ),
    (
        "an ephemeral container sets a probe",
        lambda p: p["spec"].update(
            ephemeralContainers=[
                {"name": "debug", "image": "busybox", "readinessProbe": {"exec": {"command": ["x"]}}}
            ]
        ),
        "spec.ephemeralContainers[0].readinessProbe",
        "Forbidden: cannot be set for an Ephemeral Container",
    ),
    (
        "an ephemeral container targets a container that does not exist",
        lambda p: p["spec"].update(
            ephemeralContainers=[{"name": "debug", "image": "busybox", "targetContainerName": "nope"}]
        ),
        "spec.ephemeralContainers[0].targetContainerName",
        'Not found: "nope"',
    ),
]


@pytest.mark.parametrize(("case", "change", "field", "message"), CASES, ids=[c[0] for c in CASES])
def test_one_broken_rule_is_one_cause(case: str, change: Change, field: str, message: str) -> None:
    pod = valid_pod()
    change(pod)
    defaults.pod(pod)
    causes = podvalidation.pod_causes(pod)
    assert [(c.field, c.message) for c in causes][:1] == [(field, message)], case
    assert [(c.field, c.message) for c in causes[1:]] == FOLLOW_ON.get(case, [])


#: what else upstream reports for the same mistake: a volume that fails validation is left out of the
#: pod's volumes, so every mount of it is "Not found"; a limit defaults its request (pods only), which is
#: then judged too
FOLLOW_ON = {
    "a mount of a volume that is itself invalid is not found": [
        (f"{C}.volumeMounts[2].name", 'Not found: "claim"')
    ],
    "a volume has two sources": [
        (f"{C}.volumeMounts[0].name", 'Not found: "data"'),
        ("spec.initContainers[0].volumeMounts[0].name", 'Not found: "data"'),
    ],
    "a configMap item's path climbs out": [(f"{C}.volumeMounts[1].name", 'Not found: "config"')],
    "a file mode is out of range": [(f"{C}.volumeMounts[1].name", 'Not found: "config"')],
    "a projected token expires too soon": [(f"{C}.volumeMounts[3].name", 'Not found: "token"')],
    "a resource name is not standard": [
        (f"{C}.resources.requests[gpu]", 'Invalid value: "gpu": must be a standard resource for containers')
    ],
    "a quantity is negative": [
        (
            f"{C}.resources.requests",
            'Invalid value: "64Mi": must be less than or equal to memory limit of -1Gi',
        )
    ],
}


def test_templates_are_validated_at_their_own_paths() -> None:
    broken = valid_pod()
    _main(broken)["volumeMounts"].append({"name": "missing", "mountPath": "/m"})
    template = {"metadata": {"labels": {"app": "x"}}, "spec": broken["spec"]}
    deployment = {"spec": {"selector": {}, "template": copy.deepcopy(template)}}
    job = {"spec": {"template": copy.deepcopy(template)}}
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    cron_job = {"metadata": {"name": "c"}, "spec": {"schedule": "@hourly", "jobTemplate": copy.deepcopy(job)}}
    where = "spec.containers[0].volumeMounts[4].name"
    assert [c.field for c in workload_causes("apps", "Deployment", deployment)] == [f"spec.template.{where}"]
    assert [c.field for c in workload_causes("batch", "Job", job)] == [f"spec.template.{where}"]
    assert [c.field for c in workload_causes("batch", "CronJob", cron_job)] == [
        f"spec.jobTemplate.spec.template.{where}"
    ]


def test_controllers_refuse_the_restart_policies_they_cannot_honour() -> None:
    pod_spec = valid_pod()["spec"]
    job = {"spec": {"template": {"spec": copy.deepcopy(pod_spec)}}}
    assert [(c.field, c.message) for c in workload_causes("batch", "Job", job)] == [
        ("spec.template.spec.restartPolicy", 'Required value: valid values: "OnFailure", "Never"')
    ]
    stateful = {"spec": {"template": {"spec": {**copy.deepcopy(pod_spec), "restartPolicy": "Never"}}}}
    assert [(c.field, c.message) for c in workload_causes("apps", "StatefulSet", stateful)] == [
        ("spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"')
    ]


def test_a_template_may_not_hold_ephemeral_containers() -> None:
    spec = valid_pod()["spec"]
    spec["ephemeralContainers"] = [
        {"name": "debug", "image": "busybox", "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}
    ]
    causes = podvalidation.template_causes({"spec": spec}, "spec.template")
    assert [(c.field, c.message) for c in causes] == [
        (
            "spec.template.spec.ephemeralContainers",
            "Forbidden: ephemeral containers not allowed in pod template",
        )
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", "0.5"), ("1Gi", "1073741824"), ("2", "2"), ("1e3", "1000"), ("1.5k", "1500"), (3, "3")],
)
def test_quantities(text: Any, value: str) -> None:
    from decimal import Decimal

    from kubesim.builtins.podfields import quantity

    assert quantity(text) == Decimal(value)
    assert quantity("1GB") is None
