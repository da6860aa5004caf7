"""Our Validating/MutatingWebhookConfigurations, declared once here.

`render_webhooks` writes them into deploy/webhooks/ and `webhook_certs` writes them into a cluster with the
`caBundle` it issued. What they say, and why:
- `sideEffects: None`, so dry-run requests reach us (we write nothing while admitting);
- `timeoutSeconds: 5` and `admissionReviewVersions: [v1]`;
- `failurePolicy: Fail` for our kinds (an unvalidated job must not run), `Ignore` for Argo's kinds (an opt-in
  extra) and for Pods (a webhook outage must not stop every Pod in the cluster);
- our own namespace and kube-system are never sent to us, so the webhook's own Pods can always start;
- Argo's kinds only from namespaces labelled `argoml.io/validate-argo=enabled`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from jobs import conf as jobs_conf
from jobs.apigroups import KUBEFLOW_API_VERSION, KUBEFLOW_GROUP
from jobs.frameworks import framework_class, kinds
from jobs.spec import API_GROUP
from trainer import constants as trainer_constants

from .validating import ARGO_GROUP

CONFIGURATION_NAME = "argoml"
DEFAULT_NAMESPACE = "argoml"
DEFAULT_SERVICE = "argoml-webhooks"
DEFAULT_SECRET = "argoml-webhook-tls"  # noqa: S105 - a Secret's name, not a secret
SERVICE_PORT = 443
CONTAINER_PORT = 8443
VALIDATE_PATH = "/webhooks/validate"
MUTATE_PATH = "/webhooks/mutate"
TIMEOUT_SECONDS = 5
ARGO_OPT_IN_LABEL = "argoml.io/validate-argo"
ARGO_OPT_IN_VALUE = "enabled"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the apiserver on every namespace
ALWAYS_EXCLUDED_NAMESPACES = ("kube-system",)
# The webhook listener's pods (the chart's webhooks Deployment), never the web pods the Ingress reaches.
WEBHOOK_POD_LABELS = {"app.kubernetes.io/name": "argoml", "app.kubernetes.io/component": "webhooks"}
CERT_MANAGER_ANNOTATION = "cert-manager.io/inject-ca-from"
#: Plural → kind of the jobs whose `scale` subresource is checked (an elastic policy bounds it).
SCALED_KINDS = {"pytorchjobs": "PyTorchJob"}


@dataclass(frozen=True)
class Target:
    """Where the apiserver reaches us: a Service in `namespace`, or `url` (a webhook outside the cluster)."""

    namespace: str = DEFAULT_NAMESPACE
    service: str = DEFAULT_SERVICE
    url: str = ""

    def client_config(self, path: str, ca_bundle: str | None) -> dict[str, Any]:
        config: dict[str, Any]
        if self.url:
            config = {"url": self.url.rstrip("/") + path}
        else:
            config = {
                "service": {
                    "namespace": self.namespace,
                    "name": self.service,
                    "path": path,
                    "port": SERVICE_PORT,
                }
            }
        if ca_bundle:
            config["caBundle"] = ca_bundle
        return config

    @property
    def host(self) -> str:
        """The host name the serving certificate must carry for this target."""
        if self.url:
            return urlsplit(self.url).hostname or ""
        return f"{self.service}.{self.namespace}.svc"


DEFAULT_TARGET = Target()


@dataclass(frozen=True)
class Webhook:
    """One webhook of a configuration: what it is sent (rules, namespaces) and how failures are treated."""

    name: str
    path: str
    rules: tuple[Mapping[str, Any], ...]
    failure_policy: str
    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    reinvocation_policy: str = ""  # mutating webhooks only

    def manifest(self, target: Target, ca_bundle: str | None) -> dict[str, Any]:
        excluded = sorted({target.namespace, *ALWAYS_EXCLUDED_NAMESPACES})
        selector: dict[str, Any] = {}
        if self.namespace_labels:
            selector["matchLabels"] = dict(self.namespace_labels)
        selector["matchExpressions"] = [
            {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": excluded}
        ]
        webhook: dict[str, Any] = {
            "name": self.name,
            "clientConfig": target.client_config(self.path, ca_bundle),
            "rules": [dict(rule) for rule in self.rules],
            "failurePolicy": self.failure_policy,
            "matchPolicy": "Equivalent",
            "namespaceSelector": selector,
            "sideEffects": "None",
            "timeoutSeconds": TIMEOUT_SECONDS,
            "admissionReviewVersions": ["v1"],
        }
        if self.reinvocation_policy:
            webhook["reinvocationPolicy"] = self.reinvocation_policy
        return webhook


KUBEFLOW_VERSION = KUBEFLOW_API_VERSION.partition("/")[2]
TRAINER_VERSION = trainer_constants.API_VERSION.partition("/")[2]


def _rule(
    group: str, version: str, resources: list[str], operations: list[str], scope: str = "Namespaced"
) -> dict[str, Any]:
    return {
        "apiGroups": [group],
        "apiVersions": [version],
        "operations": operations,
        "resources": resources,
        "scope": scope,
    }


def job_resources() -> list[str]:
    """The plurals of every training job kind a framework plugin handles."""
    return [framework_class(kind).plural for kind in kinds()]


def kubeflow_rules(kubeflow: bool | None) -> tuple[dict[str, Any], ...]:
    """The rule on Kubeflow's v1 jobs, only when we serve them (`kubeflow`, default JOBS_KUBEFLOW_V1): with
    Kubeflow's own operator in the cluster, its jobs are none of our webhooks' business."""
    if kubeflow is None:
        kubeflow = jobs_conf.kubeflow_v1()
    if not kubeflow:
        return ()
    return (_rule(KUBEFLOW_GROUP, KUBEFLOW_VERSION, job_resources(), ["CREATE", "UPDATE"]),)


def trainer_rules(trainer: bool | None) -> tuple[dict[str, Any], ...]:
    """The rules on Kubeflow Trainer's kinds, only when they are ours (`trainer`, default TRAINER_ENABLED):
    beside Kubeflow Trainer's own webhooks they are none of our business. A ClusterTrainingRuntime is
    cluster-scoped, so the namespace selector never skips it."""
    if trainer is None:
        trainer = bool(getattr(settings, "TRAINER_ENABLED", False))
    if not trainer:
        return ()
    group, version = trainer_constants.GROUP, TRAINER_VERSION
    operations = ["CREATE", "UPDATE"]
    return (
        _rule(group, version, ["trainjobs", "trainingruntimes"], operations),
        _rule(group, version, ["clustertrainingruntimes"], operations, scope="Cluster"),
    )


def validating_webhooks(kubeflow: bool | None = None, trainer: bool | None = None) -> tuple[Webhook, ...]:
    ours = _rule(API_GROUP, "v1alpha1", [*job_resources(), "hyperparamworkflows"], ["CREATE", "UPDATE"])
    # `kubectl scale` and autoscalers write a job's Scale, which a rule on the job alone never sees.
    scales = _rule(API_GROUP, "v1alpha1", [f"{plural}/scale" for plural in SCALED_KINDS], ["UPDATE"])
    # A Workflow's status lives in the object (Argo has no status subresource), so its UPDATEs are the
    # controller's progress reports: only its CREATE is worth a lint.
    argo_workflows = _rule(ARGO_GROUP, "v1alpha1", ["workflows"], ["CREATE"])
    argo_templates = _rule(
        ARGO_GROUP, "v1alpha1", ["workflowtemplates", "cronworkflows"], ["CREATE", "UPDATE"]
    )
    return (
        Webhook(
            "validate.argoml.io",
            VALIDATE_PATH,
            (ours, *kubeflow_rules(kubeflow), scales, *trainer_rules(trainer)),
            "Fail",
        ),
        Webhook(
            "argo.validate.argoml.io",
            VALIDATE_PATH,
            (argo_workflows, argo_templates),
            "Ignore",
            namespace_labels={ARGO_OPT_IN_LABEL: ARGO_OPT_IN_VALUE},
        ),
    )


def mutating_webhooks(kubeflow: bool | None = None) -> tuple[Webhook, ...]:
    jobs = _rule(API_GROUP, "v1alpha1", job_resources(), ["CREATE", "UPDATE"])
    pods = _rule("", "v1", ["pods"], ["CREATE"])
    return (
        Webhook(
            "defaults.mutate.argoml.io",
            MUTATE_PATH,
            (jobs, *kubeflow_rules(kubeflow)),
            "Fail",
            reinvocation_policy="Never",
        ),
        # IfNeeded: containers another webhook adds after us (a sidecar) get the injected env too.
        Webhook("inject.mutate.argoml.io", MUTATE_PATH, (pods,), "Ignore", reinvocation_policy="IfNeeded"),
    )


def configurations(
    target: Target = DEFAULT_TARGET,
    ca_bundle: str | None = None,
    *,
    cert_manager_certificate: str = "",
    kubeflow: bool | None = None,
    trainer: bool | None = None,
) -> list[dict[str, Any]]:
    """The ValidatingWebhookConfiguration and the MutatingWebhookConfiguration.

    `ca_bundle` (base64 PEM) is what `webhook_certs` writes; `cert_manager_certificate` ("namespace/name")
    instead asks cert-manager's CA injector to fill it in. `kubeflow` (default JOBS_KUBEFLOW_V1) adds the
    rules on Kubeflow's v1 jobs, `trainer` (default TRAINER_ENABLED) those on Kubeflow Trainer's kinds.
    """
    metadata: dict[str, Any] = {"name": CONFIGURATION_NAME, "labels": {"app.kubernetes.io/name": "argoml"}}
    if cert_manager_certificate:
        metadata["annotations"] = {CERT_MANAGER_ANNOTATION: cert_manager_certificate}
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": dict(metadata),
            "webhooks": [webhook.manifest(target, ca_bundle) for webhook in webhooks],
        }
        for kind, webhooks in (
            ("ValidatingWebhookConfiguration", validating_webhooks(kubeflow, trainer)),
            ("MutatingWebhookConfiguration", mutating_webhooks(kubeflow)),
        )
    ]


def service(target: Target = DEFAULT_TARGET) -> dict[str, Any]:
    """The Service in front of the webhook listener's Pods (TLS), which only the API server may reach."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": target.service,
            "namespace": target.namespace,
            "labels": dict(WEBHOOK_POD_LABELS),
        },
        "spec": {
            "selector": dict(WEBHOOK_POD_LABELS),
            "ports": [
                {"name": "https", "port": SERVICE_PORT, "targetPort": CONTAINER_PORT, "protocol": "TCP"}
            ],
        },
    }


