"""Request bodies in the apiserver's protobuf encoding, for the kinds kubectl's typed clients send that way.

kubectl (client-go) sends `application/vnd.kubernetes.protobuf` for built-in kinds: `kubectl auth can-i`,
`create token`, `create namespace|configmap|secret|serviceaccount`. A body is the magic `k8s\\0` and a
runtime.Unknown (typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2) whose `raw` is the kind's message. Each
kind decoded here is described by its field numbers from k8s.io/api's generated.proto (`kubectl create
role|rolebinding|clusterrole|clusterrolebinding|priorityclass|quota|poddisruptionbudget|service|ingress`
included); other kinds still answer 415. Deployments, Jobs and CronJobs are described as far as `kubectl
create deployment|job|cronjob` fill them (pod template: containers with image, command, args, ports, env
values, resources; restart policy, service account, node selector); their other fields are dropped.
"""

from __future__ import annotations

import base64
from typing import Any

from kubesim.errors import bad_request

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

# A message schema: field number → (JSON name, type), type one of "string", "pointer" (a *string: kept even
# when empty), "bytes", "int", "bool" (pointers in Go: kept whatever their value), "count", "flag" (plain Go
# ints and bools, always sent: kept only when not 0 / false, as JSON's omitempty), "quantity"
# (resource.Quantity), a nested schema, ("repeated", type), "intorstring" (intstr.IntOrString), ("map", value
# type), or ("inline", schema) for an embedded Go struct whose fields JSON spells at the parent's level (an
# Ingress rule's `http`). Unlisted fields are skipped.
Schema = dict[int, tuple[str, Any]]

_STRING_MAP = ("map", "string")
OBJECT_META: Schema = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    11: ("labels", _STRING_MAP),
    12: ("annotations", _STRING_MAP),
}
_RESOURCE_ATTRIBUTES: Schema = {
    1: ("namespace", "string"),
    2: ("verb", "string"),
    3: ("group", "string"),
    4: ("version", "string"),
    5: ("resource", "string"),
    6: ("subresource", "string"),
    7: ("name", "string"),
}
_NON_RESOURCE_ATTRIBUTES: Schema = {1: ("path", "string"), 2: ("verb", "string")}
_EXTRA_VALUE: Schema = {1: ("items", ("repeated", "string"))}
_SUBJECT_ACCESS_REVIEW_SPEC: Schema = {
    1: ("resourceAttributes", _RESOURCE_ATTRIBUTES),
    2: ("nonResourceAttributes", _NON_RESOURCE_ATTRIBUTES),
    3: ("user", "string"),
    4: ("groups", ("repeated", "string")),
    5: ("extra", ("map", _EXTRA_VALUE)),
    6: ("uid", "string"),
}
_BOUND_OBJECT_REFERENCE: Schema = {
    1: ("kind", "string"),
    2: ("apiVersion", "string"),
    3: ("name", "string"),
    4: ("uid", "string"),
}

_BYTES_MAP = ("map", "bytes")
_LABEL_SELECTOR: Schema = {
    1: ("matchLabels", _STRING_MAP),
    2: (
        "matchExpressions",
        (
            "repeated",
            {1: ("key", "string"), 2: ("operator", "string"), 3: ("values", ("repeated", "string"))},
        ),
    ),
}
_CONTAINER: Schema = {
    1: ("name", "string"),
    2: ("image", "string"),
    3: ("command", ("repeated", "string")),
    4: ("args", ("repeated", "string")),
    5: ("workingDir", "string"),
    6: (
        "ports",
        (
            "repeated",
            {
                1: ("name", "string"),
                2: ("hostPort", "count"),
                3: ("containerPort", "count"),
                4: ("protocol", "string"),
                5: ("hostIP", "string"),
            },
        ),
    ),
    7: ("env", ("repeated", {1: ("name", "string"), 2: ("value", "string")})),
    8: ("resources", {1: ("limits", ("map", "quantity")), 2: ("requests", ("map", "quantity"))}),
    13: ("terminationMessagePath", "string"),
    14: ("imagePullPolicy", "string"),
    16: ("stdin", "flag"),
    17: ("stdinOnce", "flag"),
    18: ("tty", "flag"),
    20: ("terminationMessagePolicy", "string"),
}
_POD_TEMPLATE: Schema = {
    1: ("metadata", OBJECT_META),
    2: (
        "spec",
        {
            2: ("containers", ("repeated", _CONTAINER)),
            3: ("restartPolicy", "string"),
            4: ("terminationGracePeriodSeconds", "int"),
            6: ("dnsPolicy", "string"),
            7: ("nodeSelector", _STRING_MAP),
            8: ("serviceAccountName", "string"),
            20: ("initContainers", ("repeated", _CONTAINER)),
        },
    ),
}

