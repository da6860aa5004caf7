"""The `pods/eviction` subresource: a policy/v1 Eviction deletes a pod unless its PodDisruptionBudget
forbids it, as the API server's EvictionREST does (pkg/registry/core/pod/storage/eviction.go).

A pod that is Pending, finished or already being deleted is deleted at once; otherwise the one budget that
selects it (more than one is a 500) must allow a disruption: its status must be current (else 429 "still
being processed") and `disruptionsAllowed` above 0 (else 429 "Cannot evict pod as it would violate the
pod's disruption budget.", with a DisruptionBudget cause). A pod that is not ready may go while the budget
has its desired healthy pods (or always, with `unhealthyPodEvictionPolicy: AlwaysAllow`). An allowed
eviction takes one disruption off the budget, records the pod in `disruptedPods`, marks the pod with the
DisruptionTarget condition and deletes it with the Eviction's DeleteOptions; the answer is 201 with a
Status Success. Dry run changes nothing.
"""

from __future__ import annotations

from typing import Any

from kubesim.errors import ApiError, bad_request, conflict, internal_error, method_not_allowed
from kubesim.kubelet import disruption
from kubesim.kubelet.replicasets import ready_since
from kubesim.server.negotiation import decode_body
from kubesim.server.types import ApiRequest, Response, json_response
from kubesim.store import Store, WriteOptions

EVICTION_VERSIONS = ("policy/v1", "policy/v1beta1")
_RETRIES = 5  # EvictionsRetry: conflicts on the budget are retried this often
_TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


def _too_many_requests(
    message: str, retry_after: int, causes: list[dict[str, str]] | None = None
) -> ApiError:
    details: dict[str, Any] = {"retryAfterSeconds": retry_after} if retry_after else {}
    if causes:
        details["causes"] = causes
    headers = {"Retry-After": str(retry_after)} if retry_after else {}
    return ApiError(429, "TooManyRequests", message, details or None, headers)


def check_budget(budget: dict[str, Any]) -> None:
    """checkAndDecrement's checks: a current status allowing at least one disruption."""
    status = budget.get("status") or {}
    name = budget["metadata"]["name"]
    if int(status.get("observedGeneration") or 0) < int(budget["metadata"].get("generation") or 1):
        raise _too_many_requests(
            f"{_TOO_MANY} The disruption budget {name} is still being processed by the server.", 10
        )
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise ApiError(
            403,
            "Forbidden",
            f'poddisruptionbudgets.policy "{name}" is forbidden: pdb disruptions allowed is negative',
            {"name": name, "group": "policy", "kind": "poddisruptionbudgets"},
        )
    if allowed == 0:
        desired, current = int(status.get("desiredHealthy") or 0), int(status.get("currentHealthy") or 0)
        needs = f"The disruption budget {name} needs {desired} healthy pods and has {current} currently"
        cause = {"reason": "DisruptionBudget", "message": needs}
        raise _too_many_requests(_TOO_MANY, 0, [cause])


def decremented(budget: dict[str, Any], pod_name: str, now: str) -> dict[str, Any]:
    """The budget once this eviction is counted: one disruption fewer, the pod in `disruptedPods`."""
    status = dict(budget.get("status") or {})
    status["disruptionsAllowed"] = int(status.get("disruptionsAllowed") or 0) - 1
    if status["disruptionsAllowed"] == 0:
        status["conditions"] = disruption.allowed_condition(status, now)
    status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: now}
    return {**budget, "status": status}


