"""The review APIs and TokenRequest, answered from the gate: TokenReview, SelfSubjectReview,
(Self|Local)SubjectAccessReview, SelfSubjectRulesReview and `serviceaccounts/{name}/token`.

Each is create-only and never stored: the answer is the request with its `status` filled in (201).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubesim.auth import rbac
from kubesim.auth.gate import Gate
from kubesim.auth.tokens import DEFAULT_EXPIRATION, MIN_EXPIRATION, Claims, TokenError
from kubesim.clock import format_timestamp
from kubesim.errors import ApiError, Cause, bad_request, invalid, method_not_allowed, not_found
from kubesim.identity import User
from kubesim.server.negotiation import decode_body
from kubesim.server.types import ApiRequest, Response, json_response

Handler = Callable[[ApiRequest], Response]
_MAX_EXPIRATION = 1 << 32


def _body(request: ApiRequest, kind: str) -> dict[str, Any]:
    body = decode_body(request.body or b"{}", request.headers.get("content-type")).document
    if not isinstance(body, dict):
        raise bad_request(f"the object provided is unrecognized (must be of type {kind}): not a JSON object")
    return body


def _answer(body: dict[str, Any], api_version: str, kind: str, status: dict[str, Any]) -> Response:
    metadata = {**(body.get("metadata") or {}), "creationTimestamp": None}
    spec = body.get("spec") or {}
    return json_response(
        201, {"kind": kind, "apiVersion": api_version, "metadata": metadata, "spec": spec, "status": status}
    )


def _user(request: ApiRequest) -> User:
    if request.user is None:
        raise ApiError(500, "InternalError", "kubesim: no authenticated user on the request")
    return request.user


def _attributes(user: User, spec: dict[str, Any], kind: str) -> rbac.Attributes:
    resource: dict[str, Any] = spec.get("resourceAttributes") or {}
    non_resource: dict[str, Any] = spec.get("nonResourceAttributes") or {}
    if bool(resource) == bool(non_resource):
        value = json.dumps(spec.get("resourceAttributes"))
        raise invalid(
            kind,
            "authorization.k8s.io",
            "",
            [
                Cause(
                    "spec.resourceAttributes",
                    f"Invalid value: {value}: exactly one of nonResourceAttributes or resourceAttributes "
                    "must be specified",
                )
            ],
        )
    if non_resource:
        return rbac.Attributes(
            user,
            str(non_resource.get("verb", "")),
            resource_request=False,
            path=str(non_resource.get("path", "")),
        )
    return rbac.Attributes(
        user,
        str(resource.get("verb", "")),
        namespace=str(resource.get("namespace", "")),
        api_group=str(resource.get("group", "")),
        resource=str(resource.get("resource", "")),
        subresource=str(resource.get("subresource", "")),
        name=str(resource.get("name", "")),
    )


def _decision(gate: Gate, attributes: rbac.Attributes) -> dict[str, Any]:
    if gate.allowed(attributes):
        return {"allowed": True, "reason": "RBAC: allowed"}
    return {"allowed": False}


def handlers(gate: Gate) -> dict[tuple[str, str], Handler]:
    """(resource, subresource) → handler, to register with `ApiServer.add_subresource`."""

    def token_review(request: ApiRequest) -> Response:
        body = _body(request, "TokenReview")
        spec = body.get("spec") or {}
        audiences = tuple(spec.get("audiences") or gate.audiences)
        try:
            user = gate.token_user(str(spec.get("token", "")), audiences)
        except TokenError as error:
            status: dict[str, Any] = {
                "authenticated": False,
                "user": {},
                "error": f"[invalid bearer token, {error}]",
            }
        else:
            status = {"authenticated": True, "user": user.as_user_info(), "audiences": list(audiences)}
        return _answer(body, "authentication.k8s.io/v1", "TokenReview", status)

    def self_subject_review(request: ApiRequest) -> Response:
        body = _body(request, "SelfSubjectReview")
        status = {"userInfo": _user(request).as_user_info()}
        return _answer(body, "authentication.k8s.io/v1", "SelfSubjectReview", status)

    def self_subject_access_review(request: ApiRequest) -> Response:
        body = _body(request, "SelfSubjectAccessReview")
        attributes = _attributes(_user(request), body.get("spec") or {}, "SelfSubjectAccessReview")
        return _answer(
            body, "authorization.k8s.io/v1", "SelfSubjectAccessReview", _decision(gate, attributes)
        )

    def subject_access_review(request: ApiRequest, kind: str) -> Response:
        body = _body(request, kind)
        spec = body.get("spec") or {}
        if not spec.get("user") and not spec.get("groups"):
            raise invalid(
                kind,
                "authorization.k8s.io",
                "",
                [Cause("spec.user", 'Invalid value: "": at least one of user or group must be specified')],
            )
        user = User(str(spec.get("user", "")), tuple(spec.get("groups") or ()), str(spec.get("uid", "")))
        attributes = _attributes(user, spec, kind)
        if kind == "LocalSubjectAccessReview" and attributes.namespace != (request.route.namespace or ""):
            raise invalid(
                kind,
                "authorization.k8s.io",
                "",
                [
                    Cause(
                        "spec.resourceAttributes.namespace",
                        f'Invalid value: "{attributes.namespace}": must match metadata.namespace',
                    )
                ],
            )
        return _answer(body, "authorization.k8s.io/v1", kind, _decision(gate, attributes))

    def self_subject_rules_review(request: ApiRequest) -> Response:
        body = _body(request, "SelfSubjectRulesReview")
        namespace = str((body.get("spec") or {}).get("namespace", ""))
        rules = gate.policy().rules_for(_user(request), namespace)
        return _answer(body, "authorization.k8s.io/v1", "SelfSubjectRulesReview", rbac.review_rules(rules))

    def token_request(request: ApiRequest) -> Response:
        if request.method != "POST":
            raise method_not_allowed(request.method)
        return _issue_token(gate, request)

    return {
        ("tokenreviews.authentication.k8s.io", ""): token_review,
        ("selfsubjectreviews.authentication.k8s.io", ""): self_subject_review,
        ("selfsubjectaccessreviews.authorization.k8s.io", ""): self_subject_access_review,
        ("subjectaccessreviews.authorization.k8s.io", ""): lambda r: subject_access_review(
            r, "SubjectAccessReview"
        ),
        ("localsubjectaccessreviews.authorization.k8s.io", ""): lambda r: subject_access_review(
            r, "LocalSubjectAccessReview"
        ),
        ("selfsubjectrulesreviews.authorization.k8s.io", ""): self_subject_rules_review,
        ("serviceaccounts", "token"): token_request,
    }


def _issue_token(gate: Gate, request: ApiRequest) -> Response:
    """TokenRequest: a signed token for the ServiceAccount, for the audiences and lifetime asked."""
    namespace, name = request.route.namespace or "", request.route.name
    body = _body(request, "TokenRequest")
    spec = body.get("spec") or {}
    try:
        account = gate.store.get("serviceaccounts", name, namespace)
    except ApiError:
        raise not_found("serviceaccounts", "", name) from None
    expiration = spec.get("expirationSeconds", DEFAULT_EXPIRATION)
    causes = []
    if not isinstance(expiration, int) or isinstance(expiration, bool):
        causes.append(Cause("spec.expirationSeconds", f"Invalid value: {expiration!r}: must be an integer"))
    elif expiration < MIN_EXPIRATION:
        causes.append(
            Cause(
                "spec.expirationSeconds",
                f"Invalid value: {expiration}: may not specify a duration less than 10 minutes",
            )
        )
    elif expiration > _MAX_EXPIRATION:
        causes.append(
            Cause(
                "spec.expirationSeconds",
                f"Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds",
            )
        )
    audiences = spec.get("audiences") or list(gate.audiences)
    if not isinstance(audiences, list) or not all(isinstance(a, str) and a for a in audiences):
        causes.append(Cause("spec.audiences", "Invalid value: audiences must be non-empty strings"))
    bound, bound_claims = _bound_object(gate, namespace, spec.get("boundObjectRef"), causes)
    if causes:
        raise invalid("TokenRequest", "authentication.k8s.io", name, causes)
    now = int(gate.store.clock.time())
    expires = now + int(expiration)
    claims = Claims(namespace, name, str(account["metadata"]["uid"]), tuple(audiences), expires, *bound)
    token = gate.signer.issue(claims, now, bound_claims)
    status = {"token": token, "expirationTimestamp": format_timestamp(datetime.fromtimestamp(expires, UTC))}
    answer = {**body, "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}
    answer["metadata"] = {**(body.get("metadata") or {}), "name": name, "namespace": namespace}
    answer["spec"] = {**spec, "audiences": audiences, "expirationSeconds": expiration}
    answer["status"] = status
    return json_response(201, answer)


def _bound_object(
    gate: Gate, namespace: str, reference: Any, causes: list[Cause]
) -> tuple[tuple[str, str, str], dict[str, Any] | None]:
    """The object a token is bound to (it dies with it): a Pod or Secret in the ServiceAccount's namespace."""
    if not reference:
        return ("", "", ""), None
    kind = reference.get("kind") if isinstance(reference, dict) else None
    if kind not in ("Pod", "Secret"):
        causes.append(
            Cause(
                "spec.boundObjectRef.kind", f'Unsupported value: "{kind}": supported values: "Pod", "Secret"'
            )
        )
        return ("", "", ""), None
    name = str(reference.get("name", ""))
    plural = "pods" if kind == "Pod" else "secrets"
    try:
        obj = gate.store.get(plural, name, namespace)
    except ApiError:
        raise not_found(plural, "", name) from None
    uid = str(obj["metadata"]["uid"])
    if reference.get("uid") and reference["uid"] != uid:
        raise ApiError(
            409,
            "Conflict",
            f"the UID in the bound object reference ({reference['uid']}) does not match the UID in record. "
            "The object might have been deleted and then recreated",
        )
    key = kind.lower()
    return (key, name, uid), {key: {"name": name, "uid": uid}}