_POLICY_RULE: Schema = {
    1: ("verbs", ("repeated", "string")),
    2: ("apiGroups", ("repeated", "string")),
    3: ("resources", ("repeated", "string")),
    4: ("resourceNames", ("repeated", "string")),
    5: ("nonResourceURLs", ("repeated", "string")),
}
_ROLE_BINDING: Schema = {
    1: ("metadata", OBJECT_META),
    2: (
        "subjects",
        (
            "repeated",
            {
                1: ("kind", "string"),
                2: ("apiGroup", "string"),
                3: ("name", "string"),
                4: ("namespace", "string"),
            },
        ),
    ),
    3: ("roleRef", {1: ("apiGroup", "string"), 2: ("kind", "string"), 3: ("name", "string")}),
}
_SERVICE_PORT: Schema = {
    1: ("name", "string"),
    2: ("protocol", "string"),
    3: ("port", "count"),
    4: ("targetPort", "intorstring"),
    5: ("nodePort", "count"),
    6: ("appProtocol", "string"),
}

_JOB_SPEC: Schema = {
    1: ("parallelism", "int"),
    2: ("completions", "int"),
    3: ("activeDeadlineSeconds", "int"),
    4: ("selector", _LABEL_SELECTOR),
    6: ("template", _POD_TEMPLATE),
    7: ("backoffLimit", "int"),
    8: ("ttlSecondsAfterFinished", "int"),
    9: ("completionMode", "string"),
    10: ("suspend", "bool"),
}
_INGRESS_BACKEND: Schema = {
    3: ("resource", {1: ("apiGroup", "string"), 2: ("kind", "string"), 3: ("name", "string")}),
    4: (
        "service",
        {1: ("name", "string"), 2: ("port", {1: ("name", "string"), 2: ("number", "count")})},
    ),
}
_INGRESS_RULE: Schema = {
    1: ("host", "string"),
    2: (
        "ingressRuleValue",
        (
            "inline",
            {
                1: (
                    "http",
                    {
                        1: (
                            "paths",
                            (
                                "repeated",
                                {
                                    1: ("path", "string"),
                                    2: ("backend", _INGRESS_BACKEND),
                                    3: ("pathType", "pointer"),
                                },
                            ),
                        )
                    },
                )
            },
        ),
    ),
}

