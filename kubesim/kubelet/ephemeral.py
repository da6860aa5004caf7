"""The `pods/ephemeralcontainers` subresource, what `kubectl debug <pod> --image=…` patches: the Pod, of which
only `spec.ephemeralContainers` may change, and only by adding containers (the API server's
podEphemeralContainersStrategy and ValidatePodEphemeralContainersUpdate).

GET answers the Pod; PUT and PATCH (strategic merge, JSON merge, JSON patch) compute the new Pod and keep
its ephemeral containers alone; an existing one removed or changed is a 422 on `spec.ephemeralContainers`.
The write is the store's ordinary update (admission, the pod's validation, resourceVersion) with the
subresource named.
"""

from __future__ import annotations

from typing import Any

from kubesim.errors import Cause, bad_request, conflict, invalid, method_not_allowed, unsupported_media_type
from kubesim.jsonutil import clone
from kubesim.patch import json_patch, merge_patch, strategic_merge_patch
from kubesim.server.negotiation import decode_body
from kubesim.server.types import ApiRequest, Response, json_response
from kubesim.store import Store, WriteOptions

SUBRESOURCE = "ephemeralcontainers"


def update_causes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[Cause]:
    """Existing ephemeral containers may be neither removed nor changed (new ones may be added)."""
    by_name = {c.get("name"): c for c in new}
    causes = []
    for container in old:
        name = container.get("name")
        if name not in by_name:
            message = f'Forbidden: existing ephemeral containers "{name}" may not be removed\n'
        elif by_name[name] != container:
            message = f'Forbidden: existing ephemeral containers "{name}" may not be changed\n'
        else:
            continue
        causes.append(Cause("spec.ephemeralContainers", message, "FieldValueForbidden"))
    return causes


class EphemeralContainers:
    """Serves GET/PUT/PATCH …/pods/{name}/ephemeralcontainers over a store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def serve(self, request: ApiRequest) -> Response:
        namespace, name = request.route.namespace or "", request.route.name
        pod = self.store.get("pods", name, namespace)
        if request.method == "GET":
            return json_response(200, pod)
        if request.method == "PUT":
            wanted = self._replacement(request)
        elif request.method == "PATCH":
            wanted = self._patched(request, pod)
        else:
            raise method_not_allowed(request.method)
        given = (wanted.get("metadata") or {}).get("resourceVersion")
        if given and given != pod["metadata"]["resourceVersion"]:
            raise conflict("pods", "", name)
        old = (pod.get("spec") or {}).get("ephemeralContainers") or []
        new = (wanted.get("spec") or {}).get("ephemeralContainers") or []
        causes = update_causes(old, new)
        if causes:
            raise invalid("Pod", "", name, causes)
        change = {
            "metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]},
            "spec": {"ephemeralContainers": new},
        }
        options = WriteOptions(
            dry_run=request.query.get("dryRun") == "All",
            field_manager=request.query.get("fieldManager")
            or request.headers.get("user-agent", "").split("/")[0],
            user=request.user,
            user_agent=request.headers.get("user-agent", ""),
        )
        updated = self.store.patch(
            "pods",
            name,
            change,
            patch_type="merge",
            namespace=namespace,
            subresource=SUBRESOURCE,
            options=options,
        )
        return json_response(200, updated)

    def _replacement(self, request: ApiRequest) -> dict[str, Any]:
        body = decode_body(request.body, request.headers.get("content-type")).document
        if not isinstance(body, dict) or body.get("kind") not in (None, "Pod"):
            raise bad_request("the object provided is unrecognized (must be of type Pod)")
        if (body.get("metadata") or {}).get("name", request.route.name) != request.route.name:
            raise bad_request(
                f"the name of the object ({body['metadata']['name']}) does not match the name on the URL "
                f"({request.route.name})"
            )
        return body

    def _patched(self, request: ApiRequest, pod: dict[str, Any]) -> dict[str, Any]:
        decoded = decode_body(request.body, request.headers.get("content-type"), patch=True)
        if decoded.patch_type == "json":
            return json_patch(clone(pod), decoded.document)
        if decoded.patch_type == "strategic":
            return strategic_merge_patch(clone(pod), decoded.document, self.store.resource("pods").patch_meta)
        if decoded.patch_type == "merge":
            if not isinstance(decoded.document, dict):
                raise bad_request("merge patch: the patch must be a JSON object")
            return merge_patch(clone(pod), decoded.document)
        raise unsupported_media_type("application/apply-patch+yaml (pods/ephemeralcontainers)")
