"""The pods an Argo WorkflowSpec asks for, as `podsecurity` views with the paths the user wrote.

Argo builds each pod of a `container`, `script` or `containerSet` template from two places: the
Workflow's pod-wide fields (`securityContext`, `hostNetwork`, `volumes`, `podMetadata`,
`serviceAccountName`, `podSpecPatch`) and the template's own (its containers, `initContainers`,
`sidecars`, `volumes`, `metadata`, and a `securityContext` that replaces the Workflow's). A view per
template lets each finding name the field where it was written. `templateDefaults` is checked as a
template of its own (Argo merges it into every template; a default that only relaxes nothing is harmless,
and one that adds a privilege is refused where it is written). Templates of other kinds (steps, dag,
suspend, resource, http) run no user container. Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import fields
import podsecurity
from podsecurity import Container, PodView, Volume

POD_TEMPLATE_KINDS = ("container", "script", "containerSet")


def workflow_pod_views(spec: object, path: str = "spec") -> list[PodView]:
    """A view per pod-making template of the WorkflowSpec `spec` (found at `path` in the document), plus
    one for the Workflow's own pod-wide fields, so they are checked even when no template makes a pod."""
    workflow = fields.as_dict(spec)
    views = [_workflow_view(workflow, path)]
    defaults = fields.as_dict(workflow.get("templateDefaults"))
    if defaults:
        views.append(_template_view(workflow, path, defaults, f"{path}.templateDefaults"))
    for position, template in podsecurity.items(workflow.get("templates")):
        if any(kind in template for kind in POD_TEMPLATE_KINDS):
            views.append(_template_view(workflow, path, template, f"{path}.templates[{position}]"))
    return views


def _workflow_view(workflow: Mapping[str, Any], path: str) -> PodView:
    pod_metadata = fields.as_dict(workflow.get("podMetadata"))
    return PodView(
        path=path,
        pod={"hostNetwork": workflow.get("hostNetwork")},
        security_path=f"{path}.securityContext",
        security=fields.as_dict(workflow.get("securityContext")),
        containers=(),
        volumes=tuple(_volumes(workflow, path)),
        annotations_path=f"{path}.podMetadata.annotations",
        annotations=fields.as_dict(pod_metadata.get("annotations")),
        service_accounts=_service_accounts(workflow, path),
        spec_patches=_spec_patch(workflow, path),
    )


def _template_view(
    workflow: Mapping[str, Any], path: str, template: Mapping[str, Any], where: str
) -> PodView:
    """The pod of one template. Workflow-wide fields repeat in every view; callers drop repeated findings."""
    own_security = template.get("securityContext")
    security: Mapping[str, Any]
    if isinstance(own_security, dict):
        security_path, security = f"{where}.securityContext", own_security
    else:
        security_path, security = f"{path}.securityContext", fields.as_dict(workflow.get("securityContext"))
    return PodView(
        path=path,
        pod={"hostNetwork": workflow.get("hostNetwork")},
        security_path=security_path,
        security=security,
        containers=tuple(_containers(template, where)),
        volumes=(*_volumes(workflow, path), *_volumes(template, where)),
        annotations_path=f"{where}.metadata.annotations",
        annotations=fields.as_dict(fields.as_dict(template.get("metadata")).get("annotations")),
        service_accounts=_service_accounts(template, where),
        spec_patches=_spec_patch(template, where),
    )


def _containers(template: Mapping[str, Any], where: str) -> Iterator[Container]:
    for position, body in podsecurity.items(template.get("initContainers")):
        yield Container(f"{where}.initContainers[{position}]", body)
    for key in ("container", "script"):
        main = template.get(key)
        if isinstance(main, dict):
            yield Container(f"{where}.{key}", {"name": "main", **main})
    container_set = fields.as_dict(template.get("containerSet"))
    for position, body in podsecurity.items(container_set.get("containers")):
        yield Container(f"{where}.containerSet.containers[{position}]", body)
    for position, body in podsecurity.items(template.get("sidecars")):
        yield Container(f"{where}.sidecars[{position}]", body)


def _volumes(pod_fields: Mapping[str, Any], where: str) -> Iterator[Volume]:
    for position, body in podsecurity.items(pod_fields.get("volumes")):
        yield Volume(f"{where}.volumes[{position}]", body)


def _service_accounts(pod_fields: Mapping[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    """The pod's service account and the executor's (Argo runs its wait container as the latter)."""
    executor = fields.as_dict(pod_fields.get("executor"))
    return (
        *podsecurity.service_accounts(pod_fields, where),
        *podsecurity.service_accounts(executor, f"{where}.executor"),
    )


def _spec_patch(pod_fields: Mapping[str, Any], where: str) -> tuple[str, ...]:
    return (f"{where}.podSpecPatch",) if pod_fields.get("podSpecPatch") not in (None, "") else ()
