"""The API groups a training job kind is served under: ours (`argoml.io/v1alpha1`) and Kubeflow's
(`kubeflow.org/v1`), so Kubeflow's manifests and SDK work unchanged. One controller per (group, kind):
the same reconcile, mirror and builders, with owner references, events and status in the job's own group.
"""

from __future__ import annotations

from typing import Any, Protocol

from kube.resources import ResourceType


class ServedKind(Protocol):
    """What naming a job's resource needs of its framework (a `Framework`, or its class); a protocol, so that
    this module, below `jobs.spec`, imports no framework."""

    @property
    def kind(self) -> str: ...

    @property
    def plural(self) -> str: ...


ARGOML_GROUP = "argoml.io"
ARGOML_API_VERSION = f"{ARGOML_GROUP}/v1alpha1"
KUBEFLOW_GROUP = "kubeflow.org"
KUBEFLOW_API_VERSION = f"{KUBEFLOW_GROUP}/v1"
#: Every apiVersion a training job may have, ours first (the default of a manifest that names none).
API_VERSIONS = (ARGOML_API_VERSION, KUBEFLOW_API_VERSION)
#: Group → its apiVersion.
GROUPS = {api_version.partition("/")[0]: api_version for api_version in API_VERSIONS}
#: Kubeflow v1.9's default cleanPodPolicy, for every kind of its group.
KUBEFLOW_CLEAN_POD_POLICY = "None"


def served_api_versions(*, kubeflow: bool) -> tuple[str, ...]:
    """The apiVersions whose jobs this deployment reconciles (Kubeflow's only when its CRDs are installed)."""
    return API_VERSIONS if kubeflow else (ARGOML_API_VERSION,)


def api_version_of(job: dict[str, Any]) -> str:
    """The job's apiVersion when it is one we serve, else ours (a manifest that names none, or a bad one
    that validation reports)."""
    return served_or_ours(job.get("apiVersion"))


def served_or_ours(api_version: object) -> str:
    """`api_version` when it is one a training job may have, else ours."""
    return api_version if isinstance(api_version, str) and api_version in API_VERSIONS else ARGOML_API_VERSION


def default_clean_pod_policy(job: dict[str, Any], framework_default: str) -> str:
    """`runPolicy.cleanPodPolicy` when the job names none: Kubeflow v1.9 defaults every kind of its group to
    None (keep the pods); ours keep each framework's own default (TFJob: Running, as Kubeflow once did)."""
    if api_version_of(job) == KUBEFLOW_API_VERSION:
        return KUBEFLOW_CLEAN_POD_POLICY
    return framework_default


def group_of(api_version: str) -> str:
    return api_version.partition("/")[0]


def job_resource(framework: ServedKind, api_version: str = ARGOML_API_VERSION) -> ResourceType:
    """The custom resource of a framework's jobs in one group, e.g. tfjobs.kubeflow.org/v1."""
    if api_version not in API_VERSIONS:
        raise ValueError(f"apiVersion: must be one of {', '.join(API_VERSIONS)}, not {api_version!r}")
    return ResourceType(api_version, framework.kind, framework.plural)


def controller_kind(kind: str, api_version: str) -> str:
    """The kind of a job's reconcile keys: `TFJob` for ours (as before there were two groups), and
    `TFJob.kubeflow.org` for Kubeflow's, so a TFJob `x` of each group are two keys."""
    return kind if api_version == ARGOML_API_VERSION else f"{kind}.{group_of(api_version)}"


def split_controller_kind(key_kind: str) -> tuple[str, str]:
    """(kind, apiVersion) of a reconcile key kind made by `controller_kind`."""
    kind, _, group = key_kind.partition(".")
    if not group:
        return kind, ARGOML_API_VERSION
    if group not in GROUPS:
        raise ValueError(f"kind: {key_kind!r} names group {group!r}; served: {', '.join(GROUPS)}")
    return kind, GROUPS[group]