KINDS: dict[tuple[str, str], Schema] = {
    ("rbac.authorization.k8s.io/v1", "Role"): {
        1: ("metadata", OBJECT_META),
        2: ("rules", ("repeated", _POLICY_RULE)),
    },
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {
        1: ("metadata", OBJECT_META),
        2: ("rules", ("repeated", _POLICY_RULE)),
        3: ("aggregationRule", {1: ("clusterRoleSelectors", ("repeated", _LABEL_SELECTOR))}),
    },
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _ROLE_BINDING,
    ("scheduling.k8s.io/v1", "PriorityClass"): {
        1: ("metadata", OBJECT_META),
        2: ("value", "int"),
        3: ("globalDefault", "flag"),
        4: ("description", "string"),
        5: ("preemptionPolicy", "string"),
    },
    ("v1", "ResourceQuota"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("hard", ("map", "quantity")), 2: ("scopes", ("repeated", "string"))}),
    },
    ("policy/v1", "PodDisruptionBudget"): {
        1: ("metadata", OBJECT_META),
        2: (
            "spec",
            {
                1: ("minAvailable", "intorstring"),
                2: ("selector", _LABEL_SELECTOR),
                3: ("maxUnavailable", "intorstring"),
                4: ("unhealthyPodEvictionPolicy", "string"),
            },
        ),
    },
    ("v1", "Service"): {
        1: ("metadata", OBJECT_META),
        2: (
            "spec",
            {
                1: ("ports", ("repeated", _SERVICE_PORT)),
                2: ("selector", _STRING_MAP),
                3: ("clusterIP", "string"),
                4: ("type", "string"),
                10: ("externalName", "string"),
            },
        ),
    },
    ("v1", "Namespace"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("finalizers", ("repeated", "string"))}),
    },
    ("v1", "ConfigMap"): {
        1: ("metadata", OBJECT_META),
        2: ("data", _STRING_MAP),
        3: ("binaryData", _BYTES_MAP),
        4: ("immutable", "bool"),
    },
    ("v1", "Secret"): {
        1: ("metadata", OBJECT_META),
        2: ("data", _BYTES_MAP),
        3: ("type", "string"),
        4: ("stringData", _STRING_MAP),
        5: ("immutable", "bool"),
    },
    ("apps/v1", "Deployment"): {
        1: ("metadata", OBJECT_META),
        2: (
            "spec",
            {
                1: ("replicas", "int"),
                2: ("selector", _LABEL_SELECTOR),
                3: ("template", _POD_TEMPLATE),
                4: ("strategy", {1: ("type", "string")}),
                5: ("minReadySeconds", "count"),
                6: ("revisionHistoryLimit", "int"),
                7: ("paused", "flag"),
                9: ("progressDeadlineSeconds", "int"),
            },
        ),
    },
    ("batch/v1", "Job"): {1: ("metadata", OBJECT_META), 2: ("spec", _JOB_SPEC)},
    ("batch/v1", "CronJob"): {
        1: ("metadata", OBJECT_META),
        2: (
            "spec",
            {
                1: ("schedule", "string"),
                2: ("startingDeadlineSeconds", "int"),
                3: ("concurrencyPolicy", "string"),
                4: ("suspend", "bool"),
                5: ("jobTemplate", {1: ("metadata", OBJECT_META), 2: ("spec", _JOB_SPEC)}),
                6: ("successfulJobsHistoryLimit", "int"),
                7: ("failedJobsHistoryLimit", "int"),
                8: ("timeZone", "pointer"),
            },
        ),
    },
    ("networking.k8s.io/v1", "Ingress"): {
        1: ("metadata", OBJECT_META),
        2: (
            "spec",
            {
                1: ("defaultBackend", _INGRESS_BACKEND),
                2: ("tls", ("repeated", {1: ("hosts", ("repeated", "string")), 2: ("secretName", "string")})),
                3: ("rules", ("repeated", _INGRESS_RULE)),
                4: ("ingressClassName", "pointer"),
            },
        ),
    },
    ("v1", "ServiceAccount"): {
        1: ("metadata", OBJECT_META),
        3: ("imagePullSecrets", ("repeated", {1: ("name", "string")})),
        4: ("automountServiceAccountToken", "bool"),
    },
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: ("metadata", OBJECT_META),
        2: (
            "spec",
            {
                1: ("resourceAttributes", _RESOURCE_ATTRIBUTES),
                2: ("nonResourceAttributes", _NON_RESOURCE_ATTRIBUTES),
            },
        ),
    },
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("namespace", "string")}),
    },
    ("authorization.k8s.io/v1", "SubjectAccessReview"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", _SUBJECT_ACCESS_REVIEW_SPEC),
    },
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", _SUBJECT_ACCESS_REVIEW_SPEC),
    },
    ("authentication.k8s.io/v1", "TokenReview"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("token", "string"), 2: ("audiences", ("repeated", "string"))}),
    },
    ("authentication.k8s.io/v1", "SelfSubjectReview"): {1: ("metadata", OBJECT_META)},
    ("authentication.k8s.io/v1", "TokenRequest"): {
        1: ("metadata", OBJECT_META),
        2: (
            "spec",
            {
                1: ("audiences", ("repeated", "string")),
                3: ("boundObjectRef", _BOUND_OBJECT_REFERENCE),
                4: ("expirationSeconds", "int"),
            },
        ),
    },
}


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if position >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of one message: ints for varints, bytes for everything else."""
    found: list[tuple[int, int | bytes]] = []
    position = 0
    while position < len(data):
        tag, position = _varint(data, position)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, position = _varint(data, position)
            found.append((number, value))
        elif wire == 2:
            length, position = _varint(data, position)
            if position + length > len(data):
                raise ValueError("truncated field")
            found.append((number, data[position : position + length]))
            position += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            found.append((number, data[position : position + size]))
            position += size
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return found


def _scalar(kind: Any, value: int | bytes) -> Any:
    if isinstance(kind, dict):
        if not isinstance(value, bytes):
            raise ValueError("expected a message")
        return message(value, kind)
    if kind in ("string", "pointer"):
        if not isinstance(value, bytes):
            raise ValueError("expected a string")
        return value.decode()
    if kind == "bytes":
        if not isinstance(value, bytes):
            raise ValueError("expected bytes")
        return base64.b64encode(value).decode()
    if kind == "quantity":  # resource.Quantity {string = 1}: "500m", "1Gi"
        if not isinstance(value, bytes):
            raise ValueError("expected a quantity")
        return next((v.decode() for n, v in fields(value) if n == 1 and isinstance(v, bytes)), "")
    if kind == "intorstring":  # intstr.IntOrString {type = 1 (0 int, 1 string), intVal = 2, strVal = 3}
        if not isinstance(value, bytes):
            raise ValueError("expected an int-or-string")
        parts = dict(fields(value))
        if parts.get(1, 0) == 1:
            text = parts.get(3, b"")
            return text.decode() if isinstance(text, bytes) else ""
        number = parts.get(2, 0)
        if isinstance(number, bytes):
            raise ValueError("expected a number")
        return number
    if kind in ("bool", "flag"):
        return bool(value)
    if isinstance(value, bytes):
        raise ValueError("expected a number")
    return value - (1 << 64) if value >= 1 << 63 else value


def message(data: bytes, schema: Schema) -> dict[str, Any]:
    """One message as the JSON object the same kind would be sent as."""
    document: dict[str, Any] = {}
    for number, value in fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if isinstance(kind, tuple) and kind[0] == "repeated":
            document.setdefault(name, []).append(_scalar(kind[1], value))
        elif isinstance(kind, tuple) and kind[0] == "map":
            if not isinstance(value, bytes):
                raise ValueError("expected a map entry")
            entry = dict(fields(value))
            key = entry.get(1, b"")
            if not isinstance(key, bytes):
                raise ValueError("expected a map key")
            document.setdefault(name, {})[key.decode()] = _scalar(kind[1], entry.get(2, b""))
        elif isinstance(kind, tuple) and kind[0] == "inline":
            if not isinstance(value, bytes):
                raise ValueError("expected a message")
            document.update(message(value, kind[1]))
        elif kind not in ("string", "count", "flag") or value:  # zero values Go sends, JSON would omit
            document[name] = _scalar(kind, value)
    return document


def decode(raw: bytes) -> dict[str, Any] | None:
    """The JSON form of a protobuf body; None when its kind is not described here (the caller answers 415)."""
    if not raw.startswith(MAGIC):
        return None
    try:
        envelope = dict(fields(raw[len(MAGIC) :]))
        type_meta = envelope.get(1, b"")
        payload = envelope.get(2, b"")
        if not isinstance(type_meta, bytes) or not isinstance(payload, bytes):
            raise ValueError("malformed envelope")
        meta = {k: v.decode() for k, v in fields(type_meta) if isinstance(v, bytes)}
        api_version, kind = meta.get(1, ""), meta.get(2, "")
        schema = KINDS.get((api_version, kind))
        if schema is None:
            return None
        return {"apiVersion": api_version, "kind": kind, **message(payload, schema)}
    except (ValueError, UnicodeDecodeError) as error:
        raise bad_request(f"the body of the request could not be decoded: {error}") from None