def _can_skip_budget(pod: dict[str, Any]) -> bool:
    """canIgnorePDB: the pod disrupts nothing more (finished, pending, or already being deleted)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(pod["metadata"].get("deletionTimestamp"))


class Evictions:
    """Serves POST …/pods/{name}/eviction over a store (registered with `ApiServer.add_subresource`)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def serve(self, request: ApiRequest) -> Response:
        if request.method != "POST":
            raise method_not_allowed(request.method)
        namespace, name = request.route.namespace or "", request.route.name
        eviction = self._eviction(request)
        options = eviction.get("deleteOptions") or {}
        dry_run = request.query.get("dryRun") == "All" or "All" in (options.get("dryRun") or [])
        write = WriteOptions(
            dry_run=dry_run, user=request.user, user_agent=request.headers.get("user-agent", "")
        )
        pod = self.store.get("pods", name, namespace)
        if not _can_skip_budget(pod):
            self._take_budget(pod, dry_run)
        self._delete(pod, options, write)
        return json_response(
            201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
        )

    def _eviction(self, request: ApiRequest) -> dict[str, Any]:
        body = decode_body(request.body, request.headers.get("content-type")).document
        if not isinstance(body, dict) or body.get("kind") not in (None, "Eviction"):
            raise bad_request("the object provided is unrecognized (must be of type Eviction)")
        if body.get("apiVersion") not in (None, *EVICTION_VERSIONS):
            raise bad_request(
                f"the API version in the data ({body.get('apiVersion')}) does not match the expected "
                "API version (policy/v1)"
            )
        metadata = body.get("metadata") or {}
        if metadata.get("namespace") and metadata["namespace"] != request.route.namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        if metadata.get("name") != request.route.name:
            raise bad_request("name in URL does not match name in Eviction object")
        return body

    def _take_budget(self, pod: dict[str, Any], dry_run: bool) -> None:
        """Find the pod's budget and take one disruption from it (retrying conflicts), or raise why not."""
        namespace = pod["metadata"].get("namespace", "")
        budgets = [
            b for b in self.store.list(disruption.BUDGETS, namespace)["items"] if disruption.selects(b, pod)
        ]
        if len(budgets) > 1:
            raise internal_error(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
                "support."
            )
        if not budgets:
            return
        budget = budgets[0]
        if ready_since(pod) is None:
            spec, status = budget.get("spec") or {}, budget.get("status") or {}
            if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
                return
            desired = int(status.get("desiredHealthy") or 0)
            if desired > 0 and int(status.get("currentHealthy") or 0) >= desired:
                return
        for _attempt in range(_RETRIES):
            check_budget(budget)
            if dry_run:
                return
            updated = decremented(budget, pod["metadata"]["name"], self.store.clock.timestamp())
            try:
                self.store.update_status(updated, resource=disruption.BUDGETS, namespace=namespace)
                return
            except ApiError as error:
                if error.code != 409:
                    raise
            budget = self.store.get(disruption.BUDGETS, budget["metadata"]["name"], namespace)
        raise conflict(
            "poddisruptionbudgets", "policy", budget["metadata"]["name"], "too many concurrent evictions"
        )

    def _delete(self, pod: dict[str, Any], options: dict[str, Any], write: WriteOptions) -> None:
        """addConditionAndDeletePod: DisruptionTarget on the pod (not in a dry run), then the delete."""
        metadata = pod["metadata"]
        namespace, name = metadata.get("namespace", ""), metadata["name"]
        preconditions = dict(options.get("preconditions") or {})
        if not write.dry_run:
            now = self.store.clock.timestamp()

            def mark(current: dict[str, Any]) -> dict[str, Any] | None:
                for field in ("uid", "resourceVersion"):
                    if preconditions.get(field) and preconditions[field] != current["metadata"].get(field):
                        raise conflict("pods", "", name, f"the {field} in the precondition does not match")
                status = current.setdefault("status", {})
                conditions = [
                    c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"
                ]
                status["conditions"] = [
                    *conditions,
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": now,
                        "reason": "EvictionByEvictionAPI",
                        "message": "Eviction API: evicting",
                    },
                ]
                return current

            marked = self.store.mutate("pods", name, mark, namespace=namespace, subresource="status")
            if preconditions.get("resourceVersion"):
                preconditions["resourceVersion"] = marked["metadata"]["resourceVersion"]
        grace = options.get("gracePeriodSeconds")
        self.store.delete(
            "pods",
            name,
            namespace,
            propagation=options.get("propagationPolicy"),
            preconditions=preconditions,
            grace_period_seconds=None if grace is None else int(grace),
            options=write,
        )