def service_dns_names(target: Target) -> list[str]:
    """Every name the apiserver may use for the Service (it uses `<service>.<namespace>.svc`)."""
    base = f"{target.service}.{target.namespace}"
    return [target.service, base, f"{base}.svc", f"{base}.svc.cluster.local"]


def cert_manager_resources(
    target: Target = DEFAULT_TARGET,
    secret: str = DEFAULT_SECRET,
    *,
    kubeflow: bool | None = None,
    trainer: bool | None = None,
) -> list[dict[str, Any]]:
    """The alternative to `webhook_certs`: a self-signed Issuer, a Certificate, and configurations that
    cert-manager's CA injector fills with the certificate's CA."""
    issuer = f"{target.service}-selfsigned"
    certificate = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": target.service, "namespace": target.namespace},
        "spec": {
            "secretName": secret,
            "dnsNames": service_dns_names(target),
            "issuerRef": {"name": issuer, "kind": "Issuer"},
            "duration": "8760h",
            "renewBefore": "720h",
            "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
        },
    }
    return [
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {"name": issuer, "namespace": target.namespace},
            "spec": {"selfSigned": {}},
        },
        certificate,
        *configurations(
            target,
            cert_manager_certificate=f"{target.namespace}/{target.service}",
            kubeflow=kubeflow,
            trainer=trainer,
        ),
    ]
