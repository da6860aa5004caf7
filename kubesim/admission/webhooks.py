"""Admission webhooks in the simulator: the registered configurations are called over HTTPS on every write.

Mutating webhooks run first (configurations by name, webhooks in order) and their JSON Patches are applied
one after the other; the store then validates the object; then validating webhooks run. A write to the
`scale` subresource is shown as the apiserver shows it: an `autoscaling/v1` Scale (the resource stays the
object's, subResource `scale`), and a patch of it sets the replicas. A DELETE is shown to both kinds
(mutations of a delete are ignored, as the apiserver ignores them). failurePolicy, timeoutSeconds, rules,
namespaceSelector, objectSelector and sideEffects with dryRun are honoured; matchConditions and
reinvocationPolicy are not (see docs/kubesim.md).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from kubesim import scale
from kubesim.admission.client import endpoint_for, post_review, tls_context
from kubesim.admission.configs import apply_defaults, configuration_causes
from kubesim.admission.matching import Attributes, webhook_applies
from kubesim.admission.review import (
    DEFAULT_USER,
    Verdict,
    WebhookCallError,
    call_failure,
    denial,
    read_verdict,
    review_request,
)
from kubesim.errors import ApiError, bad_request, invalid
from kubesim.patch import json_patch
from kubesim.selectors import EVERYTHING
from kubesim.store import AdmissionRequest, Store

log = logging.getLogger(__name__)

GROUP = "admissionregistration.k8s.io"
MUTATING = f"mutatingwebhookconfigurations.{GROUP}"
VALIDATING = f"validatingwebhookconfigurations.{GROUP}"


class Webhooks:
    """Calls the webhooks registered in the store. `route_service` says where a service-backed one listens."""

    def __init__(self, store: Store) -> None:
        self.store = store
        #: sent as `userInfo` when nobody authenticated the request (a simulator without auth, store writes)
        self.user_info: dict[str, Any] = dict(DEFAULT_USER)
        self._services: dict[tuple[str, str, int], str] = {}
        self._removers: list[Callable[[], None]] = []

    def route_service(self, namespace: str, name: str, address: str, port: int = 443) -> None:
        """Send calls for `service: {namespace, name, port}` to `address` ("127.0.0.1:8443"); the TLS
        certificate is still checked for `<name>.<namespace>.svc`."""
        self._services[(namespace, name, port)] = address

    def start(self) -> None:
        self._removers = [
            self.store.add_admission(self._mutate, mutating=True),
            self.store.add_admission(self._validate),
        ]

    def stop(self) -> None:
        for remove in self._removers:
            remove()
        self._removers = []

    # --- the store's admission chain -----------------------------------------------------------------

    def _mutate(self, request: AdmissionRequest) -> dict[str, Any] | None:
        if request.resource.group == GROUP:
            if request.object is not None:
                apply_defaults(request.object, mutating=request.resource.key == MUTATING)
            return request.object
        if request.operation == "DELETE" or request.object is None:
            return None
        obj = request.object
        for webhook in self._webhooks(MUTATING):
            attributes = self._attributes(request, obj)
            verdict = self._consult(webhook, attributes, request)
            if verdict is not None and verdict.patch:
                try:
                    patched = json_patch(attributes.object, verdict.patch)
                except ApiError as error:
                    raise call_failure(webhook["name"], f"JSON patch failed: {error.message}") from None
                obj = self._patched(request, obj, patched)
        return obj

    @staticmethod
    def _patched(request: AdmissionRequest, obj: dict[str, Any], patched: Any) -> dict[str, Any]:
        """The object after a mutating webhook's patch; a patched Scale only sets the replicas."""
        paths = request.resource.scale
        if request.subresource != "scale" or paths is None:
            return dict(patched)
        return scale.with_replicas(obj, paths, scale.desired_replicas(patched, request.name))

    def _validate(self, request: AdmissionRequest) -> None:
        if request.resource.group == GROUP:
            if request.object is not None and request.operation in ("CREATE", "UPDATE"):
                causes = configuration_causes(request.object)
                if causes:
                    raise invalid(request.resource.kind, GROUP, request.name, causes)
            return
        chains = [MUTATING, VALIDATING] if request.operation == "DELETE" else [VALIDATING]
        for chain in chains:
            for webhook in self._webhooks(chain):
                self._consult(webhook, self._attributes(request, request.object), request)

    # --- one webhook ---------------------------------------------------------------------------------

    def _webhooks(self, resource: str) -> list[dict[str, Any]]:
        """The webhooks of every configuration, in name order (stored snapshots: read, never changed)."""
        resource_type = self.store.registry.by_key(resource)
        if resource_type is None:
            return []
        page = self.store.list_page(resource_type, None, EVERYTHING, EVERYTHING)
        return [w for c in page.items for w in c.get("webhooks") or [] if isinstance(w, dict)]

    def _attributes(self, request: AdmissionRequest, obj: dict[str, Any] | None) -> Attributes:
        resource = request.resource
        old = request.old_object
        if request.subresource == "scale" and resource.scale is not None:
            obj = scale.scale_of(obj, resource.scale) if obj is not None else None
            old = scale.scale_of(old, resource.scale) if old is not None else None
        return Attributes(
            operation=request.operation,
            group=resource.group,
            version=resource.storage_version,
            resource=resource.plural,
            subresource=request.subresource,
            namespaced=resource.namespaced,
            namespace=request.namespace,
            name=request.name,
            object=obj,
            old_object=old,
        )

    def _namespace(self, name: str) -> dict[str, Any] | None:
        return self.store.get_or_none("namespaces", name) if name else None

    def _consult(
        self, webhook: dict[str, Any], attributes: Attributes, request: AdmissionRequest
    ) -> Verdict | None:
        """Call `webhook` if it applies: its verdict, None when skipped or ignored; raises on denial/Fail."""
        name = str(webhook.get("name", ""))
        if not webhook_applies(webhook, attributes, self._namespace(attributes.namespace)):
            return None
        if request.dry_run and webhook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise bad_request(f'admission webhook "{name}" does not support dry run')
        uid = str(uuid.uuid4())
        user_info = request.user.as_user_info() if request.user is not None else self.user_info
        review = review_request(
            attributes,
            _kind_of(request),
            uid,
            dry_run=request.dry_run,
            user_info=user_info,
        )
        try:
            if "v1" not in (webhook.get("admissionReviewVersions") or []):
                raise WebhookCallError("webhook does not accept v1 AdmissionReview")
            client_config = webhook.get("clientConfig") or {}
            endpoint = endpoint_for(client_config, self._services)
            context = tls_context(client_config.get("caBundle"))
            answer = post_review(endpoint, context, review, int(webhook.get("timeoutSeconds") or 10))
            verdict = read_verdict(answer, uid)
        except WebhookCallError as error:
            if webhook.get("failurePolicy", "Fail") == "Ignore":
                log.info("kubesim: ignoring failed webhook %s: %s", name, error)
                return None
            raise call_failure(name, str(error)) from None
        if not verdict.allowed:
            raise denial(name, verdict.status)
        return verdict


def _kind_of(request: AdmissionRequest) -> tuple[str, str, str]:
    """(group, version, kind) of what a webhook is shown: the object's, or a Scale for `…/scale`."""
    resource = request.resource
    if request.subresource == "scale" and resource.scale is not None:
        return ("autoscaling", "v1", "Scale")
    return (resource.group, resource.storage_version, resource.kind)
